// The floors the benches compare against, measured in the same run (CONVENTIONS.md): a raw
// Unix-socket round trip and a raw openat2+fstat+read of one file, servers of the gateway's shape
// (and of the descriptor-passing alternative), and the small statistics the benches share.
// Header-only: each bench is one executable.
#pragma once

#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
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
// `reply_bytes` (by default the size of a 4 KiB read's response frame); the echo calls `work`
// (when given) before each answer. Microseconds each.
inline std::vector<double> RawSocketRoundTrips(int n, size_t request_bytes = 64,
                                               size_t reply_bytes = 4096 + 32,
                                               const std::function<void()>& work = {}) {
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
      if (work) work();
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

// One request of the minimal server: receive with the sender's credentials, open `name` beneath
// `root` (openat2 RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), fstat, read to EOF, close, answer
// 4 KiB. False when the caller is gone.
// A request of at most 256 bytes received with the sender's credentials; false when the caller
// is gone.
inline bool RecvRequestWithCredentials(int conn) {
  char in[256];
  iovec iov{in, sizeof(in)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  return recvmsg(conn, &msg, 0) > 0;
}

// `name` opened beneath `root` as the gateway does (openat2 RESOLVE_BENEATH |
// RESOLVE_NO_MAGICLINKS, no symlink at the end) and fstat'ed.
inline int OpenBeneathAndStat(int root, const std::string& name) {
  open_how how{};
  how.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  int fd = static_cast<int>(syscall(SYS_openat2, root, name.c_str(), &how, sizeof(how)));
  struct stat st {};
  fstat(fd, &st);
  return fd;
}

inline bool ServeOneRead(int conn, int root, const std::string& name, const std::string& reply) {
  static thread_local char buf[65536];
  if (!RecvRequestWithCredentials(conn)) return false;
  int fd = OpenBeneathAndStat(root, name);
  while (read(fd, buf, sizeof(buf)) > 0) {
  }
  close(fd);
  return send(conn, reply.data(), reply.size(), MSG_NOSIGNAL) >= 0;
}

// The least a cross-process server with the gateway's shape costs per request: `n` round trips
// to a forked child that waits in epoll, receives with SO_PASSCRED (the sender's credentials on
// every message), opens the file beneath `dir` as RawBeneathReads does, fstats, reads it to EOF
// (a second read to see the end), closes it and sends a 4 KiB answer; no decoding, checks, audit
// or allocation. Microseconds each.
inline std::vector<double> RawServerRoundTrips(const std::string& dir, const std::string& name,
                                               int n) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return {};
  pid_t child = fork();
  if (child == 0) {
    close(sv[0]);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    epoll_ctl(ep, EPOLL_CTL_ADD, sv[1], &ev);
    int one = 1;
    setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
    int root = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    const std::string reply(4096 + 32, 'r');
    for (int i = 0; i < n; ++i) {
      epoll_event e{};
      if (epoll_wait(ep, &e, 1, -1) != 1) _exit(1);
      if (!ServeOneRead(sv[1], root, name, reply)) _exit(1);
    }
    _exit(0);
  }
  close(sv[1]);
  std::vector<double> us;
  const std::string request(64, 'q');
  std::string buf(4096 + 32, '\0');
  for (int i = 0; i < n && child > 0; ++i) {
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
  close(sv[0]);
  if (child > 0) waitpid(child, nullptr, 0);
  return us;
}

// The alternative shape issue 25 names, at its least: the server (a forked child, as in
// RawServerRoundTrips: epoll, SO_PASSCRED) opens the file beneath `dir` and fstats it, then
// answers with a small frame carrying a read-only descriptor of it (SCM_RIGHTS) and closes its
// own; the caller reads the descriptor to EOF and closes it. No checks, no audit. Microseconds
// each.
inline std::vector<double> RawFdPassRoundTrips(const std::string& dir, const std::string& name,
                                               int n) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return {};
  pid_t child = fork();
  if (child == 0) {
    close(sv[0]);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    epoll_ctl(ep, EPOLL_CTL_ADD, sv[1], &ev);
    int one = 1;
    setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
    int root = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    std::string reply(32, 'r');
    for (int i = 0; i < n; ++i) {
      epoll_event e{};
      if (epoll_wait(ep, &e, 1, -1) != 1) _exit(1);
      if (!RecvRequestWithCredentials(sv[1])) _exit(1);
      int fd = OpenBeneathAndStat(root, name);
      iovec out{reply.data(), reply.size()};
      alignas(cmsghdr) char rights[CMSG_SPACE(sizeof(int))];
      msghdr answer{};
      answer.msg_iov = &out;
      answer.msg_iovlen = 1;
      answer.msg_control = rights;
      answer.msg_controllen = sizeof(rights);
      cmsghdr* h = CMSG_FIRSTHDR(&answer);
      h->cmsg_level = SOL_SOCKET;
      h->cmsg_type = SCM_RIGHTS;
      h->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(h), &fd, sizeof(int));
      if (sendmsg(sv[1], &answer, MSG_NOSIGNAL) < 0) _exit(1);
      close(fd);
    }
    _exit(0);
  }
  close(sv[1]);
  std::vector<double> us;
  const std::string request(64, 'q');
  std::string small(32, '\0');
  static char buf[65536];
  for (int i = 0; i < n && child > 0; ++i) {
    auto t0 = Clock::now();
    ssize_t ignored = write(sv[0], request.data(), request.size());
    (void)ignored;
    iovec iov{small.data(), small.size()};
    alignas(cmsghdr) char rights[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = rights;
    msg.msg_controllen = sizeof(rights);
    if (recvmsg(sv[0], &msg, MSG_CMSG_CLOEXEC) <= 0) break;
    cmsghdr* h = CMSG_FIRSTHDR(&msg);
    if (h == nullptr || h->cmsg_type != SCM_RIGHTS) break;
    int fd;
    std::memcpy(&fd, CMSG_DATA(h), sizeof(int));
    while (read(fd, buf, sizeof(buf)) > 0) {
    }
    close(fd);
    us.push_back(Us(Clock::now() - t0));
  }
  close(sv[0]);
  if (child > 0) waitpid(child, nullptr, 0);
  return us;
}

// `clients` threads, each doing `per_client` round trips over its own socketpair to its own echo
// thread (the same 64-byte request and 4 KiB answer as RawSocketRoundTrips, the echo calling
// `work` before each answer): what the machine does in round trips per second with that many
// callers. Round trips/s.
inline double RawSocketThroughput(int clients, int per_client,
                                  const std::function<void()>& work = {}) {
  std::vector<std::thread> threads;
  auto t0 = Clock::now();
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&] { (void)RawSocketRoundTrips(per_client, 64, 4096 + 32, work); });
  }
  for (auto& t : threads) t.join();
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  return clients * per_client / secs;
}

