// T3 for the command sandbox, network none means "own loopback only": a test suite's server on
// 127.0.0.1 or ::1 inside the sandbox works (TCP and UDP), because the sandbox has a network
// namespace of its own whose loopback reaches nothing outside it. The attacks next to it: the
// host's loopback services (a TCP listener, a UDP receiver, an abstract Unix socket) stay
// unreachable even on the same port, a non-loopback address fails at once with no route (no
// packet leaves), and without a network namespace of its own (read-only's fallback) a command
// gets no IP socket at all.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace t3_sandbox_loopback_test {
namespace {

// A local test server and its client, inside one process: TCP and UDP on both loopbacks.
constexpr char kLocalServers[] = R"py(
import socket, sys
port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
for fam, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    name = "v4" if fam == socket.AF_INET else "v6"
    srv = socket.socket(fam, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, port))
    srv.listen(1)
    cli = socket.create_connection((host, srv.getsockname()[1]), timeout=5)
    conn, _ = srv.accept()
    cli.sendall(b"ping")
    conn.sendall(conn.recv(4).upper())
    print("tcp", name, cli.recv(4).decode())
    u = socket.socket(fam, socket.SOCK_DGRAM)
    u.bind((host, port))
    c = socket.socket(fam, socket.SOCK_DGRAM)
    c.settimeout(5)
    c.sendto(b"dgram", u.getsockname()[:2])
    data, peer = u.recvfrom(16)
    u.sendto(data.upper(), peer)
    print("udp", name, c.recvfrom(16)[0].decode())
)py";

// argv: KIND TARGET PAYLOAD; prints CONNECTED/SENT or "ERR <errno name>".
constexpr char kClient[] = R"py(
import errno, socket, sys
kind, target, payload = sys.argv[1], sys.argv[2], sys.argv[3].encode()
try:
    if kind in ("tcp", "tcp6"):
        fam = socket.AF_INET if kind == "tcp" else socket.AF_INET6
        host, port = target.rsplit(":", 1)
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect((host.strip("[]"), int(port)))
        s.sendall(payload)
        print("CONNECTED")
    elif kind in ("udp", "udp6"):
        fam = socket.AF_INET if kind == "udp" else socket.AF_INET6
        host, port = target.rsplit(":", 1)
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.sendto(payload, (host.strip("[]"), int(port)))
        print("SENT")
    else:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect("\0" + target)
        s.sendall(payload)
        print("CONNECTED")
except OSError as e:
    print("ERR", errno.errorcode.get(e.errno, e.errno))
)py";

class HostSocket {
 public:
  HostSocket(int family, int type) : fd_(socket(family, type | SOCK_CLOEXEC, 0)), type_(type) {}
  ~HostSocket() {
    if (fd_ >= 0) close(fd_);
  }
  HostSocket(const HostSocket&) = delete;
  HostSocket& operator=(const HostSocket&) = delete;
  bool BindLoopback() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return false;
    socklen_t len = sizeof(a);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    return type_ != SOCK_STREAM || listen(fd_, 16) == 0;
  }
  bool BindAbstract(const std::string& name) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path + 1, name.data(), name.size());
    socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    return bind(fd_, reinterpret_cast<sockaddr*>(&a), len) == 0 && listen(fd_, 16) == 0;
  }
  // Whether anything (a connection or a datagram) arrived within `ms`.
  bool Reached(int ms) const {
    pollfd p{fd_, POLLIN, 0};
    return poll(&p, 1, ms) > 0;
  }
  // Takes what arrived (a pending connection or datagram), so that Reached sees only new ones.
  void Drain() const {
    if (type_ == SOCK_STREAM) {
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (c >= 0) close(c);
    } else {
      char buf[64];
      ssize_t ignored = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
      (void)ignored;
    }
  }
  int port = 0;

 private:
  int fd_;
  int type_;
};

class T3SandboxLoopback : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
    caller_.Give(ws_.path());
  }
  RunResult Client(const std::vector<std::string>& flags, const std::string& kind,
                   const std::string& target) {
    return SandboxPython(ws_.path(), kClient, flags, Opts(), {kind, target, "attack"});
  }
  TempDir ws_{"anvil-ws-lo"};
};

