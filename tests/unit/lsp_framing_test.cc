// The LSP framing reader of `anvil serve`: every malformed input is an error value (never an
// exception, never unbounded buffering), and the reader resynchronises at the next header.
#include "session/lsp_framing.h"

#include <gtest/gtest.h>

namespace anvil::session {
namespace lsp_framing_test {
namespace {

std::string Frame(const std::string& body) {
  return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::vector<LspEvent> Feed(LspReader& r, const std::string& bytes, size_t chunk = 1 << 20) {
  std::vector<LspEvent> out;
  for (size_t i = 0; i < bytes.size(); i += chunk) {
    r.Append(bytes.data() + i, std::min(chunk, bytes.size() - i));
    while (auto e = r.Next()) out.push_back(std::move(*e));
  }
  return out;
}

TEST(LspFraming, MessagesArriveWholeWhateverTheChunking) {
  std::string two = Frame(R"({"a":1})") + Frame(R"({"b":"é"})");
  for (size_t chunk : {1, 2, 7, 1000}) {
    LspReader r;
    auto events = Feed(r, two, chunk);
    ASSERT_EQ(events.size(), 2u) << chunk;
    EXPECT_EQ((*events[0].message)["a"], 1);
    EXPECT_EQ((*events[1].message)["b"], "é");
    EXPECT_FALSE(r.AtEof());
  }
}

TEST(LspFraming, HeadersAreCaseInsensitiveAndContentTypeIsChecked) {
  LspReader r;
  auto e = Feed(r,
                "content-length: 2\r\nContent-Type: application/vscode-jsonrpc; "
                "charset=utf-8\r\n\r\n{}");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_TRUE(e[0].message);
  e = Feed(r, "Content-Length: 2\r\nContent-Type: text/plain; charset=utf-16\r\n\r\n{}");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].error_code, -32600);
}

TEST(LspFraming, BadInputIsAnErrorAndTheNextMessageStillParses) {
  const std::vector<std::string> bad = {
      "Content-Length: x\r\n\r\n",
      "Content-Length: 1e3\r\n\r\n",
      "Content-Length: \r\n\r\n",
      "Content-Length: 0\r\n\r\n",
      "Length: 2\r\n\r\n{}",
      "no colon\r\n\r\n",
      "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
      "Content-Length: 9999999999999\r\n\r\n",
      std::string(9000, 'x') + "\r\n\r\n",
      Frame("{oops"),
      Frame("\xff"),
  };
  for (const auto& input : bad) {
    SCOPED_TRACE(input.substr(0, 60));
    LspReader r;
    auto events = Feed(r, input + Frame(R"({"ok":true})"));
    ASSERT_GE(events.size(), 1u);
    EXPECT_NE(events[0].error_code, 0);
    EXPECT_FALSE(events[0].message);
    ASSERT_TRUE(events.back().message) << "did not resynchronise";
    EXPECT_EQ((*events.back().message)["ok"], true);
  }
}

// A message nested a million deep is a parse error (-32700), not a value: echoing its id or
// params used to overflow the stack of `anvil serve`. Its neighbour at the bound parses.
TEST(LspFraming, DeeplyNestedMessageIsAParseErrorAndTheNextStillParses) {
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  LspReader r(8 << 20);
  auto events = Feed(r, Frame(R"({"jsonrpc":"2.0","id":)" + deep + "}") +
                            Frame("[" + std::string(511, '[') + std::string(512, ']')));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].error_code, -32700);
  EXPECT_FALSE(events[0].message);
  EXPECT_NE(events[0].error_text.find("deeper than 512"), std::string::npos)
      << events[0].error_text;
  ASSERT_TRUE(events[1].message);
  EXPECT_TRUE(events[1].message->is_array());
}

TEST(LspFraming, OversizedBodyIsSkippedNotBuffered) {
  LspReader r(1024);
  std::string big = Frame(std::string(5000, ' ') + "{}");
  auto events = Feed(r, big + Frame("[1]"), 100);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].error_code, -32600);
  EXPECT_NE(events[0].error_text.find("over the limit"), std::string::npos);
  EXPECT_TRUE(events[1].message);
}

TEST(LspFraming, EndOfInputInsideAMessageIsReported) {
  LspReader r;
  Feed(r, "Content-Length: 10\r\n\r\n{\"a\"");
  auto eof = r.AtEof();
  ASSERT_TRUE(eof);
  EXPECT_NE(eof->error_text.find("4 of 10"), std::string::npos) << eof->error_text;
  LspReader header_only;
  Feed(header_only, "Content-Len");
  EXPECT_TRUE(header_only.AtEof());
}

TEST(LspFraming, EncodedMessagesRoundTripAndInvalidUtf8IsReplaced) {
  nlohmann::json j = {{"text", std::string("a\xff")}};
  std::string framed = EncodeLspMessage(j);
  LspReader r;
  auto events = Feed(r, framed);
  ASSERT_EQ(events.size(), 1u);
  ASSERT_TRUE(events[0].message);
  EXPECT_EQ((*events[0].message)["text"], "a\xef\xbf\xbd");
}

}  // namespace
}  // namespace lsp_framing_test
}  // namespace anvil::session
