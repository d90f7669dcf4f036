#include "gateway/exec_broker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <deque>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/sanitizer.h"
#include "ipc/fd_passing.h"
#include "ipc/frame.h"
#include "linux/sandbox_launch.h"
#include "policy/exec_rules.h"

#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

namespace anvil::gateway {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRunnerFd = 4;                      // in the broker and its jobs
constexpr int kChannelFd = 3;                     // in the broker
constexpr int kLinkFd = 5;                        // in a job: its link to the broker
constexpr size_t kMaxRequestOverhead = 1u << 20;  // argv, paths, framing beyond stdin
constexpr auto kTermGrace = std::chrono::milliseconds(500);
constexpr auto kBackstop = std::chrono::seconds(3);  // beyond the runner's own timeout
// Warm jobs the broker keeps (exec_broker.h): two, so that a call that follows the previous
// answer at once still finds one ready while the replacement warms up.
constexpr size_t kWarmJobs = 2;

std::string JoinNul(const std::vector<std::string>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out.push_back('\0');
    out += parts[i];
  }
  return out;
}

std::vector<std::string> SplitNul(const std::string& joined, size_t count) {
  std::vector<std::string> out;
  if (count == 0) return out;
  size_t start = 0;
  while (true) {
    size_t end = joined.find('\0', start);
    if (end == std::string::npos) {
      out.push_back(joined.substr(start));
      break;
    }
    out.push_back(joined.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

Result<size_t> ParseCount(const std::string& text) {
  if (text.empty() || text.size() > 6 || !std::all_of(text.begin(), text.end(), ::isdigit)) {
    return Fail("invalid", "malformed exec request");
  }
  return static_cast<size_t>(std::stoul(text));
}

bool WriteAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      poll(&p, 1, 1000);
      continue;
    }
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

int MillisUntil(Clock::time_point t) {
  auto now = Clock::now();
  if (t <= now) return 0;
  return static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count() +
                          1);
}

// --- job process ------------------------------------------------------------------------------

// Reads the one request of a job connection: bounded in size and time.
Result<ipc::Request> ReadJobRequest(int conn, const ExecLimits& limits) {
  ipc::FrameReader reader(static_cast<uint32_t>(
      std::min<uint64_t>(limits.max_stdin_bytes + kMaxRequestOverhead, ipc::kMaxFrameBytes)));
  auto deadline = Clock::now() + std::chrono::seconds(10);
  char buf[65536];
  while (true) {
    auto frame = reader.Next();
    if (!frame) return tl::unexpected(frame.error());
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

struct CheckedJob {
  const ExecRule* rule = nullptr;
  CheckedArgv argv;
  std::vector<ReadOp> plan;  // see ExecRequest::read_plan
  std::string stdin_data;
};

// The broker's own check: everything the gateway checked, again, with nothing taken on trust.
Result<CheckedJob> CheckJob(const ipc::Request& r, const ExecLimits& limits) {
  if (r.op != "exec" || r.args.size() != 6) return Fail("invalid", "malformed exec request");
  auto nargs = ParseCount(r.args[2]);
  auto npaths = ParseCount(r.args[4]);
  if (!nargs || !npaths) return Fail("invalid", "malformed exec request");
  std::vector<std::string> args = SplitNul(r.args[3], *nargs);
  std::vector<std::string> plan_strings = SplitNul(r.args[5], *npaths);
  if (args.size() != *nargs || plan_strings.size() != *npaths) {
    return Fail("invalid", "malformed exec request");
  }
  if (r.args[1].size() > limits.max_stdin_bytes) {
    return Fail("limit",
                "sys.exec stdin over " + std::to_string(limits.max_stdin_bytes) + " bytes");
  }
  auto rule = LookupExecRule(r.args[0]);
  if (!rule) return tl::unexpected(rule.error());
  auto checked = CheckExecArgv(**rule, args);
  if (!checked) return tl::unexpected(checked.error());
  auto plan = DecodeReadPlan(plan_strings);
  if (!plan) return tl::unexpected(plan.error());
  // The shape only: which files the grant allows is the gateway's decision (it holds the grant
  // and the workspace); the plan cannot name anything outside the workspace.
  if (auto s = ValidateReadPlan(*plan); !s) return tl::unexpected(s.error());
  return CheckedJob{*rule, std::move(*checked), std::move(*plan), r.args[1]};
}

// Moves `fd` to exactly `target` in a child about to exec (clears close-on-exec).
void PlaceFd(int fd, int target) {
  if (fd == target) {
    fcntl(fd, F_SETFD, 0);
  } else {
    dup2(fd, target);
  }
}

// anvil-exec-runner's command line and environment in warm mode. Nothing here depends on a
// call. Built before the runner's process exists: that process shares the job's memory until its
// exec (vfork), so it makes system calls only.
struct RunnerCommand {
  std::vector<std::string> args, env;
  std::vector<char*> argv, envp;
};

void BuildRunnerCommand(const ExecBrokerConfig& config, RunnerCommand& c) {
  const ExecLimits& l = config.limits;
  char timeout[32];
  std::snprintf(timeout, sizeof(timeout), "%.3f",
                std::max<double>(0.001, static_cast<double>(l.timeout.count()) / 1000.0));
  c.args = {"anvil-exec-runner",
            "--policy",
            "read-only",
            "--read-access",
            "restricted",
            "--network",
            "none",
            "--cwd",
            config.workspace,
            "--call-fd",
            "3",
            "--report-fd",
            "4",
            "--minimal-env",
            "--limit",
            "nproc=" + std::to_string(l.max_processes),
            "--limit",
            "tmp=" + std::to_string(l.tmp_bytes),
            "--limit",
            "data=" + std::to_string(l.max_memory_bytes),
            "--runtime-from-call",
            "--timeout",
            timeout};
  if (!config.fail_layer_for_testing.empty()) {
    c.args.push_back("--unsafe-test-fail-layer");
    c.args.push_back(config.fail_layer_for_testing);
    c.env.push_back("ANVIL_ALLOW_TEST_FAULTS=1");
  }
  for (auto& a : c.args) c.argv.push_back(a.data());
  c.argv.push_back(nullptr);
  for (auto& e : c.env) c.envp.push_back(e.data());
  c.envp.push_back(nullptr);
}

// The runner's process (a vfork child of the job: system calls only, no allocation): descriptors
// 0-4 in place (stdin /dev/null, stdout, stderr, the call channel, the report), then
// anvil-exec-runner.
[[noreturn]] void ExecRunner(int runner_fd, char* const* argv, char* const* envp, int in_r,
                             int out_w, int err_w, int call_fd, int report_w) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // Lift every source above the targets first, so no dup2 overwrites a descriptor still needed.
  int src[] = {in_r, out_w, err_w, call_fd, report_w, runner_fd};
  int lifted[6];
  for (int i = 0; i < 6; ++i) {
    lifted[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 64);
    if (lifted[i] < 0) _exit(125);
  }
  PlaceFd(lifted[0], 0);
  PlaceFd(lifted[1], 1);
  PlaceFd(lifted[2], 2);
  PlaceFd(lifted[3], 3);
  PlaceFd(lifted[4], 4);
  int runner = fcntl(lifted[5], F_DUPFD_CLOEXEC, 5);
  if (runner < 0) _exit(125);
  // Everything else closes at exec.
  syscall(SYS_close_range, 5, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */);
  fcntl(runner, F_SETFD, FD_CLOEXEC);
  syscall(SYS_execveat, runner, "", argv, envp, AT_EMPTY_PATH);
  const char msg[] = "anvil exec broker: cannot start anvil-exec-runner\n";
  ssize_t ignored = ::write(2, msg, sizeof(msg) - 1);
  (void)ignored;
  _exit(125);
}

// Starts the runner's process. vfork: the job's address space is the broker's (a fork of the
// gateway); copying its page tables for a child that only execs, and tearing them down again,
// would be most of what starting the runner costs. Safe here: the job is single-threaded,
// installs no signal handlers, and is suspended until the child's exec (or _exit); the child
// makes system calls only. A frame of its own, so that nothing of the caller's lives across the
// call that returns twice.
[[gnu::noinline]] pid_t StartRunnerProcess(int runner_fd, char* const* argv, char* const* envp,
                                           std::array<int, 5> fds) {
#if ANVIL_SANITIZED
  // Sanitizer runtimes keep shadow state for the stack the vfork child would share: fork.
  pid_t child = fork();
#else
  pid_t child = vfork();
#endif
  if (child == 0) ExecRunner(runner_fd, argv, envp, fds[0], fds[1], fds[2], fds[3], fds[4]);
  return child;
}

// A started anvil-exec-runner waiting for its one call (warm), seen from its job process.
struct Runner {
  pid_t pid = -1;
  UniqueFd call;  // SOCK_STREAM to the sandbox's init
  UniqueFd out_r, err_r, rep_r;
};

// Starts a runner: namespaces, mount view, pids cgroup, all before any call exists.
Result<Runner> SpawnRunner(int runner_fd, const ExecBrokerConfig& config) {
  UniqueFd dev_null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!dev_null) return SysFail("io", "open /dev/null");
  int out[2], err[2], rep[2], call[2];
  if (pipe2(out, O_CLOEXEC) != 0) return SysFail("io", "pipe failed");
  UniqueFd out_r(out[0]), out_w(out[1]);
  if (pipe2(err, O_CLOEXEC) != 0) return SysFail("io", "pipe failed");
  UniqueFd err_r(err[0]), err_w(err[1]);
  if (pipe2(rep, O_CLOEXEC) != 0) return SysFail("io", "pipe failed");
  UniqueFd rep_r(rep[0]), rep_w(rep[1]);
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, call) != 0) {
    return SysFail("io", "socketpair failed");
  }
  UniqueFd call_mine(call[0]), call_theirs(call[1]);
  RunnerCommand command;
  BuildRunnerCommand(config, command);
  pid_t child = StartRunnerProcess(
      runner_fd, command.argv.data(), command.envp.data(),
      {dev_null.Get(), out_w.Get(), err_w.Get(), call_theirs.Get(), rep_w.Get()});
  if (child < 0) return SysFail("io", "fork failed");
  setpgid(child, child);  // also done in the child; whichever runs first
  // A runner stuck in its set-up must not hold the call forever.
  timeval send_timeout{10, 0};
  setsockopt(call_mine.Get(), SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof(send_timeout));
  for (int fd : {out_r.Get(), err_r.Get(), rep_r.Get()}) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  Runner r;
  r.pid = child;
  r.call = std::move(call_mine);
  r.out_r = std::move(out_r);
  r.err_r = std::move(err_r);
  r.rep_r = std::move(rep_r);
  return r;
}

