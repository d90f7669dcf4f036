// Issue #9, faults: a plugin host or the gateway killed (SIGKILL) in the middle of sys.fs.write,
// a full filesystem, and a gateway out of file descriptors. The promise under test: a file holds
// its old or its new content, never a mix; every failure is a clear error; the gateway keeps
// serving once the fault is gone. (Slow readers: t6_gateway_limits_test.cc; load:
// reliability/gateway_load_test.cc; clock jumps: tests/unit/monotonic_deadlines_test.cc.)
#include <dirent.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <set>

#include "gateway_fixture.h"

namespace anvil::testing {
namespace gateway_faults_test {
namespace {

constexpr size_t kOldBytes = 1 << 20;
constexpr size_t kNewBytes = 4 << 20;

// Old content is 'o' repeated, new content 'n': anything else (a prefix, a mix, a truncation)
// is a torn file.
enum class Outcome { kOld, kNew, kTorn };
Outcome Classify(const std::string& content) {
  static const std::string old_content(kOldBytes, 'o'), new_content(kNewBytes, 'n');
  if (content == old_content) return Outcome::kOld;
  if (content == new_content) return Outcome::kNew;
  return Outcome::kTorn;
}

std::set<std::string> Names(const std::string& dir) {
  std::set<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.insert(n);
  }
  closedir(d);
  return names;
}

int OpenFds(pid_t pid) {
  return static_cast<int>(Names("/proc/" + std::to_string(pid) + "/fd").size());
}

class GatewayFaults : public GatewayTest {
 protected:
  // Times one uninterrupted write of the new content (and checks it succeeds), so the kill
  // points can be spread from "before the gateway reads the request" to "after the rename".
  useconds_t CalibrateWrite(ipc::GatewayClient& client) {
    auto start = std::chrono::steady_clock::now();
    auto r = client.Call("fs.write", {"out.txt", std::string(kNewBytes, 'n')});
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                  std::chrono::steady_clock::now() - start)
                  .count();
    EXPECT_TRUE(r && r->ok) << (r ? r->ErrorText() : r.error().ToString());
    EXPECT_EQ(Classify(ReadFile(*ws_ / "out.txt")), Outcome::kNew);
    return static_cast<useconds_t>(us);
  }

