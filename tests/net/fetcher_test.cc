// The fetcher against real HTTPS on loopback (test CA made at test time). The policy decisions
// before the fetcher are covered by url_policy_test / ssrf_vectors_test; here: what libcurl is
// allowed to do once a plan exists.
#include "net/fetcher.h"

#include <stdlib.h>

#include "fetch_fixture.h"
#include "loopback_socket.h"

namespace anvil::testing {
namespace fetcher_test {
namespace {

std::string Header(const FetchResponse& r, const std::string& name) {
  std::string joined;
  for (const auto& h : r.headers) {
    if (h.name == name) joined += (joined.empty() ? "" : ", ") + h.value;
  }
  return joined;
}

using FetcherTest = FetchFixture;

TEST_F(FetcherTest, GetReturnsStatusHeadersAndBody) {
  auto r = Get("/hello");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello from allowed");
  EXPECT_EQ(Header(*r, "content-type"), "text/plain");
  EXPECT_EQ(r->peer, IpAddress::V4(127, 0, 0, 2));
  EXPECT_EQ(forbidden_->Connections(), 0);
}

TEST_F(FetcherTest, HeadHasHeadersButNoBody) {
  auto plan = Plan("/bytes/1000", "HEAD");
  ASSERT_TRUE(plan) << plan.error().ToString();
  auto r = Fetcher({}, ca_pem_).Fetch(*plan, {}, "", *policy_);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "");
  EXPECT_EQ(Header(*r, "content-length"), "1000");
  EXPECT_EQ(allowed_->RequestLines().back(), "HEAD /bytes/1000 HTTP/1.1");
}

TEST_F(FetcherTest, PostSendsBodyAndHeaders) {
  auto plan = Plan("/echo", "POST", "api.anvil.test", /*post=*/true);
  ASSERT_TRUE(plan) << plan.error().ToString();
  auto r = Fetcher({}, ca_pem_).Fetch(*plan, {{"Content-Type", "text/plain"}}, "ping", *policy_);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->body, "ping");
  EXPECT_EQ(Header(*r, "x-method"), "POST");
}

TEST_F(FetcherTest, GetWithBodyIsInvalid) {
  auto plan = Plan("/echo");
  ASSERT_TRUE(plan);
  auto r = Fetcher({}, ca_pem_).Fetch(*plan, {}, "smuggled", *policy_);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "invalid");
  EXPECT_EQ(allowed_->Connections(), 0);
}

TEST_F(FetcherTest, RequestHeadersAreSentAndRepeatedResponseHeadersJoined) {
  auto plan = Plan("/headers");
  ASSERT_TRUE(plan);
  auto r = Fetcher({}, ca_pem_).Fetch(*plan, {{"X-Test", "1"}, {"X-Empty", ""}}, "", *policy_);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_NE(r->body.find("X-Test: 1\r\n"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("X-Empty:"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("Host: api.anvil.test:"), std::string::npos) << r->body;
  EXPECT_EQ(r->body.find("Expect:"), std::string::npos) << r->body;
  EXPECT_EQ(Header(*r, "x-multi"), "one, two");
  EXPECT_EQ(HeadersToJson(r->headers).find("\"x-multi\":\"one, two\"") != std::string::npos, true);
}

TEST_F(FetcherTest, BinaryBodyIsReturnedByteForByte) {
  auto r = Get("/binary");
  ASSERT_TRUE(r) << r.error().ToString();
  ASSERT_EQ(r->body.size(), 256u);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(static_cast<unsigned char>(r->body[i]), i);
}

TEST_F(FetcherTest, ConnectsOnlyToThePlannedAddressEvenIfThePlanIsForged) {
  // A plan naming an address the policy refuses (as if PlanFetch had a bug): the open-socket
  // check refuses it, and the server there never sees a connection.
  auto plan = Plan("/hello");
  ASSERT_TRUE(plan);
  plan->addresses = {IpAddress::V4(127, 0, 0, 1)};
  auto r = Fetcher({}, ca_pem_).Fetch(*plan, {}, "", *policy_);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "denied") << r.error().ToString();
  EXPECT_EQ(forbidden_->Connections(), 0);
  // Benign neighbour: the real plan works.
  EXPECT_TRUE(Get("/hello"));
}

TEST_F(FetcherTest, ProxyEnvironmentIsIgnored) {
  // A "proxy" on loopback that only counts connections.
  std::uint16_t proxy_port = 0;
  UniqueFd proxy = BindLoopback(SOCK_STREAM, &proxy_port);
  ASSERT_TRUE(proxy);
  const std::string proxy_url = "http://127.0.0.1:" + std::to_string(proxy_port);
  for (const char* name : {"HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"}) {
    setenv(name, proxy_url.c_str(), 1);
  }
  auto r = Get("/hello");
  for (const char* name : {"HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"}) unsetenv(name);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->body, "hello from allowed");
  EXPECT_FALSE(HasPendingConnection(proxy)) << "the proxy saw a connection";
}

}  // namespace
}  // namespace fetcher_test
}  // namespace anvil::testing