const std::vector<std::vector<std::string>> kNetworkNone = {{}, {"--policy", "read-only"}};

TEST_P(T3SandboxLoopback, LocalTestServersWorkOnTheSandboxesOwnLoopback) {
  for (const auto& flags : kNetworkNone) {
    auto r = SandboxPython(ws_.path(), kLocalServers, flags, Opts());
    EXPECT_EQ(r.out, "tcp v4 PING\nudp v4 DGRAM\ntcp v6 PING\nudp v6 DGRAM\n")
        << (flags.empty() ? "workspace-write" : "read-only") << ": " << r.err;
    EXPECT_EQ(r.status, 0);
  }
  auto report = JsonReport(Sandbox(ws_.path(), {"--json"}, {"/bin/true"}, Opts()));
  EXPECT_TRUE(report["layers"].value("net_namespace", false)) << report.dump();
}

TEST_P(T3SandboxLoopback, HostLoopbackServicesStayUnreachableEvenOnTheSamePort) {
  HostSocket tcp(AF_INET, SOCK_STREAM), udp(AF_INET, SOCK_DGRAM), abstract(AF_UNIX, SOCK_STREAM);
  ASSERT_TRUE(tcp.BindLoopback());
  ASSERT_TRUE(udp.BindLoopback());
  const std::string name = UniqueToken("anvil-host-abstract");
  ASSERT_TRUE(abstract.BindAbstract(name));
  const std::string tcp_target = "127.0.0.1:" + std::to_string(tcp.port);
  const std::string udp_target = "127.0.0.1:" + std::to_string(udp.port);
  // Control: the same client reaches all three with the host's network.
  EXPECT_EQ(Client({"--network", "full"}, "tcp", tcp_target).out, "CONNECTED\n");
  EXPECT_TRUE(tcp.Reached(2000));
  tcp.Drain();
  for (const auto& flags : kNetworkNone) {
    const std::string mode = flags.empty() ? "workspace-write" : "read-only";
    auto t = Client(flags, "tcp", tcp_target);
    EXPECT_EQ(t.out, "ERR ECONNREFUSED\n") << mode << ": " << t.err;
    auto u = Client(flags, "udp", udp_target);
    EXPECT_EQ(u.status, 0) << mode << ": " << u.err;
    auto a = Client(flags, "abstract", name);
    EXPECT_EQ(a.out.rfind("ERR", 0), 0u) << mode << ": " << a.out << a.err;
    EXPECT_FALSE(tcp.Reached(20)) << mode << ": the host's TCP listener was reached";
    EXPECT_FALSE(udp.Reached(20)) << mode << ": the host's UDP receiver was reached";
    EXPECT_FALSE(abstract.Reached(20)) << mode << ": the host's abstract socket was reached";
    // The same port number inside is the sandbox's own: a server there works.
    auto own = SandboxPython(ws_.path(), kLocalServers, flags, Opts(), {std::to_string(tcp.port)});
    EXPECT_EQ(own.out.rfind("tcp v4 PING\n", 0), 0u) << mode << ": " << own.out << own.err;
    EXPECT_FALSE(tcp.Reached(20));
  }
}

// A developer's client that tries a server on the host's loopback (a dev server, a database)
// fails with a bare "Connection refused"; after the failed run the refusal summary says why
// (nothing of the sandbox's listens there, the host's loopback is another namespace) and the
// way on. The benign neighbour: a command whose own server answered, then failed for another
// reason, gets no such line (the port was bound inside when it connected).
TEST_P(T3SandboxLoopback, AHostLoopbackServerTriedFromInsideIsExplained) {
  HostSocket tcp(AF_INET, SOCK_STREAM);
  ASSERT_TRUE(tcp.BindLoopback());
  const std::string port = std::to_string(tcp.port);
  const std::string dial =
      "import socket, sys\nsocket.create_connection(('127.0.0.1', int(sys.argv[1])), 5)\n";
  const std::string own =
      "import socket, sys\nsrv = socket.socket()\nsrv.bind(('127.0.0.1', 0))\nsrv.listen(1)\n"
      "socket.create_connection(srv.getsockname(), 5)\nsys.exit(3)\n";
  for (const auto& flags : kNetworkNone) {
    const std::string mode = flags.empty() ? "workspace-write" : "read-only";
    auto r = SandboxPython(ws_.path(), dial, flags, Opts(), {port});
    EXPECT_NE(r.status, 0) << mode;
    EXPECT_NE(r.err.find("ConnectionRefusedError"), std::string::npos) << mode << ": " << r.err;
    EXPECT_NE(r.err.find("connect to 127.0.0.1:" + port +
                         " - nothing listens there on the sandbox's own loopback (a server on "
                         "the host's loopback is in another network namespace"),
              std::string::npos)
        << mode << ": " << r.err;
    EXPECT_NE(r.err.find("start the server inside the same sandboxed command"), std::string::npos)
        << r.err;
    EXPECT_FALSE(tcp.Reached(20)) << mode << ": the host's TCP listener was reached";
    auto benign = SandboxPython(ws_.path(), own, flags, Opts());
    EXPECT_EQ(benign.status, 3) << mode << ": " << benign.err;
    EXPECT_EQ(benign.err.find("nothing listens there"), std::string::npos)
        << mode << ": " << benign.err;
  }
}

