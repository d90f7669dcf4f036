// JSON nesting bound (common/json_depth.h): text from another process or a damaged file is held
// as a value only up to kMaxJsonNesting levels, because dump() and recursive walks of a deeper
// value overflow the stack (nlohmann's parser itself takes any depth).
#include "common/json_depth.h"

#include <gtest/gtest.h>

#include <string>

namespace anvil {
namespace json_depth_test {
namespace {

std::string Nested(std::size_t depth, char open = '[', char close = ']') {
  return std::string(depth, open) + std::string(depth, close);
}

TEST(JsonDepth, CountsBracketsOutsideStringsOnly) {
  struct Case {
    std::string text;
    std::size_t max;
    bool deeper;
  };
  const Case cases[] = {
      {"", 0, false},
      {"1", 0, false},
      {"[]", 0, true},
      {"[]", 1, false},
      {"[[]]", 1, true},
      {"[[],[],{}]", 2, false},  // siblings do not add up
      {"{\"a\":{\"b\":[1]}}", 3, false},
      {"{\"a\":{\"b\":[1]}}", 2, true},
      {"[\"[[[[\"]", 1, false},      // brackets in a string
      {"[\"\\\"[[[\"]", 1, false},   // an escaped quote does not end the string
      {"[\"\\\\\",[[]]]", 2, true},  // an escaped backslash does: then [[ ]] counts
      {"]]]][[", 1, true},           // text that is not JSON: safe, whatever it says
      {"\"unterminated [[[[", 0, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(JsonNestsDeeperThan(c.text, c.max), c.deeper) << c.text << " max " << c.max;
  }
}

// The attack: a million nested arrays (or objects) is refused before nlohmann holds it, so
// nothing later dumps it; it used to parse and then crash the process that printed it.
TEST(JsonDepth, AMillionNestedArraysIsRefusedNotParsed) {
  for (const std::string& deep :
       {Nested(1000000), Nested(1000000, '{', '}'), "{\"a\":" + Nested(kMaxJsonNesting) + "}",
        "[" + std::string(kMaxJsonNesting, '{') + "]"}) {
    bool too_deep = false;
    auto j = ParseBoundedJson(deep, &too_deep);
    EXPECT_TRUE(j.is_discarded());
    EXPECT_TRUE(too_deep);
  }
}

// Benign: everything up to the bound parses and dumps as before; text that is not JSON is
// discarded without being called too deep.
TEST(JsonDepth, OrdinaryJsonUpToTheBoundParses) {
  bool too_deep = true;
  auto j = ParseBoundedJson(Nested(kMaxJsonNesting), &too_deep);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_FALSE(too_deep);
  EXPECT_EQ(j.dump(), Nested(kMaxJsonNesting));
  j = ParseBoundedJson(R"({"a":[1,"x]]]",{"b":null}],"c":"\"{"})", &too_deep);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["c"].get<std::string>(), "\"{");
  j = ParseBoundedJson("{oops", &too_deep);
  EXPECT_TRUE(j.is_discarded());
  EXPECT_FALSE(too_deep);
}

}  // namespace
}  // namespace json_depth_test
}  // namespace anvil
