// The plugin's request headers: token names, no CR/LF/NUL/control bytes in values, and the
// names Anvil or the transport owns refused.
#include "netpolicy/request_headers.h"

#include <gtest/gtest.h>

namespace anvil {
namespace request_headers_test {
namespace {

TEST(RequestHeaders, OrdinaryHeadersPass) {
  auto h = ParseRequestHeaders(
      R"({"Accept": "application/json", "Authorization": "Bearer x", "X-Empty": "", "User-Agent": "a\tb"})");
  ASSERT_TRUE(h) << h.error().ToString();
  EXPECT_EQ(h->size(), 4u);
  EXPECT_TRUE(ParseRequestHeaders(""));
  EXPECT_TRUE(ParseRequestHeaders("{}"));
}

TEST(RequestHeaders, InjectionIsInvalid) {
  for (const char* json : {R"({"X": "a\r\nHost: evil"})", R"({"X": "a\nb"})", R"({"X": "a\rb"})",
                           R"({"X": "a\u0000"})", R"({"X": "\u007f"})", R"({"X": " lead"})",
                           R"({"X": "trail "})", R"({"X\r\nY": "1"})", R"({"X Y": "1"})",
                           R"({"X:Y": "1"})", R"({"": "1"})", R"({":authority": "evil"})",
                           R"({"X": 1})", R"({"X": null})", R"(["X"])", "not json", R"("X")"}) {
    auto h = ParseRequestHeaders(json);
    ASSERT_FALSE(h) << json;
    EXPECT_EQ(h.error().code, "invalid") << json;
  }
}

TEST(RequestHeaders, TransportOwnedNamesAreDenied) {
  for (const char* name :
       {"Host", "HOST", "Content-Length", "Transfer-Encoding", "TE", "Trailer", "Expect",
        "Connection", "Keep-Alive", "Upgrade", "HTTP2-Settings", "Accept-Encoding", "Alt-Used",
        "Proxy-Authorization", "proxy-connection", "Proxy-Anything"}) {
    auto h = ParseRequestHeaders(std::string("{\"") + name + "\": \"x\"}");
    ASSERT_FALSE(h) << name;
    EXPECT_EQ(h.error().code, "denied") << name;
  }
  EXPECT_FALSE(IsForbiddenRequestHeader("X-Proxy"));
  EXPECT_FALSE(IsForbiddenRequestHeader("Hostname"));
}

TEST(RequestHeaders, CountAndSizeAreBounded) {
  std::string many = "{";
  for (size_t i = 0; i <= kMaxRequestHeaders; ++i) {
    many += (i ? "," : "") + std::string("\"X-") + std::to_string(i) + "\": \"v\"";
  }
  many += "}";
  EXPECT_FALSE(ParseRequestHeaders(many));
  const std::string big = R"({"X": ")" + std::string(kMaxRequestHeaderBytes, 'v') + "\"}";
  EXPECT_FALSE(ParseRequestHeaders(big));
}

}  // namespace
}  // namespace request_headers_test
}  // namespace anvil
