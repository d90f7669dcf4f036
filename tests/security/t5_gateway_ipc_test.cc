// T5: IPC spoofing / confused deputy against a real gateway. Each attack next to its benign twin.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "gateway_fixture.h"

namespace anvil::testing {
namespace t5_gateway_ipc_test {
namespace {

class T5GatewayIpc : public GatewayTest {
 protected:
  void SetUp() override {
    GatewayTest::SetUp();
    WriteFile(*ws_ / "a.txt", "content");
    StartGateway();
  }
};

TEST_F(T5GatewayIpc, WrongTokenIsRefusedAndTheRightOneWorks) {
  auto token = RegisterPlugin("p.one", ReadWriteGrant());
  auto forged = ipc::CapabilityToken::Generate();
  auto fd = gateway_->Connect();
  ASSERT_TRUE(fd);
  ipc::GatewayClient attacker(std::move(*fd), forged->bytes());
  auto hello = attacker.Hello("p.one", workspace_);
  ASSERT_FALSE(hello);
  EXPECT_EQ(hello.error().code, "denied");
  // The connection is closed after the denial: nothing more is served on it.
  auto after = attacker.Call("fs.read", {"a.txt"});
  EXPECT_TRUE(!after || !after->ok);

  auto client = Client(token, "p.one");
  auto r = client->Call("fs.read", {"a.txt"});
  ASSERT_TRUE(r && r->ok);
  EXPECT_EQ(r->fields[0], "content");
}

TEST_F(T5GatewayIpc, TokenOfOnePluginCannotClaimAnother) {
  auto token = RegisterPlugin("p.one", ReadWriteGrant());
  RegisterPlugin("p.two", ReadWriteGrant());
  auto fd = gateway_->Connect();
  ASSERT_TRUE(fd);
  ipc::GatewayClient c(std::move(*fd), token.bytes());
  auto hello = c.Hello("p.two", workspace_);
  ASSERT_FALSE(hello);
  EXPECT_EQ(hello.error().code, "denied");
}

TEST_F(T5GatewayIpc, TokenReplayedFromAnotherProcessIsRefused) {
  auto token = RegisterPlugin("p.one", ReadWriteGrant());
  // Another process (same uid) that learned the token and connects itself.
  pid_t child = fork();
  if (child == 0) {
    auto fd = gateway_->Connect();
    if (!fd) _exit(2);
    ipc::GatewayClient thief(std::move(*fd), token.bytes());
    auto hello = thief.Hello("p.one", workspace_);
    _exit(!hello && hello.error().code == "denied" ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "replayed token was accepted";
  // The registered host still works.
  auto client = Client(token, "p.one");
  auto r = client->Call("fs.read", {"a.txt"});
  EXPECT_TRUE(r && r->ok);
}

TEST_F(T5GatewayIpc, StolenConnectionUsedByAnotherProcessIsRefused) {
  auto token = RegisterPlugin("p.one", ReadWriteGrant());
  auto client = Client(token, "p.one");
  ASSERT_TRUE(client->Call("fs.read", {"a.txt"})->ok);
  // A sibling inherits the already-authenticated socket and speaks on it: the kernel-attested
  // sender pid of its bytes is not the host's.
  pid_t child = fork();
  if (child == 0) {
    ipc::GatewayClient thief(UniqueFd(dup(client->fd())), token.bytes());
    auto r = thief.Call("fs.read", {"a.txt"});
    bool refused = !r || (!r->ok && r->fields[0] == "denied");
    bool leaked = r && r->ok;
    _exit(refused && !leaked ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "stolen connection was served";
}

TEST_F(T5GatewayIpc, RevokedTokenIsRefused) {
  auto token = RegisterPlugin("p.one", ReadWriteGrant());
  auto client = Client(token, "p.one");
  ASSERT_TRUE(client->Call("fs.read", {"a.txt"})->ok);
  ASSERT_TRUE(gateway_->Revoke(token));
  auto r = client->Call("fs.read", {"a.txt"});
  EXPECT_TRUE(!r || !r->ok) << "revoked token still served";
  auto fd = gateway_->Connect();
  ASSERT_TRUE(fd);
  ipc::GatewayClient again(std::move(*fd), token.bytes());
  auto hello = again.Hello("p.one", workspace_);
  ASSERT_FALSE(hello);
  EXPECT_EQ(hello.error().code, "denied");
}

TEST_F(T5GatewayIpc, WrongWorkspaceIsRefused) {
  auto token = RegisterPlugin("p.one", ReadWriteGrant());
  auto fd = gateway_->Connect();
  ASSERT_TRUE(fd);
  ipc::GatewayClient c(std::move(*fd), token.bytes());
  auto hello = c.Hello("p.one", "/tmp");
  ASSERT_FALSE(hello);
  EXPECT_EQ(hello.error().code, "denied");
  // The trusted side cannot register a plugin for another workspace either.
  auto other = ipc::CapabilityToken::Generate();
  auto reply = gateway_->Control({{"op", "register"},
                                  {"token", other->Hex()},
                                  {"plugin", "p.x"},
                                  {"pid", getpid()},
                                  {"uid", geteuid()},
                                  {"workspace", "/tmp"},
                                  {"grant", GrantToJson(ReadWriteGrant())}});
  ASSERT_TRUE(reply);
  EXPECT_FALSE((*reply)["ok"].get<bool>());
}

TEST_F(T5GatewayIpc, RequestBeforeHelloIsRefused) {
  auto token = RegisterPlugin("p.one", ReadWriteGrant());
  auto fd = gateway_->Connect();
  ASSERT_TRUE(fd);
  ipc::GatewayClient c(std::move(*fd), token.bytes());
  auto r = c.Call("fs.read", {"a.txt"});
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->ok);
  EXPECT_EQ(r->fields[0], "denied");
}

// Descriptors passed to the gateway (SCM_RIGHTS) are never installed in it: a host that sends
// them with every message cannot use up the gateway's descriptor table (every session's
// requests would then fail). The gateway's receive buffer has room for the sender's
// credentials only; the kernel drops what does not fit. Benign next to it: a plugin's calls
// still work afterwards.
TEST_F(T5GatewayIpc, DescriptorsPassedToTheGatewayAreNeverKept) {
  auto token = RegisterPlugin("p.one", ReadWriteGrant());
  auto open_fds = [pid = gateway_->pid()] {
    int count = 0;
    if (DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str())) {
      while (readdir(d) != nullptr) ++count;
      closedir(d);
    }
    return count;
  };
  const int before = open_fds();
  int passed[4];
  for (int& fd : passed) fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  for (int round = 0; round < 64; ++round) {
    auto fd = gateway_->Connect();
    ASSERT_TRUE(fd);
    for (size_t count : {1u, 4u}) {
      char byte = 0;
      iovec iov{&byte, 1};
      alignas(cmsghdr) char control[CMSG_SPACE(sizeof(passed))] = {};
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = CMSG_SPACE(count * sizeof(int));
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(count * sizeof(int));
      std::memcpy(CMSG_DATA(c), passed, count * sizeof(int));
      EXPECT_EQ(sendmsg(fd->Get(), &msg, MSG_NOSIGNAL), 1) << std::strerror(errno);
    }
  }
  for (int fd : passed) close(fd);
  // Every attacking connection is closed by now or soon; none may have left a descriptor.
  int after = open_fds();
  for (int i = 0; i < 100 && after > before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    after = open_fds();
  }
  EXPECT_LE(after, before) << "the gateway kept passed descriptors";
  auto client = Client(token, "p.one");
  auto r = client->Call("fs.read", {"a.txt"});
  ASSERT_TRUE(r && r->ok);
  EXPECT_EQ(r->fields[0], "content");
}

TEST_F(T5GatewayIpc, SecondLocalUserCannotEvenConnect) {
  auto user = UnprivilegedUser();
  if (!user && !UnprivilegedUserCannotReachTheBuild().empty()) {
    GTEST_FAIL() << UnprivilegedUserCannotReachTheBuild();
  }
  if (!user) GTEST_SKIP() << "SKIPPED LOUDLY: cannot create the unprivileged test user";
  struct stat st {};
  std::string dir = gateway_->socket_path().substr(0, gateway_->socket_path().rfind('/'));
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat(gateway_->socket_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  pid_t child = fork();
  if (child == 0) {
    if (setgid(user->gid) != 0 || setuid(user->uid) != 0) _exit(3);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, gateway_->socket_path().c_str(), sizeof(addr.sun_path) - 1);
    int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    _exit(rc != 0 && errno == EACCES ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "other user could connect";
}

TEST_F(T5GatewayIpc, HostExitRevokesItsToken) {
  pid_t host = fork();
  if (host == 0) {
    pause();
    _exit(0);
  }
  RegisterPlugin("p.gone", ReadWriteGrant(), host);
  auto status = gateway_->Control({{"op", "status"}});
  ASSERT_TRUE(status);
  EXPECT_EQ((*status)["registrations"], 1);
  kill(host, SIGKILL);
  waitpid(host, nullptr, 0);
  bool revoked = false;
  for (int i = 0; i < 100 && !revoked; ++i) {
    usleep(10000);
    revoked = (*gateway_->Control({{"op", "status"}}))["registrations"] == 0;
  }
  EXPECT_TRUE(revoked) << "token outlived its host";
}

TEST_F(T5GatewayIpc, ConcurrentCancelAnswersEveryRequestExactlyOnce) {
  WriteFile(*ws_ / "big.bin", std::string(1 << 20, 'b'));
  auto token = RegisterPlugin("p.one", ReadWriteGrant());
  auto client = Client(token, "p.one");
  constexpr int kRequests = 64;
  std::vector<uint64_t> ids;
  for (int i = 0; i < kRequests; ++i) {
    auto id = client->Send("fs.read", {"big.bin"});
    ASSERT_TRUE(id);
    ids.push_back(*id);
    if (i % 2 == 1) {
      ASSERT_TRUE(client->SendCancel(*id));
    }
    if (i == kRequests / 2) {
      ASSERT_TRUE(gateway_->CancelPlugin("p.one", "reload"));
    }
  }
  std::set<uint64_t> answered;
  for (int i = 0; i < kRequests; ++i) {
    auto r = client->Receive();
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_TRUE(answered.insert(r->id).second) << "request answered twice: " << r->id;
    if (r->ok) {
      EXPECT_EQ(r->fields[0].size(), 1u << 20);
    } else {
      EXPECT_TRUE(r->fields[0] == "cancelled" || r->fields[0] == "busy") << r->ErrorText();
    }
  }
  EXPECT_EQ(answered.size(), static_cast<size_t>(kRequests));
  // Still serving after the storm.
  EXPECT_TRUE(client->Call("fs.read", {"a.txt"})->ok);
}

// Connections are served by several threads at once: a revocation that returned must leave no
// thread about to answer a read it admitted before. Four clients read as fast as they can while
// the token is revoked; no request sent after the revocation returned may be answered "ok".
TEST_F(T5GatewayIpc, RevokeDuringConcurrentReadsStopsEveryAnswer) {
  auto token = RegisterPlugin("p.one", ReadWriteGrant());
  constexpr int kClients = 4;
  std::vector<std::unique_ptr<ipc::GatewayClient>> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(Client(token, "p.one"));
  std::atomic<bool> revoked{false};
  std::atomic<int> served_before{0};
  std::atomic<int> served_after{0};
  std::vector<std::thread> readers;
  for (auto& client : clients) {
    readers.emplace_back([&, c = client.get()] {
      for (int i = 0; i < 100000; ++i) {
        const bool after = revoked.load();
        auto r = c->Call("fs.read", {"a.txt"});
        if (!r || !r->ok) return;  // refused or closed: that is the point
        (after ? served_after : served_before)++;
      }
    });
  }
  while (served_before.load() < 50) usleep(1000);
  ASSERT_TRUE(gateway_->Revoke(token));
  revoked = true;
  for (auto& t : readers) t.join();
  EXPECT_GT(served_before.load(), 0);
  EXPECT_EQ(served_after.load(), 0) << "a read was answered after its token's revocation returned";
}

// The direct case of the one above: a read admitted before the revocation, whose answer is
// ready only after the revocation began, is never sent. The gateway holds every answer it read
// on an I/O thread for a while (a test-only flag), so the revocation lands while the read is in
// flight; it returns only once that thread let go of the connection, which then ends without
// the answer, and the audit log has the read as cancelled, not allowed after the revocation.
class T5GatewayRevokeInFlight : public GatewayTest {};

TEST_F(T5GatewayRevokeInFlight, AnswerReadBeforeRevokeIsNeverSentAfterIt) {
  WriteFile(*ws_ / "a.txt", "content");
  StartGateway({"--unsafe-test-inline-delay-ms", "1500"});
  auto token = RegisterPlugin("p.one", ReadWriteGrant());
  auto client = Client(token, "p.one");
  ASSERT_TRUE(client->Send("fs.read", {"a.txt"}));
  usleep(300000);  // the read is being answered; its answer is held
  ASSERT_TRUE(gateway_->Revoke(token));
  auto r = client->Receive();
  EXPECT_FALSE(r && r->ok) << "the answer of a read in flight was sent after the revocation";
  EXPECT_FALSE(r) << "expected the connection to end, got an answer";
  // Nor does the audit log say the revoked plugin was allowed a read after its revocation: the
  // read's line says its answer was dropped.
  ASSERT_TRUE(gateway_->Control({{"op", "status"}}));
  bool revoked = false;
  bool dropped = false;
  for (const auto& line : AuditLines()) {
    if (line.value("plugin", "") != "p.one") continue;
    if (line.value("op", "") == "revoke") revoked = true;
    if (line.value("op", "") != "fs.read") continue;
    EXPECT_FALSE(revoked && line.value("verdict", "") == "allow")
        << "audit: read allowed after the revocation: " << line.dump();
    dropped |= line.value("verdict", "") == "cancelled";
  }
  EXPECT_TRUE(revoked);
  EXPECT_TRUE(dropped) << "the dropped answer's read is not in the audit log as cancelled";
  // The benign neighbour: another plugin registered afterwards is served (slowly) as usual.
  auto other = RegisterPlugin("p.two", ReadWriteGrant());
  auto again = Client(other, "p.two")->Call("fs.read", {"a.txt"});
  ASSERT_TRUE(again && again->ok);
  EXPECT_EQ(again->fields[0], "content");
}

// An I/O thread re-arms a connection it served before it lets go of it, so that the others do
// not wait for that syscall under the connections' lock. A request that arrives in between is
// seen by another I/O thread while the connection is still owned: it must still be answered
// (not dropped as a stale event), and a revocation in that window still ends the connection
// with no answer after it. (With one I/O thread, one CPU, the window cannot be hit: it passes.)
class T5GatewayRearmWindow : public GatewayTest {
 protected:
  static void ReceiveTimeout(int fd, int seconds) {
    timeval tv{seconds, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
};

TEST_F(T5GatewayRearmWindow, RequestArrivingWhileOwnerLetsGoIsAnswered) {
  WriteFile(*ws_ / "a.txt", "content");
  StartGateway({"--unsafe-test-rearm-delay-ms", "300"});
  auto token = RegisterPlugin("p.one", ReadWriteGrant());
  auto client = Client(token, "p.one");
  ReceiveTimeout(client->fd(), 10);
  for (int i = 0; i < 4; ++i) {
    // Each answer leaves before its thread re-arms and waits; the next request lands then.
    auto r = client->Call("fs.read", {"a.txt"});
    ASSERT_TRUE(r) << "request " << i << " was never answered: " << r.error().ToString();
    ASSERT_TRUE(r->ok);
    EXPECT_EQ(r->fields[0], "content");
  }
}

TEST_F(T5GatewayRearmWindow, RevokeWhileOwnerLetsGoSendsNothingAfterIt) {
  WriteFile(*ws_ / "a.txt", "content");
  StartGateway({"--unsafe-test-rearm-delay-ms", "800"});
  auto token = RegisterPlugin("p.one", ReadWriteGrant());
  auto client = Client(token, "p.one");
  ReceiveTimeout(client->fd(), 10);
  auto first = client->Call("fs.read", {"a.txt"});
  ASSERT_TRUE(first && first->ok);
  ASSERT_TRUE(client->Send("fs.read", {"a.txt"}));  // while its thread still owns it
  usleep(200000);
  ASSERT_TRUE(gateway_->Revoke(token));
  auto r = client->Receive();
  EXPECT_FALSE(r && r->ok) << "a read was answered after the revocation";
  ASSERT_TRUE(gateway_->Control({{"op", "status"}}));
  bool revoked = false;
  for (const auto& line : AuditLines()) {
    if (line.value("plugin", "") != "p.one") continue;
    if (line.value("op", "") == "revoke") revoked = true;
    EXPECT_FALSE(revoked && line.value("op", "") == "fs.read" &&
                 line.value("verdict", "") == "allow")
        << "audit: read allowed after the revocation: " << line.dump();
  }
  EXPECT_TRUE(revoked);
}

// Shutdown while every I/O thread is serving a reader and a slow reader's requests wait for its
// output buffer: the gateway joins its threads and exits cleanly, in time, leaving nothing.
TEST_F(T5GatewayIpc, ShutdownWhileEveryIoThreadServesExitsCleanly) {
  WriteFile(*ws_ / "big.bin", std::string(1 << 20, 'x'));
  auto token = RegisterPlugin("p.one", ReadWriteGrant());
  auto slow = Client(token, "p.one");
  int flags = fcntl(slow->fd(), F_GETFL);
  fcntl(slow->fd(), F_SETFL, flags | O_NONBLOCK);
  for (int i = 0; i < 200 && slow->Send("fs.read", {"big.bin"}); ++i) {
  }
  constexpr int kClients = 4;
  std::vector<std::unique_ptr<ipc::GatewayClient>> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(Client(token, "p.one"));
  std::atomic<int> served{0};
  std::vector<std::thread> readers;
  for (auto& client : clients) {
    readers.emplace_back([&, c = client.get()] {
      while (true) {
        auto r = c->Call("fs.read", {"big.bin"});
        if (!r || !r->ok) return;  // the gateway is gone
        ++served;
      }
    });
  }
  while (served.load() < 8) usleep(1000);
  const pid_t pid = gateway_->pid();
  auto status = gateway_->Stop(GatewayUnderTsan() ? 20000 : 5000);
  gateway_.reset();
  for (auto& t : readers) t.join();
  ASSERT_TRUE(status);
  EXPECT_EQ(*status, 0) << "the gateway did not exit cleanly in time (killed: 137)";
  EXPECT_FALSE(ProcessAlive(pid));
}

// The benign twin: several clients reading at once all get their own, whole answers, and the
// audit log has one whole line per read.
TEST_F(T5GatewayIpc, ConcurrentClientsReadAndEveryReadIsOneAuditLine) {
  auto token = RegisterPlugin("p.one", ReadWriteGrant());
  constexpr int kClients = 8;
  constexpr int kReads = 200;
  for (int i = 0; i < kClients; ++i) {
    WriteFile(*ws_ / ("f" + std::to_string(i) + ".txt"), std::string(1000 + i, 'a' + i));
  }
  std::vector<std::unique_ptr<ipc::GatewayClient>> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(Client(token, "p.one"));
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < kClients; ++i) {
    readers.emplace_back([&, i] {
      const std::string name = "f" + std::to_string(i) + ".txt";
      for (int k = 0; k < kReads; ++k) {
        auto r = clients[i]->Call("fs.read", {name});
        if (!r || !r->ok || r->fields.empty() || r->fields[0] != std::string(1000 + i, 'a' + i)) {
          ++wrong;
        }
      }
    });
  }
  for (auto& t : readers) t.join();
  EXPECT_EQ(wrong.load(), 0);
  ASSERT_TRUE(gateway_->Control({{"op", "status"}}));  // the gateway flushed its turns
  int reads = 0;
  for (const auto& line : AuditLines()) {
    if (line.value("op", "") == "fs.read" && line.value("verdict", "") == "allow") ++reads;
  }
  EXPECT_EQ(reads, kClients * kReads);
}

}  // namespace
}  // namespace t5_gateway_ipc_test
}  // namespace anvil::testing
