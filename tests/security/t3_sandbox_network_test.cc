// T3/T4 for the command sandbox, network: with `--network none` (the default) a command reaches
// no listener outside the sandbox — TCP or UDP on the host's loopback, an abstract or pathname
// Unix socket — and cannot open raw, packet or non-route netlink sockets (its own loopback is
// t3_sandbox_loopback_test.cc); `--network full` is the benign control that proves the same
// client works when allowed. Every listener here is made by the test itself
// on 127.0.0.1 or in the abstract namespace; nothing connects anywhere else.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace t3_sandbox_network_test {
namespace {

// argv: KIND TARGET PAYLOAD. Prints CONNECTED or "ERR <errno name>".
constexpr char kClient[] = R"py(
import errno, socket, sys
kind, target, payload = sys.argv[1], sys.argv[2], sys.argv[3].encode()
try:
    if kind == "tcp":
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(("127.0.0.1", int(target)))
        s.sendall(payload)
    elif kind == "udp":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.sendto(payload, ("127.0.0.1", int(target)))
    else:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect("\0" + target[1:] if target.startswith("@") else target)
        s.sendall(payload)
    s.close()
    print("CONNECTED")
except OSError as e:
    print("ERR", errno.errorcode.get(e.errno, e.errno))
)py";

// A listening or bound socket owned by the test; closed on destruction.
class TestSocket {
 public:
  explicit TestSocket(int fd) : fd_(fd) {}
  ~TestSocket() {
    if (fd_ >= 0) close(fd_);
    if (!unlink_.empty()) unlink(unlink_.c_str());
  }
  TestSocket(const TestSocket&) = delete;
  TestSocket& operator=(const TestSocket&) = delete;
  int fd() const { return fd_; }
  int port = 0;
  std::string unlink_;

 private:
  int fd_;
};

