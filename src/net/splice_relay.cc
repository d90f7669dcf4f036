#include "net/splice_relay.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/unique_fd.h"

namespace anvil::proxy {
namespace {

// The tunnel's pipes: 256 KiB each (64 pages) when the kernel grants it. Bigger moves more per
// wakeup; 64 connections x 2 pipes x 256 KiB = 32 MiB stays under the default per-user pipe
// budget (fs.pipe-user-pages-soft, 64 MiB) when the proxy runs unprivileged. A refusal leaves
// the default 64 KiB pipe, which is slower, not wrong.
constexpr int kPipeBytes = 256 * 1024;

// One direction of a relay: bytes move from `src` into a pipe and from the pipe to `dst` with
// splice(2), so they never pass through this process's memory (the kernel moves page
// references; on loopback nothing is copied between the two sockets at all).
struct Direction {
  int src = -1, dst = -1;
  UniqueFd pipe_read, pipe_write;
  size_t capacity = 0;         // the pipe's size in bytes
  size_t pending = 0;          // bytes in the pipe, read from src and not yet written to dst
  bool reading = true;         // src has not ended
  bool shut = false;           // dst got SHUT_WR (src ended and the pipe drained)
  uint64_t left = UINT64_MAX;  // bytes src may still send; at 0 it is no longer read
  uint64_t* moved = nullptr;   // the audit record's counter for this direction

  bool Open(std::string& error) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
      error = std::string("pipe: ") + std::strerror(errno);
      return false;
    }
    pipe_read.Reset(p[0]);
    pipe_write.Reset(p[1]);
    (void)fcntl(p[1], F_SETPIPE_SZ, kPipeBytes);
    int size = fcntl(p[1], F_GETPIPE_SZ);
    capacity = size > 0 ? static_cast<size_t>(size) : 65536;
    return true;
  }
};

constexpr unsigned kSpliceFlags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;

// splice(2) into a socket has no MSG_NOSIGNAL: a peer that went away raises SIGPIPE on the
// writing thread. The relay blocks it on its own thread for its lifetime, takes any that became
// pending, and restores the mask, so the error is an EPIPE return and nothing else (anvil-proxy
// ignores SIGPIPE anyway; this keeps HttpProxy safe in any process).
class BlockSigpipe {
 public:
  BlockSigpipe() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~BlockSigpipe() {
    sigset_t pending;
    sigemptyset(&pending);
    if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
      timespec zero{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &zero) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  BlockSigpipe(const BlockSigpipe&) = delete;
  BlockSigpipe& operator=(const BlockSigpipe&) = delete;

 private:
  sigset_t pipe_, old_;
};

}  // namespace

void Relay(int a, int b, const ProxyLimits& limits, Clock::time_point started, uint64_t up_limit,
           ProxyAuditRecord& record, std::string& ended) {
  BlockSigpipe no_sigpipe;
  for (int fd : {a, b}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  Direction dirs[2];
  dirs[0].src = a;
  dirs[0].dst = b;
  dirs[0].moved = &record.bytes_up;
  dirs[0].left = up_limit;
  dirs[1].src = b;
  dirs[1].dst = a;
  dirs[1].moved = &record.bytes_down;
  for (auto& d : dirs) {
    if (!d.Open(ended)) return;
  }
  const auto hard_deadline = started + limits.max_duration;
  auto last_progress = Clock::now();
  uint64_t dropped = 0;  // read from `a` past `up_limit`
  constexpr uint64_t kMaxDroppedBytes = 1 << 20;
  while (true) {
    bool progress = false;
    for (auto& d : dirs) {
      const uint64_t used = record.bytes_up + record.bytes_down;
      // At the cap, first drain what was read within it, then ask for one byte more: that
      // tells "more data" (over the cap) from EOF.
      if (d.reading && d.left == 0 && d.pending == 0) {
        // All it may send has gone: what follows (a pipelined request) is read and dropped, so
        // it reaches no one and nothing unread turns the final close into a reset; its end is
        // passed on as before.
        char sink[16384];
        ssize_t n = ::recv(d.src, sink, sizeof(sink), MSG_DONTWAIT);
        if (n > 0) {
          dropped += static_cast<uint64_t>(n);
          if (dropped > kMaxDroppedBytes) {
            ended = "data after the request";
            return;
          }
          progress = true;
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
          d.reading = false;
          progress = true;
        }
      }
      if (d.reading && d.left > 0 && d.pending < d.capacity &&
          (used < limits.max_bytes || d.pending == 0)) {
        const size_t want = used >= limits.max_bytes
                                ? 1
                                : static_cast<size_t>(std::min<uint64_t>(
                                      {d.capacity - d.pending, limits.max_bytes - used, d.left}));
        ssize_t n = ::splice(d.src, nullptr, d.pipe_write.Get(), nullptr, want, kSpliceFlags);
        if (n > 0) {
          *d.moved += static_cast<uint64_t>(n);
          d.left -= std::min<uint64_t>(d.left, static_cast<uint64_t>(n));
          if (record.bytes_up + record.bytes_down > limits.max_bytes) {
            ended = "byte cap";
            return;
          }
          d.pending += static_cast<size_t>(n);
          progress = true;
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
          d.reading = false;  // EOF, or the socket failed: this side sends nothing more
          progress = true;
        }
      }
      if (d.pending > 0) {
        ssize_t n = ::splice(d.pipe_read.Get(), nullptr, d.dst, nullptr, d.pending, kSpliceFlags);
        if (n > 0) {
          d.pending -= static_cast<size_t>(n);
          progress = true;
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
          ended = "peer closed";
          return;
        }
      }
      if (!d.reading && d.pending == 0 && !d.shut) {
        ::shutdown(d.dst, SHUT_WR);
        d.shut = true;
      }
    }
    if (dirs[0].shut && dirs[1].shut) {
      ended = "done";
      return;
    }
    auto now = Clock::now();
    if (now >= hard_deadline) {
      ended = "time cap";
      return;
    }
    if (progress) {
      last_progress = now;
      continue;
    }
    // Nothing moved: wait for readable data where the pipe is empty (a full pipe waits for its
    // destination instead, so a slow reader never turns into a busy loop) and for room where
    // bytes are waiting.
    short events[2] = {0, 0};  // for a, for b
    for (int i = 0; i < 2; ++i) {
      const auto& d = dirs[i];
      if (d.reading && d.pending == 0) events[i] |= POLLIN;
      if (d.pending > 0) events[1 - i] |= POLLOUT;
    }
    pollfd fds[2] = {{events[0] ? a : -1, events[0], 0}, {events[1] ? b : -1, events[1], 0}};
    auto deadline = std::min(last_progress + limits.idle_timeout, hard_deadline);
    int r = poll(fds, 2, MillisLeft(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      ended = Clock::now() >= hard_deadline ? "time cap" : "idle timeout";
      return;
    }
  }
}

}  // namespace anvil::proxy
