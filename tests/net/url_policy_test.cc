// The URL grammar, the grant match, the libcurl cross-check, the method rule and the whole
// pre-connect plan. Each refusal case also pins the error code, and the plan tests prove that
// refused URLs never reach the resolver.
#include "netpolicy/url_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "net/curl_url_check.h"
#include "netpolicy/fetch_plan.h"
#include "netpolicy/resolver.h"

namespace anvil {
namespace url_policy_test {
namespace {

using std::string_literals::operator""s;

IpAddress Ip(const std::string& text) {
  auto parsed = ParseIpLiteral(text);
  EXPECT_TRUE(parsed) << text;
  return parsed ? *parsed : IpAddress();
}

NetGrant Grant(const std::vector<std::string>& hosts, bool post = false) {
  auto list = HostAllowlist::Create(hosts);
  EXPECT_TRUE(list) << list.error().ToString();
  return NetGrant{list ? *list : HostAllowlist(), post};
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// ---- grammar ----

TEST(UrlParse, CanonicalPieces) {
  auto url = ParseFetchUrl("HTTPS://API.Example.COM/v1/items?q=1#section");
  ASSERT_TRUE(url) << url.error().ToString();
  EXPECT_EQ(url->host, "api.example.com");
  EXPECT_EQ(url->port, 443);
  EXPECT_FALSE(url->port_given);
  EXPECT_FALSE(url->literal);
  EXPECT_EQ(url->path_and_query, "/v1/items?q=1");
  EXPECT_EQ(url->url, "https://api.example.com/v1/items?q=1");  // fragment dropped
}

TEST(UrlParse, EmptyPathBecomesSlash) {
  EXPECT_EQ(ParseFetchUrl("https://api.example.com")->url, "https://api.example.com/");
  EXPECT_EQ(ParseFetchUrl("https://api.example.com?x=1")->url, "https://api.example.com/?x=1");
  EXPECT_EQ(ParseFetchUrl("https://api.example.com#f")->url, "https://api.example.com/");
}

TEST(UrlParse, ExplicitPort443IsKept) {
  auto url = ParseFetchUrl("https://api.example.com:443/x");
  ASSERT_TRUE(url);
  EXPECT_TRUE(url->port_given);
  EXPECT_EQ(url->url, "https://api.example.com:443/x");
}

TEST(UrlParse, IpLiterals) {
  auto v4 = ParseFetchUrl("https://1.1.1.1/");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->literal, Ip("1.1.1.1"));
  EXPECT_EQ(v4->host, "1.1.1.1");
  auto v6 = ParseFetchUrl("https://[2606:4700:4700::1111]:443/");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->literal, Ip("2606:4700:4700::1111"));
  EXPECT_EQ(v6->host, "[2606:4700:4700::1111]");
}

struct Refusal {
  std::string url;
  const char* code;
  const char* message_part;
};

TEST(UrlParse, RefusesOutsideTheGrammar) {
  const std::vector<Refusal> cases = {
      {"", "invalid", "empty URL"},
      {"api.example.com/", "invalid", "no scheme"},
      {"//api.example.com/", "invalid", "no scheme"},
      {"http://api.example.com/", "denied", "scheme not allowed: http"},
      {"wss://api.example.com/", "denied", "scheme not allowed: wss"},
      {"file:///etc/passwd", "denied", "scheme not allowed: file"},
      {"https:api.example.com/", "invalid", "exactly \"//\""},
      {"https:/api.example.com/", "invalid", "exactly \"//\""},
      {"https:///api.example.com/", "invalid", "exactly \"//\""},
      {"https://", "invalid", "empty host"},
      {"https:///", "invalid", "exactly \"//\""},
      {"https://:443/", "invalid", "empty host"},
      {"https://user@api.example.com/", "denied", "userinfo"},
      {"https://:@api.example.com/", "denied", "userinfo"},
      {"https://api.example.com\\@evil.com/", "invalid", "backslash"},
      {"https:\\\\api.example.com\\", "invalid", "backslash"},
      {" https://api.example.com/", "invalid", "space"},
      {"https://api.example.com/ x", "invalid", "space"},
      {"https://api.exa\tmple.com/", "invalid", "control character"},
      {"https://api.example.com/\r\nX: y", "invalid", "control character"},
      {"https://api.example.com\x7f/", "invalid", "control character"},
      {"https://api.example.com\0.evil.com/"s, "invalid", "control character"},
      {"https://%61pi.example.com/", "invalid", "percent-encoding"},
      {"https://api.example.com%2eevil.com/", "invalid", "percent-encoding"},
      {"https://[fe80::1%25eth0]/", "invalid", "zone id"},
      {"https://api.example.com./", "invalid", "ends with a dot"},
      {"https://api..example.com/", "invalid", "empty label"},
      {"https://.api.example.com/", "invalid", "empty label"},
      {"https://a_b.example.com/", "invalid", "not allowed in host"},
      {"https://a!b.example.com/", "invalid", "not allowed in host"},
      {"https://-a.example.com/", "invalid", "starts or ends with '-'"},
      {"https://a-.example.com/", "invalid", "starts or ends with '-'"},
      {"https://" + std::string(64, 'a') + ".example.com/", "invalid", "longer than 63"},
      {"https://" + std::string(250, 'a') + ".com/", "invalid", "longer than 253"},
      {"https://api\xef\xbc\x8e"
       "example.com/",
       "invalid", "non-ASCII host"},
      {"https://api.example.com/\xc3\xa9", "invalid", "non-ASCII byte in path"},
      {"https://api.example.com/#\xc3\xa9", "invalid", "non-ASCII byte in path"},
      {"https://api.example.com/%zz", "invalid", "malformed %-escape"},
      {"https://api.example.com/%4", "invalid", "malformed %-escape"},
      {"https://0177.0.0.1/", "invalid", "numeric host"},
      {"https://0x7f.1/", "invalid", "numeric host"},
      {"https://127.1/", "invalid", "numeric host"},
      {"https://0/", "invalid", "numeric host"},
      {"https://3232235521/", "invalid", "numeric host"},
      {"https://425.510.425.510/", "invalid", "numeric host"},
      {"https://1.2.3.0x4/", "invalid", "numeric host"},
      {"https://api.example.0x1f/", "invalid", "numeric host"},
      {"https://[1.2.3.4]/", "invalid", "IPv6 address only"},
      {"https://[::1/", "invalid", "unterminated"},
      {"https://[::1]x/", "invalid", "junk after ']'"},
      {"https://[v1.x]/", "invalid", "IPv6 address only"},
      {"https://[::g]/", "invalid", "not an IPv6"},
      {"https://api.example.com:/", "invalid", "empty port"},
      {"https://api.example.com:+443/", "invalid", "not a decimal"},
      {"https://api.example.com:-1/", "invalid", "not a decimal"},
      {"https://api.example.com:443:443/", "invalid", "not a decimal"},
      {"https://api.example.com:0443/", "invalid", "leading zero"},
      {"https://api.example.com:0/", "invalid", "out of range"},
      {"https://api.example.com:65536/", "invalid", "out of range"},
      {"https://api.example.com:4430000/", "invalid", "not a decimal"},
      {"https://api.example.com/" + std::string(9000, 'a'), "invalid", "longer than 8192"},
  };
  for (const Refusal& refusal : cases) {
    auto url = ParseFetchUrl(refusal.url);
    ASSERT_FALSE(url) << "accepted: " << refusal.url;
    EXPECT_EQ(url.error().code, refusal.code) << refusal.url << " -> " << url.error().ToString();
    EXPECT_TRUE(Contains(url.error().message, refusal.message_part))
        << refusal.url << " -> " << url.error().ToString();
  }
}

TEST(UrlParse, MessagesEscapeControlBytes) {
  auto url = ParseFetchUrl("https://api.example.com/\x1b[31mred");
  ASSERT_FALSE(url);
  EXPECT_FALSE(Contains(url.error().message, "\x1b"));
  EXPECT_TRUE(Contains(url.error().message, "\\x1b"));
}

// ---- grant ----

TEST(UrlGrant, AllowlistValidatesAndLowercases) {
  auto list = HostAllowlist::Create({"API.Example.com", "api.example.com", "1.1.1.1",
                                     "[2606:4700:4700::1111]", "xn--mnchen-3ya.example"});
  ASSERT_TRUE(list) << list.error().ToString();
  EXPECT_EQ(list->hosts(),
            (std::vector<std::string>{"api.example.com", "1.1.1.1", "[2606:4700:4700::1111]",
                                      "xn--mnchen-3ya.example"}));
}

TEST(UrlGrant, AllowlistRefusesWildcardsAndSloppyHosts) {
  for (const char* host : {"*.example.com", "*", "api.example.com.", "", "münchen.example", "127.1",
                           "0x7f.1", "a_b.example.com", "api..example.com", "[fe80::1%eth0]",
                           "[1.2.3.4]", "[::1", "api.example.com:443"}) {
    EXPECT_FALSE(HostAllowlist::Create({host})) << "accepted grant host: " << host;
  }
}

TEST(UrlGrant, ExactHostOnly) {
  const NetGrant grant = Grant({"api.example.com"});
  EXPECT_TRUE(CheckFetchUrl("https://api.example.com/", grant, {}));
  EXPECT_TRUE(CheckFetchUrl("https://API.EXAMPLE.COM/", grant, {}));
  for (const char* url :
       {"https://evilapi.example.com/", "https://sub.api.example.com/", "https://api.example.co/",
        "https://example.com/", "https://api.example.com.evil.com/"}) {
    auto checked = CheckFetchUrl(url, grant, {});
    ASSERT_FALSE(checked) << url;
    EXPECT_EQ(checked.error().ToString().rfind("denied: host not granted: ", 0), 0u)
        << checked.error().ToString();
  }
}

TEST(UrlGrant, IpLiteralOnlyWhenGrantedLiterally) {
  const NetGrant named = Grant({"api.example.com"});
  auto refused = CheckFetchUrl("https://1.1.1.1/", named, {});
  ASSERT_FALSE(refused);
  EXPECT_TRUE(Contains(refused.error().message, "IP-literal host not granted"));

  const NetGrant literal = Grant({"1.1.1.1", "[2606:4700:4700::1111]"});
  EXPECT_TRUE(CheckFetchUrl("https://1.1.1.1/", literal, {}));
  EXPECT_TRUE(CheckFetchUrl("https://[2606:4700:4700::1111]/", literal, {}));
  // Another spelling of the same address is not the literal the user approved.
  EXPECT_FALSE(CheckFetchUrl("https://[2606:4700:4700:0:0:0:0:1111]/", literal, {}));
}

TEST(UrlGrant, PortOtherThan443IsRefused) {
  const NetGrant grant = Grant({"api.example.com"});
  auto checked = CheckFetchUrl("https://api.example.com:8443/", grant, {});
  ASSERT_FALSE(checked);
  EXPECT_EQ(checked.error().ToString(), "denied: port not allowed: 8443 (HTTPS on 443 only)");
  EXPECT_TRUE(CheckFetchUrl("https://api.example.com:443/", grant, {}));
}

TEST(UrlGrant, UnsafeTestPortOpensOnlyThatPort) {
  const NetGrant grant = Grant({"api.example.com"});
  UnsafeTestOptions unsafe;
  unsafe.allow_addresses.push_back(*ParseUnsafeTestAllowAddress("127.0.0.2:8443"));
  EXPECT_TRUE(CheckFetchUrl("https://api.example.com:8443/", grant, unsafe));
  EXPECT_FALSE(CheckFetchUrl("https://api.example.com:8444/", grant, unsafe));
}

// ---- libcurl cross-check ----

// Every shape of URL our grammar accepts must read the same to libcurl; otherwise the policy
// would refuse legitimate fetches (or, worse, the two would be checking different things).
TEST(UrlCurlCrossCheck, AgreesOnAcceptedUrls) {
  for (const char* text :
       {"https://api.example.com", "https://api.example.com/", "https://API.example.com/a/../b",
        "https://api.example.com/p;x?q=a@b#f", "https://api.example.com?x",
        "https://api.example.com#frag", "https://api.example.com:443/%41%2f",
        "https://api.example.com/{}|^`<>\"", "https://1.1.1.1/", "https://1.1.1.1:443/",
        "https://[2606:4700:4700::1111]/", "https://[2606:4700:4700:0:0:0:0:1111]:443/",
        "https://[::FFFF:1.2.3.4]/", "https://xn--mnchen-3ya.example/", "https://a-b.c0/",
        "https://api.example.com:8443/"}) {
    auto url = ParseFetchUrl(text);
    ASSERT_TRUE(url) << text << ": " << url.error().ToString();
    EXPECT_TRUE(CrossCheckWithCurl(text, *url)) << text;
    EXPECT_TRUE(CrossCheckWithCurl(url->url, *url)) << url->url;
  }
}

TEST(UrlCurlCrossCheck, DisagreementIsRefused) {
  auto ours = ParseFetchUrl("https://api.example.com/");
  ASSERT_TRUE(ours);
  struct Case {
    std::string text;
    const char* message_part;
  };
  const std::vector<Case> cases = {
      {"https://evil.com/", "host"},
      {"https://api.example.com@evil.com/", "userinfo"},
      {"https://evil.com\\@api.example.com/", "userinfo"},
      {"https://api.example.com:8443/", "port"},
      {"http://api.example.com/", "scheme"},
      {"wss://api.example.com/", "rejects"},
      {"https://api.example.com:+443/", "rejects"},
      {"https://api.example.com\0.evil.com/"s, "NUL"},
      {"https://%61pi.example.com%2eevil.com/", "host"},
  };
  for (const Case& c : cases) {
    auto status = CrossCheckWithCurl(c.text, *ours);
    ASSERT_FALSE(status) << c.text;
    EXPECT_EQ(status.error().code, "denied");
    EXPECT_TRUE(Contains(status.error().message, "parser disagreement")) << c.text;
    EXPECT_TRUE(Contains(status.error().message, c.message_part))
        << c.text << " -> " << status.error().message;
  }
  auto zoned = ParseFetchUrl("https://[fe80::1]/");
  ASSERT_TRUE(zoned);
  auto zone = CrossCheckWithCurl("https://[fe80::1%25eth0]/", *zoned);
  ASSERT_FALSE(zone);
  EXPECT_TRUE(Contains(zone.error().message, "zone id"));
}

// ---- method ----

TEST(UrlMethod, GetHeadAlwaysPostWithGrant) {
  const NetGrant plain = Grant({"api.example.com"});
  const NetGrant post = Grant({"api.example.com"}, true);
  EXPECT_TRUE(CheckFetchMethod("GET", plain));
  EXPECT_TRUE(CheckFetchMethod("HEAD", plain));
  auto refused = CheckFetchMethod("POST", plain);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().ToString(), "denied: POST needs the net.post permission");
  EXPECT_TRUE(CheckFetchMethod("POST", post));
  for (const char* method : {"PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE", "get", "Post",
                             "", "GET ", "GET\r\nX: y"}) {
    EXPECT_FALSE(CheckFetchMethod(method, post)) << method;
  }
}

// ---- the whole pre-connect plan ----

class UrlPlanFetch : public ::testing::Test {
 protected:
  void SetUp() override {
    resolver_.AddAddress("api.example.com", Ip("93.184.215.14"));
    resolver_.AddAddress("rebind.example.com", Ip("93.184.215.14"));
    resolver_.AddAddress("rebind.example.com", Ip("127.0.0.1"));
    resolver_.AddAddress("test.example.com", Ip("127.0.0.2"));
  }
  StaticResolver resolver_;
};

TEST_F(UrlPlanFetch, GrantedHostWithGlobalAnswers) {
  auto plan = PlanFetch("https://api.example.com/x?y#z", "GET", Grant({"api.example.com"}),
                        resolver_, ConnectPolicy({}));
  ASSERT_TRUE(plan) << plan.error().ToString();
  EXPECT_EQ(plan->url.url, "https://api.example.com/x?y");
  EXPECT_EQ(plan->method, "GET");
  EXPECT_EQ(plan->addresses, (std::vector<IpAddress>{Ip("93.184.215.14")}));
}

TEST_F(UrlPlanFetch, RefusedUrlOrMethodNeverReachesTheResolver) {
  const NetGrant grant = Grant({"api.example.com"});
  EXPECT_FALSE(PlanFetch("https://evil.example/", "GET", grant, resolver_, ConnectPolicy({})));
  EXPECT_FALSE(PlanFetch("https://api.example.com/", "POST", grant, resolver_, ConnectPolicy({})));
  EXPECT_FALSE(PlanFetch("https://api.example.com/", "PUT", grant, resolver_, ConnectPolicy({})));
  EXPECT_EQ(resolver_.queries(), 0);
}

TEST_F(UrlPlanFetch, RebindingAnswerRefused) {
  auto plan = PlanFetch("https://rebind.example.com/", "GET", Grant({"rebind.example.com"}),
                        resolver_, ConnectPolicy({}));
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().ToString(),
            "denied: rebind.example.com resolves to 127.0.0.1: 127.0.0.0/8 loopback (RFC 1122)");
}

