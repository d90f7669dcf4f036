// The proxy's target rules (issue 8): --allow-host parsing, CONNECT and absolute-form targets,
// exact (host, port) matching.
#include "netpolicy/proxy_policy.h"

#include <gtest/gtest.h>

namespace anvil {
namespace proxy_policy_test {
namespace {

TEST(ProxyPolicy, AllowHostDefaultsTo443AndLowerCases) {
  auto t = ParseAllowHost("Example.ORG");
  ASSERT_TRUE(t) << t.error().ToString();
  EXPECT_EQ(t->host, "example.org");
  EXPECT_EQ(t->port, 443);
  t = ParseAllowHost("example.org:8080");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->port, 8080);
  t = ParseAllowHost("[::1]:8443");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->host, "[::1]");
  EXPECT_TRUE(t->literal.has_value());
}

TEST(ProxyPolicy, AllowHostRefusesWildcardsUserinfoTrailingDotsAndJunk) {
  for (std::string bad :
       {"*.example.org", "user@example.org", "example.org.", "exa mple.org", "http://example.org",
        "example.org/x", "example.org:0", "example.org:99999", "0177.0.0.1", "127.1", "",
        "ex%41mple.org", "b\\u00fccher.de"}) {
    EXPECT_FALSE(ParseAllowHost(bad)) << bad;
  }
}

TEST(ProxyPolicy, ConnectTargetsNeedAPort) {
  EXPECT_FALSE(ParseConnectTarget("example.org"));
  EXPECT_FALSE(ParseConnectTarget("[::1]"));
  auto t = ParseConnectTarget("example.org:443");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->port, 443);
  EXPECT_FALSE(ParseConnectTarget("user:pw@example.org:443"));
}

TEST(ProxyPolicy, HttpTargetsAreAbsoluteHttpUrls) {
  std::string origin;
  auto t = ParseHttpTarget("http://example.org/a/b?c=d#frag", &origin);
  ASSERT_TRUE(t) << t.error().ToString();
  EXPECT_EQ(t->host, "example.org");
  EXPECT_EQ(t->port, 80);
  EXPECT_EQ(origin, "/a/b?c=d");
  t = ParseHttpTarget("HTTP://example.org:8080", &origin);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->port, 8080);
  EXPECT_EQ(origin, "/");
  for (std::string bad :
       {"/relative", "https://example.org/", "ftp://example.org/", "http://user@example.org/",
        "http://example.org\\@evil/", "http://example.org/a b"}) {
    EXPECT_FALSE(ParseHttpTarget(bad, &origin)) << bad;
  }
}

TEST(ProxyPolicy, OnlyExactHostAndPortPass) {
  std::vector<ProxyTarget> allowed = {*ParseAllowHost("example.org"),
                                      *ParseAllowHost("api.example.org:8443")};
  EXPECT_TRUE(CheckProxyTarget(*ParseConnectTarget("example.org:443"), allowed));
  EXPECT_TRUE(CheckProxyTarget(*ParseConnectTarget("api.example.org:8443"), allowed));
  auto denied = CheckProxyTarget(*ParseConnectTarget("example.org:8443"), allowed);
  ASSERT_FALSE(denied);
  EXPECT_EQ(denied.error().ToString(),
            "denied: host not allowed: example.org:8443 (allowed: example.org:443, "
            "api.example.org:8443)");
  EXPECT_FALSE(CheckProxyTarget(*ParseConnectTarget("sub.example.org:443"), allowed));
  EXPECT_FALSE(CheckProxyTarget(*ParseConnectTarget("example.org.evil:443"), allowed));
  EXPECT_FALSE(CheckProxyTarget(*ParseConnectTarget("example.org:443"), {}));
}

}  // namespace
}  // namespace proxy_policy_test
}  // namespace anvil