// Reads what is left of a runner's report once it is gone (bounded wait), and reaps it.
std::string FinishedRunnerReport(Runner& r) {
  auto until = Clock::now() + std::chrono::seconds(2);
  int status = 0;
  while (waitpid(r.pid, &status, WNOHANG) == 0) {
    if (Clock::now() >= until) {
      kill(-r.pid, SIGKILL);
      kill(r.pid, SIGKILL);
      waitpid(r.pid, &status, 0);
      break;
    }
    pollfd p{r.rep_r.Get(), POLLIN, 0};
    poll(&p, 1, 10);
  }
  r.pid = -1;
  std::string report;
  char buf[4096];
  while (true) {
    pollfd p{r.rep_r.Get(), POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) break;
    ssize_t n = ::read(r.rep_r.Get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || report.size() > 64 * 1024) break;
    report.append(buf, static_cast<size_t>(n));
  }
  return report;
}

// An unused runner: EOF on its call channel ends it quietly (its pids cgroup removed), then it
// is reaped; one that does not end in time is killed with its group.
void RetireRunner(Runner& r) {
  if (r.pid <= 0) return;
  r.call.Reset();
  FinishedRunnerReport(r);
}

ipc::Response JobError(const Error& e) { return ipc::Response::Error(1, e.code, e.message); }