  void KillGateway() {
    ASSERT_EQ(kill(gateway_->pid(), SIGKILL), 0);
    auto status = gateway_->Stop(0);
    ASSERT_TRUE(status);
    EXPECT_EQ(*status, 128 + SIGKILL);
    gateway_.reset();
  }
};

TEST_F(GatewayFaults, GatewayKilledMidWriteLeavesOldOrNewNeverAMix) {
  constexpr int kRounds = 20;
  const std::string new_content(kNewBytes, 'n');
  std::mt19937 rng(9);
  StartGateway();
  auto calibration_token = RegisterPlugin("p.calibrate", ReadWriteGrant());
  const useconds_t write_us = CalibrateWrite(*Client(calibration_token, "p.calibrate"));
  auto stopped = gateway_->Stop();
  gateway_.reset();
  ASSERT_TRUE(stopped && *stopped == 0);
  int old_seen = 0, new_seen = 0, stray = 0;
  for (int round = 0; round < kRounds; ++round) {
    WriteFile(*ws_ / "out.txt", std::string(kOldBytes, 'o'));
    StartGateway();
    auto token = RegisterPlugin("p.writer", ReadWriteGrant());
    auto client = Client(token, "p.writer");
    ASSERT_TRUE(client->Send("fs.write", {"out.txt", new_content}));
    // From "before the request is read" to "after the rename": a spread of kill points.
    usleep(std::uniform_int_distribution<useconds_t>(0, 2 * write_us)(rng));
    KillGateway();
    Outcome o = Classify(ReadFile(*ws_ / "out.txt"));
    ASSERT_NE(o, Outcome::kTorn) << "round " << round << ": out.txt is a mix of old and new";
    (o == Outcome::kOld ? old_seen : new_seen)++;
    // A kill between link and rename leaves a named temporary for an instant; the session's
    // Stop sweeps it (fs/pending_writes.h), so nothing but out.txt is ever left.
    for (const auto& name : Names(ws_->path())) {
      if (name != "out.txt") {
        ++stray;
        std::remove((*ws_ / name).c_str());
      }
    }
  }
  std::printf(
      "[ figures ] gateway kill -9 mid-write: %d rounds (4 MiB write takes %u us), old %d, "
      "new %d, torn 0, stray temporaries %d\n",
      kRounds, write_us, old_seen, new_seen, stray);
  EXPECT_EQ(old_seen + new_seen, kRounds);
  EXPECT_EQ(stray, 0) << "a temporary file was left behind";
}

TEST_F(GatewayFaults, HostKilledMidWriteLeavesOldOrNewNeverAMix) {
  constexpr int kRounds = 20;
  const std::string new_content(kNewBytes, 'n');
  StartGateway();
  std::mt19937 rng(99);
  auto calibration_token = RegisterPlugin("p.calibrate", ReadWriteGrant());
  const useconds_t write_us = CalibrateWrite(*Client(calibration_token, "p.calibrate"));
  int old_seen = 0, new_seen = 0;
  for (int round = 0; round < kRounds; ++round) {
    WriteFile(*ws_ / "out.txt", std::string(kOldBytes, 'o'));
    auto token = ipc::CapabilityToken::Generate();
    ASSERT_TRUE(token);
    int go[2];
    ASSERT_EQ(pipe(go), 0);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      // The "plugin host": waits until its token is registered, then writes and waits.
      close(go[1]);
      char c;
      if (read(go[0], &c, 1) != 1) _exit(2);
      auto fd = gateway_->Connect();
      if (!fd) _exit(3);
      ipc::GatewayClient client(std::move(*fd), token->bytes());
      if (!client.Hello("p.host", workspace_)) _exit(4);
      if (!client.Send("fs.write", {"out.txt", new_content})) _exit(5);
      auto r = client.Receive();
      _exit(r ? 0 : 6);
    }
    close(go[0]);
    auto s = gateway_->Register(*token, "p.host", child, geteuid(), ReadWriteGrant());
    ASSERT_TRUE(s) << s.error().ToString();
    ASSERT_EQ(write(go[1], "g", 1), 1);
    close(go[1]);
    usleep(std::uniform_int_distribution<useconds_t>(0, 2 * write_us)(rng));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    // The gateway may still be finishing the write the dead host asked for: every state a
    // reader can observe, now and until it settles, is old or new.
    Outcome last = Outcome::kOld;
    for (int look = 0; look < 10; ++look) {
      last = Classify(ReadFile(*ws_ / "out.txt"));
      ASSERT_NE(last, Outcome::kTorn) << "round " << round << ": torn file seen";
      usleep(20000);
    }
    (last == Outcome::kOld ? old_seen : new_seen)++;
  }
  std::printf(
      "[ figures ] host kill -9 mid-write: %d rounds (4 MiB write takes %u us), old %d, "
      "new %d, torn 0\n",
      kRounds, write_us, old_seen, new_seen);
  // The gateway survived every dead host.
  auto token = RegisterPlugin("p.after", ReadWriteGrant());
  auto r = Client(token, "p.after")->Call("fs.read", {"out.txt"});
  ASSERT_TRUE(r && r->ok);
}

