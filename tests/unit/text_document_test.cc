// Versioned buffers of `anvil serve` (invariant 8): positions in UTF-8 and UTF-16, the editor's
// changes, and plugin edits — accepted only against the current, unused version.
#include "session/lsp/text_document.h"

#include <gtest/gtest.h>

#include "session/lsp/document_uri.h"

namespace anvil::session {
namespace text_document_test {
namespace {

using nlohmann::json;

TEST(LineIndex, PositionsInBothEncodingsAndAllLineEnds) {
  std::string text = "a\r\né😀x\rlast";
  LineIndex index(text);
  EXPECT_EQ(*index.Offset({1, 0}, PositionEncoding::kUtf8, true), 3u);
  EXPECT_EQ(*index.Offset({1, 6}, PositionEncoding::kUtf8, true), 9u);   // before x
  EXPECT_EQ(*index.Offset({1, 3}, PositionEncoding::kUtf16, true), 9u);  // é=1, 😀=2
  EXPECT_EQ(*index.Offset({2, 0}, PositionEncoding::kUtf8, true), 11u);
  EXPECT_FALSE(index.Offset({1, 2}, PositionEncoding::kUtf16, true));  // inside the pair
  EXPECT_FALSE(index.Offset({1, 1}, PositionEncoding::kUtf8, true));   // inside é
  EXPECT_FALSE(index.Offset({0, 2}, PositionEncoding::kUtf8, true));   // past the line
  EXPECT_FALSE(index.Offset({9, 0}, PositionEncoding::kUtf8, true));
  EXPECT_EQ(*index.Offset({0, 99}, PositionEncoding::kUtf8, false), 1u);  // LSP: clamp
  EXPECT_EQ(*index.Offset({9, 0}, PositionEncoding::kUtf8, false), text.size());
  Position p = index.PositionAt(9, PositionEncoding::kUtf16);
  EXPECT_EQ(p.line, 1);
  EXPECT_EQ(p.character, 3);
}

TEST(BufferStore, StaleVersionsAreRefusedNeverMerged) {
  BufferStore store;
  ASSERT_TRUE(store.Open("file:///w/a", "c", 1, "one\ntwo\n"));
  auto stale = store.PrepareEdit("file:///w/a", 0, R"([{"text":"x"}])", PositionEncoding::kUtf16);
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, "stale");
  auto edit = store.PrepareEdit("file:///w/a", 1, R"([{"text":"x"}])", PositionEncoding::kUtf16);
  ASSERT_TRUE(edit) << edit.error().ToString();
  // In flight: a second edit against the same version is stale.
  EXPECT_EQ(store.PrepareEdit("file:///w/a", 1, R"([{"text":"y"}])", PositionEncoding::kUtf16)
                .error()
                .code,
            "stale");
  store.FinishEdit(*edit, true);
  EXPECT_EQ(store.Find("file:///w/a")->text, "x");
  // Applied: the version is used up until the editor reports a new one.
  EXPECT_FALSE(store.PrepareEdit("file:///w/a", 1, R"([{"text":"y"}])", PositionEncoding::kUtf16));
  ASSERT_TRUE(
      store.Change("file:///w/a", 2, json::array({{{"text", "x2"}}}), PositionEncoding::kUtf16));
  EXPECT_TRUE(store.PrepareEdit("file:///w/a", 2, R"([{"text":"y"}])", PositionEncoding::kUtf16));
}

TEST(BufferStore, EditorChangesAreVersionedAndIncremental) {
  BufferStore store;
  ASSERT_TRUE(store.Open("u", "", 5, "hello\nworld\n"));
  json change = {
      {"range",
       {{"start", {{"line", 1}, {"character", 0}}}, {"end", {{"line", 1}, {"character", 5}}}}},
      {"text", "there"}};
  ASSERT_TRUE(store.Change("u", 6, json::array({change}), PositionEncoding::kUtf16));
  EXPECT_EQ(store.Find("u")->text, "hello\nthere\n");
  // A version that does not increase drops the copy rather than keep one that may be wrong.
  EXPECT_FALSE(store.Change("u", 6, json::array({change}), PositionEncoding::kUtf16));
  EXPECT_EQ(store.Find("u"), nullptr);
  EXPECT_FALSE(store.Open("big", "", 1, std::string(kMaxBufferBytes + 1, 'x')));
}

TEST(BufferStore, PluginEditsAreValidated) {
  BufferStore store;
  ASSERT_TRUE(store.Open("u", "", 1, "abc\ndef\n"));
  auto range = [](int l1, int c1, int l2, int c2, const char* text) {
    return json{{"range",
                 {{"start", {{"line", l1}, {"character", c1}}},
                  {"end", {{"line", l2}, {"character", c2}}}}},
                {"text", text}};
  };
  const std::vector<std::pair<json, const char*>> bad = {
      {json::array(), "empty"},
      {json::object(), "not a list"},
      {json::array({{{"text", 1}}}), "text not a string"},
      {json::array({{{"text", "x"}, {"newText", "y"}}}), "unknown field"},
      {json::array({{{"text", "x"}}, {{"text", "y"}}}), "two whole replacements"},
      {json::array({range(0, 2, 0, 1, "x")}), "end before start"},
      {json::array({range(0, 0, 0, 9, "x")}), "past the line"},
      {json::array({range(0, 0, 0, 2, "x"), range(0, 1, 0, 3, "y")}), "overlap"},
      {json::array({range(-1, 0, 0, 0, "x")}), "negative"},
  };
  for (const auto& [edits, why] : bad) {
    auto r = store.PrepareEdit("u", 1, edits.dump(), PositionEncoding::kUtf16);
    ASSERT_FALSE(r) << why;
    EXPECT_EQ(r.error().code, "invalid") << why;
  }
  auto ok = store.PrepareEdit("u", 1,
                              json::array({range(1, 0, 1, 1, "D"), range(0, 0, 0, 1, "A")}).dump(),
                              PositionEncoding::kUtf16);
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_EQ(ok->new_text, "Abc\nDef\n");
  EXPECT_EQ(ok->lsp_edits.size(), 2u);
  EXPECT_EQ(ok->lsp_edits[0]["range"]["start"]["line"], 0);  // sorted
}

TEST(DocumentUri, OnlyFilesInsideTheWorkspace) {
  EXPECT_EQ(*WorkspacePathOfUri("file:///ws/src/a%20b.c", "/ws"), "src/a b.c");
  EXPECT_EQ(*WorkspacePathOfUri("file://localhost/ws/a", "/ws"), "a");
  for (const char* uri :
       {"file:///wsx/a", "file:///etc/passwd", "untitled:1", "file:///ws/../etc/passwd",
        "file:///ws/src/%2e%2e/%2e%2e/etc", "file:///ws/a%00b", "file:///ws/a?x", "http://ws/a",
        "file:///ws/", "file:///ws/a%zz"}) {
    EXPECT_FALSE(WorkspacePathOfUri(uri, "/ws")) << uri;
  }
}

}  // namespace
}  // namespace text_document_test
}  // namespace anvil::session
