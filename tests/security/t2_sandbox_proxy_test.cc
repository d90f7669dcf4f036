// `anvil sandbox --network proxy` (issue 8): the command's only way out is anvil-proxy, which
// lets through exactly the --allow-host targets and applies sys.net.fetch's address rules. A
// catalogue of bypasses (direct connect, ungranted host, granted name on a forbidden address,
// another loopback port, raw DNS) next to the benign requests that must work. Every server here
// is the test's own on 127.0.0.1; the sandbox's namespace reaches nothing else.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include "netpolicy/ip_address.h"
#include "sandbox_harness.h"
#include "test_dns_server.h"
#include "test_https_server.h"
#include "test_pki.h"

namespace anvil::testing {
namespace t2_sandbox_proxy_test {
namespace {

// A tiny HTTP origin on 127.0.0.1: counts connections, answers every request with `body`.
class Origin {
 public:
  explicit Origin(std::string body, const char* address = "127.0.0.1", int port = 0)
      : body_(std::move(body)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, address, &a.sin_addr);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    socklen_t len = sizeof(a);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    EXPECT_EQ(::listen(fd_, 64), 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~Origin() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  int connections() const { return connections_.load(); }
  std::string last_request() {
    std::lock_guard lock(mu_);
    return last_;
  }
  // Every byte any connection sent, in order of arrival (recorded when each one ends).
  std::string received() {
    std::lock_guard lock(mu_);
    return all_;
  }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      connections_.fetch_add(1);
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos) {
        pollfd q{c, POLLIN, 0};
        if (poll(&q, 1, 5000) <= 0) break;
        ssize_t n = ::recv(c, buf, sizeof(buf), 0);
        if (n <= 0) break;
        req.append(buf, static_cast<size_t>(n));
      }
      {
        std::lock_guard lock(mu_);
        last_ = req;
        all_ += req;
      }
      std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body_.size()) +
                          "\r\nConnection: close\r\n\r\n" + body_;
      ssize_t ignored = ::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      (void)ignored;
      ::close(c);
    }
  }
  std::string body_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::mutex mu_;
  std::string last_, all_;
  std::thread thread_;
};

class T2SandboxProxy : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    caller_.Give(ws_.path());
    caller_.Give(state_.path());
  }
  RunResult Proxy(const std::vector<std::string>& flags, const std::vector<std::string>& command) {
    std::vector<std::string> all = {"--network", "proxy"};
    all.insert(all.end(), flags.begin(), flags.end());
    RunOptions o;
    o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path()};
    return Sandbox(ws_.path(), all, command, Opts(o));
  }
  std::string Allow(const Origin& o) { return "127.0.0.1:" + std::to_string(o.port()); }
  std::string Url(const Origin& o) { return "http://127.0.0.1:" + std::to_string(o.port()) + "/x"; }
  TempDir ws_{"anvil-proxy-ws"};
  TempDir state_{"anvil-proxy-state"};
};

TEST_P(T2SandboxProxy, PlainHttpToAnAllowedHostGoesThroughTheProxy) {
  Origin origin("hello-origin");
  auto r = Proxy({"--allow-host", Allow(origin), "--unsafe-test-allow-address", Allow(origin)},
                 {"/usr/bin/curl", "-sS", Url(origin)});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "hello-origin");
  EXPECT_EQ(origin.connections(), 1);
  // Origin-form on the wire, no proxy headers, one request per connection.
  std::string req = origin.last_request();
  EXPECT_EQ(req.rfind("GET /x HTTP/1.1\r\n", 0), 0u) << req;
  EXPECT_EQ(req.find("Proxy-"), std::string::npos) << req;
  EXPECT_NE(req.find("Connection: close"), std::string::npos) << req;
}

TEST_P(T2SandboxProxy, ConnectTunnelToAnAllowedHostWorks) {
  Origin origin("tunnelled");
  auto r = Proxy({"--allow-host", Allow(origin), "--unsafe-test-allow-address", Allow(origin)},
                 {"/usr/bin/curl", "-sS", "--proxytunnel", Url(origin)});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "tunnelled");
  EXPECT_EQ(origin.connections(), 1);
}

