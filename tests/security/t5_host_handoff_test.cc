// T5: the plugin host started without --gateway-fd takes its connection to the gateway from
// its handoff (session/host_process.h, Spawn then Attach). The handoff channel may carry that
// one socket and nothing else: a second descriptor, or a descriptor that is not a socket, or
// none at all, and the host stops (125) before it touches anything of the plugin. The benign
// neighbour, a host handed one connection, runs plugins in every test that starts one
// (t4_host_escape_test.cc and the rest go through HostProcess::Start).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "ipc/capability_token.h"
#include "sandbox_harness.h"

namespace anvil::testing {
namespace t5_host_handoff_test {
namespace {

struct Outcome {
  int status = -1;
  std::string err;
};

// Starts anvil-plugin-host with no --gateway-fd and sends a valid handoff text with `fds`
// attached (SCM_RIGHTS), then EOF.
Outcome RunHostWithHandoff(const std::vector<int>& fds) {
  TempDir plugin;
  WriteFile(plugin / "main.lua", "anvil.command('x', function() return 1 end)\n");
  int session[2], token[2], err[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, session), 0);
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, token), 0);
  EXPECT_EQ(pipe2(err, O_CLOEXEC), 0);
  const std::string bin = BinDir() + "/anvil-plugin-host";
  const std::string dir = plugin.path();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(err[1], 2);
    dup2(session[1], 4);
    dup2(token[1], 5);
    execl(bin.c_str(), bin.c_str(), "--plugin-dir", dir.c_str(), "--runtime", "lua", "--entry",
          "main.lua", "--plugin-id", "t.p", "--workspace", "/tmp", "--session-fd", "4",
          "--token-fd", "5", nullptr);
    _exit(127);
  }
  close(session[1]);
  close(token[1]);
  close(err[1]);
  auto t = ipc::CapabilityToken::Generate();
  std::string handoff = t->Hex() + "\npins 0\n{}";
  iovec iov{handoff.data(), handoff.size()};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * (fds.empty() ? 1 : fds.size())), 0);
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control.data();
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  EXPECT_EQ(sendmsg(token[0], &msg, MSG_NOSIGNAL), static_cast<ssize_t>(handoff.size()));
  close(token[0]);
  Outcome out;
  char buf[4096];
  ssize_t n;
  while ((n = read(err[0], buf, sizeof(buf))) > 0) out.err.append(buf, static_cast<size_t>(n));
  close(err[0]);
  close(session[0]);
  waitpid(pid, &out.status, 0);
  return out;
}

TEST(T5HostHandoff, ASecondDescriptorIsRefused) {
  int a[2], b[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b), 0);
  Outcome o = RunHostWithHandoff({a[0], b[0]});
  EXPECT_TRUE(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 125) << o.status << " " << o.err;
  EXPECT_NE(o.err.find("a descriptor that was not expected"), std::string::npos) << o.err;
  for (int fd : {a[0], a[1], b[0], b[1]}) close(fd);
}

TEST(T5HostHandoff, ADescriptorThatIsNotASocketIsRefused) {
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  Outcome o = RunHostWithHandoff({fd});
  EXPECT_TRUE(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 125) << o.status << " " << o.err;
  EXPECT_NE(o.err.find("no connection to the gateway"), std::string::npos) << o.err;
  close(fd);
}

TEST(T5HostHandoff, NoDescriptorAtAllIsRefused) {
  Outcome o = RunHostWithHandoff({});
  EXPECT_TRUE(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 125) << o.status << " " << o.err;
  EXPECT_NE(o.err.find("no connection to the gateway"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace t5_host_handoff_test
}  // namespace anvil::testing
