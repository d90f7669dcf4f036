// Global options before a subcommand (src/policy/global_options.h): the words removed for each
// spelling, what stops the walk, and what makes the words before the subcommand unreadable.
#include "policy/global_options.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "policy/shell_words.h"

namespace anvil {
namespace global_options_test {
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
      {{"-C", "x"}, std::nullopt},
      {{}, std::nullopt},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(WithoutGlobalOptions(c.argv), c.expected) << JoinShellWords(c.argv);
  }
  EXPECT_TRUE(HasGlobalOptions("git"));
  EXPECT_FALSE(HasGlobalOptions("make"));
}

// cargo, docker, kubectl and npm: the options each takes before its command.
TEST(GlobalOptions, TheOtherProgramsGlobalOptionsAreRemoved) {
  const std::string any(kAnyWords);
  const struct {
    Argv argv;
    std::optional<Argv> expected;
  } cases[] = {
      {{"cargo", "+nightly", "publish"}, Argv{"cargo", "publish"}},
      {{"cargo", "-C", "crate", "--locked", "-vv", "publish"}, Argv{"cargo", "publish"}},
      {{"cargo", "--config", "net.offline=true", "-Zunstable-options", "publish"},
       Argv{"cargo", "publish"}},
      {{"cargo", "--color=always", "--offline", "publish", "-n"}, Argv{"cargo", "publish", "-n"}},
      {{"cargo", "--config", "alias.b=publish", "b"}, Argv{"cargo", any}},
      {{"cargo", "--config=ALIAS.b=\"publish\"", "b"}, Argv{"cargo", any}},
      {{"cargo", "--config", "other.toml", "b"}, Argv{"cargo", any}},  // a file: anything
      {{"cargo", "--frobnicate", "publish"}, Argv{"cargo", any}},
      {{"docker", "--context", "prod", "-D", "rm", "-f", "x"}, Argv{"docker", "rm", "-f", "x"}},
      {{"docker", "-H", "ssh://h", "--tls", "run", "img"}, Argv{"docker", "run", "img"}},
      {{"docker", "-Hunix:///s", "--log-level=debug", "push"}, Argv{"docker", "push"}},
      {{"docker", "--config", "/x", "push"}, Argv{"docker", "push"}},
      {{"docker", "--unknown", "push"}, Argv{"docker", any}},
      {{"kubectl", "-n", "prod", "delete", "pod", "x"}, Argv{"kubectl", "delete", "pod", "x"}},
      {{"kubectl", "--context=prod", "--namespace", "a", "-v", "6", "delete"},
       Argv{"kubectl", "delete"}},
      {{"kubectl", "-nprod", "--insecure-skip-tls-verify", "apply"}, Argv{"kubectl", "apply"}},
      {{"kubectl", "--kubeconfig", "k", "--as=admin", "exec"}, Argv{"kubectl", "exec"}},
      {{"kubectl", "--wat", "delete"}, Argv{"kubectl", any}},
      {{"npm", "--prefix", "x", "publish"}, Argv{"npm", "publish"}},
      {{"npm", "-C", "x", "-ws", "--no-audit", "--json", "publish"}, Argv{"npm", "publish"}},
      {{"npm", "-w", "pkg", "--registry=https://r", "publish"}, Argv{"npm", "publish"}},
      {{"npm", "--silent", "run", "build"}, Argv{"npm", "run", "build"}},
      {{"npm", "--foo", "publish"}, Argv{"npm", any}},  // npm reads `publish` as foo's value
      {{"npm", "--no-x=1", "publish"}, Argv{"npm", any}},
      {{"npm", "--script-shell=/tmp/x", "test"}, Argv{"npm", any}},
      // Benign: the command as written.
      {{"cargo", "build", "--release"}, std::nullopt},
      {{"cargo", "--version"}, std::nullopt},
      {{"docker", "ps", "-a"}, std::nullopt},
      {{"kubectl", "get", "pods", "-n", "x"}, std::nullopt},
      {{"npm", "test"}, std::nullopt},
      {{"npm", "--help", "publish"}, std::nullopt},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(WithoutGlobalOptions(c.argv), c.expected) << JoinShellWords(c.argv);
  }
  for (const char* program : {"git", "cargo", "docker", "kubectl", "npm"}) {
    EXPECT_TRUE(HasGlobalOptions(program)) << program;
  }
}

}  // namespace
}  // namespace global_options_test
}  // namespace anvil