TEST_P(T2SandboxProxy, ALargeDownloadArrivesByteExactPlainAndTunnelled) {
  // 24 MiB of pseudo-random bytes through the relay (splice), plain HTTP and a CONNECT tunnel:
  // the command's checksum must be the origin's.
  std::string body(24 << 20, '\0');
  uint64_t x = 0x2545f4914f6cdd1dull;
  for (auto& c : body) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x >> 24);
  }
  Origin origin(body);
  const std::string expected_file = state_.path() + "/expected";
  WriteFile(expected_file, body);
  ASSERT_EQ(Shell("/usr/bin/cksum < " + ShellQuote(expected_file) + " > " +
                  ShellQuote(expected_file + ".sum")),
            0);
  const std::string expected = ReadFile(expected_file + ".sum");
  for (std::string tunnel : {"", "--proxytunnel "}) {
    auto r =
        Proxy({"--allow-host", Allow(origin), "--unsafe-test-allow-address", Allow(origin)},
              {"/bin/sh", "-c", "/usr/bin/curl -sS " + tunnel + Url(origin) + " | /usr/bin/cksum"});
    EXPECT_EQ(r.status, 0) << tunnel << r.err;
    EXPECT_EQ(r.out, expected) << tunnel << r.err;
  }
  EXPECT_EQ(origin.connections(), 2);
}

TEST_P(T2SandboxProxy, AHostNotAllowedGets403NamingTheRuleAndNoConnection) {
  Origin origin("secret");
  auto r = Proxy({"--allow-host", "example.org", "--unsafe-test-allow-address", Allow(origin)},
                 {"/usr/bin/curl", "-sS", "-w", "%{http_code}", Url(origin)});
  EXPECT_NE(r.out.find("denied: host not allowed: 127.0.0.1:" + std::to_string(origin.port()) +
                       " (allowed: example.org:443)"),
            std::string::npos)
      << r.out << r.err;
  EXPECT_NE(r.out.find("403"), std::string::npos) << r.out;
  EXPECT_EQ(origin.connections(), 0);
  // The same through CONNECT.
  r = Proxy({"--allow-host", "example.org"},
            {"/usr/bin/curl", "-sS", "--proxytunnel", Url(origin)});
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(origin.connections(), 0);
}

