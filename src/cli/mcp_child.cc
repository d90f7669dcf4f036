// `anvil mcp`'s children (mcp_server.h): `anvil sandbox --report-fd 3` for run_command and
// `anvil run --json` for a plugin's command, each in a process group of its own, its output
// captured under caps, stopped (SIGTERM, then SIGKILL to the group) on cancel or timeout; and
// the refusals read from the sandbox's report.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <thread>

#include "cli/mcp_server.h"

extern char** environ;

namespace anvil::cli::mcp_server {

ChildOutcome RunChild(const std::string& self, const std::vector<std::string>& argv,
                      std::chrono::milliseconds timeout, bool report_fd,
                      const std::atomic<bool>& cancelled,
                      const std::function<void(const std::string&)>& progress) {
  ChildOutcome outcome;
  int out_pipe[2], err_pipe[2], rep_pipe[2] = {-1, -1};
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return outcome;
  UniqueFd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return outcome;
  UniqueFd err_r(err_pipe[0]), err_w(err_pipe[1]);
  UniqueFd rep_r, rep_w;
  if (report_fd) {
    if (::pipe2(rep_pipe, O_CLOEXEC) != 0) return outcome;
    rep_r.Reset(rep_pipe[0]);
    rep_w.Reset(rep_pipe[1]);
  }
  // fork + exec rather than posix_spawn: the child must die with the thread that started it
  // (PR_SET_PDEATHSIG), so that a server killed or crashed never leaves a command running. The
  // worker thread that forks waits for the child, so the signal never fires early. Between fork
  // and exec only async-signal-safe calls, on what was prepared before the fork.
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const int out_fd = out_w.Get(), err_fd = err_w.Get(), rep_fd = report_fd ? rep_w.Get() : -1;
  const char* path = self.c_str();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(125);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0 || ::dup2(null_fd, STDIN_FILENO) < 0 || ::dup2(out_fd, STDOUT_FILENO) < 0 ||
        ::dup2(err_fd, STDERR_FILENO) < 0 || (rep_fd >= 0 && ::dup2(rep_fd, 3) < 0)) {
      ::_exit(125);
    }
    ::execve(path, cargv.data(), environ);
    ::_exit(127);
  }
  const int rc = pid < 0 ? errno : 0;
  if (pid > 0) ::setpgid(pid, pid);  // both sides: no window where the group is not set
  out_w.Reset();
  err_w.Reset();
  rep_w.Reset();
  if (rc != 0) {
    outcome.err.Append("anvil mcp: cannot start " + self + ": " + std::strerror(rc) + "\n");
    return outcome;
  }
  outcome.spawned = true;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto last_beat = start;
  std::optional<Clock::time_point> killed_at;
  bool killed_hard = false;
  int wait_status = 0;
  bool reaped = false;
  std::optional<Clock::time_point> reaped_at;
  // A reaped pid may be reused: only the group (whose id is not reused while it has members) is
  // signalled then.
  auto stop = [&] {
    if (killed_at) return;
    killed_at = Clock::now();
    if (!reaped) ::kill(pid, SIGTERM);  // the sandbox's supervisor forwards it to the command
  };
  while (true) {
    struct pollfd fds[3];
    nfds_t n = 0;
    UniqueFd* which[3];
    for (UniqueFd* fd : {&out_r, &err_r, &rep_r}) {
      if (*fd) {
        fds[n] = {fd->Get(), POLLIN, 0};
        which[n++] = fd;
      }
    }
    if (!reaped) {
      pid_t w = ::waitpid(pid, &wait_status, WNOHANG);
      if (w == pid) {
        reaped = true;
        reaped_at = Clock::now();
      }
    }
    if (n == 0 && reaped) break;
    if (n == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } else if (::poll(fds, n, 100) > 0) {
      for (nfds_t k = 0; k < n; ++k) {
        if (fds[k].revents == 0) continue;
        char buf[16384];
        ssize_t got = ::read(fds[k].fd, buf, sizeof(buf));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
          which[k]->Reset();
          continue;
        }
        std::string_view bytes(buf, static_cast<std::size_t>(got));
        if (which[k] == &out_r) {
          outcome.out.Append(bytes);
        } else if (which[k] == &err_r) {
          outcome.err.Append(bytes);
        } else if (outcome.report.size() < (std::size_t{1} << 20)) {
          outcome.report.append(bytes);
        }
      }
    }
    const auto now = Clock::now();
    if (cancelled) {
      outcome.cancelled = true;
      stop();
    } else if (now - start >= timeout && !outcome.timed_out) {
      outcome.timed_out = true;
      stop();
    }
    // The child is gone but something it started still holds a pipe: a short grace, then the
    // group is killed like a cancelled call's.
    if (reaped && !killed_at && now - *reaped_at >= kTermGrace) killed_at = now - kTermGrace;
    if (killed_at && !killed_hard && now - *killed_at >= kTermGrace) {
      // The whole group; the sandboxed processes die with their supervisor (PDEATHSIG).
      ::kill(-pid, SIGKILL);
      if (!reaped) ::kill(pid, SIGKILL);
      killed_hard = true;
    }
    // After the hard kill, descendants that left the group may still hold a pipe: stop
    // reading after a grace period rather than hang.
    if (killed_hard && reaped && now - *killed_at >= 2 * kTermGrace) break;
    if (!killed_at && now - last_beat >= std::chrono::seconds(5)) {
      last_beat = now;
      progress(
          "running (" +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - start).count()) +
          " s)");
    }
  }
  if (WIFEXITED(wait_status)) {
    outcome.status = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    outcome.status = 128 + WTERMSIG(wait_status);
  }
  if (outcome.timed_out) outcome.status = 124;
  return outcome;
}

agent::SandboxRun FromReport(const ChildOutcome& child) {
  agent::SandboxRun run;
  run.status = child.status;
  json report = json::parse(child.report, nullptr, false);
  if (!report.is_object()) {
    run.started = false;
    return run;
  }
  run.started = report.value("outcome", std::string()) != "setup_failed";
  if (report.contains("refusals") && report["refusals"].is_array()) {
    for (const auto& r : report["refusals"]) {
      if (!r.is_object()) continue;
      agent::RefusalFact fact;
      const std::string kind = r.value("kind", std::string());
      if (kind == "write") {
        fact.kind = agent::RefusalFact::Kind::kWrite;
        fact.subject = r.value("path", std::string());
        fact.detail = r.value("operation", std::string());
        fact.area = r.value("area", std::string());
        fact.root = r.value("root", std::string());
      } else {
        fact.kind = kind == "network" ? agent::RefusalFact::Kind::kNetwork
                                      : agent::RefusalFact::Kind::kProxy;
        fact.subject = r.value("target", std::string());
        fact.detail = r.value("reason", std::string());
      }
      run.refusals.push_back(std::move(fact));
    }
  }
  return run;
}

}  // namespace anvil::cli::mcp_server
