// T2 attack catalogue: forbidden address ranges, reached through a granted name whose DNS answer
// points into each range (IPv4 and IPv6), and through IP literals granted literally. Refused
// after DNS and before any connect. These tests name non-loopback addresses, so they run only in
// the test's private network namespace (t2_fetch_fixture.h): a refusal that failed could still
// not send a packet anywhere.
#include "t2_fetch_fixture.h"

namespace anvil::testing {
namespace t2_fetch_address_ranges_test {
namespace {

using T2AddressRanges = T2FetchTest;

struct Target {
  const char* address;
  const char* range;
};

// One address inside every range the table denies (the range edges are unit-tested in
// tests/net/address_policy_test.cc; every ssrf-vectors.txt line in ssrf_vectors_test.cc).
const Target kForbidden[] = {
    {"0.0.0.0", "this network / unspecified"},
    {"0.1.2.3", "this network"},
    {"10.0.0.1", "RFC 1918"},
    {"100.64.0.1", "CGNAT"},
    {"127.0.0.1", "loopback"},
    {"127.255.255.254", "loopback"},
    {"169.254.169.254", "link-local / cloud metadata"},
    {"172.16.0.1", "RFC 1918"},
    {"192.0.0.1", "IETF protocol assignments"},
    {"192.0.0.170", "NAT64 discovery"},
    {"192.0.2.1", "TEST-NET-1"},
    {"192.88.99.1", "6to4 relay anycast"},
    {"192.168.1.1", "RFC 1918"},
    {"198.18.0.1", "benchmarking"},
    {"198.51.100.1", "TEST-NET-2"},
    {"203.0.113.1", "TEST-NET-3"},
    {"224.0.0.1", "multicast"},
    {"240.0.0.1", "reserved"},
    {"255.255.255.255", "broadcast"},
    {"::", "unspecified"},
    {"::1", "loopback"},
    {"::ffff:127.0.0.1", "IPv4-mapped"},
    {"::ffff:8.8.8.8", "IPv4-mapped (public)"},
    {"::ffff:0:127.0.0.1", "IPv4-translated"},
    {"::8.8.8.8", "IPv4-compatible"},
    {"64:ff9b::a9fe:a9fe", "NAT64 well-known prefix"},
    {"64:ff9b:1::a00:1", "NAT64 local-use prefix"},
    {"100::1", "discard-only"},
    {"2001::1", "Teredo"},
    {"2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"},
    {"2001:2::1", "benchmarking"},
    {"2001:10::1", "ORCHID"},
    {"2001:20::1", "ORCHIDv2"},
    {"2001:db8::1", "documentation"},
    {"2002:c0a8:101::1", "6to4"},
    {"fc00::1", "ULA"},
    {"fd00:ec2::254", "ULA / cloud metadata"},
    {"fe80::1", "link-local"},
    {"fec0::1", "site-local"},
    {"ff02::1", "multicast"},
};

TEST_F(T2AddressRanges, EveryForbiddenRangeIsRefusedAfterDnsBeforeConnect) {
  RequireIsolatedNetwork();
  std::vector<std::string> hosts = {"api.anvil.test"};
  for (size_t i = 0; i < std::size(kForbidden); ++i) {
    const std::string name = "r" + std::to_string(i) + ".anvil.test";
    dns_->Set(name, {*ParseIpLiteral(kForbidden[i].address)});
    hosts.push_back(name);
  }
  StartNet(hosts);
  for (size_t i = 0; i < std::size(kForbidden); ++i) {
    SCOPED_TRACE(std::string(kForbidden[i].address) + " (" + kForbidden[i].range + ")");
    // Both the exempted port and 443: neither makes a forbidden address acceptable.
    for (const std::string& port : {std::to_string(port_), std::string("443")}) {
      auto f = Fetch("https://r" + std::to_string(i) + ".anvil.test:" + port + "/hello");
      EXPECT_FALSE(f.ok);
      EXPECT_EQ(f.code, "denied") << f.message;
      EXPECT_NE(f.message.find("resolves to"), std::string::npos) << f.message;
    }
  }
  ExpectNoConnections();
  ExpectGrantedUrlWorks();
  EXPECT_EQ(forbidden_->Connections(), 0);
}

TEST_F(T2AddressRanges, IpLiteralsGrantedLiterallyAreStillCheckedAgainstTheTable) {
  RequireIsolatedNetwork();
  std::vector<std::string> hosts = {"127.0.0.1", "127.0.0.2", "169.254.169.254",
                                    "10.0.0.1",  "[::1]",     "[::ffff:127.0.0.2]"};
  StartNet(hosts);
  for (const char* url : {"https://127.0.0.1:P/hello", "https://169.254.169.254:P/latest",
                          "https://169.254.169.254/latest", "https://10.0.0.1/", "https://[::1]:P/",
                          "https://[::ffff:127.0.0.2]:P/hello"}) {
    ExpectRefusedBeforeDns("granted literal", url);
  }
  ExpectNoConnections();
  // Benign neighbour: a literal that is both granted and exempted (cert has IP:127.0.0.2).
  auto f = Fetch(WithPort("https://127.0.0.2:P/hello"));
  EXPECT_TRUE(f.ok) << f.code << ": " << f.message;
  EXPECT_EQ(forbidden_->Connections(), 0);
}

TEST_F(T2AddressRanges, AGlobalAddressOnANon443PortIsRefused) {
  RequireIsolatedNetwork();
  dns_->Set("public.anvil.test", {*ParseIpLiteral("8.8.8.8")});
  StartNet({"public.anvil.test", "api.anvil.test"});
  auto f = Fetch(Url("public.anvil.test", "/"));  // port P: exempted for 127.0.0.2 only
  EXPECT_FALSE(f.ok);
  EXPECT_EQ(f.code, "denied") << f.message;
  ExpectGrantedUrlWorks();
}

}  // namespace
}  // namespace t2_fetch_address_ranges_test
}  // namespace anvil::testing