TEST_F(GatewayFaults, FullFilesystemFailsTheWriteClearlyAndKeepsTheOldFile) {
  // A 1 MiB tmpfs as the whole workspace.
  if (mount("anvil-t9", ws_->path().c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") !=
      0) {
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  }
  const std::string old_content(256 << 10, 'o');
  WriteFile(*ws_ / "out.txt", old_content);
  StartGateway();
  auto token = RegisterPlugin("p.one", ReadWriteGrant());
  auto client = Client(token, "p.one");
  for (int i = 0; i < 5; ++i) {
    auto r = client->Call("fs.write", {"out.txt", std::string(2 << 20, 'n')});
    ASSERT_TRUE(r);
    ASSERT_FALSE(r->ok);
    EXPECT_EQ(r->fields[0], "limit") << r->ErrorText();
    EXPECT_NE(r->fields[1].find("no space left"), std::string::npos) << r->ErrorText();
    EXPECT_EQ(ReadFile(*ws_ / "out.txt"), old_content) << "old file damaged";
  }
  EXPECT_EQ(Names(ws_->path()), std::set<std::string>{"out.txt"}) << "temporary left behind";
  // The failed writes leaked no space: a write that fits still succeeds.
  auto r = client->Call("fs.write", {"out.txt", std::string(512 << 10, 'n')});
  ASSERT_TRUE(r && r->ok) << (r ? r->ErrorText() : r.error().ToString());
  EXPECT_EQ(ReadFile(*ws_ / "out.txt"), std::string(512 << 10, 'n'));
  auto stopped = gateway_->Stop();
  gateway_.reset();
  umount2(ws_->path().c_str(), MNT_DETACH);
  ASSERT_TRUE(stopped);
  EXPECT_EQ(*stopped, 0);
}

TEST_F(GatewayFaults, OutOfFileDescriptorsIsAClearErrorAndServingResumes) {
  WriteFile(*ws_ / "a.txt", "ok");
  StartGateway();
  auto token = RegisterPlugin("p.one", ReadWriteGrant());
  auto good = Client(token, "p.one");
  ASSERT_TRUE(good->Call("fs.read", {"a.txt"})->ok);
  // Leave the gateway two descriptors to spare.
  rlimit old_limit{};
  ASSERT_EQ(prlimit(gateway_->pid(), RLIMIT_NOFILE, nullptr, &old_limit), 0);
  rlimit tight = old_limit;
  tight.rlim_cur = static_cast<rlim_t>(OpenFds(gateway_->pid()) + 2);
  ASSERT_EQ(prlimit(gateway_->pid(), RLIMIT_NOFILE, &tight, nullptr), 0);

  std::vector<std::unique_ptr<ipc::GatewayClient>> extra;
  int accepted = 0, refused = 0;
  for (int i = 0; i < 10; ++i) {
    auto fd = gateway_->Connect();
    ASSERT_TRUE(fd) << fd.error().ToString();
    timeval timeout{5, 0};  // an unanswered connection would hang here: that is the failure
    setsockopt(fd->Get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    auto client = std::make_unique<ipc::GatewayClient>(std::move(*fd), token.bytes());
    auto hello = client->Hello("p.one", workspace_);
    if (hello) {
      ++accepted;
      extra.push_back(std::move(client));
      continue;
    }
    ASSERT_EQ(hello.error().code, "busy") << hello.error().ToString();
    EXPECT_NE(hello.error().message.find("out of file descriptors"), std::string::npos);
    ++refused;
  }
  EXPECT_GT(refused, 0);
  // Requests that need a descriptor fail with a clear code, not a hang or a crash.
  auto r = good->Call("fs.read", {"a.txt"});
  ASSERT_TRUE(r) << r.error().ToString();
  if (!r->ok) {
    EXPECT_EQ(r->fields[0], "limit") << r->ErrorText();
  }
  std::printf("[ figures ] fd exhaustion: %d connections accepted, %d refused busy, fs.read %s\n",
              accepted, refused, r->ok ? "ok" : r->ErrorText().c_str());

  // Descriptors free up: the gateway serves again, old and new connections alike.
  extra.clear();
  usleep(200000);
  auto again = good->Call("fs.read", {"a.txt"});
  ASSERT_TRUE(again && again->ok) << (again ? again->ErrorText() : again.error().ToString());
  auto fresh = Client(token, "p.one");
  ASSERT_TRUE(fresh->Call("fs.read", {"a.txt"})->ok);
  ASSERT_EQ(prlimit(gateway_->pid(), RLIMIT_NOFILE, &old_limit, nullptr), 0);
  bool audited = false;
  for (const auto& l : AuditLines()) {
    audited |= l.value("reason", std::string()) == "out of file descriptors";
  }
  EXPECT_TRUE(audited) << "refused connections are not in the audit log";
}

// An I/O thread whose epoll_wait fails can serve none of its connections: the gateway says why on
// stderr and shuts down, closing every connection (no client waits for an answer that never
// comes), and exits with a failure its session sees. Before, the thread returned silently and
// the request it had taken was never answered.
TEST_F(GatewayFaults, AnIoThreadThatCannotWaitStopsTheGatewayInsteadOfHangingClients) {
  WriteFile(*ws_ / "a.txt", "content");
  // The hello (served on the connection's first event, or with its accept when it is there
  // already), the first read (served: the benign neighbour), then the wait for a later read
  // fails: the third event an I/O thread would serve is left unserved.
  StartGateway({"--unsafe-test-io-wait-fail-after", "3"});
  auto token = RegisterPlugin("p.one", ReadWriteGrant());
  auto client = Client(token, "p.one");
  timeval patience{15, 0};
  ASSERT_EQ(setsockopt(client->fd(), SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof(patience)), 0);
  auto first = client->Call("fs.read", {"a.txt"});
  ASSERT_TRUE(first && first->ok) << (first ? first->ErrorText() : first.error().ToString());
  EXPECT_EQ(first->fields[0], "content");

  // At most one more read is answered (when the hello came with the accept), then the
  // connection ends instead of leaving the client waiting.
  bool ended = false;
  for (int call = 0; call < 2 && !ended; ++call) {
    const auto start = std::chrono::steady_clock::now();
    auto next = client->Call("fs.read", {"a.txt"});
    const auto waited = std::chrono::steady_clock::now() - start;
    ended = !next;
    EXPECT_LT(waited, std::chrono::seconds(10)) << "the client waited for an answer never sent";
  }
  EXPECT_TRUE(ended) << "expected the connection to end, got answers";

  pollfd exited{gateway_->pidfd(), POLLIN, 0};
  EXPECT_EQ(poll(&exited, 1, 10000), 1) << "the gateway kept running without its I/O thread";
  auto status = gateway_->Stop(0);
  ASSERT_TRUE(status);
  EXPECT_EQ(*status, 1) << "the gateway's exit must tell its session it failed";
  gateway_.reset();
}

}  // namespace
}  // namespace gateway_faults_test
}  // namespace anvil::testing