// The 8-caller form of RawServerRoundTrips: `clients` caller threads here, each with its own
// connection to one forked server process that serves every request as ServeOneRead does. Two
// shapes: `per_connection` gives the server a thread per connection blocking in recvmsg (the
// least a cross-process server costs: the echo floors' shape across a process boundary);
// otherwise one thread per CPU (at most four, as the gateway's I/O threads), each waiting in
// its own epoll set on one-shot connections it re-arms after each answer (the gateway's shape,
// with nothing of its work). Requests per second.
inline double RawServerThroughput(const std::string& dir, const std::string& name, int clients,
                                  int per_client, bool per_connection) {
  std::vector<int> mine, theirs;
  for (int c = 0; c < clients; ++c) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 0;
    mine.push_back(sv[0]);
    theirs.push_back(sv[1]);
  }
  pid_t child = fork();
  if (child == 0) {
    for (int fd : mine) close(fd);
    int root = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    const std::string reply(4096 + 32, 'r');
    int one = 1;
    for (int fd : theirs) setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
    std::vector<std::thread> threads;
    if (per_connection) {
      for (int fd : theirs) {
        threads.emplace_back([&, fd] {
          while (ServeOneRead(fd, root, name, reply)) {
          }
        });
      }
    } else {
      cpu_set_t set;
      int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
      int loops = std::clamp(cpus, 1, 4);
      std::vector<int> eps;
      for (int t = 0; t < loops; ++t) eps.push_back(epoll_create1(EPOLL_CLOEXEC));
      for (size_t c = 0; c < theirs.size(); ++c) {
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLONESHOT;
        ev.data.fd = theirs[c];
        epoll_ctl(eps[c % eps.size()], EPOLL_CTL_ADD, theirs[c], &ev);
      }
      std::atomic<int> open_conns{clients};
      for (int ep : eps) {
        threads.emplace_back([&, ep] {
          while (open_conns.load() > 0) {
            epoll_event e{};
            int r = epoll_wait(ep, &e, 1, 100);
            if (r != 1) continue;
            if (!ServeOneRead(e.data.fd, root, name, reply)) {
              --open_conns;
              continue;
            }
            epoll_event again{};
            again.events = EPOLLIN | EPOLLONESHOT;
            again.data.fd = e.data.fd;
            epoll_ctl(ep, EPOLL_CTL_MOD, e.data.fd, &again);
          }
        });
      }
      for (auto& t : threads) t.join();
      _exit(0);
    }
    for (auto& t : threads) t.join();
    _exit(0);
  }
  for (int fd : theirs) close(fd);
  if (child < 0) {
    for (int fd : mine) close(fd);
    return 0;
  }
  std::vector<std::thread> callers;
  auto t0 = Clock::now();
  for (int fd : mine) {
    callers.emplace_back([fd, per_client] {
      const std::string request(64, 'q');
      std::string buf(4096 + 32, '\0');
      for (int i = 0; i < per_client; ++i) {
        ssize_t ignored = write(fd, request.data(), request.size());
        (void)ignored;
        size_t got = 0;
        while (got < buf.size()) {
          ssize_t r = read(fd, buf.data() + got, buf.size() - got);
          if (r <= 0) return;
          got += static_cast<size_t>(r);
        }
      }
    });
  }
  for (auto& t : callers) t.join();
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  for (int fd : mine) close(fd);
  waitpid(child, nullptr, 0);
  return clients * per_client / secs;
}

// The median of `v` with a 90% bootstrap interval (resampling `v` with replacement): the form
// every ratio of these benches is printed in.
struct Interval {
  double median, low, high;
};
inline Interval Bootstrap(const std::vector<double>& v, int resamples = 2000) {
  if (v.empty()) return {0, 0, 0};
  std::vector<double> medians;
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (int r = 0; r < resamples; ++r) {
    std::vector<double> s(v.size());
    for (auto& x : s) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      x = v[state % v.size()];
    }
    medians.push_back(Median(std::move(s)));
  }
  return {Median(v), Percentile(medians, 0.05), Percentile(medians, 0.95)};
}

}  // namespace anvil::bench
