// T5/T6 at the gateway's door: another process of the same user connects and never says hello,
// as many times as it can, to lock out the plugin hosts the trusted side starts later (after a
// reload, say). Connections are admitted by who made them: the trusted side (the control
// channel's peer) may use every slot; any other process holds at most a few connections that
// have not said hello, all such processes together a few more; and a connection that does not
// say hello in time is closed.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "gateway_fixture.h"
#include "session/host_process.h"

namespace anvil::testing {
namespace t5_gateway_admission_test {
namespace {

using namespace std::chrono_literals;

class T5GatewayAdmission : public GatewayTest {
 protected:
  void SetUp() override {
    GatewayTest::SetUp();
    WriteFile(*ws_ / "a.txt", "content");
  }
  void TearDown() override {
    for (pid_t p : squatters_) {
      kill(p, SIGKILL);
      waitpid(p, nullptr, 0);
    }
    GatewayTest::TearDown();
  }
  // A raw connection to the gateway's socket from this process (no hello).
  UniqueFd RawConnect() {
    UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, gateway_->socket_path().c_str(), sizeof(addr.sun_path) - 1);
    if (connect(fd.Get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return UniqueFd();
    return fd;
  }
  // True when the gateway closed `fd` (EOF, maybe after a "busy" frame) within `limit`.
  static bool ClosedByGateway(int fd, std::chrono::milliseconds limit) {
    auto until = std::chrono::steady_clock::now() + limit;
    char buf[256];
    while (std::chrono::steady_clock::now() < until) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) return true;
    }
    return false;
  }
  // Forks `processes` children of this user that each open `per_process` connections, never
  // say hello and keep them; returns once all of them have connected.
  void Squat(int processes, int per_process) {
    for (int i = 0; i < processes; ++i) {
      int ready[2];
      ASSERT_EQ(pipe(ready), 0);
      pid_t child = fork();
      ASSERT_GE(child, 0);
      if (child == 0) {
        close(ready[0]);
        std::vector<UniqueFd> held;
        for (int k = 0; k < per_process; ++k) held.push_back(RawConnect());
        if (write(ready[1], "r", 1) != 1) _exit(2);
        for (;;) pause();
      }
      close(ready[1]);
      char c;
      ASSERT_EQ(read(ready[0], &c, 1), 1);
      close(ready[0]);
      squatters_.push_back(child);
    }
  }
  size_t Connections() {
    // The gateway has accepted whatever is in its backlog once it answers a control request
    // that comes after; a second one makes sure the first accept round was processed.
    (void)gateway_->Control({{"op", "status"}});
    auto status = gateway_->Control({{"op", "status"}});
    return status ? (*status)["connections"].get<size_t>() : 0;
  }
  std::vector<pid_t> squatters_;
};

TEST_F(T5GatewayAdmission, IdleConnectionsOfOtherProcessesCannotLockOutANewHost) {
  StartGateway({"--max-connections", "32"});
  // A host that ran before, then went away (a reload).
  {
    auto token = RegisterPlugin("p.before", ReadWriteGrant());
    auto client = Client(token, "p.before");
    ASSERT_TRUE(client->Call("fs.read", {"a.txt"})->ok);
  }
  // 20 processes try 10 idle connections each: far more than every slot.
  Squat(20, 10);
  EXPECT_LE(Connections(), 16u) << "other processes hold more than their share of the slots";
  // The host started now connects, says hello and is served.
  auto token = RegisterPlugin("p.after", ReadWriteGrant());
  auto client = Client(token, "p.after");
  auto r = client->Call("fs.read", {"a.txt"});
  ASSERT_TRUE(r && r->ok) << (r ? r->ErrorText() : r.error().ToString());
  EXPECT_EQ(r->fields[0], "content");
  bool audited = false;
  for (const auto& l : AuditLines()) {
    audited |= l["op"] == "connect" && l["verdict"] == "busy" &&
               l["reason"].get<std::string>().find("have not said hello") != std::string::npos;
  }
  EXPECT_TRUE(audited) << "refused connections are not in the audit log";
}

TEST_F(T5GatewayAdmission, ARealPluginHostStartedAfterTheSquattersWorks) {
  StartGateway({"--max-connections", "24"});
  Squat(30, 8);
  TempDir plugin("anvil-plugin");
  WriteFile(plugin / "main.lua",
            "anvil.command('read', function() return sys.fs.read('a.txt') end)");
  session::HostConfig config{
      BinDir() + "/anvil-plugin-host", plugin.path(), "lua", "main.lua", "test.plugin", {}};
  auto host = session::HostProcess::Start(config, *gateway_, ReadWriteGrant());
  ASSERT_TRUE(host) << host.error().ToString();
  auto commands = (*host)->Describe(10s);
  ASSERT_TRUE(commands) << commands.error().ToString() << (*host)->stderr_text();
  auto r = (*host)->Run(
      "read", "{}", 10s,
      [](const std::string&, const std::vector<std::string>&) -> Result<std::vector<std::string>> {
        return Fail("denied", "no editor");
      },
      [](const std::string&, const std::string&) {});
  ASSERT_TRUE(r) << r.error().ToString() << (*host)->stderr_text();
  EXPECT_EQ(*r, R"("content")");
  (void)(*host)->Stop();
}

TEST_F(T5GatewayAdmission, TrustedSideConnectionsThatNeverSaidHelloGiveWayToANewOne) {
  StartGateway({"--max-connections", "8"});
  auto token = RegisterPlugin("p.live", ReadWriteGrant());
  auto live = Client(token, "p.live");  // bound: never evicted
  std::vector<UniqueFd> idle;
  for (int i = 0; i < 7; ++i) idle.push_back(RawConnect());
  ASSERT_EQ(Connections(), 8u);
  auto token2 = RegisterPlugin("p.next", ReadWriteGrant());
  auto next = Client(token2, "p.next");
  auto r = next->Call("fs.read", {"a.txt"});
  ASSERT_TRUE(r && r->ok) << (r ? r->ErrorText() : r.error().ToString());
  EXPECT_TRUE(ClosedByGateway(idle[0].Get(), 5s)) << "the oldest idle connection was kept";
  r = live->Call("fs.read", {"a.txt"});
  ASSERT_TRUE(r && r->ok) << "a connection that said hello was evicted";
}

TEST_F(T5GatewayAdmission, ConnectionsThatDoNotSayHelloInTimeAreClosed) {
  StartGateway({"--hello-timeout-ms", "300"});
  auto idle = RawConnect();
  ASSERT_TRUE(idle);
  auto token = RegisterPlugin("p.one", ReadWriteGrant());
  auto client = Client(token, "p.one");  // said hello at once: the deadline no longer applies
  EXPECT_TRUE(ClosedByGateway(idle.Get(), 10s)) << "an idle connection outlived the deadline";
  usleep(600 * 1000);
  auto r = client->Call("fs.read", {"a.txt"});
  ASSERT_TRUE(r && r->ok) << (r ? r->ErrorText() : r.error().ToString());
  bool audited = false;
  for (const auto& l : AuditLines()) {
    audited |= l["op"] == "connect" && l["code"] == "timeout";
  }
  EXPECT_TRUE(audited);
}

}  // namespace
}  // namespace t5_gateway_admission_test
}  // namespace anvil::testing
