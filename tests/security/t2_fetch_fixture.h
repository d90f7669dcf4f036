// The T2 attack catalogue's stage: a real anvil-gateway with sys.net.fetch, a real DNS server on
// 127.0.0.1, real HTTPS servers on loopback with a CA made at test time, and this test process
// registered as the plugin host.
//
// Network isolation: before anything else each test moves this process into a fresh network
// namespace holding only `lo` (it runs as root here). The gateway and every server start from
// it, so even if a policy bug let a fetch through to 10.0.0.1 or 169.254.169.254, the packet
// could not leave this namespace. Tests that name non-loopback addresses require it and skip
// loudly without it.
//
// Addresses:  127.0.0.2:P  "allowed"   (--unsafe-test-allow-address 127.0.0.2:P), leaf "api"
//             127.0.0.1:P  "forbidden" (same port, never exempted),              leaf "api"
//             127.0.0.3:Q  "wrong"     (exempted), leaf for wrong.anvil.test only
// Names (test DNS):  api.anvil.test, other.anvil.test -> 127.0.0.2; wrong.anvil.test and
//             impostor.anvil.test -> 127.0.0.3; everything else NXDOMAIN unless a test adds it.
#pragma once

#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gateway_fixture.h"
#include "test_dns_server.h"
#include "test_https_server.h"
#include "test_pki.h"

namespace anvil::testing {

// "" when this process now lives in a network namespace of its own with only loopback up.
inline const std::string& IsolateNetwork() {
  static const std::string result = []() -> std::string {
    if (unshare(CLONE_NEWNET) != 0) {
      return std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
    }
    int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ifreq ifr{};
    std::strcpy(ifr.ifr_name, "lo");
    bool up = fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0;
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
    up = up && ioctl(fd, SIOCSIFFLAGS, &ifr) == 0;
    if (fd >= 0) close(fd);
    return up ? "" : "cannot bring lo up in the new network namespace";
  }();
  return result;
}

struct Fetched {
  bool ok = false;
  std::string code;  // error code when !ok
  std::string message;
  long status = 0;
  nlohmann::json headers;
  std::string body;
};

// What a refusal before any connect looks like: an error, and a code that is a refusal.
#define EXPECT_REFUSED(fetched)                                                                \
  do {                                                                                         \
    const Fetched& f_ = (fetched);                                                             \
    EXPECT_FALSE(f_.ok) << "fetch was allowed: status " << f_.status;                          \
    EXPECT_TRUE(f_.code == "denied" || f_.code == "invalid") << f_.code << ": " << f_.message; \
  } while (0)

class T2FetchTest : public GatewayTest {
 protected:
  void SetUp() override {
    isolation_ = IsolateNetwork();  // first: before any thread or socket exists
    GatewayTest::SetUp();
    pki_ = TestPki::Shared();
    ASSERT_TRUE(pki_);
    dns_ = TestDnsServer::Start();
    ASSERT_TRUE(dns_);
    for (int attempt = 0; attempt < 20 && !forbidden_; ++attempt) {
      allowed_ = TestHttpsServer::Start("127.0.0.2", 0, pki_->Leaf("api"), "allowed");
      ASSERT_TRUE(allowed_);
      forbidden_ =
          TestHttpsServer::Start("127.0.0.1", allowed_->port(), pki_->Leaf("api"), "forbidden");
    }
    ASSERT_TRUE(forbidden_);
    wrong_ = TestHttpsServer::Start("127.0.0.3", 0, pki_->Leaf("wrong"), "wrong");
    ASSERT_TRUE(wrong_);
    port_ = allowed_->port();
    dns_->Set("api.anvil.test", {IpAddress::V4(127, 0, 0, 2)});
    dns_->Set("other.anvil.test", {IpAddress::V4(127, 0, 0, 2)});
    dns_->Set("wrong.anvil.test", {IpAddress::V4(127, 0, 0, 3)});
    dns_->Set("impostor.anvil.test", {IpAddress::V4(127, 0, 0, 3)});
  }

  void RequireIsolatedNetwork() {
    if (!isolation_.empty()) {
      GTEST_SKIP() << "SKIPPED (not passed): this test names non-loopback addresses and runs only "
                      "in a private network namespace: "
                   << isolation_;
    }
  }

  // The trusted-side test flags that make the loopback servers reachable.
  std::vector<std::string> TestFlags() const {
    return {"--unsafe-test-resolver",
            dns_->Address(),
            "--unsafe-test-allow-address",
            "127.0.0.2:" + std::to_string(port_),
            "--unsafe-test-allow-address",
            "127.0.0.3:" + std::to_string(wrong_->port()),
            "--unsafe-test-ca",
            pki_->ca_path()};
  }

