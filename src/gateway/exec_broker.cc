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
#include <cerrno>
#include <deque>
#include <vector>

#include "common/forked_child.h"
#include "common/syscalls.h"
#include "gateway/exec_job.h"
#include "ipc/fd_passing.h"
#include "ipc/frame.h"
#include "policy/exec_rules.h"

namespace anvil::gateway {
namespace {

constexpr int kRunnerFd = 4;   // in the broker and its jobs
constexpr int kChannelFd = 3;  // in the broker
constexpr int kLinkFd = 5;     // in a job: its link to the broker
// Warm jobs the broker keeps (exec_broker.h): two, so that a call that follows the previous
// answer at once still finds one ready while the replacement warms up.
constexpr size_t kWarmJobs = 2;

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
    RunForkedChild([&config] { return WarmJobMain(kLinkFd, kRunnerFd, config); });
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
    RunForkedChild([&config, gateway]() -> int { BrokerMain(config, gateway); });
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
  fcntl(conn.Get(), F_SETFL, O_NONBLOCK);
  std::string frame = ipc::EncodeRequest(EncodeExecCall(request));
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
      return DecodeExecAnswer(std::move(*response));
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
