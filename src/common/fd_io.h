// Whole-buffer I/O on one descriptor: write all, send all, read exactly. The one policy, for
// every caller:
//   - EINTR is retried.
//   - EAGAIN/EWOULDBLOCK (a non-blocking descriptor that cannot move bytes now): with
//     WouldBlock::kWait (the default) poll(2) for the direction, then retry, each wait bounded
//     by `wait_ms` and all of them by `deadline` (ETIMEDOUT when one runs out); with
//     WouldBlock::kFail stop at once with EAGAIN.
//   - any other error stops the loop with its errno; SendAll passes MSG_NOSIGNAL, so a peer
//     that closed is EPIPE, never SIGPIPE (WriteAll on a socket or pipe is write(2): the
//     process's SIGPIPE disposition applies).
//   - ReadExactly stops at end of file (`eof`, with the bytes read so far in `done`).
// On failure errno is left set to `error`, so SysFail() right after names it.
#pragma once

#include <sys/inotify.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string_view>

namespace anvil::fd_io {

using Clock = std::chrono::steady_clock;

enum class WouldBlock {
  kWait,  // poll for readiness, then retry
  kFail,  // return EAGAIN at once
};

struct Wait {
  WouldBlock on_would_block = WouldBlock::kWait;
  int wait_ms = -1;                           // one poll at most this long; -1: no bound
  std::optional<Clock::time_point> deadline;  // all of the call's waits end by then

  // Returns EAGAIN instead of waiting: the caller has its own event loop.
  static Wait NoWait() { return {WouldBlock::kFail, -1, std::nullopt}; }
  // Waits, each wait at most `ms`.
  static Wait EachAtMost(int ms) { return {WouldBlock::kWait, ms, std::nullopt}; }
  // Waits, all waits together ending by `when`.
  static Wait Until(Clock::time_point when) { return {WouldBlock::kWait, -1, when}; }
};

struct IoResult {
  std::size_t done = 0;  // bytes moved before the call returned
  int error = 0;         // errno of the failure; 0 when all moved or a read met end of file
  bool eof = false;      // ReadExactly only: end of file before all bytes were read
  bool ok() const { return error == 0 && !eof; }
  explicit operator bool() const { return ok(); }
};

// write(2) until all of `data` is written.
IoResult WriteAll(int fd, std::string_view data, const Wait& wait = {});
// send(2) with MSG_NOSIGNAL | `flags` until all of `data` is sent.
IoResult SendAll(int fd, std::string_view data, int flags = 0, const Wait& wait = {});
// read(2) until exactly `n` bytes are in `buf`, or end of file.
IoResult ReadExactly(int fd, void* buf, std::size_t n, const Wait& wait = {});

// Every event queued on the non-blocking inotify descriptor `fd`, in order, until none is left
// (or a read fails).
void ForEachInotifyEvent(int fd, const std::function<void(const inotify_event&)>& each);

}  // namespace anvil::fd_io
