// ConnectPolicy (table + local interfaces + port + the trusted-side test exemption) and the
// resolution step built on it. No test here does DNS: StaticResolver is a fixed table.
#include "netpolicy/connect_policy.h"

#include <gtest/gtest.h>

#include <string>

#include "net/local_interfaces.h"
#include "netpolicy/resolver.h"

namespace anvil {
namespace connect_policy_test {
namespace {

IpAddress Ip(const std::string& text) {
  auto parsed = ParseIpLiteral(text);
  EXPECT_TRUE(parsed) << text;
  return parsed ? *parsed : IpAddress();
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// ---- --unsafe-test-allow-address parsing ----

TEST(AddressUnsafeTestFlag, ParsesAddressAndOptionalPort) {
  auto v4 = ParseUnsafeTestAllowAddress("127.0.0.2");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->address, Ip("127.0.0.2"));
  EXPECT_FALSE(v4->port);
  EXPECT_EQ(v4->EffectivePort(), 443);

  auto v4_port = ParseUnsafeTestAllowAddress("127.0.0.2:8443");
  ASSERT_TRUE(v4_port);
  EXPECT_EQ(v4_port->port, 8443);

  auto v6 = ParseUnsafeTestAllowAddress("::1");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->address, Ip("::1"));
  EXPECT_FALSE(v6->port);

  auto v6_bracket = ParseUnsafeTestAllowAddress("[::1]:8443");
  ASSERT_TRUE(v6_bracket);
  EXPECT_EQ(v6_bracket->address, Ip("::1"));
  EXPECT_EQ(v6_bracket->port, 8443);