// The answer of a call, and whether it was already written to the connection (see RunJob).
struct JobAnswer {
  JobAnswer(ipc::Response r, bool already_sent = false)  // NOLINT: implicit by design
      : response(std::move(r)), sent(already_sent) {}
  ipc::Response response;
  bool sent = false;
};

ipc::Response OkResponse(const ExecResult& result) {
  return ipc::Response{
      1,
      true,
      {std::to_string(result.code), result.stdout_data, result.stderr_data,
       result.stdout_truncated ? "1" : "0", result.stderr_truncated ? "1" : "0", result.limit}};
}

// Runs the checked call on `runner`. When the sandbox's init says the command is over
// (kWarmCallDone) the answer is written to `conn` at once, before the runner has torn the
// sandbox down and exited; the runner is reaped after that (`sent`).
// Tells the broker (on the job's link; -1: none) that the call is answered: the next warm job
// starts now, not while this call runs.
void NotifyAnswered(int link) {
  if (link < 0) return;
  char byte = 'A';
  ssize_t ignored = ::send(link, &byte, 1, MSG_NOSIGNAL);
  (void)ignored;
}

JobAnswer RunJob(int conn, int link, int runner_fd, const ExecBrokerConfig& config,
                 const CheckedJob& job, Runner& runner) {
  const ExecLimits& limits = config.limits;
  UniqueFd program(::open(job.argv.program_path.c_str(), O_PATH | O_CLOEXEC));
  struct stat st {};
  if (!program || ::fstat(program.Get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return JobError(Error{"not_found", "executable missing: " + job.argv.program_path, 0});
  }
  // No stdin: /dev/null, not an empty pipe — rg searches a piped stdin instead of the
  // workspace when no path is given.
  UniqueFd stdin_r, in_w;
  if (job.stdin_data.empty()) {
    stdin_r = UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!stdin_r) return JobError(Error{"io", "open /dev/null", errno});
  } else {
    int in[2];
    if (pipe2(in, O_CLOEXEC) != 0) return JobError(Error{"io", "pipe failed", errno});
    stdin_r = UniqueFd(in[0]);
    in_w = UniqueFd(in[1]);
  }
  // The tool's own files (executable, loader, libraries): resolved at the broker's start, again
  // if the executable changed since (an upgrade may have changed its libraries).
  auto identity = IdentityOf(program.Get());
  if (!identity) return JobError(identity.error());
  ToolRuntime runtime;
  auto cached = config.tool_runtimes.find(job.argv.program_path);
  if (cached != config.tool_runtimes.end() && cached->second.identity == *identity) {
    runtime = cached->second;
  } else {
    auto resolved = ResolveToolRuntime(job.argv.program_path, job.rule->runtime_files);
    if (!resolved) {
      return JobError(
          Error{"sandbox", "sys.exec did not run (fail closed): " + resolved.error().message, 0});
    }
    runtime = std::move(*resolved);
  }
  WarmCall call{job.argv.argv, job.plan, runtime.files};
  auto kill_runner = [&] {
    if (runner.pid > 0) {
      kill(-runner.pid, SIGKILL);
      kill(runner.pid, SIGKILL);
      waitpid(runner.pid, nullptr, 0);
      runner.pid = -1;
    }
  };
  // Hand the call to the warm runner. One that died while waiting (killed) is replaced once;
  // one whose set-up failed fails the call closed with the layer its report names.
  for (int attempt = 0;; ++attempt) {
    if (runner.pid <= 0) {
      auto fresh = SpawnRunner(runner_fd, config);
      if (!fresh) return JobError(fresh.error());
      runner = std::move(*fresh);
    }
    bool taken = false;
    if (SendWarmCall(runner.call.Get(), program.Get(), stdin_r.Get(), call)) {
      auto until = Clock::now() + std::chrono::seconds(30);
      while (true) {
        pollfd fds[2] = {{runner.call.Get(), POLLIN, 0}, {conn, POLLIN | POLLRDHUP, 0}};
        int n = poll(fds, 2, MillisUntil(until));
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) {
          kill_runner();
          return JobError(Error{"sandbox",
                                "sys.exec did not run (fail closed): the runner did not take the "
                                "call in time",
                                0});
        }
        if (fds[1].revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) {
          kill_runner();
          return JobError(Error{"cancelled", "sys.exec cancelled", 0});
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
    if (taken) break;
    std::string report = FinishedRunnerReport(runner);
    nlohmann::json parsed = nlohmann::json::parse(report, nullptr, /*allow_exceptions=*/false);
    std::string outcome = parsed.is_object() ? parsed.value("outcome", "") : "";
    std::string error = parsed.is_object() ? parsed.value("error", "") : "";
    if (outcome == "setup_failed" || attempt >= 1) {
      std::string why = !error.empty() ? error : "the runner ended before it took the call";
      return JobError(Error{"sandbox", "sys.exec did not run (fail closed): " + why, 0});
    }
  }
  // Stays open: init writes kWarmCallDone and the wait status on it when the command is over.
  UniqueFd done_ch = std::move(runner.call);
  fcntl(done_ch.Get(), F_SETFL, fcntl(done_ch.Get(), F_GETFL) | O_NONBLOCK);
  std::string done_msg;
  stdin_r.Reset();
  program.Reset();
  const pid_t child = runner.pid;
  UniqueFd out_r = std::move(runner.out_r), err_r = std::move(runner.err_r),
           rep_r = std::move(runner.rep_r);
  runner.pid = -1;
  UniqueFd child_pidfd(static_cast<int>(syscall(SYS_pidfd_open, child, 0)));
  if (in_w) fcntl(in_w.Get(), F_SETFL, fcntl(in_w.Get(), F_GETFL) | O_NONBLOCK);

  ExecResult result;
  std::string report;
  size_t stdin_off = 0;
  bool cancelled = false;
  std::optional<Clock::time_point> term_sent;
  bool killed = false;
  auto deadline = Clock::now() + limits.timeout + kBackstop;
  bool backstop_hit = false;
  auto stop = [&] {
    if (!term_sent) {
      // The runner forwards SIGTERM into the sandbox and cleans up (its pids cgroup) on exit.
      kill(child, SIGTERM);
      term_sent = Clock::now();
    }
  };
  auto drain = [&](UniqueFd& fd, std::string& into, uint64_t cap, bool& truncated,
                   const char* name) {
    char buf[65536];
    while (fd) {
      ssize_t r = ::read(fd.Get(), buf, sizeof(buf));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && errno == EAGAIN) return;
      if (r <= 0) {
        fd.Reset();
        return;
      }
      size_t room = into.size() < cap ? cap - into.size() : 0;
      into.append(buf, std::min<size_t>(room, static_cast<size_t>(r)));
      if (static_cast<size_t>(r) > room && !truncated) {
        truncated = true;
        if (result.limit.empty()) result.limit = name;
        stop();
      }
    }
  };
  int status = 0;
  bool reaped = false;
  bool done = false;  // kWarmCallDone: the command is over and nothing of the sandbox runs
  while (true) {
    bool open_out = out_r || err_r || rep_r;
    if (!open_out && reaped) break;
    if (!reaped) {
      pid_t w = waitpid(child, &status, WNOHANG);
      if (w == child) reaped = true;
    }
    if (term_sent && !killed && Clock::now() - *term_sent >= kTermGrace) {
      kill(-child, SIGKILL);
      kill(child, SIGKILL);
      killed = true;
    }
    if (!term_sent && Clock::now() >= deadline) {
      backstop_hit = true;
      stop();
    }
    pollfd fds[7] = {{cancelled ? -1 : conn, POLLIN | POLLRDHUP, 0},
                     {in_w ? in_w.Get() : -1, POLLOUT, 0},
                     {out_r ? out_r.Get() : -1, POLLIN, 0},
                     {err_r ? err_r.Get() : -1, POLLIN, 0},
                     {rep_r ? rep_r.Get() : -1, POLLIN, 0},
                     {reaped || !child_pidfd ? -1 : child_pidfd.Get(), POLLIN, 0},
                     {done_ch ? done_ch.Get() : -1, POLLIN, 0}};
    // The runner's exit wakes the poll (pidfd): no timed wait between its last output and the
    // answer. The 50 ms tick only serves the kill grace and a kernel without pidfds.
    int wait_ms = reaped && !open_out ? 0 : 50;
    if (!term_sent) wait_ms = std::min(wait_ms, MillisUntil(deadline));
    int n = poll(fds, 7, wait_ms);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    if (fds[0].revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) {
      // The gateway never sends more than the request: anything here is a cancel.
      cancelled = true;
      stop();
      fds[0].fd = -1;
    }
    if (in_w && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t w = ::write(in_w.Get(), job.stdin_data.data() + stdin_off,
                          std::min<size_t>(job.stdin_data.size() - stdin_off, 65536));
      if (w > 0) stdin_off += static_cast<size_t>(w);
      if ((w < 0 && errno != EAGAIN && errno != EINTR) || stdin_off == job.stdin_data.size()) {
        in_w.Reset();
      }
    }
    if (fds[2].revents)
      drain(out_r, result.stdout_data, limits.max_stdout_bytes, result.stdout_truncated, "stdout");
    if (fds[3].revents)
      drain(err_r, result.stderr_data, limits.max_stderr_bytes, result.stderr_truncated, "stderr");
    if (fds[4].revents) {
      bool unused = false;
      drain(rep_r, report, 64 * 1024, unused, "report");
    }
    if (fds[6].revents) {
      char buf[16];
      ssize_t r = ::read(done_ch.Get(), buf, sizeof(buf));
      if (r > 0 && done_msg.size() < 16) done_msg.append(buf, static_cast<size_t>(r));
      if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) done_ch.Reset();
      if (done_msg.size() >= 1 + sizeof(int32_t)) {
        done_ch.Reset();
        done = done_msg[0] == kWarmCallDone && done_msg.size() == 1 + sizeof(int32_t);
      }
    }
    if (done && !term_sent && !cancelled) {
      // Every writer of the output pipes inside the sandbox is gone: what they wrote is in the
      // pipes now. Only the runner's own copies keep them open (it writes nothing more there
      // on this path).
      drain(out_r, result.stdout_data, limits.max_stdout_bytes, result.stdout_truncated, "stdout");
      drain(err_r, result.stderr_data, limits.max_stderr_bytes, result.stderr_truncated, "stderr");
      if (!term_sent) break;  // a cap passed while draining takes the usual path
    }
  }
  if (done && !term_sent && !cancelled) {
    int32_t wait_status = 0;
    std::memcpy(&wait_status, done_msg.data() + 1, sizeof(wait_status));
    result.code = WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : WEXITSTATUS(wait_status);
    WriteAll(conn, ipc::EncodeResponse(OkResponse(result)));
    NotifyAnswered(link);
    // The runner tears the sandbox down (namespaces, pids cgroup) after the answer; it is
    // reaped here, within a bound.
    pollfd p{child_pidfd ? child_pidfd.Get() : -1, POLLIN, 0};
    if (!reaped && waitpid(child, &status, WNOHANG) == 0) {
      if (!child_pidfd || poll(&p, 1, 5000) <= 0 || waitpid(child, &status, WNOHANG) != child) {
        kill(-child, SIGKILL);
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
      }
    }
    return JobAnswer(ipc::Response{}, /*already_sent=*/true);
  }
  if (!reaped) {
    kill(-child, SIGKILL);
    waitpid(child, &status, 0);
  }
  if (cancelled) return JobError(Error{"cancelled", "sys.exec cancelled", 0});

  nlohmann::json parsed = nlohmann::json::parse(report, nullptr, /*allow_exceptions=*/false);
  std::string outcome = parsed.is_object() ? parsed.value("outcome", "") : "";
  std::string error = parsed.is_object() ? parsed.value("error", "") : "";
  if (!result.limit.empty()) {
    // Stopped by us at an output cap: what was read is the answer, marked truncated.
    result.code = parsed.is_object() ? parsed.value("exit_code", 0) : 0;
    return ipc::Response{
        1,
        true,
        {std::to_string(result.code), std::move(result.stdout_data), std::move(result.stderr_data),
         result.stdout_truncated ? "1" : "0", result.stderr_truncated ? "1" : "0", result.limit}};
  }
  if (outcome == "timed_out" || backstop_hit) {
    char secs[32];
    std::snprintf(secs, sizeof(secs), "%g", static_cast<double>(limits.timeout.count()) / 1000.0);
    return JobError(Error{"timeout",
                          "sys.exec " + job.argv.argv[0] + " passed its " + secs +
                              " s limit; the whole process tree was killed",
                          0});
  }
  if (outcome == "setup_failed" || outcome.empty()) {
    std::string why = !error.empty() ? error : "the runner ended without a report";
    return JobError(Error{"sandbox", "sys.exec did not run (fail closed): " + why, 0});
  }
  if (outcome == "exec_failed") {
    return JobError(Error{"io", "sys.exec could not start " + job.argv.argv[0] + ": " + error, 0});
  }
  result.code = parsed.value("exit_code", 0);
  return ipc::Response{
      1,
      true,
      {std::to_string(result.code), std::move(result.stdout_data), std::move(result.stderr_data),
       result.stdout_truncated ? "1" : "0", result.stderr_truncated ? "1" : "0", result.limit}};
}

