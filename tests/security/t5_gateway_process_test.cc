// T5: another process of the same user goes for the gateway process itself — ptrace, its
// memory, its environment — to read capability tokens or rewrite grants. The gateway makes
// itself non-dumpable first thing, as the plugin host, the exec broker and every sandbox do;
// the trusted side's own process, dumpable, is the control showing the probes work.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "sandbox_harness.h"
#include "session/gateway_process.h"

namespace anvil::testing {
namespace t5_gateway_process_test {
namespace {

// In a child running as `user`: what a same-uid process can do to `pid`. Bit 0: /proc/PID/environ
// readable; bit 1: /proc/PID/mem openable; bit 2: PTRACE_ATTACH succeeded; bit 3: /proc/PID/fd
// owned by `user` (a non-dumpable process's /proc entries belong to root).
int ProbeAs(const TestUser& user, pid_t pid) {
  pid_t child = fork();
  if (child == 0) {
    if (setgid(user.gid) != 0 || setuid(user.uid) != 0) _exit(64);
    int bits = 0;
    const std::string proc = "/proc/" + std::to_string(pid);
    int fd = open((proc + "/environ").c_str(), O_RDONLY | O_CLOEXEC);
    char buf[16];
    if (fd >= 0 && read(fd, buf, sizeof(buf)) >= 0) bits |= 1;
    if (fd >= 0) close(fd);
    fd = open((proc + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      bits |= 2;
      close(fd);
    }
    if (ptrace(PTRACE_ATTACH, pid, nullptr, nullptr) == 0) {
      bits |= 4;
      waitpid(pid, nullptr, __WALL);
      ptrace(PTRACE_DETACH, pid, nullptr, nullptr);
    }
    struct stat st {};
    if (stat((proc + "/fd").c_str(), &st) == 0 && st.st_uid == user.uid) bits |= 8;
    _exit(bits);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(T5GatewayProcess, ASameUserProcessCannotTraceOrReadTheGateway) {
  auto user = UnprivilegedUser();
  if (!user && !UnprivilegedUserCannotReachTheBuild().empty()) {
    GTEST_FAIL() << UnprivilegedUserCannotReachTheBuild();
  }
  if (!user) GTEST_SKIP() << "SKIPPED LOUDLY: cannot create the unprivileged test user";
  TempDir ws("anvil-dump-ws");
  TempDir run("anvil-dump-run");
  ChownTree(ws.path(), *user);
  ChownTree(run.path(), *user);
  // The user's trusted side (a child of this test, as the user) starts the gateway.
  int report[2], done[2];
  ASSERT_EQ(pipe(report), 0);
  ASSERT_EQ(pipe(done), 0);
  pid_t trusted = fork();
  ASSERT_GE(trusted, 0);
  if (trusted == 0) {
    close(report[0]);
    close(done[1]);
    if (setgid(user->gid) != 0 || setuid(user->uid) != 0) _exit(64);
    // Changing uid made this process non-dumpable; a user's own process (started by exec) is.
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) _exit(66);
    session::GatewayConfig config;
    config.binary = BinDir() + "/anvil-gateway";
    config.workspace = ws.path();
    config.extra_args = {"--runtime-dir", run.path() + "/gw", "--no-exec"};
    auto g = session::GatewayProcess::Start(config);
    pid_t pid = g ? (*g)->pid() : -1;
    if (write(report[1], &pid, sizeof(pid)) != sizeof(pid)) _exit(65);
    char c;
    (void)read(done[0], &c, 1);
    if (g) (void)(*g)->Stop(1000);
    _exit(0);
  }
  close(report[1]);
  close(done[0]);
  pid_t gateway = -1;
  ASSERT_EQ(read(report[0], &gateway, sizeof(gateway)), static_cast<ssize_t>(sizeof(gateway)));
  ASSERT_GT(gateway, 0) << "the gateway did not start as the unprivileged user";
  const int on_gateway = ProbeAs(*user, gateway);
  const int on_trusted = ProbeAs(*user, trusted);
  ASSERT_EQ(write(done[1], "x", 1), 1);
  waitpid(trusted, nullptr, 0);
  // The benign neighbour: the same probes against an ordinary process of the user all work.
  EXPECT_EQ(on_trusted, 15) << "the probes themselves do not work here";
  EXPECT_EQ(on_gateway, 0) << "a same-user process could reach into the gateway (bits "
                           << on_gateway << ": 1 environ, 2 mem, 4 ptrace, 8 /proc/PID/fd owner)";
}

}  // namespace
}  // namespace t5_gateway_process_test
}  // namespace anvil::testing