std::unique_ptr<TestSocket> LoopbackSocket(int type) {
  auto s = std::make_unique<TestSocket>(socket(AF_INET, type | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // loopback only, never a public address
  if (s->fd() < 0 || bind(s->fd(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return nullptr;
  }
  if (type == SOCK_STREAM && listen(s->fd(), 16) != 0) return nullptr;
  socklen_t len = sizeof(addr);
  getsockname(s->fd(), reinterpret_cast<sockaddr*>(&addr), &len);
  s->port = ntohs(addr.sin_port);
  return s;
}

// `name` starting with '@' is abstract; otherwise a path.
std::unique_ptr<TestSocket> UnixListener(const std::string& name) {
  auto s = std::make_unique<TestSocket>(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (name.size() >= sizeof(addr.sun_path)) return nullptr;
  std::memcpy(addr.sun_path, name.data(), name.size());
  socklen_t len = offsetof(sockaddr_un, sun_path) + name.size();
  if (name[0] == '@') {
    addr.sun_path[0] = '\0';
  } else {
    s->unlink_ = name;
    len += 1;
  }
  if (s->fd() < 0 || bind(s->fd(), reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(s->fd(), 16) != 0) {
    return nullptr;
  }
  if (name[0] != '@') chmod(name.c_str(), 0777);
  return s;
}

// What arrived on the test's socket within `ms` (a connection's bytes, or one datagram).
std::optional<std::string> Received(const TestSocket& s, int type, int ms) {
  pollfd p{s.fd(), POLLIN, 0};
  if (poll(&p, 1, ms) <= 0) return std::nullopt;
  int fd = s.fd();
  int conn = -1;
  if (type == SOCK_STREAM) {
    conn = accept4(s.fd(), nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) return std::nullopt;
    fd = conn;
    pollfd c{conn, POLLIN, 0};
    poll(&c, 1, 2000);
  }
  char buf[256];
  ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
  if (conn >= 0) close(conn);
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

class T3SandboxNetwork : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
    caller_.Give(ws_.path());
  }
  RunResult Client(const std::vector<std::string>& flags, const std::string& kind,
                   const std::string& target, const std::string& payload) {
    return SandboxPython(ws_.path(), kClient, flags, Opts(), {kind, target, payload});
  }

  TempDir ws_{"anvil-ws-net"};
};

// --network none is the default; read-only takes the same network path.
const std::vector<std::vector<std::string>> kNoNetwork = {{}, {"--policy", "read-only"}};

TEST_P(T3SandboxNetwork, TcpToLoopbackListenerIsRefusedWithNetworkNone) {
  auto listener = LoopbackSocket(SOCK_STREAM);
  ASSERT_TRUE(listener);
  const std::string port = std::to_string(listener->port);
  for (const auto& flags : kNoNetwork) {
    const std::string payload = UniqueToken("tcp-attack");
    auto attack = Client(flags, "tcp", port, payload);
    EXPECT_EQ(attack.status, 0) << attack.err;
    EXPECT_EQ(attack.out.rfind("ERR", 0), 0u) << attack.out;
    EXPECT_FALSE(Received(*listener, SOCK_STREAM, 20)) << "a connection reached the listener";
  }

  const std::string payload = UniqueToken("tcp-benign");
  auto benign = Client({"--network", "full"}, "tcp", port, payload);
  EXPECT_EQ(benign.out, "CONNECTED\n") << benign.err;
  EXPECT_EQ(Received(*listener, SOCK_STREAM, 2000).value_or("<nothing>"), payload);
}

TEST_P(T3SandboxNetwork, UdpToLoopbackListenerIsRefusedWithNetworkNone) {
  auto receiver = LoopbackSocket(SOCK_DGRAM);
  ASSERT_TRUE(receiver);
  const std::string port = std::to_string(receiver->port);
  for (const auto& flags : kNoNetwork) {
    // The send itself may succeed: it goes to the sandbox's own loopback, where nothing listens.
    auto attack = Client(flags, "udp", port, UniqueToken("udp-attack"));
    EXPECT_EQ(attack.status, 0) << attack.err;
    EXPECT_FALSE(Received(*receiver, SOCK_DGRAM, 20)) << "a datagram reached the receiver";
  }

  const std::string payload = UniqueToken("udp-benign");
  auto benign = Client({"--network", "full"}, "udp", port, payload);
  EXPECT_EQ(benign.out, "CONNECTED\n") << benign.err;
  EXPECT_EQ(Received(*receiver, SOCK_DGRAM, 2000).value_or("<nothing>"), payload);
}

TEST_P(T3SandboxNetwork, AbstractUnixSocketOfOutsideListenerIsRefused) {
  // Abstract sockets have no file to hide: a desktop's D-Bus or X11 listener is reachable by
  // name from the same network namespace unless Landlock scoping (ABI >= 6) refuses it.
  const std::string name = "@" + UniqueToken("anvil-abstract");
  auto listener = UnixListener(name);
  ASSERT_TRUE(listener);
  std::vector<std::vector<std::string>> modes = kNoNetwork;
  // With --network none the sandbox's own network namespace already hides the listener;
  // with --network full only Landlock scoping (ABI >= 6) stands in the way.
  const bool scoped = ProbeLayers({"--network", "full"}, Opts()).value("landlock_scoped", false);
  if (scoped) modes.push_back({"--network", "full"});
  for (const auto& flags : modes) {
    auto attack = Client(flags, "unix", name, "abstract-attack");
    EXPECT_EQ(attack.status, 0) << attack.err;
    EXPECT_EQ(attack.out.rfind("ERR", 0), 0u)
        << (flags.empty() ? "" : flags.back()) << ": " << attack.out;
    EXPECT_FALSE(Received(*listener, SOCK_STREAM, 20));
  }

  // Benign: Unix sockets among the sandbox's own processes work (AF_UNIX is allowed).
  const std::string local = R"py(
import os, socket
# Random, not the pid: with --network full the name lives in the host's namespace, where a
# concurrent run of this test (its pid inside its own pid namespace the same) would hold it.
name = "\0anvil-inside-" + os.urandom(8).hex()
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(name)
srv.listen(1)
cli = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
cli.connect(name)
conn, _ = srv.accept()
cli.sendall(b"abstract-ok")
a, b = socket.socketpair()
a.sendall(b" pair-ok")
print(conn.recv(64).decode() + b.recv(64).decode())
)py";
  for (const auto& flags : {modes.front(), modes.back()}) {
    auto benign = SandboxPython(ws_.path(), local, flags, Opts());
    EXPECT_EQ(benign.out, "abstract-ok pair-ok\n") << benign.err;
  }
  if (!scoped) {
    GTEST_SKIP() << "PARTLY SKIPPED: Landlock abstract-socket scoping (ABI >= 6) is not in force "
                    "on this kernel, so with --network full an abstract listener outside IS "
                    "reachable; only the --network none half was tried";
  }
}

TEST_P(T3SandboxNetwork, PathnameUnixSocketOfOutsideListenerIsRefused) {
  TempDir outside("anvil-sockdir", "/var/tmp");
  chmod(outside.path().c_str(), 0777);
  const std::string path = outside / "agent.sock";
  auto listener = UnixListener(path);
  ASSERT_TRUE(listener);
  // Control: the caller reaches the listener without the sandbox.
  auto control = ::anvil::testing::Run({kPython, "-c", kClient, "unix", path, "control"}, Opts());
  ASSERT_EQ(control.out, "CONNECTED\n") << control.err;
  ASSERT_EQ(Received(*listener, SOCK_STREAM, 2000).value_or("<nothing>"), "control");

  std::vector<std::vector<std::string>> modes = kNoNetwork;
  modes.push_back({"--network", "full"});
  for (const auto& flags : modes) {
    auto attack = Client(flags, "unix", path, "path-attack");
    EXPECT_EQ(attack.out.rfind("ERR", 0), 0u) << attack.out;
    EXPECT_FALSE(Received(*listener, SOCK_STREAM, 20));
  }
}

TEST_P(T3SandboxNetwork, RunSocketsStayHiddenUnderFullReadAccess) {
  // --read-access full shows the whole filesystem read-only, but a read-only mount does not stop
  // connect(2): /run (docker.sock, the user's bus) must be hidden.
  if (!Exists("/run")) GTEST_SKIP() << "SKIPPED: this host has no /run";
  const std::string path = "/run/" + UniqueToken("anvil-run") + ".sock";
  auto listener = UnixListener(path);
  ASSERT_TRUE(listener) << "cannot bind " << path;
  for (const auto& network : {"none", "full"}) {
    auto attack = Client({"--read-access", "full", "--network", network}, "unix", path, "run");
    EXPECT_EQ(attack.out.rfind("ERR", 0), 0u) << network << ": " << attack.out;
    EXPECT_FALSE(Received(*listener, SOCK_STREAM, 20));
  }
  auto benign =
      SandboxSh(ws_.path(), "cat /etc/hostname >/dev/null && ls /var >/dev/null && echo ok",
                {"--read-access", "full"}, Opts());
  EXPECT_EQ(benign.out, "ok\n") << benign.err;
}

TEST_P(T3SandboxNetwork, HostSocketsBeyondRunStayHiddenUnderFullReadAccess) {
  // Sockets of host services live outside /run too: ~/.gnupg/S.gpg-agent, ssh ControlMaster
  // sockets in ~/.ssh, a daemon's socket under /var. Full read access shows them read-only, and
  // a read-only mount does not stop connect(2). Every socket a host process has bound where the
  // view shows it must be masked, in the workspace too, whatever the read access.
  TempDir outside("anvil-sockdir", "/var/tmp");
  chmod(outside.path().c_str(), 0777);
  const std::string agent = outside / "S.gpg-agent";
  auto agent_listener = UnixListener(agent);
  ASSERT_TRUE(agent_listener);
  const std::string in_ws = ws_ / "host-service.sock";
  auto ws_listener = UnixListener(in_ws);
  ASSERT_TRUE(ws_listener);
  // ssh's ControlMaster binds a temporary name, links the real one and unlinks the first: the
  // host's socket table keeps only the name that is gone.
  const std::string cm_tmp = outside / "cm-host.XXXX", cm_path = outside / "cm-host";
  auto cm_listener = UnixListener(cm_tmp);
  ASSERT_TRUE(cm_listener);
  ASSERT_EQ(link(cm_tmp.c_str(), cm_path.c_str()), 0);
  ASSERT_EQ(unlink(cm_tmp.c_str()), 0);
  cm_listener->unlink_ = cm_path;
  for (const auto& target : {agent, in_ws, cm_path}) {
    // Control: the caller reaches each without the sandbox.
    auto control =
        ::anvil::testing::Run({kPython, "-c", kClient, "unix", target, "control"}, Opts());
    ASSERT_EQ(control.out, "CONNECTED\n") << target << ": " << control.err;
  }
  ASSERT_EQ(Received(*agent_listener, SOCK_STREAM, 2000).value_or("<nothing>"), "control");
  ASSERT_EQ(Received(*ws_listener, SOCK_STREAM, 2000).value_or("<nothing>"), "control");
  ASSERT_EQ(Received(*cm_listener, SOCK_STREAM, 2000).value_or("<nothing>"), "control");

  for (const auto& network : {"none", "full"}) {
    auto attack =
        Client({"--read-access", "full", "--network", network}, "unix", agent, "agent-attack");
    EXPECT_EQ(attack.out.rfind("ERR", 0), 0u) << network << ": " << attack.out << attack.err;
    EXPECT_FALSE(Received(*agent_listener, SOCK_STREAM, 20));
    attack = Client({"--read-access", "full", "--network", network}, "unix", cm_path, "cm-attack");
    EXPECT_EQ(attack.out.rfind("ERR", 0), 0u) << network << ": " << attack.out << attack.err;
    EXPECT_FALSE(Received(*cm_listener, SOCK_STREAM, 20));
  }
  for (const auto& flags : std::vector<std::vector<std::string>>{
           {}, {"--read-access", "full"}, {"--policy", "read-only"}}) {
    auto attack = Client(flags, "unix", in_ws, "ws-attack");
    EXPECT_EQ(attack.out.rfind("ERR", 0), 0u) << flags.size() << ": " << attack.out << attack.err;
    EXPECT_FALSE(Received(*ws_listener, SOCK_STREAM, 20));
  }

  // Benign: a socket the command binds itself, in the workspace, works; the host's listeners
  // still work after the sandbox (the masks were the sandbox's own mounts).
  const std::string own = R"py(
import os, socket
path = os.path.join(os.getcwd(), "own-%d.sock" % os.getpid())
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(1)
cli = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
cli.connect(path)
conn, _ = srv.accept()
cli.sendall(b"own-ok")
print(conn.recv(64).decode())
os.unlink(path)
)py";
  for (const auto& flags : std::vector<std::vector<std::string>>{{}, {"--read-access", "full"}}) {
    auto benign = SandboxPython(ws_.path(), own, flags, Opts());
    EXPECT_EQ(benign.out, "own-ok\n") << benign.err;
  }
  auto after = ::anvil::testing::Run({kPython, "-c", kClient, "unix", agent, "after"}, Opts());
  EXPECT_EQ(after.out, "CONNECTED\n") << after.err;
  EXPECT_EQ(Received(*agent_listener, SOCK_STREAM, 2000).value_or("<nothing>"), "after");
}

TEST_P(T3SandboxNetwork, RawNetlinkAndPacketSocketsAreRefused) {
  const std::string probe = R"py(
import errno, socket
cases = [("inet-stream", socket.AF_INET, socket.SOCK_STREAM, 0),
         ("inet6-stream", socket.AF_INET6, socket.SOCK_STREAM, 0),
         ("raw-icmp", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
         ("raw6", socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6),
         ("netlink-route", socket.AF_NETLINK, socket.SOCK_RAW, 0),
         ("netlink-audit", socket.AF_NETLINK, socket.SOCK_RAW, 9),
         ("packet", socket.AF_PACKET, socket.SOCK_RAW, 0),
         ("unix", socket.AF_UNIX, socket.SOCK_STREAM, 0)]
for name, fam, typ, proto in cases:
    try:
        socket.socket(fam, typ, proto).close()
        print(name, "OK")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
)py";
  auto none = SandboxPython(ws_.path(), probe, {}, Opts());
  EXPECT_EQ(none.status, 0) << none.err;
  // IP and route netlink sockets are allowed in the sandbox's own network namespace, where
  // only its loopback exists; raw sockets need CAP_NET_RAW, which the command does not have.
  for (const char* line : {"inet-stream OK", "inet6-stream OK", "raw-icmp EPERM", "raw6 EPERM",
                           "netlink-route OK", "netlink-audit EPERM", "packet EPERM", "unix OK"}) {
    EXPECT_NE(none.out.find(std::string(line) + "\n"), std::string::npos)
        << "--network none: expected `" << line << "` in\n"
        << none.out;
  }

  // With the host's network, ordinary sockets work; raw and packet sockets still need
  // CAP_NET_RAW, which even a sandbox started by root does not have.
  auto full = SandboxPython(ws_.path(), probe, {"--network", "full"}, Opts());
  EXPECT_EQ(full.status, 0) << full.err;
  for (const char* line :
       {"inet-stream OK", "raw-icmp EPERM", "raw6 EPERM", "packet EPERM", "unix OK"}) {
    EXPECT_NE(full.out.find(std::string(line) + "\n"), std::string::npos)
        << "--network full: expected `" << line << "` in\n"
        << full.out;
  }
}

INSTANTIATE_TEST_SUITE_P(Callers, T3SandboxNetwork, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t3_sandbox_network_test
}  // namespace anvil::testing
