#include "policy/git_config.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace anvil {
namespace git_config_test {
namespace {

// "section[.subsection].key=value" per entry ("key" alone for a value-less key), as
// `git config -f FILE --list` prints them (section and key lower-case, subsection as kept).
std::vector<std::string> Listed(std::string_view text) {
  auto entries = ParseGitConfig(text);
  EXPECT_TRUE(entries) << (entries ? "" : entries.error().ToString());
  std::vector<std::string> out;
  if (!entries) return out;
  for (const auto& e : *entries) {
    std::string name = e.section.empty()  ? e.key
                       : e.has_subsection ? e.section + "." + e.subsection + "." + e.key
                                          : e.section + "." + e.key;
    out.push_back(e.value ? name + "=" + *e.value : name);
  }
  return out;
}

using V = std::vector<std::string>;

TEST(ParseGitConfig, SectionsSubsectionsAndKeysAsGitReadsThem) {
  struct Case {
    const char* text;
    V want;
  } cases[] = {
      {"[core]\n\thooksPath = .husky\n", {"core.hookspath=.husky"}},
      {"[CORE]\nHooksPath=x\n", {"core.hookspath=x"}},
      // A key on the header's line, a comment after it.
      {"[core] hooksPath = x ; c\n", {"core.hookspath=x"}},
      {"[s]  k=1\n", {"s.k=1"}},
      // Quoted subsection keeps its case and its escapes; legacy dotted form is lower-cased.
      {"[Diff \"Tool\"]\n\tTextConv = conv\n", {"diff.Tool.textconv=conv"}},
      {"[a.B]\nk\n", {"a.b.k"}},
      {"[x \"y\\\"z\"]\nv = 1\n", {"x.y\"z.v=1"}},
      {"[x \"a\\qb\"]\nv = 1\n", {"x.aqb.v=1"}},  // other escapes drop the backslash
      {"[includeIf \"gitdir:~/w/\"]\npath = a.cfg\n", {"includeif.gitdir:~/w/.path=a.cfg"}},
      // A key before any section: git accepts it.
      {"k = v\n", {"k=v"}},
      // The key alone is boolean true (no value at all).
      {"[core]\nbare\n", {"core.bare"}},
      {"[s]\nk =\n", {"s.k="}},
      {"", {}},
      {"# only a comment\n; another\n", {}},
      {"[s]\nk=1", {"s.k=1"}},  // no final newline
      {"\xef\xbb\xbf[s]\nk=1\n", {"s.k=1"}},
      {"[s]\r\nk=1\r\n", {"s.k=1"}},
  };
  for (const auto& c : cases) EXPECT_EQ(Listed(c.text), c.want) << c.text;
}

TEST(ParseGitConfig, ValuesWithQuotesEscapesContinuationsAndComments) {
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"[s]\nk = plain\n", "plain"},
      {"[s]\nk =   a   b  \t  \n", "a   b"},  // outer blanks dropped, inner kept
      {"[s]\nk = a # comment\n", "a"},        //
      {"[s]\nk = a ; comment\n", "a"},        //
      {"[s]\nk = \"a # not a comment\"\n", "a # not a comment"},
      {"[s]\nk = \"  padded  \"\n", "  padded  "},
      {"[s]\nk = \"a b\"  \\\n c # d\n", "a b   c"},  // continuation, as `git config -l`
      {"[s]\nk = 1\\t2\\n3\\b\\\\\\\"\n", "1\t2\n3\b\\\""},
      {"[s]\nk = a\\", "a"},  // backslash at the very end
      {"[s]\nk = pa\"rt\"ly quoted\n", "partly quoted"},
      {"[s]\nk = x\\\n\\\ny\n", "xy"},
  };
  for (const auto& c : cases) {
    auto entries = ParseGitConfig(c.text);
    ASSERT_TRUE(entries) << c.text << ": " << entries.error().ToString();
    ASSERT_EQ(entries->size(), 1u) << c.text;
    ASSERT_TRUE((*entries)[0].value) << c.text;
    EXPECT_EQ(*(*entries)[0].value, c.want) << c.text;
  }
}

TEST(ParseGitConfig, WhatGitRefusesIsAnErrorNamingTheLine) {
  struct Case {
    const char* text;
    int line;
  } cases[] = {
      {"[s]\nkey ;c\n", 2},         // a comment after a key without '='
      {"[s]\nk = \"a\n", 2},        // unterminated quote
      {"[s]\nk = a\\q\n", 2},       // unknown escape
      {"\xef\xbb[s]\nk=1\n", 1},    // partial byte order mark
      {"[s \"a\"x]\nk=1\n", 1},     // junk after the subsection
      {"[s\n]\nk=1\n", 1},          // header across lines
      {"[]\nk=1\n", 1},             // empty section
      {"[s]\n1k=1\n", 2},           // key must start with a letter
      {"[s]\nk_x=1\n", 2},          // '_' is not a key character
      {"[s \"unterminated]\n", 1},  //
      {"[s", 1},                    //
      {"[s]\nk = \"a\\\n", 2},      //
      {"[s!]\nk=1\n", 1},           //
  };
  for (const auto& c : cases) {
    auto entries = ParseGitConfig(c.text);
    ASSERT_FALSE(entries) << c.text;
    EXPECT_NE(entries.error().message.find("line " + std::to_string(c.line)), std::string::npos)
        << c.text << ": " << entries.error().message;
  }
}

TEST(ParseGitConfig, NothingAfterANulByteOfAValueIsSeen) {
  std::string text = "[core]\nfsmonitor = ./a";
  text.push_back('\0');
  text += "b\n";
  auto entries = ParseGitConfig(text);
  ASSERT_TRUE(entries);
  EXPECT_EQ(*(*entries)[0].value, "./a");
}

TEST(ParseGitConfig, BoundsOnSizeEntriesAndNames) {
  GitConfigLimits small;
  small.max_bytes = 64;
  small.max_entries = 3;
  small.max_name_bytes = 16;
  EXPECT_FALSE(ParseGitConfig(std::string(65, '#'), small));
  EXPECT_TRUE(ParseGitConfig(std::string(64, '#'), small));
  EXPECT_FALSE(ParseGitConfig("[s]\na\nb\nc\nd\n", small));
  EXPECT_TRUE(ParseGitConfig("[s]\na\nb\nc\n", small));
  EXPECT_FALSE(ParseGitConfig("[s]\nabcdefghijklmnopq\n", small));
  EXPECT_FALSE(ParseGitConfig("[s \"abcdefghijklmnopq\"]\n", small));
  // A large but well-formed config parses without trouble.
  std::string big = "[s]\n";
  for (int i = 0; i < 20000; ++i) big += "k" + std::to_string(i % 10) + " = v\n";
  auto entries = ParseGitConfig(big);
  ASSERT_TRUE(entries);
  EXPECT_EQ(entries->size(), 20000u);
}

TEST(GitConfigBool, GitsBooleanWords) {
  EXPECT_EQ(GitConfigBool(std::nullopt), true);
  EXPECT_EQ(GitConfigBool(std::string("")), false);
  EXPECT_EQ(GitConfigBool(std::string("TRUE")), true);
  EXPECT_EQ(GitConfigBool(std::string("off")), false);
  EXPECT_EQ(GitConfigBool(std::string("0")), false);
  EXPECT_EQ(GitConfigBool(std::string("2")), true);
  EXPECT_EQ(GitConfigBool(std::string("./fsmonitor.sh")), std::nullopt);
}

}  // namespace
}  // namespace git_config_test
}  // namespace anvil
