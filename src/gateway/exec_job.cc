// An exec job's process (exec_job.h): the request, the check, the hand-over to the warm
// runner, then the output pump (exec_output_pump.cc) and the outcome (exec_job_outcome.cc).
#include "gateway/exec_job.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/fd_io.h"
#include "gateway/exec_job_check.h"
#include "ipc/fd_passing.h"
#include "linux/sandbox_launch.h"
#include "linux/tool_runtime.h"

namespace anvil::gateway {

int MillisUntil(Clock::time_point t) {
  auto now = Clock::now();
  if (t <= now) return 0;
  return static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count() +
                          1);
}

namespace {

constexpr size_t kMaxRequestOverhead = 1u << 20;  // argv, paths, framing beyond stdin

// Reads the one request of a job connection: bounded in size and time.
Result<ipc::Request> ReadJobRequest(int conn, const ExecLimits& limits) {
  ipc::FrameReader reader(static_cast<uint32_t>(
      std::min<uint64_t>(limits.max_stdin_bytes + kMaxRequestOverhead, ipc::kMaxFrameBytes)));
  auto deadline = Clock::now() + std::chrono::seconds(10);
  char buf[65536];
  while (true) {
    ANVIL_TRY(frame, reader.Next());
    if (*frame) {
      if ((*frame)->kind != ipc::FrameKind::kRequest) return Fail("invalid", "not a request");
      return ipc::DecodeRequest((*frame)->body);
    }
    pollfd p{conn, POLLIN, 0};
    int r = poll(&p, 1, MillisUntil(deadline));
    if (r == 0) return Fail("io", "exec request not received in time");
    if (r < 0 && errno != EINTR) return SysFail("io", "poll");
    ssize_t n = ::recv(conn, buf, sizeof(buf), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return Fail("cancelled", "exec request withdrawn");
    reader.Append(buf, static_cast<size_t>(n));
  }
}

// Tells the broker (on the job's link; -1: none) that the call is answered: the next warm job
// starts now, not while this call runs.
void NotifyAnswered(int link) {
  if (link < 0) return;
  char byte = 'A';
  ssize_t ignored = ::send(link, &byte, 1, MSG_NOSIGNAL);
  (void)ignored;
}

// The answer of a call, and whether it was already written to the connection (see RunJob).
struct JobAnswer {
  JobAnswer(ipc::Response r, bool already_sent = false)  // NOLINT: implicit by design
      : response(std::move(r)), sent(already_sent) {}
  ipc::Response response;
  bool sent = false;
};

// What the runner is handed besides the call: the program, opened by its fixed path, the tool's
// stdin, and its runtime files.
struct PreparedCall {
  UniqueFd program;
  UniqueFd stdin_r, stdin_w;  // stdin_w: none when there is no stdin (/dev/null)
  ToolRuntime runtime;
};

Result<PreparedCall> PrepareCall(const CheckedJob& job, const ExecBrokerConfig& config) {
  PreparedCall p;
  p.program = UniqueFd(::open(job.argv.program_path.c_str(), O_PATH | O_CLOEXEC));
  struct stat st {};
  if (!p.program || ::fstat(p.program.Get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Fail("not_found", "executable missing: " + job.argv.program_path);
  }
  // No stdin: /dev/null, not an empty pipe — rg searches a piped stdin instead of the
  // workspace when no path is given.
  if (job.stdin_data.empty()) {
    p.stdin_r = UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!p.stdin_r) return Fail("io", "open /dev/null", errno);
  } else {
    int in[2];
    if (pipe2(in, O_CLOEXEC) != 0) return Fail("io", "pipe failed", errno);
    p.stdin_r = UniqueFd(in[0]);
    p.stdin_w = UniqueFd(in[1]);
  }
  // The tool's own files (executable, loader, libraries): resolved at the broker's start, again
  // if the executable changed since (an upgrade may have changed its libraries).
  ANVIL_TRY(identity, IdentityOf(p.program.Get()));
  auto cached = config.tool_runtimes.find(job.argv.program_path);
  if (cached != config.tool_runtimes.end() && cached->second.identity == *identity) {
    p.runtime = cached->second;
  } else {
    auto resolved = ResolveToolRuntime(job.argv.program_path, job.rule->runtime_files);
    if (!resolved) {
      return Fail("sandbox", "sys.exec did not run (fail closed): " + resolved.error().message);
    }
    p.runtime = std::move(*resolved);
  }
  return p;
}

// Hands the call to the warm runner and waits until it took it. One that died while waiting
// (killed) is replaced once; one whose set-up failed fails the call closed with the layer its
// report names. A cancel (anything on `conn`) or a runner that does not take the call in time
// kills the runner.
Status HandCallToRunner(int conn, int runner_fd, const ExecBrokerConfig& config,
                        const PreparedCall& prepared, const WarmCall& call, Runner& runner) {
  for (int attempt = 0;; ++attempt) {
    if (runner.pid <= 0) {
      ANVIL_TRY(fresh, SpawnRunner(runner_fd, config));
      runner = std::move(*fresh);
    }
    bool taken = false;
    if (SendWarmCall(runner.call.Get(), prepared.program.Get(), prepared.stdin_r.Get(), call)) {
      auto until = Clock::now() + std::chrono::seconds(30);
      while (true) {
        pollfd fds[2] = {{runner.call.Get(), POLLIN, 0}, {conn, POLLIN | POLLRDHUP, 0}};
        int n = poll(fds, 2, MillisUntil(until));
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) {
          KillRunner(runner);
          return Fail("sandbox",
                      "sys.exec did not run (fail closed): the runner did not take the call in "
                      "time");
        }
        if (fds[1].revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) {
          KillRunner(runner);
          return Fail("cancelled", "sys.exec cancelled");
        }
        if (fds[0].revents) {
          char ack = 0;
          ssize_t r = ::read(runner.call.Get(), &ack, 1);
          if (r < 0 && errno == EINTR) continue;
          taken = r == 1 && ack == kWarmCallTaken;
          break;
        }
      }
    }
    if (taken) return Ok();
    std::string report = FinishedRunnerReport(runner);
    nlohmann::json parsed = nlohmann::json::parse(report, nullptr, /*allow_exceptions=*/false);
    std::string outcome = parsed.is_object() ? parsed.value("outcome", "") : "";
    std::string error = parsed.is_object() ? parsed.value("error", "") : "";
    if (outcome == "setup_failed" || attempt >= 1) {
      std::string why = !error.empty() ? error : "the runner ended before it took the call";
      return Fail("sandbox", "sys.exec did not run (fail closed): " + why);
    }
  }
}

// Runs the checked call on `runner`. When the sandbox's init says the command is over
// (kWarmCallDone) the answer is written to `conn` at once, before the runner has torn the
// sandbox down and exited; the runner is reaped after that (`sent`).
JobAnswer RunJob(int conn, int link, int runner_fd, const ExecBrokerConfig& config,
                 const CheckedJob& job, Runner& runner) {
  auto prepared = PrepareCall(job, config);
  if (!prepared) return EncodeExecError(prepared.error());
  WarmCall warm{job.argv.argv, job.plan, prepared->runtime.files};
  if (auto s = HandCallToRunner(conn, runner_fd, config, *prepared, warm, runner); !s) {
    return EncodeExecError(s.error());
  }
  prepared->stdin_r.Reset();
  prepared->program.Reset();
  RunningCall call = TakeCall(runner, std::move(prepared->stdin_w));
  PumpEnd end = PumpOutput(conn, call, job.stdin_data, config.limits);
  if (end.done_status) {
    fd_io::SendAll(conn, ipc::EncodeResponse(
                             JobOutcome(std::move(end), config.limits.timeout, job.argv.argv[0])));
    NotifyAnswered(link);
    ReapAfterAnswer(call);
    return JobAnswer(ipc::Response{}, /*already_sent=*/true);
  }
  if (!call.reaped) {
    kill(-call.child, SIGKILL);
    waitpid(call.child, &call.status, 0);
  }
  return JobOutcome(std::move(end), config.limits.timeout, job.argv.argv[0]);
}

// Reads the request of `conn`, checks it and runs it on `runner` (started earlier, or now).
int ServeWithRunner(int conn, int link, int runner_fd, const ExecBrokerConfig& config,
                    Runner& runner) {
  ipc::Response response;
  auto request = ReadJobRequest(conn, config.limits);
  auto checked = [&]() -> Result<CheckedJob> {
    ANVIL_TRY(decoded, DecodeExecCall(std::move(*request)));
    return CheckJob(std::move(*decoded), config.limits);
  };
  if (!request) {
    if (request.error().code == "cancelled") {
      RetireRunner(runner);
      return 0;
    }
    response = EncodeExecError(request.error());
  } else if (auto job = checked(); !job) {
    response = EncodeExecError(job.error());
  } else {
    JobAnswer answer = RunJob(conn, link, runner_fd, config, *job, runner);
    if (answer.sent) {
      ::close(conn);
      return 0;
    }
    response = std::move(answer.response);
  }
  RetireRunner(runner);  // a runner not handed the call (refused request) ends unused
  fd_io::SendAll(conn, ipc::EncodeResponse(response));
  NotifyAnswered(link);
  ::close(conn);
  return 0;
}

}  // namespace

int WarmJobMain(int link, int runner_fd, const ExecBrokerConfig& config) {
  signal(SIGPIPE, SIG_IGN);
  Runner runner;
  if (auto started = SpawnRunner(runner_fd, config)) runner = std::move(*started);
  int conn = -1;
  while (conn < 0) {
    char byte;
    std::vector<int> fds;
    if (ipc::ReceiveWithFds(link, &byte, 1, fds, 1) <= 0) {
      RetireRunner(runner);
      return 0;
    }
    if (!fds.empty()) conn = fds[0];
  }
  // The link stays open: it tells the broker when the call is answered (NotifyAnswered).
  return ServeWithRunner(conn, link, runner_fd, config, runner);
}

}  // namespace anvil::gateway