// Reads the request of `conn`, checks it and runs it on `runner` (started earlier, or now).
int ServeWithRunner(int conn, int link, int runner_fd, const ExecBrokerConfig& config,
                    Runner& runner) {
  ipc::Response response;
  auto request = ReadJobRequest(conn, config.limits);
  if (!request) {
    if (request.error().code == "cancelled") {
      RetireRunner(runner);
      return 0;
    }
    response = JobError(request.error());
  } else if (auto job = CheckJob(*request, config.limits); !job) {
    response = JobError(job.error());
  } else {
    JobAnswer answer = RunJob(conn, link, runner_fd, config, *job, runner);
    if (answer.sent) {
      ::close(conn);
      return 0;
    }
    response = std::move(answer.response);
  }
  RetireRunner(runner);  // a runner not handed the call (refused request) ends unused
  WriteAll(conn, ipc::EncodeResponse(response));
  NotifyAnswered(link);
  ::close(conn);
  return 0;
}

// A warm job: starts its runner at once, then waits for the one connection the broker hands
// it on `link`. EOF on `link` (the broker is shutting down): the unused runner ends quietly.
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

// --- broker process ---------------------------------------------------------------------------

// A warm job of the broker (see exec_broker.h): forked ahead of the call it will serve.
struct WarmJob {
  pid_t pid = -1;
  UniqueFd link;   // SOCK_SEQPACKET: carries the call's connection
  UniqueFd pidfd;  // readable when the warm job died before a call
  Clock::time_point started;
};

