#include "gateway/exec_warm_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <vector>

#include "common/sanitizer.h"
#include "common/syscalls.h"

namespace anvil::gateway {
namespace {

using Clock = std::chrono::steady_clock;

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
  // rg and fd share no memory through /dev/shm: theirs is as small as their /tmp, not the size
  // a command's view gets from the memory ceiling.
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
            "shm=" + std::to_string(l.tmp_bytes),
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

}  // namespace

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

void RetireRunner(Runner& r) {
  if (r.pid <= 0) return;
  r.call.Reset();
  FinishedRunnerReport(r);
}

void KillRunner(Runner& r) {
  if (r.pid > 0) {
    kill(-r.pid, SIGKILL);
    kill(r.pid, SIGKILL);
    waitpid(r.pid, nullptr, 0);
    r.pid = -1;
  }
}

}  // namespace anvil::gateway
