// T2 attack catalogue: URL tricks. Each URL names -- or tries to smuggle -- something other than
// the granted host over HTTPS on the allowed port. Every one is refused before any DNS query
// and before any connect (the test DNS server counts queries, every test server counts
// connections), and the plain granted URL keeps working afterwards.
#include "t2_fetch_fixture.h"

namespace anvil::testing {
namespace t2_fetch_url_tricks_test {
namespace {

class T2UrlTricks : public T2FetchTest {
 protected:
  void SetUp() override {
    T2FetchTest::SetUp();
    if (HasFatalFailure()) return;
    StartNet({"api.anvil.test"});
  }
  void TearDown() override {
    if (client_) ExpectGrantedUrlWorks();
    EXPECT_EQ(forbidden_ ? forbidden_->Connections() : 0, 0);
    T2FetchTest::TearDown();
  }
};

TEST_F(T2UrlTricks, PlainHttpIsRefused) {
  ExpectRefusedBeforeDns("http scheme", "http://api.anvil.test:P/hello");
  ExpectRefusedBeforeDns("http on 443", "http://api.anvil.test/hello");
  ExpectRefusedBeforeDns("other scheme", "ftp://api.anvil.test:P/hello");
  ExpectRefusedBeforeDns("no scheme", "//api.anvil.test:P/hello");
}

TEST_F(T2UrlTricks, PortsOtherThan443OrTheExemptedOneAreRefused) {
  ExpectRefusedBeforeDns("port 8443", "https://api.anvil.test:8443/hello");
  ExpectRefusedBeforeDns("port 80", "https://api.anvil.test:80/hello");
  ExpectRefusedBeforeDns("port with leading zero", "https://api.anvil.test:0443/hello");
  ExpectRefusedBeforeDns("port overflow", "https://api.anvil.test:65979/hello");
  ExpectRefusedBeforeDns("empty port", "https://api.anvil.test:/hello");
}

TEST_F(T2UrlTricks, UserinfoTricksAreRefused) {
  ExpectRefusedBeforeDns("userinfo", "https://user@api.anvil.test:P/hello");
  ExpectRefusedBeforeDns("user:pass", "https://user:pass@api.anvil.test:P/hello");
  ExpectRefusedBeforeDns("granted host as userinfo", "https://api.anvil.test:P@evil.anvil.test/");
  ExpectRefusedBeforeDns("granted host as userinfo 2", "https://api.anvil.test@127.0.0.1:P/");
  ExpectRefusedBeforeDns("encoded @", "https://api.anvil.test%40evil.anvil.test:P/");
  ExpectRefusedBeforeDns("backslash @", "https://api.anvil.test\\@evil.anvil.test:P/");
  ExpectRefusedBeforeDns("fragment @", "https://evil.anvil.test:P#@api.anvil.test/");
}

TEST_F(T2UrlTricks, TrailingDotAndCaseVariantsAreRefusedOrNormalised) {
  ExpectRefusedBeforeDns("trailing dot", "https://api.anvil.test.:P/hello");
  ExpectRefusedBeforeDns("two trailing dots", "https://api.anvil.test..:P/hello");
  ExpectRefusedBeforeDns("mixed case + trailing dot", "https://API.Anvil.Test.:P/hello");
  ExpectRefusedBeforeDns("leading dot", "https://.api.anvil.test:P/hello");
  ExpectRefusedBeforeDns("mixed case, other host", "https://EVIL.anvil.test:P/hello");
  // Mixed case of the granted host is the granted host (DNS is case-insensitive): it is
  // lower-cased, checked, and pinned like any other fetch.
  auto f = Fetch(WithPort("https://API.Anvil.TEST:P/hello"));
  EXPECT_TRUE(f.ok) << f.code << ": " << f.message;
  EXPECT_EQ(f.body, "hello from allowed");
  EXPECT_EQ(forbidden_->Connections(), 0);
}

TEST_F(T2UrlTricks, NumericIpv4FormsAreRefused) {
  ExpectRefusedBeforeDns("dotted quad, not granted", "https://127.0.0.1:P/");
  ExpectRefusedBeforeDns("decimal integer", "https://2130706433:P/");
  ExpectRefusedBeforeDns("octal", "https://0177.0.0.1:P/");
  ExpectRefusedBeforeDns("zero-padded", "https://127.000.000.001:P/");
  ExpectRefusedBeforeDns("hex", "https://0x7f.0.0.1:P/");
  ExpectRefusedBeforeDns("hex integer", "https://0x7f000001:P/");
  ExpectRefusedBeforeDns("short form", "https://127.1:P/");
  ExpectRefusedBeforeDns("short form 2", "https://127.0.2:P/");
  ExpectRefusedBeforeDns("exempted address, not granted", "https://127.0.0.2:P/hello");
}

TEST_F(T2UrlTricks, Ipv6FormsAreRefused) {
  ExpectRefusedBeforeDns("loopback", "https://[::1]:P/");
  ExpectRefusedBeforeDns("loopback, long form", "https://[0:0:0:0:0:0:0:1]:P/");
  ExpectRefusedBeforeDns("v4-mapped", "https://[::ffff:127.0.0.1]:P/");
  ExpectRefusedBeforeDns("v4-mapped hex", "https://[::ffff:7f00:2]:P/");
  ExpectRefusedBeforeDns("v4-compatible", "https://[::127.0.0.2]:P/");
  ExpectRefusedBeforeDns("NAT64", "https://[64:ff9b::7f00:2]:P/");
  ExpectRefusedBeforeDns("zone id", "https://[fe80::1%25lo]:P/");
  ExpectRefusedBeforeDns("unbracketed", "https://::1:P/");
}

TEST_F(T2UrlTricks, IdnHomographsAndEncodedHostsAreRefused) {
  ExpectRefusedBeforeDns("Cyrillic a", "https://\xd0\xb0pi.anvil.test:P/hello");
  ExpectRefusedBeforeDns("fullwidth a", "https://\xef\xbd\x81pi.anvil.test:P/hello");
  ExpectRefusedBeforeDns("ideographic full stop",
                         "https://api\xe3\x80\x82"
                         "anvil.test:P/hello");
  ExpectRefusedBeforeDns("soft hyphen", "https://a\xc2\xadpi.anvil.test:P/hello");
  ExpectRefusedBeforeDns("punycode look-alike", "https://xn--pi-7kc.anvil.test:P/hello");
  ExpectRefusedBeforeDns("percent-encoded letter", "https://%61pi.anvil.test:P/hello");
  ExpectRefusedBeforeDns("percent-encoded dot", "https://api%2eanvil.test:P/hello");
  ExpectRefusedBeforeDns("backslash as slash", "https:\\\\api.anvil.test:P/hello");
  ExpectRefusedBeforeDns("backslash in authority", "https://api.anvil.test\\.evil.test:P/");
}

TEST_F(T2UrlTricks, SuffixAndPrefixLookalikesAreRefused) {
  ExpectRefusedBeforeDns("subdomain of granted", "https://x.api.anvil.test:P/hello");
  ExpectRefusedBeforeDns("granted as prefix", "https://api.anvil.test.evil.test:P/hello");
  ExpectRefusedBeforeDns("granted as label prefix", "https://api.anvil.testevil:P/hello");
}

TEST_F(T2UrlTricks, ControlBytesAndWhitespaceAreRefused) {
  ExpectRefusedBeforeDns("CRLF in path", "https://api.anvil.test:P/hello\r\nX-Evil: 1");
  ExpectRefusedBeforeDns("space in host", "https://api.anvil.test :P/hello");
  ExpectRefusedBeforeDns("tab", "https://api.anvil\t.test:P/hello");
  ExpectRefusedBeforeDns("NUL", std::string("https://api.anvil.test:P/\0x", 27));
}

TEST_F(T2UrlTricks, MethodsOtherThanGetHeadPostAreRefused) {
  for (const char* method : {"PUT", "DELETE", "CONNECT", "TRACE", "get", "GET ", ""}) {
    SCOPED_TRACE(method);
    const int before = dns_->TotalQueries();
    EXPECT_REFUSED(Fetch(Url("api.anvil.test", "/hello"), method));
    EXPECT_EQ(dns_->TotalQueries(), before);
  }
}

TEST_F(T2UrlTricks, ForbiddenRequestHeadersAreRefused) {
  const char* headers[] = {
      R"({"Host": "evil.anvil.test"})",
      R"({"host": "evil.anvil.test"})",
      R"({"Content-Length": "0"})",
      R"({"Transfer-Encoding": "chunked"})",
      R"({"Connection": "keep-alive"})",
      R"({"Proxy-Authorization": "Basic x"})",
      R"({"Upgrade": "h2c"})",
      R"({"Accept-Encoding": "identity"})",
      R"({"X-A": "1\r\nHost: evil"})",
      R"({"X-A": "1\nX-B: 2"})",
      R"({"X-A": "a\u0000b"})",
      R"({"Bad Name": "1"})",
      R"({"X:A": "1"})",
      R"({"": "1"})",
      R"({"X-A": 1})",
      R"(["X-A", "1"])",
      R"({"X-A": " padded"})",
  };
  for (const char* h : headers) {
    SCOPED_TRACE(h);
    const int before = dns_->TotalQueries();
    EXPECT_REFUSED(Fetch(Url("api.anvil.test", "/hello"), "GET", h));
    EXPECT_EQ(dns_->TotalQueries(), before);
  }
}

}  // namespace
}  // namespace t2_fetch_url_tricks_test
}  // namespace anvil::testing