// A client that retries until its own server inside the sandbox is up (a test suite's fixture
// racing its server) gets ECONNREFUSED first: that first try must not stay as a loopback hint,
// neither in --json's refusals of the run that then succeeds nor in the summary of one that then
// fails for another reason. The neighbour: a client whose port is never bound in the run keeps
// its entry in --json even when the run succeeds (the connect really was refused).
TEST_P(T3SandboxLoopback, AClientThatRetriesUntilItsOwnServerIsUpLeavesNoHint) {
  const std::string retry =
      "import socket, sys\nprobe = socket.socket()\nprobe.bind(('127.0.0.1', 0))\n"
      "port = probe.getsockname()[1]\nprobe.close()\n"
      "for fam, host in ((socket.AF_INET, '127.0.0.1'), (socket.AF_INET6, '::1')):\n"
      "    try:\n        socket.create_connection((host, port), 5)\n"
      "        print('reached', host)\n"
      "    except ConnectionRefusedError:\n        print('refused', host)\n"
      "srv = socket.socket()\nsrv.bind(('127.0.0.1', port))\nsrv.listen(1)\n"
      "socket.create_connection(('127.0.0.1', port), 5)\nprint('connected')\n"
      "sys.exit(int(sys.argv[1]))\n";
  const std::string never =
      "import socket\nprobe = socket.socket()\nprobe.bind(('127.0.0.1', 0))\n"
      "port = probe.getsockname()[1]\nprobe.close()\n"
      "try:\n    socket.create_connection(('127.0.0.1', port), 5)\n"
      "except ConnectionRefusedError:\n    print('refused', port)\n";
  for (const auto& flags : kNetworkNone) {
    const std::string mode = flags.empty() ? "workspace-write" : "read-only";
    std::vector<std::string> json_flags = flags;
    json_flags.push_back("--json");
    auto ok = SandboxPython(ws_.path(), retry, json_flags, Opts(), {"0"});
    EXPECT_EQ(ok.status, 0) << mode << ": " << ok.err;
    EXPECT_EQ(ok.out, "refused 127.0.0.1\nrefused ::1\nconnected\n") << mode << ": " << ok.err;
    auto report = JsonReport(ok);
    ASSERT_TRUE(report.is_object()) << mode << ": " << ok.err;
    EXPECT_TRUE(report["refusals"].empty()) << mode << ": " << report["refusals"].dump();
    auto failed = SandboxPython(ws_.path(), retry, flags, Opts(), {"3"});
    EXPECT_EQ(failed.status, 3) << mode << ": " << failed.err;
    EXPECT_EQ(failed.out, "refused 127.0.0.1\nrefused ::1\nconnected\n") << mode;
    EXPECT_EQ(failed.err.find("nothing listens there"), std::string::npos)
        << mode << ": " << failed.err;

    auto lone = SandboxPython(ws_.path(), never, json_flags, Opts());
    EXPECT_EQ(lone.status, 0) << mode << ": " << lone.err;
    ASSERT_EQ(lone.out.rfind("refused ", 0), 0u) << mode << ": " << lone.out << lone.err;
    const std::string port = lone.out.substr(8, lone.out.size() - 9);
    report = JsonReport(lone);
    ASSERT_TRUE(report.is_object()) << mode << ": " << lone.err;
    ASSERT_EQ(report["refusals"].size(), 1u) << mode << ": " << report["refusals"].dump();
    EXPECT_EQ(report["refusals"][0]["target"], "127.0.0.1:" + port) << report.dump();
    EXPECT_EQ(report["refusals"][0]["reason"], "loopback") << report.dump();
  }
}

