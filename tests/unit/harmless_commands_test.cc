// The built-in harmless set (src/policy/harmless_commands.h): every entry's examples, the
// options that must never be harmless, and docs/agents.md listing exactly the set.
#include "policy/harmless_commands.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "policy/shell_words.h"

namespace anvil {
namespace harmless_commands_test {
namespace {

std::vector<std::string> Words(std::string_view example) {
  const ShellScript parsed = ParseShellScript(example);
  EXPECT_TRUE(parsed.understood) << example << ": " << parsed.why;
  EXPECT_EQ(parsed.commands.size(), 1u) << example;
  return parsed.understood && !parsed.commands.empty() ? parsed.commands[0]
                                                       : std::vector<std::string>{};
}

TEST(HarmlessCommands, EveryEntryAcceptsItsMatchExamplesAndNoEntryItsNotMatch) {
  for (const auto& entry : HarmlessCommands()) {
    const std::string name = HarmlessName(entry);
    EXPECT_FALSE(entry.match.empty()) << name << " has no match example";
    EXPECT_FALSE(entry.why.empty()) << name;
    for (std::string_view example : entry.match) {
      const HarmlessCommand* found = FindHarmless(Words(example));
      ASSERT_NE(found, nullptr) << name << ": " << example;
      EXPECT_EQ(HarmlessName(*found), name) << example;
    }
    for (std::string_view example : entry.not_match) {
      const HarmlessCommand* found = FindHarmless(Words(example));
      EXPECT_EQ(found, nullptr) << name << ": " << example << " is harmless by "
                                << (found ? HarmlessName(*found) : "");
    }
  }
}

TEST(HarmlessCommands, OptionsThatWriteDeleteOrRunAreNeverHarmless) {
  const std::vector<std::vector<std::string>> attacks = {
      {"git", "log", "--output=FILE"},
      {"git", "log", "--output", "FILE"},
      {"git", "log", "--outp=FILE"},
      {"git", "diff", "--ext-diff"},
      {"git", "show", "--textconv", "HEAD"},
      {"git", "-c", "core.pager=sh -c id", "log"},
      {"git", "-C", "/", "status"},
      {"git", "--exec-path=/tmp", "status"},
      {"find", ".", "-exec", "rm", "{}", ";"},
      {"find", ".", "-execdir", "sh", "-c", "id", ";"},
      {"find", ".", "-ok", "rm", "{}", ";"},
      {"find", ".", "-delete"},
      {"find", ".", "-fprintf", "/tmp/x", "%p"},
      {"rg", "--pre", "./x", "TODO"},
      {"rg", "--pre=./x", "TODO"},
      {"rg", "--pre-glob", "*", "--pre", "x", "TODO"},
      {"rg", "-z", "TODO"},
      {"rg", "-inz", "TODO"},
      {"rg", "--search-zip", "TODO"},
      {"fd", "--exec", "rm"},
      {"fd", "-x", "rm"},
      {"fdfind", "-X", "rm"},
      {"sort", "-o", "/etc/passwd", "x"},
      {"sort", "--output=x", "y"},
      {"sort", "--compress-program=sh", "x"},
      {"sed", "-i", "s/a/b/", "x"},
      {"sed", "-n", "1w /tmp/x", "f"},
      {"sed", "-n", "1e id", "f"},
      {"sed", "s/x/y/e", "f"},
      {"tree", "-o", "x"},
      {"date", "-s", "2000-01-01"},
      {"file", "-C", "-m", "x"},
      // Only a bare program name: a path may be anything.
      {"./ls"},
      {"/tmp/cat", "x"},
      {"bin/git", "status"},
      // Not in the set at all.
      {"awk", "{print}", "x"},
      {"xargs", "ls"},
      {"env"},
      {"tee", "x"},
      {"git", "stash"},
      {"git", "grep", "-O", "x"},
  };
  for (const auto& argv : attacks) {
    const HarmlessCommand* found = FindHarmless(argv);
    EXPECT_EQ(found, nullptr) << JoinShellWords(argv) << " is harmless by "
                              << (found ? HarmlessName(*found) : "");
  }
  // Benign neighbours of the attacks above.
  for (const std::vector<std::string>& argv :
       std::vector<std::vector<std::string>>{{"git", "log", "--oneline"},
                                             {"git", "diff", "--no-ext-diff"},
                                             {"git", "status"},
                                             {"find", ".", "-name", "x", "-print"},
                                             {"rg", "-in", "TODO"},
                                             {"fd", "-H", "name"},
                                             {"sort", "-u", "x"},
                                             {"sed", "-n", "1,20p", "x"},
                                             {"ls"},
                                             {"cat", "x"}}) {
    EXPECT_NE(FindHarmless(argv), nullptr) << JoinShellWords(argv);
  }
}

TEST(HarmlessCommands, DocsListEveryEntry) {
  std::ifstream in(std::string(ANVIL_SOURCE_DIR) + "/docs/agents.md");
  ASSERT_TRUE(in) << "docs/agents.md";
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const std::string start = "<!-- harmless-set -->";
  const auto begin = doc.find(start);
  ASSERT_NE(begin, std::string::npos) << "docs/agents.md has no " << start << " section";
  const auto end = doc.find("<!-- /harmless-set -->", begin);
  ASSERT_NE(end, std::string::npos);
  const std::string section = doc.substr(begin, end - begin);
  std::set<std::string> names;
  for (const auto& entry : HarmlessCommands()) {
    const std::string name = HarmlessName(entry);
    names.insert(name);
    EXPECT_NE(section.find("`" + name + "`"), std::string::npos)
        << "docs/agents.md does not list `" << name << "`";
  }
  // And nothing the set does not hold: every `…` in the list's first column is an entry.
  std::istringstream lines(section);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.starts_with("| `")) continue;
    const auto close = line.find('`', 3);
    ASSERT_NE(close, std::string::npos) << line;
    EXPECT_TRUE(names.count(line.substr(3, close - 3))) << "docs/agents.md lists " << line;
  }
}

}  // namespace
}  // namespace harmless_commands_test
}  // namespace anvil