TEST_F(UrlPlanFetch, GrantedLiteralStillNeedsAGlobalAddress) {
  for (const char* host : {"127.0.0.1", "169.254.169.254", "[::1]", "[::ffff:8.8.8.8]",
                           "[64:ff9b::a9fe:a9fe]", "[fe80::1]"}) {
    auto plan =
        PlanFetch("https://"s + host + "/", "GET", Grant({host}), resolver_, ConnectPolicy({}));
    ASSERT_FALSE(plan) << host;
    EXPECT_EQ(plan.error().code, "denied") << host;
  }
  auto plan =
      PlanFetch("https://1.1.1.1/", "HEAD", Grant({"1.1.1.1"}), resolver_, ConnectPolicy({}));
  ASSERT_TRUE(plan) << plan.error().ToString();
  EXPECT_EQ(plan->addresses, (std::vector<IpAddress>{Ip("1.1.1.1")}));
  EXPECT_EQ(resolver_.queries(), 0);  // literals are never resolved
}

TEST_F(UrlPlanFetch, LocalInterfaceAddressRefused) {
  auto plan = PlanFetch("https://api.example.com/", "GET", Grant({"api.example.com"}), resolver_,
                        ConnectPolicy({Ip("93.184.215.14")}));
  ASSERT_FALSE(plan);
  EXPECT_TRUE(Contains(plan.error().message, "local interface")) << plan.error().message;
}