WarmJob StartWarmJob(const ExecBrokerConfig& config) {
  WarmJob w;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return w;
  UniqueFd mine(sv[0]), theirs(sv[1]);
  pid_t broker = getpid();
  pid_t pid = fork();
  if (pid < 0) return w;
  if (pid == 0) {
    // Only the runner (4) and this job's link (5) stay: not the broker's channel, nor the
    // broker's ends of the other jobs' links (a warm job must see EOF when the broker closes
    // its link at shutdown).
    int link = theirs.Get() == kLinkFd ? kLinkFd : dup3(theirs.Get(), kLinkFd, O_CLOEXEC);
    if (link != kLinkFd) _exit(1);
    ::close(kChannelFd);
    syscall(SYS_close_range, kLinkFd + 1, ~0U, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != broker) _exit(0);
    _exit(WarmJobMain(kLinkFd, kRunnerFd, config));
  }
  w.pid = pid;
  w.link = std::move(mine);
  w.pidfd = UniqueFd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  w.started = Clock::now();
  return w;
}

bool HandOver(const WarmJob& w, int conn) {
  if (w.pid <= 0) return false;
  char byte = 'c';
  return ipc::SendWithFds(w.link.Get(), &byte, 1, {&conn, 1}) == 1;
}

// Each table tool's runtime files, once, before the first warm job is forked (they inherit the
// result). A tool that is not installed or cannot be resolved is left out: its calls resolve it
// again and fail closed with the reason.
void ResolveToolRuntimes(ExecBrokerConfig& config) {
  for (const ExecRule& rule : ExecPolicyTable()) {
    for (const auto& candidate : rule.candidate_paths) {
      if (!ExecutableExistsOnHost(candidate)) continue;
      if (auto rt = ResolveToolRuntime(candidate, rule.runtime_files)) {
        config.tool_runtimes[candidate] = std::move(*rt);
      }
      break;
    }
  }
}