TEST_P(T2SandboxProxy, AnAllowedHostOnAForbiddenAddressIsRefusedBeforeConnect) {
  Origin origin("secret");
  // Allowed by name and port, but loopback is not a global address: refused, never dialled.
  auto r = Proxy({"--allow-host", Allow(origin)},
                 {"/usr/bin/curl", "-sS", "-w", "%{http_code}", Url(origin)});
  EXPECT_NE(r.out.find("loopback"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("403"), std::string::npos) << r.out;
  EXPECT_EQ(origin.connections(), 0);
  // Private and metadata addresses likewise (refused before any connect attempt).
  for (std::string literal : {"10.0.0.1:80", "169.254.169.254:80", "192.168.1.1:80"}) {
    r = Proxy({"--allow-host", literal},
              {"/usr/bin/curl", "-sS", "-w", "%{http_code}", "http://" + literal + "/"});
    EXPECT_NE(r.out.find("403"), std::string::npos) << literal << ": " << r.out << r.err;
    EXPECT_NE(r.out.find("denied:"), std::string::npos) << literal << ": " << r.out;
  }
}

TEST_P(T2SandboxProxy, BypassingTheProxyReachesNothing) {
  Origin origin("secret");
  // curl told to ignore the proxy: the namespace has only its own loopback.
  auto r = Proxy({"--allow-host", Allow(origin), "--unsafe-test-allow-address", Allow(origin)},
                 {"/usr/bin/curl", "-sS", "--noproxy", "*", Url(origin)});
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(origin.connections(), 0);
  // A raw socket to another loopback port is refused by Landlock (only the proxy's port may be
  // dialled); the proxy port itself is reachable.
  r = Proxy({}, {kPython, "-c",
                 "import socket, errno\n"
                 "for port in (9, 3128):\n"
                 "    s = socket.socket()\n"
                 "    try:\n"
                 "        s.connect(('127.0.0.1', port)); print(port, 'CONNECTED')\n"
                 "    except OSError as e:\n"
                 "        print(port, errno.errorcode.get(e.errno))\n"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("9 EACCES"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3128 CONNECTED"), std::string::npos) << r.out;
  // Netlink and packet sockets are not available in proxy mode.
  r = Proxy({}, {kPython, "-c",
                 "import socket, errno\n"
                 "try:\n"
                 "    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0); print('OPENED')\n"
                 "except OSError as e:\n"
                 "    print(errno.errorcode.get(e.errno))\n"});
  EXPECT_EQ(r.out, "EPERM\n") << r.err;
}

TEST_P(T2SandboxProxy, ProxyVariablesPointAtTheProxyAndNoProxyIsDropped) {
  RunOptions o;
  auto r = Proxy({}, {"/usr/bin/env"});
  EXPECT_EQ(r.status, 0) << r.err;
  for (std::string v :
       {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}) {
    EXPECT_NE(r.out.find(v + "=http://127.0.0.1:3128\n"), std::string::npos) << v << r.out;
  }
  EXPECT_EQ(r.out.find("NO_PROXY"), std::string::npos);
}

TEST_P(T2SandboxProxy, AnInvalidAllowHostMeansNothingRuns) {
  const std::string canary = ws_.path() + "/ran";
  for (std::string bad : {"*.example.org", "user@example.org", "example.org.", "exa mple.org",
                          "http://example.org", "example.org:99999"}) {
    auto r = Proxy({"--allow-host", bad}, {"/usr/bin/touch", canary});
    EXPECT_EQ(r.status, 125) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("--allow-host"), std::string::npos) << r.err;
    EXPECT_FALSE(Exists(canary)) << bad;
  }
}

TEST_P(T2SandboxProxy, EveryConnectionIsOneAuditLine) {
  Origin origin("x");
  auto ok = Proxy({"--allow-host", Allow(origin), "--unsafe-test-allow-address", Allow(origin)},
                  {"/usr/bin/curl", "-sS", Url(origin)});
  EXPECT_EQ(ok.status, 0) << ok.err;
  auto denied = Proxy({"--allow-host", "example.org"}, {"/usr/bin/curl", "-sS", Url(origin)});
  std::string log;
  Shell("cat '" + state_.path() + "'/anvil/audit/*.jsonl > '" + state_.path() + "/all.txt'");
  log = ReadFile(state_.path() + "/all.txt");
  int allow = 0, deny = 0;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || j.value("op", "").rfind("proxy.", 0) != 0) continue;
    if (j.value("verdict", "") == "allow") ++allow;
    if (j.value("verdict", "") == "deny") ++deny;
  }
  EXPECT_EQ(allow, 1) << log;
  EXPECT_EQ(deny, 1) << log;
}

// Every connection of a proxied command goes to the proxy's port on the sandbox's own loopback.
// The refusal observer lets it go on without looking at what is bound there: the sandbox's init
// reads no /proc/net table for it (counted with strace over the whole sandbox), and no refusal
// is listed. The neighbour, in the same kind of run: a connect to another loopback port is still
// looked up (so strace does see init's reads there) and listed.
TEST_P(T2SandboxProxy, TheProxysOwnPortIsNeverLookedUp) {
  if (!Exists("/usr/bin/strace")) GTEST_SKIP() << "SKIPPED: /usr/bin/strace is missing";
  if (Unprivileged()) {
    // The sandbox's init makes itself non-dumpable: only root's strace reads its paths.
    GTEST_SKIP() << "SKIPPED: the unprivileged caller's strace cannot read init's paths; the "
                    "root half counts the lookups (the same code path)";
  }
  Origin origin("x");
  auto traced = [&](const std::string& name, const std::string& script) {
    const std::string trace = state_.path() + "/" + name + ".strace";
    RunOptions o;
    o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path()};
    auto r = testing::Run({"/usr/bin/strace",
                           "-f",
                           "-qq",
                           "-e",
                           "trace=open,openat",
                           "-o",
                           trace,
                           AnvilBin(),
                           "sandbox",
                           "--cwd",
                           ws_.path(),
                           "--network",
                           "proxy",
                           "--allow-host",
                           Allow(origin),
                           "--unsafe-test-allow-address",
                           Allow(origin),
                           "--json",
                           "--",
                           "/bin/sh",
                           "-c",
                           script},
                          Opts(o));
    size_t reads = 0;
    for (const auto& line : Lines(ReadFile(trace))) {
      if (line.find("\"/proc/net/") != std::string::npos) ++reads;
    }
    return std::make_pair(r, reads);
  };
  const std::string fetch = "curl -sS " + Url(origin) + " " + Url(origin) + " " + Url(origin);
  auto [proxied, reads] = traced("proxied", fetch);
  EXPECT_EQ(proxied.status, 0) << proxied.err;
  EXPECT_EQ(proxied.out, "xxx") << proxied.err;
  EXPECT_EQ(origin.connections(), 3);
  EXPECT_EQ(reads, 0u) << "the proxy's port was looked up";
  auto report = JsonReport(proxied);
  ASSERT_TRUE(report.is_object()) << proxied.err;
  EXPECT_TRUE(report["refusals"].empty()) << report["refusals"].dump();

  const std::string other =
      fetch + " && " + kPython +
      " -c 'import socket\ntry:\n socket.create_connection((\"127.0.0.1\", 3129), 5)\n"
      "except OSError:\n print(\"refused\")'";
  auto [neighbour, looked] = traced("neighbour", other);
  EXPECT_EQ(neighbour.status, 0) << neighbour.err;
  EXPECT_EQ(neighbour.out, "xxxrefused\n") << neighbour.err;
  EXPECT_GT(looked, 0u) << "strace saw no lookup at all: the count above proves nothing";
  report = JsonReport(neighbour);
  ASSERT_TRUE(report.is_object()) << neighbour.err;
  ASSERT_EQ(report["refusals"].size(), 1u) << report["refusals"].dump();
  EXPECT_EQ(report["refusals"][0]["target"], "127.0.0.1:3129");
}

