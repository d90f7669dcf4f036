// A plugin error's trace (ipc/plugin_trace.h) is made by the untrusted host: the trusted side
// must cap it, refuse malformed input, and never let its text reach a terminal unsanitized.
#include "ipc/plugin_trace.h"

#include <gtest/gtest.h>

namespace anvil::ipc {
namespace plugin_trace_test {
namespace {

TEST(PluginTraceTest, RoundTripsAndFormatsTheLocationSourceAndStack) {
  PluginTrace t;
  t.file = "main.js";
  t.line = 3;
  t.column = 9;
  t.source = "let x = ;";
  t.stack = {"at run (main.js:3:9)", "at <anonymous> (main.js:10:1)"};
  auto back = DecodePluginTrace(EncodePluginTrace(t));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->file, "main.js");
  EXPECT_EQ(back->line, 3);
  EXPECT_EQ(back->column, 9);
  EXPECT_EQ(TraceLocation(*back), "main.js:3:9");
  EXPECT_EQ(FormatPluginTrace(*back),
            "  at main.js:3:9\n"
            "    3 | let x = ;\n"
            "  stack:\n"
            "    at run (main.js:3:9)\n"
            "    at <anonymous> (main.js:10:1)");
  const auto j = PluginTraceJson(*back);
  EXPECT_EQ(j["file"], "main.js");
  EXPECT_EQ(j["line"], 3);
  EXPECT_EQ(j["column"], 9);
  EXPECT_EQ(j["stack"].size(), 2u);
}

TEST(PluginTraceTest, LuaHasNoColumn) {
  PluginTrace t;
  t.file = "main.lua";
  t.line = 7;
  auto back = DecodePluginTrace(EncodePluginTrace(t));
  ASSERT_TRUE(back);
  EXPECT_EQ(TraceLocation(*back), "main.lua:7");
  EXPECT_FALSE(PluginTraceJson(*back).contains("column"));
}

TEST(PluginTraceTest, SourceLineIsTheNthLineCapped) {
  EXPECT_EQ(SourceLine("a\nb\r\nc", 2), "b");
  EXPECT_EQ(SourceLine("a\nb\nc", 3), "c");
  EXPECT_EQ(SourceLine("a\nb", 3), "");
  EXPECT_EQ(SourceLine("a", 0), "");
  EXPECT_EQ(SourceLine(std::string(10000, 'x'), 1).size(), kMaxTraceSourceBytes);
  // A cut never splits a code point.
  std::string wide;
  for (int i = 0; i < 200; ++i) wide += "\xC3\xA9";  // é
  EXPECT_EQ(SourceLine(wide, 1).size() % 2, 0u);
}

// The attack: a compromised host (or the plugin's own strings: a chunk name, e.stack) writes
// escape sequences, new lines or bidi overrides into the trace to forge Anvil's output.
TEST(PluginTraceTest, HostileTextIsSanitizedInEveryField) {
  PluginTrace t;
  t.file = "main.js\x1b[2J";
  t.line = 1;
  t.source = "x\nanvil: approved \xE2\x80\xAE";
  t.stack = {"at f (\x1b]0;title\x07main.js:1:1)\r\nanvil run: ok"};
  t.note = "note\x1b[31m";
  auto back = DecodePluginTrace(EncodePluginTrace(t));
  ASSERT_TRUE(back);
  const std::string shown = FormatPluginTrace(*back);
  EXPECT_EQ(shown.find('\x1b'), std::string::npos) << shown;
  EXPECT_EQ(shown.find('\r'), std::string::npos) << shown;
  EXPECT_EQ(shown.find("\xE2\x80\xAE"), std::string::npos) << shown;
  // Exactly the lines Anvil makes: location, source, note, "stack:", one frame.
  EXPECT_EQ(std::count(shown.begin(), shown.end(), '\n'), 4) << shown;
  const std::string json = PluginTraceJson(*back).dump();
  EXPECT_EQ(json.find("\\u001b"), std::string::npos) << json;
}

TEST(PluginTraceTest, OversizedOrMalformedTracesAreDroppedOrCapped) {
  EXPECT_FALSE(DecodePluginTrace(""));
  EXPECT_FALSE(DecodePluginTrace("not json"));
  EXPECT_FALSE(DecodePluginTrace("[]"));
  EXPECT_FALSE(DecodePluginTrace(R"({"file": 3})"));
  EXPECT_FALSE(DecodePluginTrace(R"({"file": "a", "line": -1})"));
  EXPECT_FALSE(DecodePluginTrace(R"({"file": "a", "line": 1.5})"));
  EXPECT_FALSE(DecodePluginTrace(R"({"stack": "x"})"));
  EXPECT_FALSE(DecodePluginTrace(R"({"stack": [1]})"));
  EXPECT_FALSE(DecodePluginTrace(std::string(kMaxTraceWireBytes + 1, ' ')));
  EXPECT_FALSE(DecodePluginTrace("{}"));
  // Over the frame cap (sent by a host that ignores it): cut, and marked.
  std::string many = R"({"stack": [)";
  for (int i = 0; i < 40; ++i) many += std::string(i ? "," : "") + "\"f\"";
  many += "]}";
  auto t = DecodePluginTrace(many);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->stack.size(), kMaxTraceFrames);
  EXPECT_TRUE(t->stack_truncated);
  // Long strings are capped on both sides.
  PluginTrace big;
  big.file = std::string(1000, 'f');
  big.line = 1;
  big.source = std::string(1000, 's');
  big.stack.assign(50, std::string(1000, 'x'));
  const std::string wire = EncodePluginTrace(big);
  EXPECT_LE(wire.size(), kMaxTraceWireBytes);
  auto back = DecodePluginTrace(wire);
  ASSERT_TRUE(back);
  EXPECT_LE(back->file.size(), kMaxTraceFileBytes);
  EXPECT_LE(back->source.size(), kMaxTraceSourceBytes);
  EXPECT_LE(back->stack.size(), kMaxTraceFrames);
  for (const auto& f : back->stack) EXPECT_LE(f.size(), kMaxTraceFrameBytes);
}

}  // namespace
}  // namespace plugin_trace_test
}  // namespace anvil::ipc
