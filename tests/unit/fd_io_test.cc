// Whole-buffer I/O (common/fd_io.h) over socketpairs and pipes: partial writes against a small
// send buffer, EINTR from a signal, EAGAIN on a non-blocking descriptor (waited for, or
// returned), a closed peer (EPIPE, no SIGPIPE), and a short read at end of file.
#include "common/fd_io.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <string>
#include <thread>

#include "common/unique_fd.h"

namespace anvil {
namespace fd_io_test {
namespace {

struct Pair {
  UniqueFd a, b;
};

Pair SocketPair() {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  return {UniqueFd(sv[0]), UniqueFd(sv[1])};
}

Pair Pipe() {
  int p[2];
  EXPECT_EQ(::pipe2(p, O_CLOEXEC), 0);
  return {UniqueFd(p[0]), UniqueFd(p[1])};  // a reads, b writes
}

void SetSmallBuffers(int fd) {
  int size = 4096;
  ASSERT_EQ(::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size), 0);
  ASSERT_EQ(::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size), 0);
}

void SetNonBlocking(int fd) { ASSERT_EQ(::fcntl(fd, F_SETFL, O_NONBLOCK), 0); }

// Reads everything until end of file, the way a slow peer would.
std::string Drain(int fd) {
  std::string out;
  char buf[1000];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

std::string Payload(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + i % 26);
  return s;
}

TEST(FdIo, SendAllFinishesThroughPartialWritesOnANonBlockingSocket) {
  auto p = SocketPair();
  SetSmallBuffers(p.a.Get());
  SetSmallBuffers(p.b.Get());
  SetNonBlocking(p.a.Get());
  const std::string data = Payload(1 << 20);
  std::string got;
  std::thread reader([&] { got = Drain(p.b.Get()); });
  auto r = fd_io::SendAll(p.a.Get(), data);
  p.a.Reset();
  reader.join();
  EXPECT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.done, data.size());
  EXPECT_EQ(got, data);
}

TEST(FdIo, WriteAllFinishesThroughAPipe) {
  auto p = Pipe();
  SetNonBlocking(p.b.Get());
  const std::string data = Payload(1 << 20);
  std::string got;
  std::thread reader([&] { got = Drain(p.a.Get()); });
  auto r = fd_io::WriteAll(p.b.Get(), data);
  p.b.Reset();
  reader.join();
  EXPECT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(got, data);
}

TEST(FdIo, WouldBlockFailReturnsEagainWithTheBytesSoFar) {
  auto p = SocketPair();
  SetSmallBuffers(p.a.Get());
  SetNonBlocking(p.a.Get());
  const std::string data = Payload(1 << 20);
  auto r = fd_io::SendAll(p.a.Get(), data, 0, fd_io::Wait::NoWait());
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error, EAGAIN);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_GT(r.done, 0u);
  EXPECT_LT(r.done, data.size());
}

TEST(FdIo, AWaitThatRunsOutIsETimedOut) {
  auto p = SocketPair();
  SetSmallBuffers(p.a.Get());
  SetNonBlocking(p.a.Get());
  const std::string data = Payload(1 << 20);
  auto r = fd_io::SendAll(p.a.Get(), data, 0, fd_io::Wait::EachAtMost(20));
  EXPECT_EQ(r.error, ETIMEDOUT);
  const auto start = fd_io::Clock::now();
  r = fd_io::SendAll(p.a.Get(), data, 0, fd_io::Wait::Until(start + std::chrono::milliseconds(30)));
  EXPECT_EQ(r.error, ETIMEDOUT);
  EXPECT_GE(fd_io::Clock::now() - start, std::chrono::milliseconds(30));
  r = fd_io::ReadExactly(p.b.Get(), nullptr, 0);  // nothing asked: nothing to wait for
  EXPECT_TRUE(r.ok());
}

TEST(FdIo, APeerThatClosedIsEpipeNotSigpipe) {
  auto p = SocketPair();
  p.b.Reset();
  // SIGPIPE keeps its default action (terminate): surviving this call is the test.
  struct sigaction old {};
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ASSERT_EQ(::sigaction(SIGPIPE, &dfl, &old), 0);
  auto r = fd_io::SendAll(p.a.Get(), "hello");
  ::sigaction(SIGPIPE, &old, nullptr);
  EXPECT_EQ(r.error, EPIPE);
  EXPECT_EQ(r.done, 0u);
}

TEST(FdIo, ReadExactlyStopsAtEndOfFileWithWhatItRead) {
  auto p = Pipe();
  ASSERT_EQ(::write(p.b.Get(), "abc", 3), 3);
  p.b.Reset();
  char buf[8] = {};
  auto r = fd_io::ReadExactly(p.a.Get(), buf, sizeof buf);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.eof);
  EXPECT_EQ(r.error, 0);
  EXPECT_EQ(r.done, 3u);
  EXPECT_EQ(std::string(buf, 3), "abc");
}

TEST(FdIo, ReadExactlyWaitsOnANonBlockingDescriptor) {
  auto p = SocketPair();
  SetNonBlocking(p.a.Get());
  std::thread writer([&] {
    for (char c : std::string("0123456789")) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      ASSERT_EQ(::write(p.b.Get(), &c, 1), 1);
    }
  });
  char buf[10];
  auto r = fd_io::ReadExactly(p.a.Get(), buf, sizeof buf);
  writer.join();
  EXPECT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(std::string(buf, 10), "0123456789");
  r = fd_io::ReadExactly(p.a.Get(), buf, 1, fd_io::Wait::NoWait());
  EXPECT_EQ(r.error, EAGAIN);
}

std::atomic<int> g_signals{0};
void CountSignal(int) { g_signals.fetch_add(1); }

TEST(FdIo, ASignalDuringABlockingReadIsRetried) {
  struct sigaction sa {};
  struct sigaction old {};
  sa.sa_handler = CountSignal;  // no SA_RESTART: read(2) fails with EINTR
  ASSERT_EQ(::sigaction(SIGUSR1, &sa, &old), 0);
  auto p = SocketPair();
  const pthread_t reader_thread = ::pthread_self();
  std::atomic<bool> done{false};
  std::thread poker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    while (g_signals.load() == 0) {
      ::pthread_kill(reader_thread, SIGUSR1);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_EQ(::write(p.b.Get(), "xy", 2), 2);
    done = true;
  });
  char buf[2];
  auto r = fd_io::ReadExactly(p.a.Get(), buf, 2);
  poker.join();
  ::sigaction(SIGUSR1, &old, nullptr);
  EXPECT_TRUE(done.load());
  EXPECT_TRUE(r.ok()) << r.error;
  EXPECT_GE(g_signals.load(), 1);
  EXPECT_EQ(std::string(buf, 2), "xy");
}

}  // namespace
}  // namespace fd_io_test
}  // namespace anvil
