// The floors the benches compare against, measured in the same run (CONVENTIONS.md): a raw
// Unix-socket round trip and a raw openat2+fstat+read of one file, and the small statistics the
// benches share. Header-only: each bench is one executable.
#pragma once

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <thread>
#include <vector>

namespace anvil::bench {

using Clock = std::chrono::steady_clock;

inline double Us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

inline double Median(std::vector<double> v) { return Percentile(std::move(v), 0.5); }

// `n` round trips over a socketpair to an echo thread: a `request_bytes` message answered with
// `reply_bytes` (by default the size of a 4 KiB read's response frame). Microseconds each.
inline std::vector<double> RawSocketRoundTrips(int n, size_t request_bytes = 64,
                                               size_t reply_bytes = 4096 + 32) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return {};
  std::thread echo([&] {
    std::string in(request_bytes, '\0');
    const std::string reply(reply_bytes, 'r');
    for (int i = 0; i < n; ++i) {
      size_t got = 0;
      while (got < in.size()) {
        ssize_t r = read(sv[1], in.data() + got, in.size() - got);
        if (r <= 0) return;
        got += static_cast<size_t>(r);
      }
      ssize_t ignored = write(sv[1], reply.data(), reply.size());
      (void)ignored;
    }
  });
  std::vector<double> us;
  const std::string request(request_bytes, 'q');
  std::string buf(reply_bytes, '\0');
  for (int i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    ssize_t ignored = write(sv[0], request.data(), request.size());
    (void)ignored;
    size_t got = 0;
    while (got < buf.size()) {
      ssize_t r = read(sv[0], buf.data() + got, buf.size() - got);
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    us.push_back(Us(Clock::now() - t0));
  }
  echo.join();
  close(sv[0]);
  close(sv[1]);
  return us;
}

// `n` reads of `name` beneath `dir` the way the gateway opens a workspace file (openat2
// RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, fstat, read, close). Microseconds each.
inline std::vector<double> RawBeneathReads(const std::string& dir, const std::string& name, int n) {
  int root = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  std::vector<double> us;
  char buf[8192];
  for (int i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    open_how how{};
    how.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    int fd = static_cast<int>(syscall(SYS_openat2, root, name.c_str(), &how, sizeof(how)));
    struct stat st {};
    fstat(fd, &st);
    ssize_t ignored = read(fd, buf, sizeof(buf));
    (void)ignored;
    close(fd);
    us.push_back(Us(Clock::now() - t0));
  }
  close(root);
  return us;
}

}  // namespace anvil::bench
