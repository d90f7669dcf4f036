// The exec job's output pump (src/gateway/exec_job.h, PumpOutput) against a tool that ignores
// SIGTERM and writes as fast as the pump reads: the SIGKILL after the grace comes on time
// whatever the tool writes, after a cap is passed and after a cancel. Beside it, the ordinary
// call: a tool that writes a little and exits is read whole.
//
// The "tool" is a forked process that ignores SIGTERM; its endless output is /dev/zero (a pipe
// that never runs dry). A watcher thread stands in for the sandbox teardown: when the process
// dies, its output ends (/dev/null is put in the descriptor's place), as the pipe would close.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "gateway/exec_job.h"

namespace anvil::gateway {
namespace exec_output_pump_test {
namespace {

using std::chrono::milliseconds;

// A process that ignores SIGTERM until it is killed, in its own process group (as the runner).
// Returns once it ignores SIGTERM.
pid_t StubbornChild() {
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    signal(SIGTERM, SIG_IGN);
    if (write(ready[1], "r", 1) != 1) _exit(1);
    for (;;) pause();
  }
  close(ready[1]);
  char c = 0;
  if (pid > 0 && read(ready[0], &c, 1) != 1) pid = -1;
  close(ready[0]);
  return pid;
}

struct Endless {
  RunningCall call;
  int out_fd = -1;
  Clock::time_point died{};
  bool killed_by_watcher = false;
  std::thread watcher;

  Endless() {
    call.child = StubbornChild();
    if (call.child <= 0) abort();
    call.pidfd = UniqueFd(static_cast<int>(syscall(SYS_pidfd_open, call.child, 0)));
    call.out_r = UniqueFd(open("/dev/zero", O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    out_fd = call.out_r.Get();
    int watch = static_cast<int>(syscall(SYS_pidfd_open, call.child, 0));
    watcher = std::thread([this, watch] {
      pollfd p{watch, POLLIN, 0};
      if (poll(&p, 1, 5000) <= 0) {  // the pump never killed it: end the test, and say so
        killed_by_watcher = true;
        kill(call.child, SIGKILL);
        poll(&p, 1, -1);
      }
      died = Clock::now();
      close(watch);
      int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
      dup2(null, out_fd);  // the pipe closes with its writers
      close(null);
    });
  }
  ~Endless() {
    if (watcher.joinable()) watcher.join();
  }
};

ExecLimits Caps(uint64_t out) {
  ExecLimits l;
  l.timeout = std::chrono::seconds(30);
  l.max_stdout_bytes = out;
  l.max_stderr_bytes = out;
  return l;
}

TEST(ExecOutputPump, EndlessOutputPastTheCapIsKilledAfterTheGrace) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  Endless tool;
  auto start = Clock::now();
  PumpEnd end = PumpOutput(sv[0], tool.call, "", Caps(4096));
  tool.watcher.join();
  EXPECT_FALSE(tool.killed_by_watcher) << "the pump never sent SIGKILL after the grace";
  EXPECT_LT(tool.died - start, kTermGrace + milliseconds(1500));
  EXPECT_TRUE(tool.call.reaped);
  EXPECT_EQ(end.result.limit, "stdout");
  EXPECT_TRUE(end.result.stdout_truncated);
  EXPECT_EQ(end.result.stdout_data.size(), 4096u);
  close(sv[0]);
  close(sv[1]);
}

TEST(ExecOutputPump, EndlessOutputAfterACancelIsKilledAfterTheGrace) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  Endless tool;
  ASSERT_EQ(write(sv[1], "x", 1), 1);  // the gateway withdraws the call
  auto start = Clock::now();
  PumpEnd end = PumpOutput(sv[0], tool.call, "", Caps(1 << 20));
  tool.watcher.join();
  EXPECT_FALSE(tool.killed_by_watcher) << "the pump never sent SIGKILL after the grace";
  EXPECT_LT(tool.died - start, kTermGrace + milliseconds(1500));
  EXPECT_TRUE(end.cancelled);
  EXPECT_TRUE(tool.call.reaped);
  close(sv[0]);
  close(sv[1]);
}

// The benign neighbour: a tool writes more than one read's worth and exits; all of it is read,
// nothing is stopped.
TEST(ExecOutputPump, OrdinaryOutputIsReadWhole) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  int out[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  const size_t kTotal = 3 * 1024 * 1024;
  pid_t pid = fork();
  if (pid == 0) {
    close(out[0]);
    std::string chunk(65536, 'a');
    for (size_t n = 0; n < kTotal; n += chunk.size()) {
      if (write(out[1], chunk.data(), chunk.size()) != static_cast<ssize_t>(chunk.size())) {
        _exit(1);
      }
    }
    _exit(7);
  }
  close(out[1]);
  RunningCall call;
  call.child = pid;
  call.pidfd = UniqueFd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  call.out_r = UniqueFd(out[0]);
  fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
  PumpEnd end = PumpOutput(sv[0], call, "", Caps(8 * 1024 * 1024));
  EXPECT_TRUE(call.reaped);
  ASSERT_TRUE(WIFEXITED(call.status));
  EXPECT_EQ(WEXITSTATUS(call.status), 7);
  EXPECT_EQ(end.result.stdout_data.size(), kTotal);
  EXPECT_FALSE(end.result.stdout_truncated);
  EXPECT_TRUE(end.result.limit.empty());
  EXPECT_FALSE(end.cancelled);
  close(sv[0]);
  close(sv[1]);
}

}  // namespace
}  // namespace exec_output_pump_test
}  // namespace anvil::gateway