TEST_F(UrlPlanFetch, UnsafeTestAddressAndPort) {
  const NetGrant grant = Grant({"test.example.com", "api.example.com", "127.0.0.2"});
  UnsafeTestOptions unsafe;
  unsafe.allow_addresses.push_back(*ParseUnsafeTestAllowAddress("127.0.0.2:8443"));
  const ConnectPolicy policy({}, unsafe);
  EXPECT_TRUE(PlanFetch("https://test.example.com:8443/", "GET", grant, resolver_, policy));
  EXPECT_TRUE(PlanFetch("https://127.0.0.2:8443/", "GET", grant, resolver_, policy));
  EXPECT_FALSE(PlanFetch("https://test.example.com/", "GET", grant, resolver_, policy));
  // The test port is for the exempted address only, not for a real host.
  EXPECT_FALSE(PlanFetch("https://api.example.com:8443/", "GET", grant, resolver_, policy));
  // Without the trusted-side option the same grant and URL are refused.
  EXPECT_FALSE(
      PlanFetch("https://test.example.com:8443/", "GET", grant, resolver_, ConnectPolicy({})));
  EXPECT_FALSE(PlanFetch("https://127.0.0.2:8443/", "GET", grant, resolver_, ConnectPolicy({})));
}

}  // namespace
}  // namespace url_policy_test
}  // namespace anvil