[[noreturn]] void BrokerMain(ExecBrokerConfig config, pid_t gateway) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != gateway) _exit(0);
  prctl(PR_SET_NAME, "anvil-exec-brkr");
  prctl(PR_SET_DUMPABLE, 0);
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGCHLD, SIG_DFL);
  syscall(SYS_close_range, 5, ~0U, 0);
  ResolveToolRuntimes(config);
  uint32_t live = 0;  // jobs serving a call (warm jobs are not counted)
  const uint32_t max_live = std::max<uint32_t>(1, config.limits.max_concurrent) * 2;
  std::deque<WarmJob> pool;         // oldest (most likely ready) first
  std::vector<UniqueFd> answering;  // links of jobs whose call is not answered yet
  // A warm job that died young (its runner cannot start) is not replaced until the next call,
  // so that the broker does not spin.
  bool refill_on_call = false;
  // A call's warm job is replaced once the call is answered: while calls run, fewer stand by.
  auto refill = [&] {
    while (pool.size() + answering.size() < kWarmJobs) pool.push_back(StartWarmJob(config));
  };
  auto drop = [](WarmJob& w) {
    if (w.pid > 0) {
      kill(w.pid, SIGKILL);
      waitpid(w.pid, nullptr, 0);
    }
    w = WarmJob{};
  };
  refill();
  while (true) {
    while (true) {
      pid_t w = waitpid(-1, nullptr, WNOHANG);
      if (w <= 0) break;
      bool was_warm = false;
      for (auto& job : pool) {
        if (job.pid == w) {
          job.pid = -1;
          was_warm = true;
        }
      }
      if (!was_warm && live > 0) --live;
    }
    for (auto it = pool.begin(); it != pool.end();) {
      bool dead = it->pid <= 0;
      if (!dead && it->pidfd) {
        pollfd p{it->pidfd.Get(), POLLIN, 0};
        dead = poll(&p, 1, 0) > 0;
      }
      if (!dead) {
        ++it;
        continue;
      }
      // Killed while waiting: replaced below, unless it died young.
      if (Clock::now() - it->started < std::chrono::seconds(1)) refill_on_call = true;
      drop(*it);
      it = pool.erase(it);
    }
    if (!refill_on_call) refill();
    std::vector<pollfd> fds = {{kChannelFd, POLLIN, 0}};
    for (const auto& job : pool) fds.push_back({job.pidfd ? job.pidfd.Get() : -1, POLLIN, 0});
    const size_t links_at = fds.size();
    for (const auto& link : answering) fds.push_back({link.Get(), POLLIN, 0});
    int r = poll(fds.data(), fds.size(), live > 0 ? 100 : -1);
    if (r < 0 && errno != EINTR) _exit(1);
    if (r <= 0) continue;
    for (size_t i = fds.size(); i-- > links_at;) {
      // A call was answered (or its job ended): its warm job is replaced now, not while the
      // call ran, so that the set-up does not take CPU from it (refill() above, next round).
      if (fds[i].revents)
        answering.erase(answering.begin() + static_cast<std::ptrdiff_t>(i - links_at));
    }
    if (!(fds[0].revents)) continue;
    char byte;
    std::vector<int> passed;
    ssize_t n = ipc::ReceiveWithFds(kChannelFd, &byte, 1, passed, 1);
    if (n <= 0) {
      // The gateway is gone or shutting down: the warm jobs retire their runners (which
      // removes their pids cgroups); running jobs and runners die with us (PDEATHSIG).
      for (auto& job : pool) job.link.Reset();
      auto until = Clock::now() + std::chrono::milliseconds(500);
      for (auto& job : pool) {
        while (job.pid > 0 && waitpid(job.pid, nullptr, WNOHANG) == 0 && Clock::now() < until) {
          pollfd wp{job.pidfd.Get(), POLLIN, 0};
          poll(&wp, 1, 10);
        }
      }
      _exit(0);
    }
    if (passed.empty()) continue;
    int conn = passed[0];
    if (live >= max_live) {
      ::close(conn);  // the gateway side sees EOF: an io error for that call
      continue;
    }
    refill_on_call = false;
    // The oldest warm job takes the call; one that cannot (died) is dropped; with none left,
    // one is started for this call.
    bool handed = false;
    while (!handed) {
      if (pool.empty()) pool.push_back(StartWarmJob(config));
      WarmJob job = std::move(pool.front());
      pool.pop_front();
      if (HandOver(job, conn)) {
        handed = true;
        // Its replacement starts when this call is answered (its link becomes readable).
        answering.push_back(std::move(job.link));
        ++live;
      } else {
        bool fresh = Clock::now() - job.started < std::chrono::milliseconds(100);
        drop(job);
        if (fresh) break;  // a job started for this very call failed: give up on the call
      }
    }
    ::close(conn);
  }
}

}  // namespace

