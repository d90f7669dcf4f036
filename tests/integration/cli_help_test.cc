// `anvil --help` and every subcommand's help: usage, options and examples a new user can
// copy, on stdout with exit 0 (so `anvil x --help | less` works).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace cli_help_test {
namespace {

TEST(CliHelp, TopLevelHelpListsEveryCommandWithExamples) {
  auto r = testing::Run({AnvilBin(), "--help"});
  EXPECT_EQ(r.status, 0) << r.err;
  for (const char* command :
       {"sandbox", "exec", "run", "serve", "plugin", "audit", "rules", "doctor"}) {
    EXPECT_NE(r.out.find(std::string("(anvil ") + command + " --help)"), std::string::npos)
        << command << "\n"
        << r.out;
  }
  EXPECT_NE(r.out.find("Examples:"), std::string::npos) << r.out;
}

TEST(CliHelp, EachSubcommandHelpHasUsageAndExamples) {
  for (const char* command :
       {"sandbox", "exec", "run", "serve", "plugin", "audit", "rules", "doctor"}) {
    auto r = testing::Run({AnvilBin(), command, "--help"});
    EXPECT_EQ(r.status, 0) << command << ": " << r.err;
    EXPECT_EQ(r.out.rfind(std::string("usage: anvil ") + command, 0), 0u) << r.out;
    // Every example is a complete command line of this subcommand.
    auto at = r.out.find("Examples:\n");
    ASSERT_NE(at, std::string::npos) << command << " --help has no examples:\n" << r.out;
    EXPECT_NE(r.out.find(std::string("\n  anvil ") + command + " ", at), std::string::npos)
        << r.out;
  }
}

// `anvil help COMMAND` is exactly `anvil COMMAND --help`: one text, from the command's table.
TEST(CliHelp, HelpCommandShowsTheSameTextAsDashDashHelp) {
  for (const char* command :
       {"sandbox", "exec", "run", "serve", "plugin", "audit", "rules", "doctor"}) {
    auto a = testing::Run({AnvilBin(), "help", command});
    auto b = testing::Run({AnvilBin(), command, "--help"});
    EXPECT_EQ(a.status, 0) << a.err;
    EXPECT_EQ(a.out, b.out) << command;
  }
  auto top = testing::Run({AnvilBin(), "help"});
  EXPECT_EQ(top.status, 0);
  EXPECT_EQ(top.out, testing::Run({AnvilBin(), "--help"}).out);
  auto bad = testing::Run({AnvilBin(), "help", "sandbx"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("did you mean sandbox?"), std::string::npos) << bad.err;
}

// The version comes from one place, project(VERSION) in CMakeLists.txt; the commit is the
// source tree's.
TEST(CliHelp, VersionPrintsTheProjectVersionAndTheCommit) {
  std::ifstream cmake(std::string(ANVIL_SOURCE_DIR) + "/CMakeLists.txt");
  std::string text((std::istreambuf_iterator<char>(cmake)), std::istreambuf_iterator<char>());
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(project\(anvil VERSION ([0-9.]+))")));
  const std::string version = m[1];
  for (const char* flag : {"--version", "-V"}) {
    auto r = testing::Run({AnvilBin(), flag});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(std::regex_match(
        r.out, std::regex("anvil " + version + R"( \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)\n)")))
        << r.out;
  }
}

// A mistyped command, subcommand or option is named, with the closest real one.
TEST(CliHelp, UnknownNamesGetTheRealOnes) {
  auto r = testing::Run({AnvilBin(), "plugin", "frob"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown subcommand 'frob'"), std::string::npos) << r.err;
  for (const char* sub : {"new", "types", "list", "inspect", "approve", "revoke", "lock", "keygen",
                          "sign", "trust-key", "untrust-key", "trusted-keys"}) {
    EXPECT_NE(r.err.find(sub), std::string::npos) << sub << ": " << r.err;
  }
  r = testing::Run({AnvilBin(), "plugin", "inspet", "x"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("did you mean inspect?"), std::string::npos) << r.err;
  r = testing::Run({AnvilBin(), "sandbx", "--", "true"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown command 'sandbx' (see anvil --help); did you mean sandbox?"),
            std::string::npos)
      << r.err;
  struct Row {
    std::vector<std::string> args;
    const char* message;
    int status;
  };
  const Row rows[] = {
      {{"run", "--aprove", "x", "y"}, "did you mean --approve?", 2},
      {{"serve", "--workspce", "."}, "did you mean --workspace?", 2},
      {{"audit", "--folow"}, "did you mean --follow?", 2},
      {{"doctor", "--jsn"}, "did you mean --json?", 2},
      {{"--verison"}, "did you mean --version?", 2},
      {{"plugin", "new", "--jss", "me.x"}, "did you mean --js?", 2},
      {{"plugin", "types", "--x"}, "unknown option --x", 2},
  };
  for (const Row& row : rows) {
    std::vector<std::string> argv = {AnvilBin()};
    argv.insert(argv.end(), row.args.begin(), row.args.end());
    r = testing::Run(argv);
    EXPECT_EQ(r.status, row.status) << row.args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("unknown option"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(row.message), std::string::npos) << r.err;
  }
}

// The completion scripts ask `anvil __complete profiles` for what --profile takes: the
// built-in profiles and the user's own from config.toml, shown inert.
TEST(CliHelp, CompletionListsBuiltinAndUserProfiles) {
  TempDir xdg{"anvil-complete"};
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(xdg / "anvil")), 0);
  std::ofstream(xdg / "anvil/config.toml") << "[profiles.java]\nreadable_roots = [\"/opt/m2\"]\n";
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "XDG_CONFIG_HOME=" + xdg.path()};
  auto r = testing::Run({AnvilBin(), "__complete", "profiles"}, o);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "go\njava\nnode\npython\nrust\n") << r.err;
  // Benign: no config at all lists the built-in ones; an unknown question is a usage error.
  o.env = {"PATH=/usr/bin:/bin", "XDG_CONFIG_HOME=" + (xdg / "none")};
  r = testing::Run({AnvilBin(), "__complete", "profiles"}, o);
  EXPECT_EQ(r.out, "go\nnode\npython\nrust\n");
  EXPECT_EQ(testing::Run({AnvilBin(), "__complete", "frob"}).status, 2);
}

}  // namespace
}  // namespace cli_help_test
}  // namespace anvil::testing
