// T2 attack catalogue: DNS. The name is granted, so the attack lives in the answers: a name that
// rebinds from an allowed address to a forbidden one between fetches, answer sets mixing allowed
// and forbidden addresses (in one family or across A and AAAA), IPv6 forms that embed the
// forbidden IPv4 address, missing answers and a resolver that never answers. The server on the
// forbidden address must never see a connection.
#include <arpa/inet.h>
#include <netinet/in.h>

#include "loopback_socket.h"
#include "t2_fetch_fixture.h"

namespace anvil::testing {
namespace t2_fetch_rebinding_test {
namespace {

using T2Dns = T2FetchTest;

const IpAddress kAllowed = IpAddress::V4(127, 0, 0, 2);
const IpAddress kForbidden = IpAddress::V4(127, 0, 0, 1);

IpAddress V6(const char* text) { return *ParseIpLiteral(text); }

TEST_F(T2Dns, RebindingAfterTheFirstAnswerNeverReachesTheForbiddenAddress) {
  // First query: the allowed address; every later query: the forbidden one.
  dns_->SetA("rebind.anvil.test", {{kAllowed}, {kForbidden}});
  dns_->SetAaaa("rebind.anvil.test", {{}});
  StartNet({"rebind.anvil.test"});
  auto first = Fetch(Url("rebind.anvil.test", "/hello"));
  ASSERT_TRUE(first.ok) << first.code << ": " << first.message;
  EXPECT_EQ(first.body, "hello from allowed");
  for (int i = 0; i < 3; ++i) {
    auto later = Fetch(Url("rebind.anvil.test", "/hello"));
    EXPECT_FALSE(later.ok);
    EXPECT_EQ(later.code, "denied") << later.message;
    EXPECT_NE(later.message.find("127.0.0.1"), std::string::npos) << later.message;
  }
  // Every fetch asked DNS afresh (no cache to serve the old answer), and pinned what it checked.
  EXPECT_EQ(dns_->Queries("rebind.anvil.test", 1), 4);
  EXPECT_EQ(allowed_->Connections(), 1);
  EXPECT_EQ(forbidden_->Connections(), 0) << "the rebound address was connected to";
}

TEST_F(T2Dns, MixedAnswersInOneFamilyAreRefusedWhateverTheOrder) {
  dns_->SetA("mixed.anvil.test", {{kAllowed, kForbidden}});
  dns_->SetA("mixed2.anvil.test", {{kForbidden, kAllowed}});
  StartNet({"mixed.anvil.test", "mixed2.anvil.test", "api.anvil.test"});
  for (const char* host : {"mixed.anvil.test", "mixed2.anvil.test"}) {
    auto f = Fetch(Url(host, "/hello"));
    EXPECT_FALSE(f.ok) << host;
    EXPECT_EQ(f.code, "denied") << f.message;
  }
  ExpectNoConnections();
  ExpectGrantedUrlWorks();
  EXPECT_EQ(forbidden_->Connections(), 0);
}

TEST_F(T2Dns, AllowedAAnswerWithForbiddenAaaaIsRefused) {
  dns_->SetA("mixed.anvil.test", {{kAllowed}});
  dns_->SetAaaa("mixed.anvil.test", {{V6("::1")}});
  dns_->SetA("mapped.anvil.test", {{kAllowed}});
  dns_->SetAaaa("mapped.anvil.test", {{V6("::ffff:127.0.0.1")}});
  dns_->SetA("nat64.anvil.test", {{kAllowed}});
  dns_->SetAaaa("nat64.anvil.test", {{V6("64:ff9b::7f00:1")}});
  StartNet({"mixed.anvil.test", "mapped.anvil.test", "nat64.anvil.test", "api.anvil.test"});
  for (const char* host : {"mixed.anvil.test", "mapped.anvil.test", "nat64.anvil.test"}) {
    auto f = Fetch(Url(host, "/hello"));
    EXPECT_FALSE(f.ok) << host;
    EXPECT_EQ(f.code, "denied") << host << ": " << f.message;
  }
  ExpectNoConnections();
  ExpectGrantedUrlWorks();
}

TEST_F(T2Dns, NxdomainAndEmptyAnswersAreNotFoundNeverAFallback) {
  dns_->SetA("empty.anvil.test", {{}});
  dns_->SetAaaa("empty.anvil.test", {{}});
  StartNet({"nx.anvil.test", "empty.anvil.test", "api.anvil.test"});
  auto nx = Fetch(Url("nx.anvil.test", "/hello"));
  EXPECT_EQ(nx.code, "not_found") << nx.message;
  auto empty = Fetch(Url("empty.anvil.test", "/hello"));
  EXPECT_EQ(empty.code, "not_found") << empty.message;
  ExpectNoConnections();
  ExpectGrantedUrlWorks();
}

TEST_F(T2Dns, SilentResolverEndsInTimeoutNotAHungWorker) {
  // A UDP socket that reads nothing: every query goes unanswered.
  std::uint16_t silent_port = 0;
  UniqueFd silent = BindLoopback(SOCK_DGRAM, &silent_port);
  ASSERT_TRUE(silent);
  StartNet({"api.anvil.test"}, false,
           {"--unsafe-test-resolver", "127.0.0.1:" + std::to_string(silent_port),
            "--unsafe-test-allow-address", "127.0.0.2:" + std::to_string(port_), "--unsafe-test-ca",
            pki_->ca_path(), "--net-dns-timeout-ms", "800"},
           /*test_flags=*/false);
  auto f = Fetch(Url("api.anvil.test", "/hello"));
  EXPECT_FALSE(f.ok);
  EXPECT_EQ(f.code, "timeout") << f.message;
  ExpectNoConnections();
}

}  // namespace
}  // namespace t2_fetch_rebinding_test
}  // namespace anvil::testing
