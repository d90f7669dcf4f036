// The request head a sandboxed command sends to anvil-proxy (netpolicy/proxy_request), as a
// table: what is accepted and what each refusal is (status and reason, the client's reply and
// the audit line), and what a plain request's head becomes on its way to the origin. The same
// heads go through the running proxy in http_proxy_relay_test.cc and t2_sandbox_proxy_test.cc.
#include "netpolicy/proxy_request.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace anvil {
namespace proxy_request_test {
namespace {

struct Refused {
  std::string head;
  int status;
  std::string reason;
};

TEST(ProxyRequestHead, RefusedHeadsSayWhyAndWithWhichStatus) {
  const std::vector<Refused> cases = {
      {"GET http://a/ HTTP/1.1\r\n", 400, "incomplete request head"},
      {"GET http://a/\r\n\r\n", 400, "malformed request line"},
      {"GET  http://a/ HTTP/1.1\r\n\r\n", 400, "malformed request line"},
      {"GET http://a/ HTTP/2.0\r\n\r\n", 400, "malformed request line"},
      {"GET http://a/ HTTP/1.10\r\n\r\n", 400, "malformed request line"},
      {"GET http://a/ x HTTP/1.1\r\n\r\n", 400, "malformed request line"},
      {"\r\n\r\n", 400, "malformed request line"},
      {"G(T http://a/ HTTP/1.1\r\n\r\n", 400, "malformed method"},
      {" http://a/ HTTP/1.1 x\r\n\r\n", 400, "malformed request line"},
      {"CONNEC\x01 a:443 HTTP/1.1\r\n\r\n", 400, "malformed method"},
      {"GET http://a/ HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400,
       "malformed request: folded header line"},
      {"GET http://a/ HTTP/1.1\r\nX: a\rb\r\n\r\n", 400,
       "malformed request: control character in a header line"},
      {"GET http://a/ HTTP/1.1\r\nX: a\x7f\r\n\r\n", 400,
       "malformed request: control character in a header line"},
      {"GET http://a/ HTTP/1.1\r\nX : a\r\n\r\n", 400, "malformed request: malformed header name"},
      {"GET http://a/ HTTP/1.1\r\nno colon\r\n\r\n", 400,
       "malformed request: malformed header name"},
      {"GET http://a/ HTTP/1.1\r\n: empty name\r\n\r\n", 400,
       "malformed request: malformed header name"},
      {"POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411,
       "a plain-HTTP request body needs a Content-Length (Transfer-Encoding is not forwarded; "
       "HTTPS through CONNECT carries any body)"},
      {"POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", 400,
       "both Transfer-Encoding and Content-Length"},
      {"POST http://a/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400,
       "conflicting Content-Length values"},
      {"POST http://a/ HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n", 400, "malformed Content-Length"},
      {"POST http://a/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, "malformed Content-Length"},
      {"POST http://a/ HTTP/1.1\r\nContent-Length: \r\n\r\n", 400, "malformed Content-Length"},
      {"POST http://a/ HTTP/1.1\r\nContent-Length: 9999999999999999999\r\n\r\n", 400,
       "malformed Content-Length"},
  };
  for (const auto& c : cases) {
    auto r = ParseProxyRequestHead(c.head);
    ASSERT_FALSE(r) << c.head;
    EXPECT_EQ(r.error().status, c.status) << c.head;
    EXPECT_EQ(r.error().reason, c.reason) << c.head;
  }
}

TEST(ProxyRequestHead, ATunnelsHeadersAreNeitherCheckedNorKept) {
  auto r = ParseProxyRequestHead(
      "CONNECT example.org:443 HTTP/1.1\r\nHost: x\r\n folded\r\nTransfer-Encoding: x\r\n\r\n");
  ASSERT_TRUE(r) << r.error().reason;
  EXPECT_TRUE(r->tunnel);
  EXPECT_EQ(r->method, "CONNECT");
  EXPECT_EQ(r->target, "example.org:443");
  EXPECT_EQ(r->header_lines, "");
  EXPECT_EQ(r->body_length, UINT64_MAX);
  EXPECT_FALSE(r->announced_length);
  std::string origin_form;
  auto target = ParseProxyRequestTarget(*r, &origin_form);
  ASSERT_TRUE(target);
  EXPECT_EQ(target->host, "example.org");
  EXPECT_EQ(target->port, 443);
}

struct Accepted {
  std::string head;
  uint64_t body_length;
  bool announced;
};

TEST(ProxyRequestHead, APlainRequestsBodyIsWhatItsContentLengthSays) {
  const std::vector<Accepted> cases = {
      {"GET http://a/ HTTP/1.1\r\n\r\n", 0, false},
      {"GET http://a/ HTTP/1.0\r\nHost: a\r\n\r\n", 0, false},
      {"POST http://a/ HTTP/1.1\r\nContent-Length: 10\r\n\r\n", 10, true},
      {"POST http://a/ HTTP/1.1\r\ncontent-length:\t007 \r\n\r\n", 7, true},
      {"POST http://a/ HTTP/1.1\r\nContent-Length:  010 \r\ncontent-length: 10\r\n\r\n", 10, true},
      {"POST http://a/ HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 0, true},
  };
  for (const auto& c : cases) {
    auto r = ParseProxyRequestHead(c.head);
    ASSERT_TRUE(r) << c.head << ": " << r.error().reason;
    EXPECT_FALSE(r->tunnel);
    EXPECT_EQ(r->body_length, c.body_length) << c.head;
    EXPECT_EQ(r->announced_length, c.announced) << c.head;
  }
}

TEST(ProxyRequestHead, OnlyTheHeadUpToItsBlankLineIsRead) {
  auto r = ParseProxyRequestHead(
      "POST http://a/x HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET http://b/ HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->target, "http://a/x");
  EXPECT_EQ(r->header_lines, "Content-Length: 3\r\n");
  EXPECT_EQ(r->body_length, 3u);
}

struct Forwarded {
  std::string head;
  std::string sent;
};

TEST(ProxyRequestHead, APlainRequestGoesOnInOriginFormWithTheTargetsHostAndItsOwnLength) {
  const std::vector<Forwarded> cases = {
      {"GET http://example.org/a?b#frag HTTP/1.1\r\nHost: evil.example\r\nAccept: */*\r\n\r\n",
       "GET /a?b HTTP/1.1\r\nHost: example.org\r\nAccept: */*\r\nConnection: close\r\n\r\n"},
      {"GET http://example.org:8080 HTTP/1.0\r\n\r\n",
       "GET / HTTP/1.1\r\nHost: example.org:8080\r\nConnection: close\r\n\r\n"},
      {"POST http://[::1]/up HTTP/1.1\r\nConnection: keep-alive\r\nProxy-Connection: x\r\n"
       "Keep-Alive: 5\r\nProxy-Authorization: y\r\nTE: trailers\r\nUpgrade: h2c\r\n"
       "HOST: a\r\nContent-Length:  010 \r\ncontent-length: 10\r\nX-Kept: 1\r\n\r\n",
       "POST /up HTTP/1.1\r\nHost: [::1]\r\nX-Kept: 1\r\nContent-Length: 10\r\n"
       "Connection: close\r\n\r\n"},
  };
  for (const auto& c : cases) {
    auto r = ParseProxyRequestHead(c.head);
    ASSERT_TRUE(r) << c.head << ": " << r.error().reason;
    std::string origin_form;
    auto target = ParseProxyRequestTarget(*r, &origin_form);
    ASSERT_TRUE(target) << c.head << ": " << target.error().ToString();
    EXPECT_EQ(ForwardedRequestHead(*r, *target, origin_form), c.sent) << c.head;
  }
}

TEST(ProxyRequestHead, ATargetThatIsNotAnAbsoluteHttpUrlIsRefusedByTheTargetParser) {
  for (const char* head : {"GET /relative HTTP/1.1\r\n\r\n", "GET https://a/ HTTP/1.1\r\n\r\n",
                           "CONNECT example.org HTTP/1.1\r\n\r\n"}) {
    auto r = ParseProxyRequestHead(head);
    ASSERT_TRUE(r) << head;
    std::string origin_form;
    EXPECT_FALSE(ParseProxyRequestTarget(*r, &origin_form)) << head;
  }
}

// What a tunnel that is not TLS begins with, as far as plain HTTP goes: every spelling a lenient
// server reads as a request line counts, undecided until the first line ends, and past the cap
// without an end it counts as one.
TEST(TunnelHttpStart, EveryRequestLineALenientServerReadsCounts) {
  using enum TunnelHttpStart;
  const std::vector<std::pair<std::string, TunnelHttpStart>> cases = {
      {"GET / HTTP/1.1\r\n", kHttpRequest},
      {"GET / HTTP/", kHttpRequest},
      {"get /x http/1.0", kHttpRequest},
      {"\r\n\r\n  GET / HTTP/1.1", kHttpRequest},
      {"GET\t/\tHTTP/1.1", kHttpRequest},
      {"GET /a b HTTP/1.1", kHttpRequest},
      {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", kHttpRequest},
      {"A GET / HTTP/1.1", kHttpRequest},
      {"", kNeedMore},
      {"\r\n", kNeedMore},
      {"GE", kNeedMore},
      {"GET", kNeedMore},
      {"GET ", kNeedMore},
      {"GET /", kNeedMore},
      {"GET / ", kNeedMore},
      {"GET / HT", kNeedMore},
      {"GET / HTTP", kNeedMore},
      {"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n", kNotHttp},
      {"EHLO client.example\r\n", kNotHttp},
      {"*1\r\n$4\r\nPING\r\n", kNotHttp},
      {"GET /\r\n", kHttp09},  // no Host, no version
      {"GET  /index.html \r\n", kHttp09},
      {"\r\nget /a b\n", kHttp09},
      {"GET / HTTPS/1.1\r\n", kHttp09},
      {"EHLO /x\r\n", kHttp09},
      {"GET x\r\n", kNotHttp},
      {"GET\r\n", kNotHttp},
      {std::string("\x16\x03\x01", 3), kNotHttp},
      {std::string("\x00GET / HTTP/1.1", 15), kNotHttp},
      {"(GET / HTTP/1.1", kNotHttp},
      {"GET/ HTTP/1.1", kNotHttp},
      {"hello world\r\n", kNotHttp},
      {std::string(kMaxTunnelFirstLineBytes, 'a'), kNeedMore},
      {std::string(kMaxTunnelFirstLineBytes + 1, 'a'), kHttpRequest},
      {"GET /" + std::string(kMaxTunnelFirstLineBytes, 'a'), kHttpRequest},
      {"GET /" + std::string(kMaxTunnelFirstLineBytes, 'a') + "\r\n", kHttpRequest},
  };
  for (const auto& [text, expected] : cases) {
    EXPECT_EQ(ClassifyTunnelStart(text), expected) << text.substr(0, 40);
    // More bytes never change a decision.
    if (expected != kNeedMore) {
      EXPECT_EQ(ClassifyTunnelStart(text + "\r\nxyz"), expected) << text.substr(0, 40);
    }
  }
}

TEST(TunnelHttpStart, ARequestInATunnelIsReadAsAPlainRequestForTheTunnelsHost) {
  auto target = ParseConnectTarget("api.example:8080");
  ASSERT_TRUE(target);
  auto request = ParseTunnelledRequestHead(
      "POST /a?b HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 3\r\n\r\n", *target);
  ASSERT_TRUE(request) << request.error().reason;
  EXPECT_FALSE(request->tunnel);
  EXPECT_EQ(request->target, "http://api.example:8080/a?b");
  EXPECT_EQ(request->body_length, 3u);
  std::string origin;
  auto parsed = ParseProxyRequestTarget(*request, &origin);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(*parsed, *target);
  const std::string sent = ForwardedRequestHead(*request, *target, origin);
  EXPECT_EQ(sent.rfind("POST /a?b HTTP/1.1\r\nHost: api.example:8080\r\n", 0), 0u) << sent;
  EXPECT_EQ(sent.find("evil"), std::string::npos) << sent;

  for (const std::string head : {
           "GET http://evil.example/ HTTP/1.1\r\n\r\n",
           "OPTIONS * HTTP/1.1\r\n\r\n",
           "PRI * HTTP/2.0\r\n\r\n",
           "CONNECT /x HTTP/1.1\r\n\r\n",
           "GET\t/ HTTP/1.1\r\n\r\n",
           "GET /a b HTTP/1.1\r\n\r\n",
           "GET / http/1.1\r\n\r\n",
           "GET /\r\n\r\n",
           "GET / HTTP/1.1\r\nX: y\nHost: evil\r\n\r\n",
           "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
       }) {
    auto refused = ParseTunnelledRequestHead(head, *target);
    ASSERT_FALSE(refused) << head;
    EXPECT_EQ(refused.error().reason.rfind("plain HTTP inside a tunnel: ", 0), 0u)
        << refused.error().reason;
  }
}

}  // namespace
}  // namespace proxy_request_test
}  // namespace anvil
