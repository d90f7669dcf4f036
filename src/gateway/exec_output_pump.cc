// The output pump of an exec job (exec_job.h): the loop between the call's hand-over and its
// outcome.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/syscalls.h"
#include "gateway/exec_job.h"
#include "linux/sandbox_launch.h"

namespace anvil::gateway {
namespace {

// Reads of one pipe per round of the loop (64 KiB each): then the clock, the cancel and the
// runner are looked at again.
constexpr int kReadsPerRound = 16;
constexpr int kNoReadLimit = 1 << 30;

}  // namespace

RunningCall TakeCall(Runner& runner, UniqueFd stdin_w) {
  RunningCall call;
  // Stays open: init writes kWarmCallDone and the wait status on it when the command is over.
  call.done = std::move(runner.call);
  fcntl(call.done.Get(), F_SETFL, fcntl(call.done.Get(), F_GETFL) | O_NONBLOCK);
  call.child = runner.pid;
  call.out_r = std::move(runner.out_r);
  call.err_r = std::move(runner.err_r);
  call.rep_r = std::move(runner.rep_r);
  runner.pid = -1;
  call.pidfd = UniqueFd(static_cast<int>(syscall(SYS_pidfd_open, call.child, 0)));
  call.stdin_w = std::move(stdin_w);
  if (call.stdin_w) {
    fcntl(call.stdin_w.Get(), F_SETFL, fcntl(call.stdin_w.Get(), F_GETFL) | O_NONBLOCK);
  }
  return call;
}

PumpEnd PumpOutput(int conn, RunningCall& call, const std::string& stdin_data,
                   const ExecLimits& limits) {
  PumpEnd end;
  ExecResult& result = end.result;
  const pid_t child = call.child;
  UniqueFd& out_r = call.out_r;
  UniqueFd& err_r = call.err_r;
  UniqueFd& rep_r = call.rep_r;
  UniqueFd& in_w = call.stdin_w;
  UniqueFd& done_ch = call.done;
  std::string done_msg;
  size_t stdin_off = 0;
  bool& cancelled = end.cancelled;
  std::optional<Clock::time_point> term_sent;
  bool killed = false;
  auto deadline = Clock::now() + limits.timeout + kBackstop;
  auto stop = [&] {
    if (!term_sent) {
      // The runner forwards SIGTERM into the sandbox and cleans up (its pids cgroup) on exit.
      kill(child, SIGTERM);
      term_sent = Clock::now();
    }
  };
  // Reads what `fd` has, at most `max_reads` reads: a tool that writes as fast as it is read
  // (and ignores SIGTERM) never holds the loop past the kill grace, a cancel or the deadline.
  auto drain = [&](UniqueFd& fd, std::string& into, uint64_t cap, bool& truncated, const char* name,
                   int max_reads = kReadsPerRound) {
    char buf[65536];
    for (int reads = 0; fd && reads < max_reads; ++reads) {
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
  bool done = false;  // kWarmCallDone: the command is over and nothing of the sandbox runs
  while (true) {
    bool open_out = out_r || err_r || rep_r;
    if (!open_out && call.reaped) break;
    if (!call.reaped) {
      pid_t w = waitpid(child, &call.status, WNOHANG);
      if (w == child) call.reaped = true;
    }
    if (term_sent && !killed && Clock::now() - *term_sent >= kTermGrace) {
      kill(-child, SIGKILL);
      kill(child, SIGKILL);
      killed = true;
    }
    if (!term_sent && Clock::now() >= deadline) {
      end.backstop_hit = true;
      stop();
    }
    pollfd fds[7] = {{cancelled ? -1 : conn, POLLIN | POLLRDHUP, 0},
                     {in_w ? in_w.Get() : -1, POLLOUT, 0},
                     {out_r ? out_r.Get() : -1, POLLIN, 0},
                     {err_r ? err_r.Get() : -1, POLLIN, 0},
                     {rep_r ? rep_r.Get() : -1, POLLIN, 0},
                     {call.reaped || !call.pidfd ? -1 : call.pidfd.Get(), POLLIN, 0},
                     {done_ch ? done_ch.Get() : -1, POLLIN, 0}};
    // The runner's exit wakes the poll (pidfd): no timed wait between its last output and the
    // answer. The 50 ms tick only serves the kill grace and a kernel without pidfds.
    int wait_ms = call.reaped && !open_out ? 0 : 50;
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
      ssize_t w = ::write(in_w.Get(), stdin_data.data() + stdin_off,
                          std::min<size_t>(stdin_data.size() - stdin_off, 65536));
      if (w > 0) stdin_off += static_cast<size_t>(w);
      if ((w < 0 && errno != EAGAIN && errno != EINTR) || stdin_off == stdin_data.size()) {
        in_w.Reset();
      }
    }
    if (fds[2].revents)
      drain(out_r, result.stdout_data, limits.max_stdout_bytes, result.stdout_truncated, "stdout");
    if (fds[3].revents)
      drain(err_r, result.stderr_data, limits.max_stderr_bytes, result.stderr_truncated, "stderr");
    if (fds[4].revents) {
      bool unused = false;
      drain(rep_r, end.report, 64 * 1024, unused, "report");
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
      // Every writer is gone, so what is left is finite: read it all.
      drain(out_r, result.stdout_data, limits.max_stdout_bytes, result.stdout_truncated, "stdout",
            kNoReadLimit);
      drain(err_r, result.stderr_data, limits.max_stderr_bytes, result.stderr_truncated, "stderr",
            kNoReadLimit);
      if (!term_sent) break;  // a cap passed while draining takes the usual path
    }
  }
  if (done && !term_sent && !cancelled) {
    int32_t wait_status = 0;
    std::memcpy(&wait_status, done_msg.data() + 1, sizeof(wait_status));
    end.done_status = wait_status;
  }
  return end;
}

void ReapAfterAnswer(RunningCall& call) {
  pollfd p{call.pidfd ? call.pidfd.Get() : -1, POLLIN, 0};
  if (!call.reaped && waitpid(call.child, &call.status, WNOHANG) == 0) {
    if (!call.pidfd || poll(&p, 1, 5000) <= 0 ||
        waitpid(call.child, &call.status, WNOHANG) != call.child) {
      kill(-call.child, SIGKILL);
      kill(call.child, SIGKILL);
      waitpid(call.child, &call.status, 0);
    }
  }
}

}  // namespace anvil::gateway