TEST_P(T3SandboxLoopback, NonLoopbackAddressesFailAtOnceWithNoRoute) {
  // Documentation and private addresses only: even if a route existed nothing would answer.
  const std::string probe = R"py(
import errno, socket
for kind, fam, typ, addr in (("tcp4", socket.AF_INET, socket.SOCK_STREAM, ("192.0.2.1", 80)),
                             ("tcp4-private", socket.AF_INET, socket.SOCK_STREAM, ("10.1.2.3", 443)),
                             ("udp4", socket.AF_INET, socket.SOCK_DGRAM, ("198.51.100.7", 53)),
                             ("tcp6", socket.AF_INET6, socket.SOCK_STREAM, ("2001:db8::1", 80)),
                             ("udp6", socket.AF_INET6, socket.SOCK_DGRAM, ("2001:db8::2", 53))):
    s = socket.socket(fam, typ)
    s.settimeout(5)
    try:
        if typ == socket.SOCK_STREAM:
            s.connect(addr)
        else:
            s.sendto(b"x", addr)
        print(kind, "SENT")
    except OSError as e:
        print(kind, errno.errorcode.get(e.errno, e.errno))
print("interfaces", " ".join(n for _, n in socket.if_nameindex()))
print("localhost", sorted({a[4][0] for a in socket.getaddrinfo("localhost", 80)}))
)py";
  for (const auto& flags : kNetworkNone) {
    auto r = SandboxPython(ws_.path(), probe, flags, Opts());
    // ENETUNREACH: the route lookup fails before a packet exists; nothing is sent anywhere.
    for (const char* line : {"tcp4 ENETUNREACH", "tcp4-private ENETUNREACH", "udp4 ENETUNREACH",
                             "tcp6 ENETUNREACH", "udp6 ENETUNREACH", "interfaces lo"}) {
      EXPECT_NE(r.out.find(std::string(line) + "\n"), std::string::npos)
          << "expected `" << line << "` in\n"
          << r.out << r.err;
    }
    EXPECT_NE(r.out.find("'127.0.0.1'"), std::string::npos) << r.out;
  }
}

TEST(T3SandboxLoopbackFallback, WithoutANetworkNamespaceOfItsOwnIpSocketsStayRefused) {
  // read-only runs without namespaces when an unprivileged user cannot make them; then the
  // command shares the host's network namespace, and IP stays refused (seccomp + Landlock).
  ANVIL_CALLER_OR_END_TEST(caller, Caller::kUnprivileged);
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  TempDir ws("anvil-ws-lo-fallback");
  caller->Give(ws.path());
  HostSocket tcp(AF_INET, SOCK_STREAM);
  ASSERT_TRUE(tcp.BindLoopback());
  RunOptions options;
  options.env = {"PATH=/usr/bin:/bin", "HOME=/tmp", "ANVIL_ALLOW_TEST_FAULTS=1"};
  const std::vector<std::string> flags = {"--policy", "read-only", "--unsafe-test-fail-layer",
                                          "clone", "--json"};
  auto layers = JsonReport(Sandbox(ws.path(), flags, {"/bin/true"}, caller->Options(options)));
  ASSERT_FALSE(layers["layers"].value("net_namespace", true))
      << "the fault did not take the namespaces away: " << layers.dump();
  auto r = Sandbox(ws.path(), {"--policy", "read-only", "--unsafe-test-fail-layer", "clone"},
                   {kPython, "-c", kClient, "tcp", "127.0.0.1:" + std::to_string(tcp.port), "x"},
                   caller->Options(options));
  EXPECT_EQ(r.out, "ERR EPERM\n") << r.err;
  EXPECT_FALSE(tcp.Reached(20)) << "the host's loopback was reached without a namespace";
}

INSTANTIATE_TEST_SUITE_P(Callers, T3SandboxLoopback, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t3_sandbox_loopback_test
}  // namespace anvil::testing