int ServeExecJob(int conn, int runner_fd, const ExecBrokerConfig& config) {
  signal(SIGPIPE, SIG_IGN);
  Runner runner;
  if (auto started = SpawnRunner(runner_fd, config)) runner = std::move(*started);
  return ServeWithRunner(conn, -1, runner_fd, config, runner);
}

Result<std::unique_ptr<ExecBroker>> ExecBroker::Start(const ExecBrokerConfig& config) {
  UniqueFd runner(::open(config.runner_path.c_str(), O_PATH | O_CLOEXEC));
  struct stat st {};
  if (!runner || ::fstat(runner.Get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return SysFail("not_found", "anvil-exec-runner not found at " + config.runner_path);
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return SysFail("io", "exec broker socketpair");
  }
  UniqueFd mine(sv[0]), theirs(sv[1]);
  pid_t gateway = getpid();
  pid_t pid = fork();
  if (pid < 0) return SysFail("io", "fork exec broker");
  if (pid == 0) {
    // Exactly two descriptors survive: the channel (3) and the runner (4).
    int ch = fcntl(theirs.Get(), F_DUPFD_CLOEXEC, 64);
    int rn = fcntl(runner.Get(), F_DUPFD_CLOEXEC, 64);
    if (ch < 0 || rn < 0 || dup3(ch, kChannelFd, O_CLOEXEC) < 0 ||
        dup3(rn, kRunnerFd, O_CLOEXEC) < 0) {
      _exit(1);
    }
    int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
      dup2(null, 0);
      dup2(null, 1);
    }
    BrokerMain(config, gateway);
  }
  return std::unique_ptr<ExecBroker>(new ExecBroker(std::move(mine), pid, config.limits));
}

