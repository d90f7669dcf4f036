// The one host grammar (netpolicy/host_name.h): what a manifest may grant is exactly what a URL
// can name, so a granted host always matches its URL and a refused spelling never does.
#include "netpolicy/host_name.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "netpolicy/url_policy.h"

namespace anvil {
namespace host_name_test {
namespace {

TEST(HostName, EveryGrantableHostIsTheHostOfItsUrl) {
  for (const std::string& host :
       std::vector<std::string>{"api.example.com", "a", "xn--mnchen-3ya.example", "1.1.1.1",
                                "[2606:4700:4700::1111]", "[::ffff:1.2.3.4]", "a-b.c-d.example",
                                std::string(63, 'a') + ".com", "0x.example", "api.example.1a"}) {
    ASSERT_TRUE(ValidateGrantHost(host))
        << host << ": " << ValidateGrantHost(host).error().ToString();
    auto list = HostAllowlist::Create({host});
    ASSERT_TRUE(list) << host;
    auto url = ParseFetchUrl("https://" + host + "/");
    ASSERT_TRUE(url) << host << ": " << url.error().ToString();
    EXPECT_EQ(url->host, host);
    EXPECT_TRUE(list->Contains(url->host)) << host;
  }
}

// A refused grant spelling is refused (or never matched) as a URL host too.
TEST(HostName, RefusedSpellingsAreRefusedEverywhere) {
  struct Case {
    std::string host;
    std::string grant_message;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"api.example.com.", "ends with a dot"},
           {"127.1", "dotted-quad"},
           {"0x7f.0.0.1", "dotted-quad"},
           {"3232235521", "dotted-quad"},
           {"a_b.example.com", "not allowed in host"},
           {"a..b", "empty label"},
           {"-a.example", "starts or ends with '-'"},
           {std::string(64, 'a') + ".com", "longer than 63"},
           {"[1.2.3.4]", "not an IPv6 address"},
           {"[fe80::1%eth0]", "zone"},
       }) {
    auto granted = ValidateGrantHost(c.host);
    ASSERT_FALSE(granted) << c.host;
    EXPECT_NE(granted.error().message.find(c.grant_message), std::string::npos)
        << c.host << ": " << granted.error().ToString();
    EXPECT_NE(granted.error().message.find("(fix: "), std::string::npos)
        << "a refusal names the fix: " << granted.error().ToString();
    EXPECT_FALSE(HostAllowlist::Create({c.host})) << c.host;
    EXPECT_FALSE(ParseFetchUrl("https://" + c.host + "/")) << c.host;
  }
}

// The grant form is stricter than a URL in spelling only: one spelling per host.
TEST(HostName, GrantsNeedTheOneSpelling) {
  EXPECT_FALSE(ValidateGrantHost("API.example.com"));
  EXPECT_TRUE(ParseFetchUrl("https://API.example.com/"));  // read as api.example.com
  auto ipv6 = ValidateGrantHost("[2001:DB8:0::1]");
  ASSERT_FALSE(ipv6);
  EXPECT_NE(ipv6.error().message.find("write it as [2001:db8::1]"), std::string::npos)
      << ipv6.error().ToString();
}

// Untrusted text in a message cannot carry a terminal escape.
TEST(HostName, MessagesEscapeControlBytes) {
  auto refused = CheckHostName("a\x1b]0;x\x07.example");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message.find('\x1b'), std::string::npos);
  EXPECT_NE(refused.error().message.find("\\x1b"), std::string::npos) << refused.error().ToString();
}

}  // namespace
}  // namespace host_name_test
}  // namespace anvil
