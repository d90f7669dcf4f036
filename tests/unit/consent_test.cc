// T8, pure layer: which manifest changes need new consent (adding anything does, removing does
// not), and the consent text: plain words, one item per line, and no plugin-supplied string can
// forge, hide or reorder a line of the prompt.
#include "policy/consent.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace anvil {
namespace {

Grant Base() {
  Grant g;
  g.fs_read = {"src/**", "docs/**"};
  g.fs_write = {"notes/**"};
  g.net_hosts = {"api.example.com"};
  g.net_post = false;
  g.exec = {"rg"};
  return g;
}

TEST(GrantConsent, FirstLoadAlwaysAsks) {
  EXPECT_TRUE(NeedsConsent(std::nullopt, Base()));
  EXPECT_TRUE(NeedsConsent(std::nullopt, Grant{}));  // even an empty request
}

TEST(GrantConsent, UnchangedRequestNeedsNone) {
  EXPECT_FALSE(NeedsConsent(Base(), Base()));
  Grant reordered = Base();
  std::reverse(reordered.fs_read.begin(), reordered.fs_read.end());
  EXPECT_FALSE(NeedsConsent(Base(), reordered));
}

TEST(GrantConsent, AddingAnyPermissionAsks) {
  struct Case {
    const char* name;
    void (*change)(Grant&);
  };
  const Case cases[] = {
      {"read glob", [](Grant& g) { g.fs_read.push_back("**"); }},
      {"write glob", [](Grant& g) { g.fs_write.push_back(".git/hooks/pre-commit"); }},
      {"read moved to write", [](Grant& g) { g.fs_write.push_back("src/**"); }},
      {"host", [](Grant& g) { g.net_hosts.push_back("evil.example"); }},
      {"post", [](Grant& g) { g.net_post = true; }},
      {"exec", [](Grant& g) { g.exec.push_back("fd"); }},
      // A rewording is treated as new: "**" would be a superset, "src/*" a different set; the
      // exact-string rule never has to decide which.
      {"reworded glob", [](Grant& g) { g.fs_read[0] = "src/*"; }},
      {"swap one host for another", [](Grant& g) { g.net_hosts = {"api2.example.com"}; }},
  };
  for (const Case& c : cases) {
    Grant requested = Base();
    c.change(requested);
    EXPECT_TRUE(NeedsConsent(Base(), requested)) << c.name;
  }
}

TEST(GrantConsent, RemovingPermissionsNeedsNone) {
  struct Case {
    const char* name;
    void (*change)(Grant&);
  };
  const Case cases[] = {
      {"read glob", [](Grant& g) { g.fs_read.pop_back(); }},
      {"all writes", [](Grant& g) { g.fs_write.clear(); }},
      {"host", [](Grant& g) { g.net_hosts.clear(); }},
      {"exec", [](Grant& g) { g.exec.clear(); }},
      {"everything", [](Grant& g) { g = Grant{}; }},
  };
  for (const Case& c : cases) {
    Grant requested = Base();
    c.change(requested);
    EXPECT_FALSE(NeedsConsent(Base(), requested)) << c.name;
  }
  Grant with_post = Base();
  with_post.net_post = true;
  EXPECT_FALSE(NeedsConsent(with_post, Base()));  // POST turned off
}

TEST(GrantConsentText, PlainWordsOneItemPerLine) {
  Grant g = Base();
  g.fs_read.push_back("**");
  EXPECT_EQ(DescribeGrant(g),
            "  Read files matching:\n"
            "    - \"src/**\"\n"
            "    - \"docs/**\"\n"
            "    - \"**\" (every file in the workspace)\n"
            "  Write files matching:\n"
            "    - \"notes/**\"\n"
            "  Connect over HTTPS (port 443 only) to:\n"
            "    - api.example.com\n"
            "  Send POST requests (upload data): no\n"
            "  Run programs:\n"
            "    - rg\n");
}

TEST(GrantConsentText, EmptyGrantSaysNothing) {
  EXPECT_EQ(DescribeGrant(Grant{}),
            "  Read files matching: nothing\n"
            "  Write files matching: nothing\n"
            "  Connect over HTTPS (port 443 only) to: nothing\n"
            "  Send POST requests (upload data): no\n"
            "  Run programs: nothing\n");
}

TEST(GrantConsentText, PostAndProtectedWritesStandOut) {
  Grant g;
  g.net_post = true;
  g.fs_write = {".git/hooks/pre-commit", "**", "notes/*.md"};
  const std::string text = DescribeGrant(g);
  EXPECT_NE(text.find("Send POST requests (upload data): YES\n"), std::string::npos);
  EXPECT_NE(text.find("- \".git/hooks/pre-commit\" (PROTECTED: git or Anvil control file"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("- \"**\" (every file in the workspace, except .git"), std::string::npos);
  EXPECT_NE(text.find("- \"notes/*.md\"\n"), std::string::npos);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// The attack: a manifest string that, printed raw, would add a fake line, clear the screen or
// visually reorder text. The Grant here bypasses manifest validation on purpose (a damaged grant
// store, a future parser bug): the prompt must be safe on its own.
TEST(GrantConsentText, HostileStringsCannotForgeOrHideLines) {
  Grant g;
  g.fs_read = {"notes/**\n  Send POST requests (upload data): no\n  Run programs: nothing"};
  g.fs_write = {"\x1b[2J\x1b[Hsrc/**", "a\rb", "x\x1b]0;title\x07y", "abc\xe2\x80\xaetxt.exe"};
  g.net_hosts = {"api.example.com\x1b[1A\x1b[2K",
                 "\xc2\x9b"
                 "31mred"};
  g.exec = {"rg\x1b[8m hidden", std::string(5000, 'x')};
  const std::string text = DescribeGrant(g);
  // Exactly one line per item plus the five headings/POST line: nothing was injected.
  EXPECT_EQ(Lines(text).size(), 5u + 1u + 4u + 2u + 2u) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(text.find('\x07'), std::string::npos);
  EXPECT_EQ(text.find("\xe2\x80\xae"), std::string::npos);  // RLO
  EXPECT_EQ(text.find("\xc2\x9b"), std::string::npos);      // C1 CSI
  EXPECT_EQ(text.find("[2J"), std::string::npos);           // no escape remnants
  for (const std::string& line : Lines(text)) {
    // Every line is either one of our headings or starts with our item prefix.
    const bool heading = line.rfind("  ", 0) == 0 && line[2] != ' ';
    const bool item = line.rfind("    - ", 0) == 0;
    EXPECT_TRUE(heading || item) << line;
    EXPECT_LT(line.size(), 400u) << "item not length-capped";
  }
  // The line break became a space; the attacker's own spaces stay, all on one item line.
  EXPECT_NE(text.find("    - \"notes/**   Send POST requests (upload data): no   Run programs: "
                      "nothing\"\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    - \"src/**\"\n"), std::string::npos);
  EXPECT_NE(text.find("    - \"abctxt.exe\"\n"), std::string::npos);
  EXPECT_NE(text.find("    - rg hidden\n"), std::string::npos);
}

TEST(GrantPromptSanitize, RemovesEscapeSequencesWhole) {
  EXPECT_EQ(SanitizeForDisplay("a\x1b[31mred\x1b[0m b"), "ared b");
  EXPECT_EQ(SanitizeForDisplay("\x1b[?1049h\x1b[2J\x1b[1;1Hx"), "x");
  EXPECT_EQ(SanitizeForDisplay("a\x1b]0;fake title\x07z"), "az");  // OSC, BEL
  EXPECT_EQ(SanitizeForDisplay("a\x1b]8;;https://evil\x1b\\link\x1b]8;;\x1b\\z"), "alinkz");
  EXPECT_EQ(SanitizeForDisplay("a\x1bPq#0;2;0;0;0\x1b\\z"), "az");  // DCS (sixel)
  EXPECT_EQ(SanitizeForDisplay("a\x1b"
                               "cz"),
            "az");                                  // RIS reset
  EXPECT_EQ(SanitizeForDisplay("a\x1b(Bz"), "az");  // charset
  EXPECT_EQ(SanitizeForDisplay("a\xc2\x9b"
                               "2Jz"),
            "az");  // C1 CSI
  EXPECT_EQ(SanitizeForDisplay("a\xc2\x9d"
                               "0;t\xc2\x9cz"),
            "az");  // C1 OSC..ST
  EXPECT_EQ(SanitizeForDisplay("unterminated\x1b]0;forever"), "unterminated");
  EXPECT_EQ(SanitizeForDisplay("trailing\x1b"), "trailing");
}

TEST(GrantPromptSanitize, LineBreaksBecomeOneSpace) {
  EXPECT_EQ(SanitizeForDisplay("a\nb"), "a b");
  EXPECT_EQ(SanitizeForDisplay("a\r\n\tb"), "a b");
  EXPECT_EQ(SanitizeForDisplay("\n\na\n\n"), "a");
  EXPECT_EQ(SanitizeForDisplay("a\xe2\x80\xa8"
                               "b\xe2\x80\xa9"
                               "c\xc2\x85"
                               "d"),
            "a b c d");
  EXPECT_EQ(SanitizeForDisplay("a\vb\fc"), "a b c");
}

TEST(GrantPromptSanitize, RemovesControlsAndInvisibleCharacters) {
  EXPECT_EQ(SanitizeForDisplay(std::string("a\0b\x07\x08\x7f"
                                           "c",
                                           7)),
            "abc");
  // Bidi overrides and isolates ("Trojan Source").
  EXPECT_EQ(SanitizeForDisplay("abc\xe2\x80\xae"
                               "fdp.exe"),
            "abcfdp.exe");
  EXPECT_EQ(SanitizeForDisplay("\xe2\x81\xa6x\xe2\x81\xa9"), "x");
  EXPECT_EQ(SanitizeForDisplay("\xe2\x80\x8f\xd8\x9cy"), "y");  // RLM, ALM
  // Zero-width characters, BOM, soft hyphen, tag characters.
  EXPECT_EQ(SanitizeForDisplay("a\xe2\x80\x8b"
                               "b\xef\xbb\xbf"
                               "c\xc2\xad"
                               "d"),
            "abcd");
  EXPECT_EQ(SanitizeForDisplay("ok\xf3\xa0\x81\x81\xf3\xa0\x81\x82"), "ok");
}

TEST(GrantPromptSanitize, KeepsOrdinaryUnicode) {
  EXPECT_EQ(SanitizeForDisplay("café/日本語/ελληνικά ✓"), "café/日本語/ελληνικά ✓");
  EXPECT_EQ(SanitizeForDisplay("\xef\xbf\xbd"), "\xef\xbf\xbd");
}

TEST(GrantPromptSanitize, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(SanitizeForDisplay("a\xff"
                               "b"),
            "a\xef\xbf\xbd"
            "b");
  EXPECT_EQ(SanitizeForDisplay("\xc0\xae"), "\xef\xbf\xbd\xef\xbf\xbd");  // overlong '.'
  EXPECT_EQ(SanitizeForDisplay("\xed\xa0\x80"),                           // surrogate
            "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
}

TEST(GrantPromptSanitize, CapsLengthInCodePoints) {
  EXPECT_EQ(SanitizeForDisplay(std::string(10, 'x'), 10), std::string(10, 'x'));
  EXPECT_EQ(SanitizeForDisplay(std::string(11, 'x'), 10), std::string(10, 'x') + "…");
  EXPECT_EQ(SanitizeForDisplay("日本語日本語", 3), "日本語…");
  // Escape sequences do not count toward the cap (they are not shown).
  EXPECT_EQ(SanitizeForDisplay("\x1b[31m\x1b[31m\x1b[31mabc", 3), "abc");
  EXPECT_EQ(SanitizeForDisplay(std::string(100000, 'a')).size(), 200u + 3u);
}

}  // namespace
}  // namespace anvil
