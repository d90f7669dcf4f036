#include "common/fd_io.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace anvil::fd_io {
namespace {

// Waits until `fd` is ready for `events`; 0, or the errno that ends the call.
int AwaitReady(int fd, short events, const Wait& wait) {
  if (wait.on_would_block == WouldBlock::kFail) return EAGAIN;
  while (true) {
    int timeout = wait.wait_ms;
    if (wait.deadline) {
      const auto now = Clock::now();
      if (now >= *wait.deadline) return ETIMEDOUT;
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(*wait.deadline - now).count() + 1;
      if (timeout < 0 || left < timeout) timeout = static_cast<int>(left);
    }
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, timeout);
    if (r > 0) return 0;  // ready, or an error the next call reports
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno;
    return ETIMEDOUT;  // the wait's bound or the deadline passed
  }
}

// The loop all three share: `step(off)` moves bytes from offset `off` like read/write/send.
template <class Step>
IoResult Loop(int fd, std::size_t n, short events, const Wait& wait, bool is_read, Step step) {
  IoResult out;
  while (out.done < n) {
    const ssize_t r = step(out.done);
    if (r > 0) {
      out.done += static_cast<std::size_t>(r);
      continue;
    }
    if (r == 0) {
      if (is_read) {
        out.eof = true;
        return out;
      }
      out.error = EIO;  // a write that takes nothing of a non-empty buffer
      break;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      out.error = AwaitReady(fd, events, wait);
      if (out.error == 0) continue;
      break;
    }
    out.error = errno;
    break;
  }
  if (out.error != 0) errno = out.error;
  return out;
}

}  // namespace

IoResult WriteAll(int fd, std::string_view data, const Wait& wait) {
  return Loop(fd, data.size(), POLLOUT, wait, false,
              [&](std::size_t off) { return ::write(fd, data.data() + off, data.size() - off); });
}

IoResult SendAll(int fd, std::string_view data, int flags, const Wait& wait) {
  return Loop(fd, data.size(), POLLOUT, wait, false, [&](std::size_t off) {
    return ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL | flags);
  });
}

IoResult ReadExactly(int fd, void* buf, std::size_t n, const Wait& wait) {
  char* into = static_cast<char*>(buf);
  return Loop(fd, n, POLLIN, wait, true,
              [&](std::size_t off) { return ::read(fd, into + off, n - off); });
}

void ForEachInotifyEvent(int fd, const std::function<void(const inotify_event&)>& each) {
  alignas(inotify_event) char buf[16384];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) return;
    for (ssize_t off = 0; off + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf + off);
      off += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      each(*e);
    }
  }
}

}  // namespace anvil::fd_io