ExecBroker::~ExecBroker() {
  channel_.Reset();  // EOF: the broker retires its warm runner and exits
  if (pid_ > 0) {
    auto until = Clock::now() + std::chrono::milliseconds(700);
    while (waitpid(pid_, nullptr, WNOHANG) == 0) {
      if (Clock::now() >= until) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        break;
      }
      usleep(2000);
    }
  }
}

Result<ExecResult> ExecBroker::Run(const ExecRequest& request,
                                   const std::atomic<bool>* cancelled) const {
  struct Slot {
    std::atomic<uint32_t>& n;
    ~Slot() { n.fetch_sub(1); }
  } slot{running_};
  if (running_.fetch_add(1) >= limits_.max_concurrent) {
    return Fail("busy", "sys.exec: " + std::to_string(limits_.max_concurrent) +
                            " commands already running in this session; try again");
  }
  if (request.stdin_data.size() > limits_.max_stdin_bytes) {
    return Fail("limit",
                "sys.exec stdin over " + std::to_string(limits_.max_stdin_bytes) + " bytes");
  }
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0) {
    return SysFail("io", "sys.exec socketpair");
  }
  UniqueFd conn(sp[0]), theirs(sp[1]);
  const char byte = 'x';
  const int fd = theirs.Get();
  if (ipc::SendWithFds(channel_.Get(), &byte, 1, {&fd, 1}) != 1) {
    return SysFail("io", "sys.exec: the exec broker is gone");
  }
  theirs.Reset();
  ipc::Request wire;
  wire.id = 1;
  wire.op = "exec";
  wire.args = {request.program,
               request.stdin_data,
               std::to_string(request.args.size()),
               JoinNul(request.args),
               std::to_string(2 * request.read_plan.size()),
               JoinNul(EncodeReadPlan(request.read_plan))};
  fcntl(conn.Get(), F_SETFL, O_NONBLOCK);
  std::string frame = ipc::EncodeRequest(wire);
  auto is_cancelled = [&] { return cancelled && cancelled->load(std::memory_order_acquire); };
  auto deadline = Clock::now() + limits_.timeout + kBackstop + std::chrono::seconds(2);
  size_t off = 0;
  while (off < frame.size()) {
    if (is_cancelled()) return Fail("cancelled", "sys.exec cancelled");
    ssize_t n = ::send(conn.Get(), frame.data() + off, frame.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      pollfd p{conn.Get(), POLLOUT, 0};
      poll(&p, 1, 50);
      continue;
    }
    // The job answered early (a refused request) and closed: read that answer below.
    break;
  }
  ipc::FrameReader reader(ipc::kMaxFrameBytes);
  char buf[65536];
  while (true) {
    auto next = reader.Next();
    if (!next) return Fail("io", "sys.exec: malformed answer from the exec broker");
    if (*next) {
      auto response = ipc::DecodeResponse((*next)->body);
      if (!response) return Fail("io", "sys.exec: malformed answer from the exec broker");
      if (!response->ok) {
        return tl::unexpected(Error{response->fields.size() > 0
                                        ? ErrorCode::FromWire(response->fields[0])
                                        : ErrorCode("io"),
                                    response->fields.size() > 1 ? response->fields[1] : "", 0});
      }
      const auto& f = response->fields;
      if (f.size() != 6) return Fail("io", "sys.exec: malformed answer from the exec broker");
      ExecResult result;
      result.code = std::atoi(f[0].c_str());
      result.stdout_data = f[1];
      result.stderr_data = f[2];
      result.stdout_truncated = f[3] == "1";
      result.stderr_truncated = f[4] == "1";
      result.limit = f[5];
      return result;
    }
    if (is_cancelled()) return Fail("cancelled", "sys.exec cancelled");
    if (Clock::now() >= deadline) {
      return Fail("timeout", "sys.exec: no answer from the exec broker in time");
    }
    pollfd p{conn.Get(), POLLIN, 0};
    int r = poll(&p, 1, 50);
    if (r <= 0) continue;
    ssize_t n = ::recv(conn.Get(), buf, sizeof(buf), 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return Fail("io", "sys.exec: the exec broker closed the call without an answer");
    reader.Append(buf, static_cast<size_t>(n));
  }
}

}  // namespace anvil::gateway