  EXPECT_TRUE(ParseUnsafeTestAllowAddress("[::1]"));
}

TEST(AddressUnsafeTestFlag, RefusesSloppyForms) {
  for (const char* text :
       {"", "localhost", "localhost:8443", "127.1", "0177.0.0.1", "127.0.0.2:", "127.0.0.2:0",
        "127.0.0.2:65536", "127.0.0.2:+80", "127.0.0.2:080", "[127.0.0.2]:80", "[::1", "[::1]x",
        "[::1]:", "fe80::1%lo", "127.0.0.2:80:80"}) {
    EXPECT_FALSE(ParseUnsafeTestAllowAddress(text)) << "accepted: " << text;
  }
}

// ---- ConnectPolicy ----

TEST(AddressConnectPolicy, GlobalAddressOn443Only) {
  const ConnectPolicy policy({});
  EXPECT_TRUE(policy.Check(Ip("93.184.215.14"), 443).allowed);
  const AddressVerdict other_port = policy.Check(Ip("93.184.215.14"), 8443);
  EXPECT_FALSE(other_port.allowed);
  EXPECT_TRUE(Contains(other_port.reason, "443 only")) << other_port.reason;
  const AddressVerdict loopback = policy.Check(Ip("127.0.0.1"), 443);
  EXPECT_FALSE(loopback.allowed);
  EXPECT_TRUE(Contains(loopback.reason, "127.0.0.0/8")) << loopback.reason;
}

TEST(AddressConnectPolicy, LocalInterfaceAddressIsDenied) {
  const ConnectPolicy policy({Ip("93.184.215.14")});
  const AddressVerdict verdict = policy.Check(Ip("93.184.215.14"), 443);
  EXPECT_FALSE(verdict.allowed);
  EXPECT_TRUE(Contains(verdict.reason, "local interface")) << verdict.reason;
}

TEST(AddressConnectPolicy, UnsafeTestAddressIsGlobalOnItsPortOnly) {
  UnsafeTestOptions unsafe;
  unsafe.allow_addresses.push_back(*ParseUnsafeTestAllowAddress("127.0.0.2:8443"));
  // The exemption beats the local-interface rule too: loopback test servers are local.
  const ConnectPolicy policy({Ip("127.0.0.2")}, unsafe);
  EXPECT_TRUE(policy.Check(Ip("127.0.0.2"), 8443).allowed);
  EXPECT_FALSE(policy.Check(Ip("127.0.0.2"), 443).allowed);  // "instead of 443"
  EXPECT_FALSE(policy.Check(Ip("127.0.0.2"), 8444).allowed);
  // Neighbours are not exempted.
  EXPECT_FALSE(policy.Check(Ip("127.0.0.1"), 8443).allowed);
  EXPECT_FALSE(policy.Check(Ip("127.0.0.3"), 8443).allowed);
  // Nor is the same address in another family's clothing.
  EXPECT_FALSE(policy.Check(Ip("::ffff:127.0.0.2"), 8443).allowed);
  EXPECT_TRUE(unsafe.PermitsPort(8443));
  EXPECT_FALSE(unsafe.PermitsPort(443));
}

TEST(AddressConnectPolicy, UnsafeTestAddressWithoutPortMeans443) {
  UnsafeTestOptions unsafe;
  unsafe.allow_addresses.push_back(*ParseUnsafeTestAllowAddress("::1"));
  const ConnectPolicy policy({}, unsafe);
  EXPECT_TRUE(policy.Check(Ip("::1"), 443).allowed);
  EXPECT_FALSE(policy.Check(Ip("::1"), 8443).allowed);
  EXPECT_TRUE(unsafe.PermitsPort(443));
}

TEST(AddressConnectPolicy, ForThisMachineDeniesEveryLocalAddress) {
  auto policy = ConnectPolicyForThisMachine();
  ASSERT_TRUE(policy) << policy.error().ToString();
  auto local = LocalInterfaceAddresses();
  ASSERT_TRUE(local);
  EXPECT_EQ(policy->local_addresses().size(), local->size());
  for (const IpAddress& address : *local) {
    EXPECT_FALSE(policy->Check(address, 443).allowed) << address.ToString();
  }
}

// ---- StaticResolver and ResolveAndValidate ----

StaticResolver Fixture() {
  StaticResolver resolver;
  resolver.AddAddress("api.example.com", Ip("93.184.215.14"));
  resolver.AddAddress("api.example.com", Ip("2606:2800:21f:cb07:6820:80da:af6b:8b2c"));
  resolver.AddAddress("rebind.example.com", Ip("93.184.215.14"));
  resolver.AddAddress("rebind.example.com", Ip("127.0.0.1"));
  resolver.AddAlias("cname.example.com", "internal.corp.example");
  resolver.AddAddress("internal.corp.example", Ip("10.1.2.3"));
  resolver.AddAlias("good-cname.example.com", "api.example.com");
  resolver.AddAlias("loop1.example.com", "loop2.example.com");
  resolver.AddAlias("loop2.example.com", "loop1.example.com");
  resolver.AddNoData("empty.example.com");
  resolver.AddAddress("dup.example.com", Ip("93.184.215.14"));
  resolver.AddAddress("dup.example.com", Ip("93.184.215.14"));
  resolver.AddAddress("test.example.com", Ip("127.0.0.2"));
  return resolver;
}

TEST(AddressResolveAndValidate, AllGlobalAnswersAreReturned) {
  StaticResolver resolver = Fixture();
  auto addresses = ResolveAndValidate(resolver, "api.example.com", 443, ConnectPolicy({}));
  ASSERT_TRUE(addresses) << addresses.error().ToString();
  EXPECT_EQ(*addresses, (std::vector<IpAddress>{Ip("93.184.215.14"),
                                                Ip("2606:2800:21f:cb07:6820:80da:af6b:8b2c")}));
  EXPECT_EQ(resolver.queries(), 1);
}

TEST(AddressResolveAndValidate, OneBadAnswerRefusesTheName) {
  StaticResolver resolver = Fixture();
  auto addresses = ResolveAndValidate(resolver, "rebind.example.com", 443, ConnectPolicy({}));
  ASSERT_FALSE(addresses);
  EXPECT_EQ(addresses.error().code, "denied");
  EXPECT_TRUE(Contains(addresses.error().message, "127.0.0.1")) << addresses.error().message;
  EXPECT_TRUE(Contains(addresses.error().message, "127.0.0.0/8 loopback"));
}

TEST(AddressResolveAndValidate, CnameTargetIsWhatCounts) {
  StaticResolver resolver = Fixture();
  auto bad = ResolveAndValidate(resolver, "cname.example.com", 443, ConnectPolicy({}));
  ASSERT_FALSE(bad);
  EXPECT_TRUE(Contains(bad.error().message, "10.1.2.3")) << bad.error().message;
  auto good = ResolveAndValidate(resolver, "good-cname.example.com", 443, ConnectPolicy({}));
  ASSERT_TRUE(good) << good.error().ToString();
  EXPECT_EQ(good->size(), 2u);
}

TEST(AddressResolveAndValidate, NoAnswersIsARefusal) {
  StaticResolver resolver = Fixture();
  auto empty = ResolveAndValidate(resolver, "empty.example.com", 443, ConnectPolicy({}));
  ASSERT_FALSE(empty);
  EXPECT_TRUE(Contains(empty.error().message, "no A or AAAA")) << empty.error().message;
  auto nx = ResolveAndValidate(resolver, "nx.example.com", 443, ConnectPolicy({}));
  ASSERT_FALSE(nx);
  EXPECT_EQ(nx.error().code, "not_found");
  auto loop = ResolveAndValidate(resolver, "loop1.example.com", 443, ConnectPolicy({}));
  ASSERT_FALSE(loop);
}

TEST(AddressResolveAndValidate, DuplicateAnswersCollapse) {
  StaticResolver resolver = Fixture();
  auto addresses = ResolveAndValidate(resolver, "dup.example.com", 443, ConnectPolicy({}));
  ASSERT_TRUE(addresses);
  EXPECT_EQ(addresses->size(), 1u);
}

TEST(AddressResolveAndValidate, CaseInsensitiveNames) {
  StaticResolver resolver = Fixture();
  EXPECT_TRUE(ResolveAndValidate(resolver, "API.Example.COM", 443, ConnectPolicy({})));
}

TEST(AddressResolveAndValidate, PortIsCheckedPerAnswer) {
  StaticResolver resolver = Fixture();
  UnsafeTestOptions unsafe;
  unsafe.allow_addresses.push_back(*ParseUnsafeTestAllowAddress("127.0.0.2:8443"));
  const ConnectPolicy policy({}, unsafe);
  EXPECT_TRUE(ResolveAndValidate(resolver, "test.example.com", 8443, policy));
  EXPECT_FALSE(ResolveAndValidate(resolver, "test.example.com", 443, policy));
  // A real global host does not get the test port just because a test address has it.
  EXPECT_FALSE(ResolveAndValidate(resolver, "api.example.com", 8443, policy));
}

}  // namespace
}  // namespace connect_policy_test
}  // namespace anvil