TEST_P(T2SandboxProxy, AnAllowedNameResolvingToAForbiddenAddressIsRefused) {
  Origin origin("secret");
  // localhost is in /etc/hosts: the proxy resolves it (outside) to loopback and refuses.
  std::string name = "localhost:" + std::to_string(origin.port());
  auto r = Proxy({"--allow-host", name},
                 {"/usr/bin/curl", "-sS", "-w", "%{http_code}", "http://" + name + "/"});
  EXPECT_NE(r.out.find("denied: localhost resolves to"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("403"), std::string::npos) << r.out;
  EXPECT_EQ(origin.connections(), 0);
}

TEST_P(T2SandboxProxy, ConnectToAPortThatIsNotAllowedIsRefused) {
  Origin origin("secret");
  // The host is allowed on 443 only (the default); CONNECT to the origin's port is refused.
  auto r = Proxy({"--allow-host", "127.0.0.1", "--unsafe-test-allow-address", Allow(origin)},
                 {"/usr/bin/curl", "-sS", "--proxytunnel", Url(origin)});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("403"), std::string::npos) << r.err;
  EXPECT_EQ(origin.connections(), 0);
}

TEST_P(T2SandboxProxy, DnsFromInsideFails) {
  // No resolver is reachable from the namespace: names resolve at the proxy only.
  auto r = Proxy({}, {kPython, "-c",
                      "import socket\n"
                      "try:\n"
                      "    socket.getaddrinfo('example.org', 443); print('RESOLVED')\n"
                      "except OSError as e:\n"
                      "    print('FAILED')\n"});
  EXPECT_EQ(r.out, "FAILED\n") << r.err;
}

