// Global options before a subcommand (src/policy/global_options.h): the words removed for each
// spelling, what stops the walk, and what makes the words before the subcommand unreadable.
#include "policy/global_options.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "policy/shell_words.h"

namespace anvil {
namespace {

using Argv = std::vector<std::string>;

TEST(GlobalOptions, EverySpellingOfGitsGlobalOptionsIsRemoved) {
  const std::string any(kAnyWords);
  const struct {
    Argv argv;
    std::optional<Argv> expected;
  } cases[] = {
      {{"git", "-c", "x=y", "push"}, Argv{"git", "push"}},
      {{"git", "-cx=y", "push"}, Argv{"git", "push"}},
      {{"git", "-C", "dir", "push", "-f"}, Argv{"git", "push", "-f"}},
      {{"git", "-Cdir", "push"}, Argv{"git", "push"}},
      {{"git", "--git-dir=.git", "push"}, Argv{"git", "push"}},
      {{"git", "--git-dir", ".git", "push"}, Argv{"git", "push"}},
      {{"git", "--work-tree", ".", "--namespace=n", "push"}, Argv{"git", "push"}},
      {{"git", "--config-env", "a.b=E", "push"}, Argv{"git", "push"}},
      {{"git", "--exec-path", "push"}, Argv{"git", "push"}},  // prints the path; no value
      {{"git", "--exec-path=/x", "push"}, Argv{"git", "push"}},
      {{"git", "--no-pager", "-p", "-P", "--bare", "push"}, Argv{"git", "push"}},
      {{"/usr/bin/git", "-C", ".", "push"}, Argv{"/usr/bin/git", "push"}},
      {{"git", "-C", ".", "-C"}, Argv{"git"}},  // git refuses it: nothing runs
      // Unreadable: every restriction could match.
      {{"git", "--frob", "push"}, Argv{"git", any}},
      {{"git", "--list-cmds", "push"}, Argv{"git", any}},
      {{"git", "--no-pager=x", "push"}, Argv{"git", any}},
      {{"git", "--git", "push"}, Argv{"git", any}},  // git takes no abbreviation
      {{"git", any, "push"}, Argv{"git", any}},
      {{"git", std::string(kAnyWord), "push"}, Argv{"git", any}},
      {{"git", "-c", std::string(kAnyWord), "push"}, Argv{"git", any}},
      {{"git", "-c", "alias.p=push", "p"}, Argv{"git", any}},
      {{"git", "-cALIAS.p=push", "p"}, Argv{"git", any}},
      {{"git", "--config-env=alias.p=E", "p"}, Argv{"git", any}},
      // Benign: nothing to remove, the subcommand as written, other programs.
      {{"git", "push"}, std::nullopt},
      {{"git", "log", "--grep", "push"}, std::nullopt},
      {{"git", "--help", "push"}, std::nullopt},
      {{"git", "-v"}, std::nullopt},
      {{"git"}, std::nullopt},
      {{"npm", "--prefix", "x", "publish"}, std::nullopt},
      {{"-C", "x"}, std::nullopt},
      {{}, std::nullopt},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(WithoutGlobalOptions(c.argv), c.expected) << JoinShellWords(c.argv);
  }
  EXPECT_TRUE(HasGlobalOptions("git"));
  EXPECT_FALSE(HasGlobalOptions("npm"));
}

}  // namespace
}  // namespace anvil
