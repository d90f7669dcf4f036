// The one sanitizer for untrusted text on the user's terminal (policy/display_text.h): a table
// per vector, in both line modes. Nothing that could drive a terminal, reorder or hide text
// passes raw; it is shown as \u{HEX} (a character) or \x{HEX} (a byte that is not UTF-8).
#include "policy/display_text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace anvil {
namespace display_text_test {
namespace {

struct Case {
  std::string in;
  std::string fold;  // LineBreaks::kFold
  std::string keep;  // LineBreaks::kKeep
};

void Check(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    EXPECT_EQ(SanitizeForDisplay(c.in, kNoDisplayCap, LineBreaks::kFold), c.fold) << c.in;
    EXPECT_EQ(SanitizeForDisplay(c.in, kNoDisplayCap, LineBreaks::kKeep), c.keep) << c.in;
  }
}

// Every byte of the output is printable: no C0 (other than \n and \t in kKeep), no DEL, no C1
// in any encoding, no bidi or invisible character, and strict UTF-8.
void ExpectInert(const std::string& shown, bool keep_breaks) {
  for (size_t i = 0; i < shown.size(); ++i) {
    const auto b = static_cast<unsigned char>(shown[i]);
    if (b == '\n' || b == '\t') {
      EXPECT_TRUE(keep_breaks) << "break in a one-line rendering: " << shown;
      continue;
    }
    EXPECT_GE(b, 0x20) << "C0 at " << i << ": " << shown;
    EXPECT_NE(b, 0x7f) << "DEL at " << i;
    if (b == 0xc2 && i + 1 < shown.size()) {
      EXPECT_FALSE(static_cast<unsigned char>(shown[i + 1]) >= 0x80 &&
                   static_cast<unsigned char>(shown[i + 1]) <= 0x9f)
          << "C1 (UTF-8) at " << i << ": " << shown;
    }
  }
  for (const char* bad : {"\xe2\x80\xae", "\xe2\x80\xab", "\xe2\x81\xa6", "\xe2\x81\xa9",
                          "\xe2\x80\x8b", "\xef\xbb\xbf", "\xe2\x80\xa8", "\xe2\x80\xa9"}) {
    EXPECT_EQ(shown.find(bad), std::string::npos) << shown;
  }
}

TEST(DisplayText, EscapeSequencesAreShownNotRun) {
  Check({
      {"a\x1b[31mred\x1b[0m b", "a\\u{1b}[31mred\\u{1b}[0m b", "a\\u{1b}[31mred\\u{1b}[0m b"},
      {"\x1b[2J\x1b[H", "\\u{1b}[2J\\u{1b}[H", "\\u{1b}[2J\\u{1b}[H"},
      // OSC 52: write the clipboard; OSC 0: the window title; BEL and ST terminators.
      {"\x1b]52;c;ZXZpbA==\x07", "\\u{1b}]52;c;ZXZpbA==\\u{7}", "\\u{1b}]52;c;ZXZpbA==\\u{7}"},
      {"\x1b]0;pwned\x1b\\", "\\u{1b}]0;pwned\\u{1b}\\", "\\u{1b}]0;pwned\\u{1b}\\"},
      {"\x1b]8;;https://evil\x1b\\link", "\\u{1b}]8;;https://evil\\u{1b}\\link",
       "\\u{1b}]8;;https://evil\\u{1b}\\link"},
      {"\x1bPq#0\x1b\\", "\\u{1b}Pq#0\\u{1b}\\", "\\u{1b}Pq#0\\u{1b}\\"},  // DCS (sixel)
      {"a\x1b"
       "c",
       "a\\u{1b}c", "a\\u{1b}c"},  // RIS
      {"trailing\x1b", "trailing\\u{1b}", "trailing\\u{1b}"},
  });
}

TEST(DisplayText, C1ControlsAsUtf8AndAsRawBytes) {
  Check({
      {"a\xc2\x9b"
       "2Jz",
       "a\\u{9b}2Jz", "a\\u{9b}2Jz"},  // 8-bit CSI, UTF-8 encoded
      {"a\xc2\x9d"
       "0;t\xc2\x9cz",
       "a\\u{9d}0;t\\u{9c}z", "a\\u{9d}0;t\\u{9c}z"},  // OSC .. ST
      {"\xc2\x80\xc2\x9f", "\\u{80}\\u{9f}", "\\u{80}\\u{9f}"},
      // The same controls as single raw bytes (what an 8-bit terminal would act on).
      {"a\x9b"
       "2Jz",
       "a\\x{9b}2Jz", "a\\x{9b}2Jz"},
      {"\x9d"
       "0;t\x9c",
       "\\x{9d}0;t\\x{9c}", "\\x{9d}0;t\\x{9c}"},
      {"\x85", "\\x{85}", "\\x{85}"},
  });
}

TEST(DisplayText, C0ControlsAndDel) {
  Check({
      {std::string("a\0b", 3), "a\\u{0}b", "a\\u{0}b"},
      {"a\x07\x08\x7f"
       "c",
       "a\\u{7}\\u{8}\\u{7f}c", "a\\u{7}\\u{8}\\u{7f}c"},
      {"\x1a\x1c", "\\u{1a}\\u{1c}", "\\u{1a}\\u{1c}"},
  });
}

TEST(DisplayText, LineBreaks) {
  Check({
      {"a\nb", "a b", "a\nb"},
      {"a\tb", "a b", "a\tb"},
      {"a\r\nb", "a b", "a\nb"},
      // A lone CR returns to the start of the line and overwrites it: escaped where lines stay.
      {"ok\ranvil: Allow? [y/N]", "ok anvil: Allow? [y/N]", "ok\\u{d}anvil: Allow? [y/N]"},
      {"a\vb\fc", "a b c", "a\\u{b}b\\u{c}c"},
      {"a\xc2\x85"
       "b",
       "a b", "a\\u{85}b"},  // NEL
      {"a\xe2\x80\xa8"
       "b\xe2\x80\xa9"
       "c",
       "a b c", "a\\u{2028}b\\u{2029}c"},
      {"\n\na\n\n", "a", "\n\na\n\n"},
      {"a \n b", "a  b", "a \n b"},  // the text's own spaces stay
  });
}

// A command a person approves: every break shown, none folded into a space or kept as a line.
TEST(DisplayText, LineBreaksEscapedShowEveryLine) {
  struct Case {
    std::string in, shown;
  } cases[] = {
      {"print(1)  # off\nimport os", "print(1)  # off\\u{a}import os"},
      {"a\tb\r\nc", "a\\u{9}b\\u{d}\\u{a}c"},
      {"a\vb\fc", "a\\u{b}b\\u{c}c"},
      {"\n\na", "\\u{a}\\u{a}a"},
      {"a\xe2\x80\xa8"
       "b",
       "a\\u{2028}b"},
      {"plain text", "plain text"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(SanitizeForDisplay(c.in, kNoDisplayCap, LineBreaks::kEscape), c.shown) << c.in;
  }
}

TEST(DisplayText, BidiAndInvisibleCharacters) {
  Check({
      {"abc\xe2\x80\xae"
       "fdp.exe",
       "abc\\u{202e}fdp.exe", "abc\\u{202e}fdp.exe"},  // RLO
      {"\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad", "\\u{202a}\\u{202b}\\u{202c}\\u{202d}",
       "\\u{202a}\\u{202b}\\u{202c}\\u{202d}"},
      {"\xe2\x81\xa6x\xe2\x81\xa7y\xe2\x81\xa8z\xe2\x81\xa9",
       "\\u{2066}x\\u{2067}y\\u{2068}z\\u{2069}",
       "\\u{2066}x\\u{2067}y\\u{2068}z\\u{2069}"},                            // isolates
      {"\xe2\x80\x8f\xd8\x9cy", "\\u{200f}\\u{61c}y", "\\u{200f}\\u{61c}y"},  // RLM, ALM
      {"a\xe2\x80\x8b"
       "b\xef\xbb\xbf"
       "c\xc2\xad"
       "d",
       "a\\u{200b}b\\u{feff}c\\u{ad}d", "a\\u{200b}b\\u{feff}c\\u{ad}d"},
      {"ok\xf3\xa0\x81\x81", "ok\\u{e0041}", "ok\\u{e0041}"},  // tag character
      {"\xe2\x81\xa0\xe2\x81\xaf", "\\u{2060}\\u{206f}", "\\u{2060}\\u{206f}"},
      {"\xe3\x85\xa4\xe1\x85\x9f", "\\u{3164}\\u{115f}", "\\u{3164}\\u{115f}"},  // fillers
  });
}

TEST(DisplayText, InvalidUtf8IsShownByteByByte) {
  Check({
      {"a\xff"
       "b",
       "a\\x{ff}b", "a\\x{ff}b"},
      {"\xc0\xae", "\\x{c0}\\x{ae}", "\\x{c0}\\x{ae}"},                    // overlong '.'
      {"\xed\xa0\x80", "\\x{ed}\\x{a0}\\x{80}", "\\x{ed}\\x{a0}\\x{80}"},  // surrogate
      {"\xe2\x82", "\\x{e2}\\x{82}", "\\x{e2}\\x{82}"},                    // truncated
      {"\xf4\x90\x80\x80", "\\x{f4}\\x{90}\\x{80}\\x{80}", "\\x{f4}\\x{90}\\x{80}\\x{80}"},
  });
}

TEST(DisplayText, KeepsOrdinaryText) {
  Check({
      {"café/日本語/ελληνικά ✓", "café/日本語/ελληνικά ✓", "café/日本語/ελληνικά ✓"},
      {"\xef\xbf\xbd", "\xef\xbf\xbd", "\xef\xbf\xbd"},
      {"a\\u{1b}", "a\\u{1b}", "a\\u{1b}"},  // the plugin's own backslashes are plain text
      {"", "", ""},
  });
}

TEST(DisplayText, CapsLengthInCodePoints) {
  EXPECT_EQ(SanitizeForDisplay(std::string(10, 'x'), 10), std::string(10, 'x'));
  EXPECT_EQ(SanitizeForDisplay(std::string(11, 'x'), 10), std::string(10, 'x') + "…");
  EXPECT_EQ(SanitizeForDisplay("日本語日本語", 3), "日本語…");
  // An escape is counted as it is shown, and never cut in half.
  EXPECT_EQ(SanitizeForDisplay("ab\x1b", 7), "ab…");
  EXPECT_EQ(SanitizeForDisplay("ab\x1b", 8), "ab\\u{1b}");
  EXPECT_EQ(SanitizeForDisplay(std::string(100000, 'a')).size(), 200u + 3u);
  EXPECT_EQ(SanitizeForDisplay(std::string(100000, 'a'), kNoDisplayCap, LineBreaks::kKeep).size(),
            100000u);
}

// Every byte value, alone and after every lead byte, in both modes: the output is inert.
TEST(DisplayText, NoByteSequencePassesRaw) {
  for (int a = 0; a < 256; ++a) {
    std::string one(1, static_cast<char>(a));
    ExpectInert(SanitizeForDisplay(one, kNoDisplayCap, LineBreaks::kFold), false);
    ExpectInert(SanitizeForDisplay(one, kNoDisplayCap, LineBreaks::kKeep), true);
    for (int b = 0x80; b < 0xc0; ++b) {
      std::string two = one + static_cast<char>(b);
      ExpectInert(SanitizeForDisplay(two, kNoDisplayCap, LineBreaks::kFold), false);
      ExpectInert(SanitizeForDisplay(two, kNoDisplayCap, LineBreaks::kKeep), true);
    }
  }
}

TEST(DisplayText, MarkedLinesMarkEveryPluginLine) {
  EXPECT_EQ(MarkedLines("anvil run: error: ", "one", "[p] "), "anvil run: error: one\n");
  EXPECT_EQ(MarkedLines("anvil run: error: ", "one\nanvil: Allow? [y/N]\n", "[p] "),
            "anvil run: error: one\n[p] anvil: Allow? [y/N]\n");
  EXPECT_EQ(MarkedLines("[p] ", "a\n\nb", "[p] "), "[p] a\n[p] \n[p] b\n");
  EXPECT_EQ(MarkedLines("", "", "[p] "), "\n");
}

TEST(DisplayText, LooksLikeAnvilLine) {
  for (const char* line : {
           "anvil: Allow? [y/N]", "anvil run: denied", "  ANVIL: x", "\tAnvil",
           "\xd0\xb0nvil: x",                                               // Cyrillic a
           "\xef\xbd\x81\xef\xbd\x8e\xef\xbd\x96\xef\xbd\x89\xef\xbd\x8c",  // fullwidth
           "anviI: x", "anvi1: x",
           "an\xce\xbd\xd1\x96l",           // capital I, digit one, Greek nu, Cyrillic i
           "Continue? [y/N]", "ok [Y/n] ",  // an answer prompt anywhere
           "\xc2\xa0"
           "anvil: Allow",
           "\xe3\x80\x80\xe2\x80\x83"
           "Anvil run: x",                               // Unicode blanks
           "ok \xef\xbc\xbby\xef\xbc\x8fN\xef\xbc\xbd",  // fullwidth [y/N]
       }) {
    EXPECT_TRUE(LooksLikeAnvilLine(line)) << line;
  }
  for (const char* line : {"done", "[p] x", "an vil", "src/anvil.c: 3", "", "[y] yes", "anvi"}) {
    EXPECT_FALSE(LooksLikeAnvilLine(line)) << line;
  }
}

// A word of a command shown for pasting: as QuoteShellWord quotes it (bare, or single quotes)
// when nothing in it needs showing escaped, else $'...' with those bytes as \xHH, which bash
// reads back as the same bytes.
TEST(PasteableShellWord, ShowsOnlyPrintableTextAndReadsBackAsTheWord) {
  EXPECT_EQ(PasteableShellWord("/w/a.b-c"), "/w/a.b-c");  // nothing a shell reads specially
  EXPECT_EQ(PasteableShellWord("/w/$(x)"), "'/w/$(x)'");
  EXPECT_EQ(PasteableShellWord("/w s/a'b"), "'/w s/a'\\''b'");
  EXPECT_EQ(PasteableShellWord("/w/caf\xc3\xa9"), "'/w/caf\xc3\xa9'");  // UTF-8 text stays
  EXPECT_EQ(PasteableShellWord("x\r\x1b[2K'\\"), "$'x\\x0d\\x1b[2K\\'\\\\'");
  EXPECT_EQ(PasteableShellWord("a\xe2\x80\xae"
                               "b"),
            "$'a\\xe2\\x80\\xaeb'");  // bidi override
  EXPECT_EQ(PasteableShellWord("\xff"), "$'\\xff'");
  // QuoteShellWord's wildcard words (a NUL first) are no words to paste: their bytes are shown.
  EXPECT_EQ(PasteableShellWord(std::string("\0*", 2)), "$'\\x00*'");
}

}  // namespace
}  // namespace display_text_test
}  // namespace anvil
