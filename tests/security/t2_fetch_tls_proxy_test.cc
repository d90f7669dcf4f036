// T2 attack catalogue: TLS and proxies. Pinning the connection to the validated address must not
// cost certificate verification: a server whose certificate does not name the requested host,
// or is not from a trusted CA, is refused. And the gateway's own environment cannot route
// fetches through a proxy (HTTPS_PROXY and friends are ignored).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>

#include "loopback_socket.h"
#include "t2_fetch_fixture.h"

namespace anvil::testing {
namespace t2_fetch_tls_proxy_test {
namespace {

using T2TlsProxy = T2FetchTest;

std::string WrongUrl(const TestHttpsServer& server, const std::string& host) {
  return "https://" + host + ":" + std::to_string(server.port()) + "/hello";
}

TEST_F(T2TlsProxy, CertificateForAnotherNameIsRefused) {
  // impostor.anvil.test resolves to a server whose certificate names wrong.anvil.test only.
  StartNet({"impostor.anvil.test", "wrong.anvil.test"});
  auto f = Fetch(WrongUrl(*wrong_, "impostor.anvil.test"));
  EXPECT_FALSE(f.ok);
  EXPECT_EQ(f.code, "io") << f.message;
  EXPECT_NE(f.message.find("TLS"), std::string::npos) << f.message;
  // Benign neighbour: the same server under the name its certificate has (SNI and Host right).
  auto ok = Fetch(WrongUrl(*wrong_, "wrong.anvil.test"));
  EXPECT_TRUE(ok.ok) << ok.code << ": " << ok.message;
  EXPECT_EQ(ok.body, "hello from wrong");
}

TEST_F(T2TlsProxy, CertificateFromAnUntrustedCaIsRefused) {
  // Same servers, but the gateway does not get --unsafe-test-ca.
  StartNet({"api.anvil.test"}, false,
           {"--unsafe-test-resolver", dns_->Address(), "--unsafe-test-allow-address",
            "127.0.0.2:" + std::to_string(port_)},
           /*test_flags=*/false);
  auto f = Fetch(Url("api.anvil.test", "/hello"));
  EXPECT_FALSE(f.ok);
  EXPECT_EQ(f.code, "io") << f.message;
  // A verification failure, not an unreadable CA bundle (the gateway is Landlocked).
  EXPECT_NE(f.message.find("certificate"), std::string::npos) << f.message;
  EXPECT_EQ(f.message.find("CA cert"), std::string::npos) << f.message;
  EXPECT_TRUE(allowed_->RequestLines().empty()) << "a request was sent over unverified TLS";
}

TEST_F(T2TlsProxy, ProxyVariablesInTheGatewayEnvironmentAreIgnored) {
  std::uint16_t proxy_port = 0;
  UniqueFd proxy = BindLoopback(SOCK_STREAM, &proxy_port);
  ASSERT_TRUE(proxy);
  const std::string url = "http://127.0.0.1:" + std::to_string(proxy_port);
  const char* names[] = {"HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "http_proxy"};
  for (const char* name : names) setenv(name, url.c_str(), 1);
  setenv("NO_PROXY", "", 1);
  StartNet({"api.anvil.test"});  // the gateway inherits this environment
  for (const char* name : names) unsetenv(name);
  unsetenv("NO_PROXY");
  ExpectGrantedUrlWorks();
  EXPECT_FALSE(HasPendingConnection(proxy)) << "the proxy saw a connection";
  EXPECT_EQ(allowed_->Connections(), 1);
}

}  // namespace
}  // namespace t2_fetch_tls_proxy_test
}  // namespace anvil::testing
