// CaresResolver against a real DNS server on 127.0.0.1: all A and AAAA answers, NXDOMAIN, NODATA,
// no search-domain retries, a fresh lookup every time, and a deadline on a silent server.
#include "net/cares_resolver.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>

#include "common/unique_fd.h"
#include "loopback_socket.h"
#include "test_dns_server.h"

namespace anvil::testing {
namespace cares_resolver_test {
namespace {

DnsServer ServerOf(const TestDnsServer& dns) { return *ParseDnsServer(dns.Address()); }

TEST(CaresResolver, ReturnsEveryAAndAaaaAnswer) {
  auto dns = TestDnsServer::Start();
  ASSERT_TRUE(dns);
  const std::vector<IpAddress> want = {IpAddress::V4(127, 0, 0, 2), IpAddress::V4(127, 0, 0, 3),
                                       *ParseIpLiteral("::1"), *ParseIpLiteral("fd00::1")};
  dns->Set("multi.anvil.test", want);
  CaresResolver resolver({ServerOf(*dns), std::chrono::milliseconds(3000)});
  auto got = resolver.Resolve("multi.anvil.test");
  ASSERT_TRUE(got) << got.error().ToString();
  std::vector<IpAddress> sorted = *got, expected = want;
  std::sort(sorted.begin(), sorted.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(sorted, expected);
  EXPECT_EQ(dns->Queries("multi.anvil.test", 1), 1);
  EXPECT_EQ(dns->Queries("multi.anvil.test", 28), 1);
}

TEST(CaresResolver, NxdomainIsNotFoundAndNodataIsEmpty) {
  auto dns = TestDnsServer::Start();
  ASSERT_TRUE(dns);
  dns->Set("empty.anvil.test", {});
  CaresResolver resolver({ServerOf(*dns), std::chrono::milliseconds(3000)});
  auto nx = resolver.Resolve("nx.anvil.test");
  ASSERT_FALSE(nx);
  EXPECT_EQ(nx.error().code, "not_found");
  auto empty = resolver.Resolve("empty.anvil.test");
  ASSERT_TRUE(empty) << empty.error().ToString();
  EXPECT_TRUE(empty->empty());
  // Only the name as given was asked: no search-domain suffixes.
  EXPECT_EQ(dns->TotalQueries(), 4);
}

TEST(CaresResolver, EveryLookupAsksAgainSoARebindIsSeen) {
  auto dns = TestDnsServer::Start();
  ASSERT_TRUE(dns);
  dns->SetA("rebind.anvil.test", {{IpAddress::V4(127, 0, 0, 2)}, {IpAddress::V4(127, 0, 0, 1)}});
  CaresResolver resolver({ServerOf(*dns), std::chrono::milliseconds(3000)});
  auto first = resolver.Resolve("rebind.anvil.test");
  auto second = resolver.Resolve("rebind.anvil.test");
  ASSERT_TRUE(first && second);
  EXPECT_EQ(*first, std::vector<IpAddress>{IpAddress::V4(127, 0, 0, 2)});
  EXPECT_EQ(*second, std::vector<IpAddress>{IpAddress::V4(127, 0, 0, 1)});
}

TEST(CaresResolver, SilentServerEndsAtTheDeadline) {
  std::uint16_t port = 0;
  UniqueFd silent = BindLoopback(SOCK_DGRAM, &port);
  ASSERT_TRUE(silent);
  CaresResolver resolver(
      {DnsServer{IpAddress::V4(127, 0, 0, 1), port}, std::chrono::milliseconds(400)});
  const auto start = std::chrono::steady_clock::now();
  auto r = resolver.Resolve("api.anvil.test");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "timeout");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

TEST(CaresResolver, ServerFlagNeedsAStrictAddressAndAPort) {
  EXPECT_TRUE(ParseDnsServer("127.0.0.1:5353"));
  EXPECT_TRUE(ParseDnsServer("[::1]:5353"));
  for (const char* bad : {"127.0.0.1", "localhost:53", "0177.0.0.1:53", "127.0.0.1:0", "::1:53",
                          "127.0.0.1:053", ""}) {
    EXPECT_FALSE(ParseDnsServer(bad)) << bad;
  }
}

}  // namespace
}  // namespace cares_resolver_test
}  // namespace anvil::testing
