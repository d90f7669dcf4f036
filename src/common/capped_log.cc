#include "common/capped_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "common/fd_io.h"

namespace anvil {

namespace {

constexpr size_t kChunk = 64 * 1024;
// Room kept at the file's start for the marker line (it is far shorter).
constexpr uint64_t kMarkerRoom = 512;

// How long an append waits for the lock: another writer's append or compaction (copying at most
// half the cap) ends far sooner. A lock held longer is not a writer's: any reader of the file can
// take one (a sandboxed command whose view holds the state directory), and waiting for it would
// park the gateway's event loop for as long as that command likes. The lines are then appended
// whole without dropping any, as on a file system without flock.
constexpr auto kLockWait = std::chrono::seconds(2);
// Once a wait ran out, this process's later appends only try the lock, without waiting, until
// one gets it again: one wait per lock held, not one per append.
std::atomic<bool> lock_stuck{false};

class FileLock {
 public:
  explicit FileLock(int fd) : fd_(fd) {
    const auto give_up = std::chrono::steady_clock::now() + kLockWait;
    auto pause = std::chrono::milliseconds(1);
    for (;;) {
      if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) {
        held_ = true;
        lock_stuck.store(false, std::memory_order_relaxed);
        return;
      }
      if (errno == EINTR) continue;
      if (errno != EWOULDBLOCK) return;  // no flock here: nothing is dropped
      if (lock_stuck.load(std::memory_order_relaxed)) return;
      if (std::chrono::steady_clock::now() >= give_up) {
        lock_stuck.store(true, std::memory_order_relaxed);
        return;
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(50));
    }
  }
  ~FileLock() {
    if (held_) (void)::flock(fd_, LOCK_UN);
  }
  bool held() const { return held_; }

 private:
  int fd_;
  bool held_ = false;
};

Status PreadAll(int fd, char* buf, size_t n, off_t at, size_t* got) {
  *got = 0;
  while (*got < n) {
    ssize_t r = ::pread(fd, buf + *got, n - *got, at + static_cast<off_t>(*got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return SysFail("io", "read log");
    if (r == 0) break;
    *got += static_cast<size_t>(r);
  }
  return Ok();
}

Status PwriteAll(int fd, const char* buf, size_t n, off_t at) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pwrite(fd, buf + done, n - done, at + static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return SysFail("io", "write log");
    done += static_cast<size_t>(r);
  }
  return Ok();
}

std::string MarkerLine(uint64_t dropped, uint64_t max_bytes) {
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "{\"bytes\":%llu,\"op\":\"log.compacted\",\"reason\":\"older lines dropped: "
                "the log keeps under %llu bytes\",\"time\":%.6f,\"verdict\":\"info\"}\n",
                static_cast<unsigned long long>(dropped),
                static_cast<unsigned long long>(max_bytes), now);
  return buf;
}

// Under the lock: drops the file's older lines so that `incoming` more bytes fit under
// `max_bytes` (the newest lines up to half the cap stay, behind the marker).
Status Compact(int fd, uint64_t size, uint64_t max_bytes) {
  const uint64_t keep = max_bytes / 2 - kMarkerRoom;
  uint64_t start = size > keep ? size - keep : 0;
  std::string buf(kChunk, '\0');
  // Forward to the start of a line (the byte after a newline); none: nothing is kept.
  if (start > 0) {
    uint64_t at = start - 1;  // a newline right before `start` makes `start` a line's start
    for (;;) {
      size_t got = 0;
      ANVIL_RETURN_IF_ERROR(PreadAll(fd, buf.data(), kChunk, static_cast<off_t>(at), &got));
      if (got == 0) {
        start = size;
        break;
      }
      const char* nl = static_cast<const char*>(std::memchr(buf.data(), '\n', got));
      if (nl) {
        start = at + static_cast<uint64_t>(nl - buf.data()) + 1;
        break;
      }
      at += got;
    }
  }
  // Only a line longer than half the cap comes with less before it: it is appended as it is.
  if (start < kMarkerRoom) return Ok();
  const std::string marker = MarkerLine(start, max_bytes);
  // Written at offset 0 and copied forward: O_APPEND would put every pwrite at the end.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_APPEND) != 0) {
    return SysFail("io", "log flags");
  }
  Status result = [&]() -> Status {
    // The marker is shorter than what is dropped (start >= max/2 - keep = kMarkerRoom), so the
    // forward copy never overwrites bytes it has yet to read.
    uint64_t to = marker.size();
    ANVIL_RETURN_IF_ERROR(PwriteAll(fd, marker.data(), marker.size(), 0));
    for (uint64_t from = start; from < size;) {
      size_t got = 0;
      const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, size - from));
      ANVIL_RETURN_IF_ERROR(PreadAll(fd, buf.data(), want, static_cast<off_t>(from), &got));
      if (got == 0) break;
      ANVIL_RETURN_IF_ERROR(PwriteAll(fd, buf.data(), got, static_cast<off_t>(to)));
      from += got;
      to += got;
    }
    if (::ftruncate(fd, static_cast<off_t>(to)) != 0) return SysFail("io", "truncate log");
    return Ok();
  }();
  if (::fcntl(fd, F_SETFL, flags) != 0 && result) return SysFail("io", "log flags");
  return result;
}

}  // namespace

Status AppendCappedLines(int fd, std::string_view lines, uint64_t max_bytes) {
  max_bytes = std::max(max_bytes, kMinLogMaxBytes);
  std::string with_newline;
  if (!lines.empty() && lines.back() != '\n') {
    with_newline.assign(lines);
    with_newline += '\n';
    lines = with_newline;
  }
  const size_t piece_max = static_cast<size_t>(max_bytes / 4);
  FileLock lock(fd);
  while (!lines.empty()) {
    // A piece of whole lines, at most a quarter of the cap unless one line is longer.
    size_t n = lines.size();
    if (n > piece_max) {
      size_t cut = lines.rfind('\n', piece_max - 1);
      n = cut == std::string_view::npos ? lines.find('\n') + 1 : cut + 1;
    }
    const std::string_view piece = lines.substr(0, n);
    lines.remove_prefix(n);
    struct stat st {};
    if (::fstat(fd, &st) != 0) return SysFail("io", "stat log");
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    // Without the lock (a file system without flock, or one held past kLockWait) nothing is
    // dropped: another writer's line could be in the middle of its write.
    if (lock.held() && S_ISREG(st.st_mode) && size > 0 && size + piece.size() > max_bytes) {
      ANVIL_RETURN_IF_ERROR(Compact(fd, size, max_bytes));
    }
    if (!fd_io::WriteAll(fd, piece)) return SysFail("io", "append to log");
  }
  return Ok();
}

}  // namespace anvil