TEST_P(T2SandboxProxy, GarbageAndFloodsNeitherCrashNorStarveTheProxy) {
  Origin origin("still-here");
  // Garbage, an oversized head and 100 idle connections at once; then a real request works.
  auto r = Proxy(
      {"--allow-host", Allow(origin), "--unsafe-test-allow-address", Allow(origin)},
      {kPython, "-c",
       "import socket, sys, urllib.request\n"
       "def talk(data):\n"
       "    s = socket.create_connection(('127.0.0.1', 3128)); s.sendall(data)\n"
       "    s.settimeout(15); out = b''\n"
       "    try:\n"
       "        while True:\n"
       "            c = s.recv(4096)\n"
       "            if not c: break\n"
       "            out += c\n"
       "    except OSError: pass\n"
       "    return out.split(b'\\r\\n')[0].decode()\n"
       "print(talk(b'\\x00\\xff garbage\\r\\n\\r\\n'))\n"
       "print(talk(b'GET http://x/ HTTP/1.1\\r\\n' + b'A: ' + b'a' * 20000 + b'\\r\\n\\r\\n'))\n"
       "idle = [socket.create_connection(('127.0.0.1', 3128)) for _ in range(100)]\n"
       "print(talk(b'GET " +
           Url(origin) +
           " HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'))\n"
           "for s in idle: s.close()\n"
           "import time; time.sleep(0.3)\n"
           "print(urllib.request.urlopen('" +
           Url(origin) + "').read().decode())\n"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("HTTP/1.1 400 Bad Request\nHTTP/1.1 400 Bad Request\n"), std::string::npos)
      << r.out;
  // With 100 connections held open the cap (64) answers 503 rather than queueing forever.
  EXPECT_NE(r.out.find("HTTP/1.1 503 Service Unavailable\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("still-here"), std::string::npos) << r.out;
}

// Names resolve at the proxy, with sys.net.fetch's resolver, against a DNS server of the test's
// own on loopback (--unsafe-test-resolver).
TEST_P(T2SandboxProxy, NamesResolveAtTheProxyAndRebindingIsRefused) {
  auto dns = TestDnsServer::Start();
  ASSERT_TRUE(dns);
  Origin allowed("allowed-origin", "127.0.0.2");
  // The forbidden origin listens on the same port on 127.0.0.1.
  Origin forbidden("forbidden-origin", "127.0.0.1", allowed.port());
  const std::string port = std::to_string(allowed.port());
  dns->SetA("api.test", {{IpAddress::V4(127, 0, 0, 2)}, {IpAddress::V4(127, 0, 0, 1)}});
  dns->Set("mixed.test", {IpAddress::V4(127, 0, 0, 2), IpAddress::V4(127, 0, 0, 1)});
  std::vector<std::string> flags = {"--allow-host",
                                    "api.test:" + port,
                                    "--allow-host",
                                    "mixed.test:" + port,
                                    "--unsafe-test-allow-address",
                                    "127.0.0.2:" + port,
                                    "--unsafe-test-resolver",
                                    dns->Address()};
  // First lookup: the allowed address; the second (rebinding to loopback) is refused.
  auto r = Proxy(flags, {"/usr/bin/curl", "-sS", "-w", " %{http_code}\n",
                         "http://api.test:" + port + "/", "http://api.test:" + port + "/"});
  EXPECT_NE(r.out.find("allowed-origin 200"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("denied: api.test resolves to 127.0.0.1"), std::string::npos) << r.out;
  EXPECT_EQ(allowed.connections(), 1);
  EXPECT_EQ(forbidden.connections(), 0);
  // One allowed and one forbidden answer: refused, nothing dialled.
  r = Proxy(flags,
            {"/usr/bin/curl", "-sS", "-w", " %{http_code}\n", "http://mixed.test:" + port + "/"});
  EXPECT_NE(r.out.find("403"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(allowed.connections(), 1);
  EXPECT_EQ(forbidden.connections(), 0);
  EXPECT_GT(dns->TotalQueries(), 0);
}

TEST_P(T2SandboxProxy, PlainHttpCarriesTheTargetsHostNotTheClients) {
  // Plain HTTP names its target twice: the absolute URI (checked against --allow-host) and the
  // Host header, which a shared server (virtual hosting, a CDN) routes by. A Host of another
  // site would reach that site through an allowed address ("domain fronting"); the proxy
  // replaces every Host header with the URI's authority (RFC 9112 3.2.2).
  Origin origin("x");
  const std::string authority = "127.0.0.1:" + std::to_string(origin.port());
  auto r = Proxy({"--allow-host", Allow(origin), "--unsafe-test-allow-address", Allow(origin)},
                 {kPython, "-c",
                  "import socket, sys\n"
                  "s = socket.create_connection(('127.0.0.1', 3128))\n"
                  "s.sendall(b'GET " +
                      Url(origin) +
                      " HTTP/1.1\\r\\nHost: evil.example\\r\\nX-A: 1\\r\\n"
                      "host: evil2.example\\r\\n\\r\\n')\n"
                      "print(s.makefile('rb').readline().decode().strip())\n"});
  EXPECT_EQ(r.out, "HTTP/1.1 200 OK\n") << r.err;
  std::string req = origin.last_request();
  EXPECT_NE(req.find("\r\nHost: " + authority + "\r\n"), std::string::npos) << req;
  EXPECT_EQ(req.find("evil"), std::string::npos) << req;
  EXPECT_NE(req.find("\r\nX-A: 1\r\n"), std::string::npos) << req;  // other headers kept
  EXPECT_EQ(req.rfind("GET /x HTTP/1.1\r\nHost: " + authority + "\r\n", 0), 0u) << req;
  // Heads a lenient server might read as carrying another Host are refused (400) unsent: a
  // space before the colon, a bare LF inside a line, a folded line, a control byte.
  const int before = origin.connections();
  for (std::string head : {"Host : evil.example", "X-A: a\\nHost: evil.example",
                           "X-A: a\\r\\n Host: evil.example", "X-A: a\\x00b"}) {
    r = Proxy({"--allow-host", Allow(origin), "--unsafe-test-allow-address", Allow(origin)},
              {kPython, "-c",
               "import socket\n"
               "s = socket.create_connection(('127.0.0.1', 3128))\n"
               "s.sendall(b'GET " +
                   Url(origin) + " HTTP/1.1\\r\\n" + head +
                   "\\r\\n\\r\\n')\n"
                   "print(s.makefile('rb').readline().decode().strip())\n"});
    EXPECT_EQ(r.out, "HTTP/1.1 400 Bad Request\n") << head << ": " << r.err;
  }
  EXPECT_EQ(origin.connections(), before);
  // curl's own Host override is replaced the same way; curl without one is unchanged.
  r = Proxy({"--allow-host", Allow(origin), "--unsafe-test-allow-address", Allow(origin)},
            {"/usr/bin/curl", "-sS", "-H", "Host: evil.example", Url(origin)});
  EXPECT_EQ(r.out, "x") << r.err;
  req = origin.last_request();
  EXPECT_NE(req.find("\r\nHost: " + authority + "\r\n"), std::string::npos) << req;
  EXPECT_EQ(req.find("evil"), std::string::npos) << req;
}

// argv: HOST PORT SNI. CONNECT HOST:PORT through the proxy, then a TLS ClientHello naming SNI
// ("" = none). Prints the proxy's status line, then HANDSHAKE-DONE or TLS-FAILED.
constexpr char kTlsThroughConnect[] = R"py(
import socket, ssl, sys
host, port, sni = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(("CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n" % (host, port, host, port)).encode())
head = b""
while b"\r\n\r\n" not in head:
    c = s.recv(1)
    if not c:
        break
    head += c
print(head.split(b"\r\n")[0].decode())
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
s.settimeout(1)
try:
    ctx.wrap_socket(s, server_hostname=sni or None)
    print("HANDSHAKE-DONE")
except (OSError, ssl.SSLError):
    print("TLS-FAILED")
)py";

TEST_P(T2SandboxProxy, TlsServerNameMustBeTheConnectTarget) {
  // Through a CONNECT tunnel the proxy cannot read the request, but the TLS ClientHello names
  // the site in clear (SNI): a tunnel to an allowed name that asks the server for another site
  // (domain fronting through a shared front end) is cut before a byte reaches the server, and
  // so is a hello with no name at all.
  auto dns = TestDnsServer::Start();
  ASSERT_TRUE(dns);
  Origin origin("not-tls", "127.0.0.2");
  const std::string port = std::to_string(origin.port());
  dns->Set("api.test", {IpAddress::V4(127, 0, 0, 2)});
  const std::vector<std::string> flags = {
      "--allow-host",      "api.test:" + port,       "--unsafe-test-allow-address",
      "127.0.0.2:" + port, "--unsafe-test-resolver", dns->Address()};
  auto settled = [&](int connections) {
    for (int i = 0; i < 200 && origin.connections() < connections; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  };
  // Benign: the hello names the tunnel's host; it is forwarded (the test origin speaks no TLS,
  // so the handshake itself fails there, after the bytes arrived).
  auto r = Proxy(flags, {kPython, "-c", kTlsThroughConnect, "api.test", port, "api.test"});
  EXPECT_EQ(r.out.rfind("HTTP/1.1 200", 0), 0u) << r.out << r.err;
  settled(1);
  EXPECT_NE(origin.received().find("api.test"), std::string::npos);
  const size_t benign_bytes = origin.received().size();
  // Attacks: another name on the same allowed address, and no name.
  for (std::string sni : {"evil.test", "API.test.evil", ""}) {
    r = Proxy(flags, {kPython, "-c", kTlsThroughConnect, "api.test", port, sni});
    EXPECT_NE(r.out.find("TLS-FAILED"), std::string::npos) << sni << ": " << r.out << r.err;
  }
  settled(4);
  EXPECT_EQ(origin.received().size(), benign_bytes) << "a refused hello reached the origin";
  // Case does not matter (names are case-insensitive).
  r = Proxy(flags, {kPython, "-c", kTlsThroughConnect, "api.test", port, "API.Test"});
  EXPECT_EQ(r.out.rfind("HTTP/1.1 200", 0), 0u) << r.out << r.err;
  settled(5);
  EXPECT_NE(origin.received().find("API.Test"), std::string::npos);
  // The refusals are audited with the reason.
  Shell("cat '" + state_.path() + "'/anvil/audit/*.jsonl > '" + state_.path() + "/all.txt'");
  std::string log = ReadFile(state_.path() + "/all.txt");
  EXPECT_NE(log.find("TLS server name evil.test is not the tunnel's host api.test"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("TLS ClientHello without a server name"), std::string::npos) << log;
}

TEST_P(T2SandboxProxy, HttpsThroughATunnelCompletesWithAndWithoutAHelloRetryRequest) {
  // curl inside the sandbox, HTTPS to an allowed name through the proxy, to a real TLS server:
  // once as servers usually answer, once from a server that takes only P-256, so curl's first
  // hello (an X25519 key share) gets a HelloRetryRequest and curl sends a second hello, which
  // the proxy reads and checks (it names the tunnel's host) before the server gets it.
  auto* pki = TestPki::Shared();
  ASSERT_NE(pki, nullptr);
  auto dns = TestDnsServer::Start();
  ASSERT_TRUE(dns);
  dns->Set("api.anvil.test", {IpAddress::V4(127, 0, 0, 2)});
  Shell("cp '" + pki->ca_path() + "' '" + ws_.path() + "/ca.pem'");
  caller_.Give(ws_.path());
  for (const std::string groups : {"", "P-256"}) {
    auto server = TestHttpsServer::Start("127.0.0.2", 0, pki->Leaf("api"), "api", groups);
    ASSERT_TRUE(server);
    const std::string port = std::to_string(server->port());
    auto r = Proxy({"--allow-host", "api.anvil.test:" + port, "--unsafe-test-allow-address",
                    "127.0.0.2:" + port, "--unsafe-test-resolver", dns->Address()},
                   {"/usr/bin/curl", "-sS", "--cacert", ws_.path() + "/ca.pem",
                    "https://api.anvil.test:" + port + "/hello"});
    EXPECT_EQ(r.status, 0) << groups << ": " << r.err;
    EXPECT_EQ(r.out, "hello from api") << groups << ": " << r.err;
    EXPECT_EQ(server->Connections(), 1) << groups;
    // curl's first hello carries an X25519 key share: the P-256-only server asked for a retry.
    EXPECT_EQ(server->ClientHellos(), groups.empty() ? 1 : 2) << groups;
  }
}

INSTANTIATE_TEST_SUITE_P(Callers, T2SandboxProxy, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t2_sandbox_proxy_test
}  // namespace anvil::testing
