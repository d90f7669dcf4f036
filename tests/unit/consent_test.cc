// T8, pure layer: which manifest changes need new consent (adding anything does, removing does
// not), and the consent text: plain words, one item per line, and no plugin-supplied string can
// forge, hide or reorder a line of the prompt.
#include "policy/consent.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace anvil {
namespace consent_test {
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
            "  Edit the open editor buffers of files it reads (anvil serve): yes\n"
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
            "  Edit the open editor buffers of files it reads (anvil serve): no\n"
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
  EXPECT_NE(text.find("and what git runs or follows from it because its config names it: hooks "
                      "directories"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("and no plugin's code: any directory holding an anvil-plugin.toml)"),
            std::string::npos)
      << text;
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
  // Exactly one line per item plus the six headings/yes-no lines: nothing was injected.
  EXPECT_EQ(Lines(text).size(), 6u + 1u + 4u + 2u + 2u) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(text.find('\x07'), std::string::npos);
  EXPECT_EQ(text.find("\xe2\x80\xae"), std::string::npos);  // RLO
  EXPECT_EQ(text.find("\xc2\x9b"), std::string::npos);      // C1 CSI
  // Made visible, not executed: the user sees that the string carried an escape sequence.
  EXPECT_NE(text.find("\\u{1b}[2J"), std::string::npos) << text;
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
  EXPECT_NE(text.find("    - \"\\u{1b}[2J\\u{1b}[Hsrc/**\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    - \"abc\\u{202e}txt.exe\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    - rg\\u{1b}[8m hidden\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace consent_test
}  // namespace anvil
