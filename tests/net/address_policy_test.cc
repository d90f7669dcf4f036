// The address table (src/netpolicy/address_policy.cc), checked from the outside: every range's
// first and last address and the neighbours just outside it, written out by hand here so that a
// typo in the table cannot also be in the test.
#include "netpolicy/address_policy.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cctype>
#include <set>
#include <string>

#include "net/local_interfaces.h"
#include "netpolicy/ip_address.h"

namespace anvil {
namespace address_policy_test {
namespace {

IpAddress Ip(const std::string& text) {
  auto parsed = ParseIpLiteral(text);
  EXPECT_TRUE(parsed) << text << ": " << parsed.error().ToString();
  return parsed ? *parsed : IpAddress();
}

// ---- ParseIpLiteral ----

TEST(AddressParse, AcceptsDottedQuad) {
  EXPECT_EQ(Ip("1.2.3.4"), IpAddress::V4(1, 2, 3, 4));
  EXPECT_EQ(Ip("0.0.0.0"), IpAddress::V4(0, 0, 0, 0));
  EXPECT_EQ(Ip("255.255.255.255"), IpAddress::V4(255, 255, 255, 255));
  EXPECT_EQ(Ip("10.0.0.10").ToString(), "10.0.0.10");
}

TEST(AddressParse, AcceptsIpv6Forms) {
  EXPECT_EQ(Ip("::").ToString(), "::");
  EXPECT_EQ(Ip("0:0:0:0:0:0:0:1").ToString(), "::1");
  EXPECT_EQ(Ip("2001:DB8:0:0:0:0:0:1").ToString(), "2001:db8::1");
  EXPECT_EQ(Ip("::ffff:1.2.3.4").ToString(), "::ffff:1.2.3.4");
  EXPECT_TRUE(Ip("2606:4700:4700::1111").is_v6());
}

// Each of these is an address to inet_aton, getaddrinfo, libcurl or a browser, but not the one
// a reader sees; the policy treats none of them as an IP literal.
TEST(AddressParse, RefusesNonCanonicalIpv4) {
  for (const char* text :
       {"0177.0.0.1",   "0x7f.0.0.1", "0x7f000001", "127.1",     "127.0.1",    "2130706433",
        "017700000001", "01.2.3.4",   "1.2.3.04",   "00.0.0.0",  "256.0.0.0",  "1.2.3.256",
        "1.2.3.4.5",    "1.2.3",      "1..2.3",     ".1.2.3",    "1.2.3.",     "+1.2.3.4",
        "-1.2.3.4",     " 1.2.3.4",   "1.2.3.4 ",   "1.2.3.4/8", "1.2.3.4:80", "１.2.3.4",
        "1.2.3.4\n",    "0",          "",           "1234.0.0.1"}) {
    EXPECT_FALSE(ParseIpLiteral(text)) << "accepted: " << text;
  }
}

TEST(AddressParse, RefusesBadIpv6) {
  for (const char* text : {"fe80::1%eth0", "fe80::1%25eth0", "fe80::1%1", "[::1]", ":::1",
                           "1:2:3:4:5:6:7:8:9", "12345::", "g::1", "::ffff:01.2.3.4",
                           "::ffff:1.2.3", "::1 ", "1::2::3", "::ffff:1.2.3.4.5", "::/0"}) {
    EXPECT_FALSE(ParseIpLiteral(text)) << "accepted: " << text;
  }
  auto zone = ParseIpLiteral("fe80::1%eth0");
  ASSERT_FALSE(zone);
  EXPECT_EQ(zone.error().code, "invalid");
  EXPECT_NE(zone.error().message.find("zone"), std::string::npos);
}

TEST(AddressParse, StrictIpv4LiteralPredicate) {
  EXPECT_TRUE(IsStrictIpv4Literal("93.184.215.14"));
  EXPECT_FALSE(IsStrictIpv4Literal("093.184.215.14"));
  EXPECT_FALSE(IsStrictIpv4Literal("::1"));
}

TEST(AddressParse, PrefixRequiresZeroHostBits) {
  auto ok = ParseIpPrefix("100.64.0.0/10");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->length, 10);
  EXPECT_TRUE(ok->Contains(Ip("100.127.255.255")));
  EXPECT_FALSE(ok->Contains(Ip("100.128.0.0")));
  EXPECT_FALSE(ok->Contains(Ip("::ffff:100.64.0.1")));  // families never mix
  EXPECT_FALSE(ParseIpPrefix("100.64.0.1/10"));
  EXPECT_FALSE(ParseIpPrefix("10.0.0.0/33"));
  EXPECT_FALSE(ParseIpPrefix("10.0.0.0/08"));
  EXPECT_FALSE(ParseIpPrefix("10.0.0.0"));
  EXPECT_FALSE(ParseIpPrefix("2001:db8::1/32"));
  EXPECT_TRUE(ParseIpPrefix("::/0"));
}

TEST(AddressParse, FromSockaddr) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  ASSERT_EQ(::inet_pton(AF_INET, "192.0.2.7", &in.sin_addr), 1);
  EXPECT_EQ(IpAddress::FromSockaddr(reinterpret_cast<const sockaddr*>(&in)), Ip("192.0.2.7"));
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  ASSERT_EQ(::inet_pton(AF_INET6, "2001:db8::7", &in6.sin6_addr), 1);
  EXPECT_EQ(IpAddress::FromSockaddr(reinterpret_cast<const sockaddr*>(&in6)), Ip("2001:db8::7"));
  sockaddr unix_like{};
  unix_like.sa_family = AF_UNIX;
  EXPECT_FALSE(IpAddress::FromSockaddr(&unix_like));
  EXPECT_FALSE(IpAddress::FromSockaddr(nullptr));
}

// ---- the table itself ----

TEST(AddressTable, EveryRowParsesOnceWithZeroHostBits) {
  std::set<std::pair<IpAddress, int>> seen;
  bool v4_catch_all = false;
  bool v6_catch_all = false;
  for (const AddressRange& row : AddressTable()) {
    auto prefix = ParseIpPrefix(row.prefix);
    ASSERT_TRUE(prefix) << row.prefix << ": " << prefix.error().ToString();
    EXPECT_TRUE(seen.insert({prefix->address, prefix->length}).second)
        << "duplicate row " << row.prefix;
    EXPECT_FALSE(row.what.empty()) << row.prefix;
    if (row.prefix == "0.0.0.0/0") v4_catch_all = row.action == AddressAction::kAllow;
    if (row.prefix == "::/0") v6_catch_all = row.action == AddressAction::kDeny;
  }
  // IPv4 is deny-listed, IPv6 allow-listed: the defaults are the policy.
  EXPECT_TRUE(v4_catch_all);
  EXPECT_TRUE(v6_catch_all);
}

TEST(AddressTable, OnlyIpv6AllowRowIsGlobalUnicast) {
  for (const AddressRange& row : AddressTable()) {
    if (row.action != AddressAction::kAllow) continue;
    EXPECT_TRUE(row.prefix == "0.0.0.0/0" || row.prefix == "2000::/3") << row.prefix;
  }
}

TEST(AddressTable, ReasonNamesTheRange) {
  const AddressVerdict verdict = ClassifyAddress(Ip("169.254.169.254"));
  EXPECT_FALSE(verdict.allowed);
  EXPECT_EQ(verdict.reason.rfind("169.254.0.0/16 link-local", 0), 0u) << verdict.reason;
  EXPECT_EQ(ClassifyAddress(Ip("2606:4700:4700::1111")).reason, "2000::/3 global unicast");
}

// ---- range edges ----

struct Edge {
  const char* address;
  bool allowed;
  const char* reason_prefix;  // the deciding row, as its reason starts
};

const Edge kEdges[] = {
    // 0.0.0.0/8
    {"0.0.0.0", false, "0.0.0.0/8"},
    {"0.255.255.255", false, "0.0.0.0/8"},
    {"1.0.0.0", true, "0.0.0.0/0"},
    // 10.0.0.0/8
    {"9.255.255.255", true, "0.0.0.0/0"},
    {"10.0.0.0", false, "10.0.0.0/8"},
    {"10.255.255.255", false, "10.0.0.0/8"},
    {"11.0.0.0", true, "0.0.0.0/0"},
    // 100.64.0.0/10
    {"100.63.255.255", true, "0.0.0.0/0"},
    {"100.64.0.0", false, "100.64.0.0/10"},
    {"100.127.255.255", false, "100.64.0.0/10"},
    {"100.128.0.0", true, "0.0.0.0/0"},
    // 127.0.0.0/8
    {"126.255.255.255", true, "0.0.0.0/0"},
    {"127.0.0.0", false, "127.0.0.0/8"},
    {"127.255.255.255", false, "127.0.0.0/8"},
    {"128.0.0.0", true, "0.0.0.0/0"},
    // 169.254.0.0/16
    {"169.253.255.255", true, "0.0.0.0/0"},
    {"169.254.0.0", false, "169.254.0.0/16"},
    {"169.254.255.255", false, "169.254.0.0/16"},
    {"169.255.0.0", true, "0.0.0.0/0"},
    // 172.16.0.0/12
    {"172.15.255.255", true, "0.0.0.0/0"},
    {"172.16.0.0", false, "172.16.0.0/12"},
    {"172.31.255.255", false, "172.16.0.0/12"},
    {"172.32.0.0", true, "0.0.0.0/0"},
    // 192.0.0.0/24 and 192.0.0.170/31 inside it
    {"191.255.255.255", true, "0.0.0.0/0"},
    {"192.0.0.0", false, "192.0.0.0/24"},
    {"192.0.0.169", false, "192.0.0.0/24"},
    {"192.0.0.170", false, "192.0.0.170/31"},
    {"192.0.0.171", false, "192.0.0.170/31"},
    {"192.0.0.172", false, "192.0.0.0/24"},
    {"192.0.0.255", false, "192.0.0.0/24"},
    {"192.0.1.0", true, "0.0.0.0/0"},
    // 192.0.2.0/24
    {"192.0.1.255", true, "0.0.0.0/0"},
    {"192.0.2.0", false, "192.0.2.0/24"},
    {"192.0.2.255", false, "192.0.2.0/24"},
    {"192.0.3.0", true, "0.0.0.0/0"},
    // 192.88.99.0/24
    {"192.88.98.255", true, "0.0.0.0/0"},
    {"192.88.99.0", false, "192.88.99.0/24"},
    {"192.88.99.255", false, "192.88.99.0/24"},
    {"192.88.100.0", true, "0.0.0.0/0"},
    // 192.168.0.0/16
    {"192.167.255.255", true, "0.0.0.0/0"},
    {"192.168.0.0", false, "192.168.0.0/16"},
    {"192.168.255.255", false, "192.168.0.0/16"},
    {"192.169.0.0", true, "0.0.0.0/0"},
    // 198.18.0.0/15
    {"198.17.255.255", true, "0.0.0.0/0"},
    {"198.18.0.0", false, "198.18.0.0/15"},
    {"198.19.255.255", false, "198.18.0.0/15"},
    {"198.20.0.0", true, "0.0.0.0/0"},
    // 198.51.100.0/24
    {"198.51.99.255", true, "0.0.0.0/0"},
    {"198.51.100.0", false, "198.51.100.0/24"},
    {"198.51.100.255", false, "198.51.100.0/24"},
    {"198.51.101.0", true, "0.0.0.0/0"},
    // 203.0.113.0/24
    {"203.0.112.255", true, "0.0.0.0/0"},
    {"203.0.113.0", false, "203.0.113.0/24"},
    {"203.0.113.255", false, "203.0.113.0/24"},
    {"203.0.114.0", true, "0.0.0.0/0"},
    // 224.0.0.0/4, 240.0.0.0/4, 255.255.255.255/32
    {"223.255.255.255", true, "0.0.0.0/0"},
    {"224.0.0.0", false, "224.0.0.0/4"},
    {"239.255.255.255", false, "224.0.0.0/4"},
    {"240.0.0.0", false, "240.0.0.0/4"},
    {"255.255.255.254", false, "240.0.0.0/4"},
    {"255.255.255.255", false, "255.255.255.255/32"},

    // ::/128, ::1/128, ::/96 IPv4-compatible
    {"::", false, "::/128"},
    {"::1", false, "::1/128"},
    {"::2", false, "::/96"},
    {"::255.255.255.255", false, "::/96"},
    {"::1:0:0", false, "::/0"},
    // ::ffff:0:0/96 IPv4-mapped
    {"::fffe:ffff:ffff", false, "::/0"},
    {"::ffff:0.0.0.0", false, "::ffff:0:0/96"},
    {"::ffff:8.8.8.8", false, "::ffff:0:0/96"},
    {"::ffff:255.255.255.255", false, "::ffff:0:0/96"},
    {"::1:0:0:0", false, "::/0"},
    // ::ffff:0:0:0/96 IPv4-translated
    {"::ffff:0:0.0.0.0", false, "::ffff:0:0:0/96"},
    {"::ffff:0:255.255.255.255", false, "::ffff:0:0:0/96"},
    {"::ffff:1:0:0", false, "::/0"},
    // 64:ff9b::/96 and 64:ff9b:1::/48 NAT64
    {"64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", false, "::/0"},
    {"64:ff9b::", false, "64:ff9b::/96"},
    {"64:ff9b::8.8.8.8", false, "64:ff9b::/96"},
    {"64:ff9b::ffff:ffff", false, "64:ff9b::/96"},
    {"64:ff9b::1:0:0", false, "::/0"},
    {"64:ff9b:1::", false, "64:ff9b:1::/48"},
    {"64:ff9b:1:ffff:ffff:ffff:ffff:ffff", false, "64:ff9b:1::/48"},
    {"64:ff9b:2::", false, "::/0"},
    // 100::/64 discard-only, 100:0:0:1::/64 dummy
    {"ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false, "::/0"},
    {"100::", false, "100::/64"},
    {"100::ffff:ffff:ffff:ffff", false, "100::/64"},
    {"100:0:0:1::", false, "100:0:0:1::/64"},
    {"100:0:0:1:ffff:ffff:ffff:ffff", false, "100:0:0:1::/64"},
    {"100:0:0:2::", false, "::/0"},
    // 2000::/3 and its carve-outs
    {"1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false, "::/0"},
    {"2000::", true, "2000::/3"},
    {"2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true, "2000::/3"},
    {"2001::", false, "2001::/32"},
    {"2001:0:ffff:ffff:ffff:ffff:ffff:ffff", false, "2001::/32"},
    {"2001:1::", false, "2001::/23"},
    {"2001:1:ffff:ffff:ffff:ffff:ffff:ffff", false, "2001::/23"},
    {"2001:2::", false, "2001:2::/48"},
    {"2001:2:0:ffff:ffff:ffff:ffff:ffff", false, "2001:2::/48"},
    {"2001:2:1::", false, "2001::/23"},
    {"2001:f:ffff:ffff:ffff:ffff:ffff:ffff", false, "2001::/23"},
    {"2001:10::", false, "2001:10::/28"},
    {"2001:1f:ffff:ffff:ffff:ffff:ffff:ffff", false, "2001:10::/28"},
    {"2001:20::", false, "2001:20::/28"},
    {"2001:2f:ffff:ffff:ffff:ffff:ffff:ffff", false, "2001:20::/28"},
    {"2001:30::", false, "2001::/23"},
    {"2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", false, "2001::/23"},
    {"2001:200::", true, "2000::/3"},
    {"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", true, "2000::/3"},
    {"2001:db8::", false, "2001:db8::/32"},
    {"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", false, "2001:db8::/32"},
    {"2001:db9::", true, "2000::/3"},
    {"2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true, "2000::/3"},
    {"2002::", false, "2002::/16"},
    {"2002:808:808::1", false, "2002::/16"},
    {"2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false, "2002::/16"},
    {"2003::", true, "2000::/3"},
    {"3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true, "2000::/3"},
    {"3fff::", false, "3fff::/20"},
    {"3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", false, "3fff::/20"},
    {"3fff:1000::", true, "2000::/3"},
    {"3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true, "2000::/3"},
    {"4000::", false, "::/0"},
    // 5f00::/16 SRv6
    {"5eff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false, "::/0"},
    {"5f00::", false, "5f00::/16"},
    {"5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false, "5f00::/16"},
    {"5f01::", false, "::/0"},
    // fc00::/7, fe80::/10, fec0::/10, ff00::/8
    {"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false, "::/0"},
    {"fc00::", false, "fc00::/7"},
    {"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false, "fc00::/7"},
    {"fe00::", false, "::/0"},
    {"fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false, "::/0"},
    {"fe80::", false, "fe80::/10"},
    {"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false, "fe80::/10"},
    {"fec0::", false, "fec0::/10"},
    {"feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false, "fec0::/10"},
    {"ff00::", false, "ff00::/8"},
    {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false, "ff00::/8"},
};

void PrintTo(const Edge& edge, std::ostream* out) {
  *out << edge.address << (edge.allowed ? " allow " : " deny ") << edge.reason_prefix;
}

class AddressEdges : public ::testing::TestWithParam<Edge> {};

TEST_P(AddressEdges, Classify) {
  const Edge& edge = GetParam();
  const AddressVerdict verdict = ClassifyAddress(Ip(edge.address));
  EXPECT_EQ(verdict.allowed, edge.allowed) << edge.address << ": " << verdict.reason;
  const std::string expected = std::string(edge.reason_prefix) + " ";
  EXPECT_EQ(verdict.reason.rfind(expected, 0), 0u)
      << edge.address << ": got '" << verdict.reason << "', expected row " << edge.reason_prefix;
}

std::string EdgeName(const testing::TestParamInfo<Edge>& info) {
  std::string name = std::string(info.param.allowed ? "allow_" : "deny_") + info.param.address;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Range, AddressEdges, testing::ValuesIn(kEdges), EdgeName);

// ---- local interfaces ----

TEST(AddressLocalInterfaces, ListsThisMachinesAddresses) {
  auto local = LocalInterfaceAddresses();
  ASSERT_TRUE(local) << local.error().ToString();
  // No assumption about which interfaces exist (containers differ); every one of them must be
  // refused as a target, global or not.
  for (const IpAddress& address : *local) {
    EXPECT_FALSE(CheckNotLocalInterface(address, *local).allowed) << address.ToString();
  }
}

TEST(AddressLocalInterfaces, GlobalAddressOfThisMachineIsDenied) {
  const std::vector<IpAddress> local = {Ip("93.184.215.14"), Ip("2606:4700:4700::1111")};
  EXPECT_TRUE(ClassifyAddress(Ip("93.184.215.14")).allowed);
  const AddressVerdict verdict = CheckNotLocalInterface(Ip("93.184.215.14"), local);
  EXPECT_FALSE(verdict.allowed);
  EXPECT_NE(verdict.reason.find("local interface"), std::string::npos);
  EXPECT_FALSE(CheckNotLocalInterface(Ip("2606:4700:4700::1111"), local).allowed);
  EXPECT_TRUE(CheckNotLocalInterface(Ip("93.184.215.15"), local).allowed);
}

}  // namespace
}  // namespace address_policy_test
}  // namespace anvil
