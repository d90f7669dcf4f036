// toml++ 3.3 as Anvil compiles it (policy/toml_internal.h): the parser's Unicode whitespace table
// has cases its generator marked unreachable that real code points reach. Under the ASan + UBSan
// build an unreachable point reached is a UBSan report, so asking about every code point proves
// the table is compiled without one.
#include "policy/toml_internal.h"

#include <gtest/gtest.h>

#include <string>

namespace anvil::policy_internal {
namespace toml_internal_test {
namespace {

bool IsNonAsciiTomlWhitespace(char32_t c) {
  // TOML 1.0 whitespace is space and tab only; toml++ also skips the Unicode Zs characters,
  // U+180E and U+200B and U+2060 and U+FEFF (its table, written out).
  return c == 0xA0 || c == 0x1680 || c == 0x180E || (c >= 0x2000 && c <= 0x200B) || c == 0x202F ||
         c == 0x205F || c == 0x2060 || c == 0x3000 || c == 0xFEFF;
}

TEST(TomlInternal, UnicodeWhitespaceTableAnswersForEveryCodePointWithoutUndefinedBehaviour) {
  int mismatches = 0;
  for (char32_t c = 0x80; c <= 0x10FFFF; ++c) {
    if (toml::impl::is_non_ascii_horizontal_whitespace(c) != IsNonAsciiTomlWhitespace(c)) {
      if (++mismatches < 10) ADD_FAILURE() << "U+" << std::hex << static_cast<unsigned>(c);
    }
  }
  EXPECT_EQ(mismatches, 0);
  // The code points the generator's switch never expected (each once reached
  // __builtin_unreachable): one from each range, and both ends.
  for (char32_t c : {0xA1, 0xE9, 0x499, 0x2C5E, 0x2FFF, 0x3001, 0x3057, 0xFB26, 0xFEDF, 0xFEFE}) {
    EXPECT_FALSE(toml::impl::is_non_ascii_horizontal_whitespace(c))
        << std::hex << static_cast<unsigned>(c);
  }
}

// Found by tests/fuzz/lockfile_fuzzer in CI: in a multi-line basic string, a backslash and
// blanks followed by a non-ASCII character (no line end: not a valid escape) made toml++ ask the
// table about that character. Refused before the parser, with the same message family as the
// other escape forms; the same backslash and blanks before a line end and ASCII text still parse.
TEST(TomlInternal, BackslashBlanksThenNonAsciiInAMultiLineStringIsRefusedBeforeTheParser) {
  using namespace std::string_literals;
  for (const std::string& text :
       {"v = \"\"\"a\\  \xef\xbb\x9f\n\"\"\"\n"s, "v = \"\"\"a\\\t\xc3\xa9\"\"\"\n"s,
        "\"\"\"v@\\  \xef\xbb\x9f\n\nl\ni   \x00+"s}) {
    auto parsed = ParseToml(text, "t.toml", 1 << 16);
    ASSERT_FALSE(parsed) << text;
    EXPECT_NE(parsed.error().message.find("non-ASCII character"), std::string::npos)
        << parsed.error().ToString();
  }
  auto ok = ParseToml("v = \"\"\"a\\  \n  \xc3\xa9\\  \n  x\"\"\"\n", "t.toml", 1 << 16);
  ASSERT_FALSE(ok) << "a non-ASCII character first after a line-ending backslash stays refused";
  auto fine = ParseToml("v = \"\"\"\xc3\xa9\\  \n  x \xc3\xa9\"\"\"\n", "t.toml", 1 << 16);
  ASSERT_TRUE(fine) << fine.error().ToString();
  EXPECT_EQ((*fine)["v"].value_or(std::string()), "\xc3\xa9x \xc3\xa9");
}

}  // namespace
}  // namespace toml_internal_test
}  // namespace anvil::policy_internal