  // Starts the gateway with TestFlags() + `extra`, registers `plugin` with net.hosts = `hosts`.
  void StartNet(const std::vector<std::string>& hosts, bool post = false,
                const std::vector<std::string>& extra = {}, bool test_flags = true) {
    std::vector<std::string> flags = test_flags ? TestFlags() : std::vector<std::string>{};
    flags.insert(flags.end(), extra.begin(), extra.end());
    StartGateway(flags);
    Grant grant;
    grant.net_hosts = hosts;
    grant.net_post = post;
    token_ = RegisterPlugin("t2.plugin", grant);
    client_ = Client(*token_, "t2.plugin");
  }

  std::string Url(const std::string& host, const std::string& path) const {
    return "https://" + host + ":" + std::to_string(port_) + path;
  }

  Fetched Fetch(const std::string& url, const std::string& method = "GET",
                const std::string& headers = "{}", const std::string& body = "") {
    return FetchWith(*client_, url, method, headers, body);
  }

  static Fetched FetchWith(ipc::GatewayClient& client, const std::string& url,
                           const std::string& method = "GET", const std::string& headers = "{}",
                           const std::string& body = "") {
    Fetched f;
    auto r = client.Call("net.fetch", {url, method, headers, body});
    if (!r) {
      f.code = "channel";
      f.message = r.error().ToString();
      return f;
    }
    if (!r->ok) {
      f.code = r->fields.size() > 0 ? r->fields[0] : "";
      f.message = r->fields.size() > 1 ? r->fields[1] : "";
      return f;
    }
    if (r->fields.size() != 3) {
      f.code = "malformed";
      return f;
    }
    f.ok = true;
    f.status = std::strtol(r->fields[0].c_str(), nullptr, 10);
    f.headers = nlohmann::json::parse(r->fields[1], nullptr, false);
    f.body = r->fields[2];
    return f;
  }

  // "P" in `url` stands for the exempted test port.
  std::string WithPort(std::string url) const {
    for (size_t at = url.find(":P"); at != std::string::npos; at = url.find(":P", at + 1)) {
      url.replace(at, 2, ":" + std::to_string(port_));
    }
    return url;
  }

  // Refused (denied/invalid) without a single DNS query and without any connection.
  void ExpectRefusedBeforeDns(const std::string& what, const std::string& url) {
    SCOPED_TRACE(what + ": " + url);
    const int queries_before = dns_->TotalQueries();
    const int connections_before = TotalConnections();
    EXPECT_REFUSED(Fetch(WithPort(url)));
    EXPECT_EQ(dns_->TotalQueries(), queries_before) << "refused only after a DNS query";
    EXPECT_EQ(TotalConnections(), connections_before) << "refused only after a connect";
  }

  // The granted URL still works (the benign neighbour of every attack).
  void ExpectGrantedUrlWorks() {
    auto f = Fetch(Url("api.anvil.test", "/hello"));
    EXPECT_TRUE(f.ok) << f.code << ": " << f.message;
    EXPECT_EQ(f.body, "hello from allowed");
  }

  int TotalConnections() const {
    return allowed_->Connections() + forbidden_->Connections() + wrong_->Connections();
  }

  // No server on any test address saw a connection.
  void ExpectNoConnections() {
    EXPECT_EQ(allowed_->Connections(), 0);
    EXPECT_EQ(forbidden_->Connections(), 0);
    EXPECT_EQ(wrong_->Connections(), 0);
  }

  // The audit lines of net.fetch decisions (after one more event-loop turn, so they are flushed).
  std::vector<nlohmann::json> FetchAudit() {
    EXPECT_TRUE(gateway_->Control({{"op", "status"}}));
    std::vector<nlohmann::json> lines;
    for (auto& l : AuditLines()) {
      if (l.value("op", "") == "net.fetch") lines.push_back(l);
    }
    return lines;
  }

  std::string isolation_;
  TestPki* pki_ = nullptr;
  std::unique_ptr<TestDnsServer> dns_;
  std::unique_ptr<TestHttpsServer> allowed_, forbidden_, wrong_;
  std::uint16_t port_ = 0;
  std::optional<ipc::CapabilityToken> token_;
  std::unique_ptr<ipc::GatewayClient> client_;
};

}  // namespace anvil::testing
