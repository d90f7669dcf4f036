// `anvil exec`'s command line (cli/exec_spec.h, ParseExecArgs): its own flags from its table,
// every other option forwarded to `anvil sandbox`'s parser with its value, the command after
// `--` or the first word; each refusal in the words users always saw.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "cli/exec_command.h"

namespace anvil::cli {
namespace exec_args_test {
namespace {

using Args = std::vector<std::string>;

const Args kEnv = {"PATH=/usr/bin:/bin", "HOME=/nonexistent"};

TEST(ExecArgs, OwnFlagsAreAppliedAndTheRestForwarded) {
  auto r = ParseExecArgs(
      {"--approval", "never", "--network", "none", "--json", "--rules=a.toml", "--rules", "b.toml",
       "--ask-fd", "7", "--requester", "agent", "--clear-env", "--", "true", "--json"},
      kEnv);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->request.mode, ApprovalMode::kNever);
  EXPECT_TRUE(r->json);
  EXPECT_EQ(r->ask_fd, 7);
  EXPECT_EQ(r->request.requester, "agent");
  EXPECT_EQ(r->request.rules.user_files, (Args{"a.toml", "b.toml"}));
  EXPECT_EQ(r->request.sandbox_flags, (Args{"--network", "none", "--clear-env"}));
  EXPECT_EQ(r->request.argv, (Args{"true", "--json"}));
  // The first word is the command too; a sandbox option written NAME=VALUE stays one word.
  r = ParseExecArgs({"--network=none", "true", "-x"}, kEnv);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->request.sandbox_flags, (Args{"--network=none"}));
  EXPECT_EQ(r->request.argv, (Args{"true", "-x"}));
  EXPECT_EQ(r->request.mode, ApprovalMode::kOnRequest);
  EXPECT_EQ(r->request.requester, "anvil exec");
  EXPECT_FALSE(r->json);
  EXPECT_EQ(r->ask_fd, -1);
}

TEST(ExecArgs, EachRefusalNamesTheFix) {
  struct Row {
    Args args;
    const char* message;
  };
  const Row rows[] = {
      {{"--approval", "sometimes", "--", "true"},
       "invalid: --approval sometimes (fix: untrusted, on-failure, on-request or never)"},
      {{"--approval"}, "invalid: --approval needs a value (see --help)"},
      {{"--rules"}, "invalid: --rules needs a value (see --help)"},
      {{"--network"}, "invalid: --network needs a value (see --help)"},
      {{"--ask-fd", "2", "--", "true"},
       "invalid: --ask-fd 2 (fix: an open descriptor number, 3 or above)"},
      {{"--ask-fd", "x", "--", "true"},
       "invalid: --ask-fd x (fix: an open descriptor number, 3 or above)"},
      {{"--requester", "", "--", "true"},
       "invalid: --requester needs a name of 1 to 64 characters"},
      {{"--json"}, "invalid: no command given (fix: anvil exec [options] -- COMMAND...)"},
      {{"--json", "--"}, "invalid: no command given (fix: anvil exec [options] -- COMMAND...)"},
      {{"--reason", "why", "--", "true"}, "invalid: --reason goes with --widen"},
      {{"--widen", "writable-git", "--", "true"},
       "invalid: --widen needs --reason TEXT (shown to the person asked)"},
      {{"--json", "--help", "--", "true"}, "invalid: --help goes alone"},
      {{"--cwd", "--help", "--", "true"}, "invalid: --help goes alone"},
  };
  for (const Row& row : rows) {
    auto r = ParseExecArgs(row.args, kEnv);
    ASSERT_FALSE(r) << row.args[0];
    EXPECT_EQ(r.error().ToString(), row.message) << row.args[0];
  }
}

// An option neither anvil exec's table nor anvil sandbox's holds is refused by anvil exec, with
// the closest option of either; the sandbox's own options still go through.
TEST(ExecArgs, BareNamesAreJudgedOnTheCallersPathAndTheSandboxs) {
  // The caller's PATH finds the command; --setenv's finds what a shell inside runs.
  auto r = ParseExecArgs({"--setenv", "PATH=/tmp/venv/bin:/usr/bin", "--", "true"}, kEnv);
  ASSERT_TRUE(r) << r.error().ToString();
  const ProgramSearch& search = r->request.search;
  ASSERT_EQ(search.paths.size(), 2u);
  EXPECT_EQ(search.paths[0].value, "/usr/bin:/bin");
  EXPECT_EQ(search.paths[1].value, "/tmp/venv/bin:/usr/bin");
  const std::string& workspace = r->request.context.workspace;
  auto holds = [](const std::vector<std::string>& roots, const std::string& root) {
    return std::find(roots.begin(), roots.end(), root) != roots.end();
  };
  EXPECT_TRUE(holds(search.paths[0].writable_roots, workspace));
  EXPECT_FALSE(holds(search.paths[0].writable_roots, "/tmp"));  // outside: not the sandbox's
  EXPECT_TRUE(holds(search.paths[1].writable_roots, workspace));
  EXPECT_TRUE(holds(search.paths[1].writable_roots, "/tmp"));
  ASSERT_TRUE(search.facts.holds && search.facts.canonical);
  EXPECT_TRUE(search.facts.holds("/bin", "sh"));
  EXPECT_FALSE(search.facts.holds("/nonexistent", "sh"));
  EXPECT_EQ(JudgeSystemProgram("sh", search).source, BareNameSource::kShadowable);
  // An environment without PATH: a shell inside looks names up on its own default, which ends
  // in `.` (the workspace). A system program is found before it; an allow rule for a name found
  // nowhere does not speak for what the workspace may hold.
  r = ParseExecArgs({"--clear-env", "--", "true"}, kEnv);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->request.search.paths[1].value, kShellDefaultProgramPath);
  EXPECT_EQ(JudgeSystemProgram("sh", r->request.search).source, BareNameSource::kSystem);
  EXPECT_NE(AllowRuleBlocked("no-such-tool-here", r->request.search), "");
}

TEST(ExecArgs, AnUnknownOptionSuggestsFromBothTables) {
  const std::pair<Args, const char*> rows[] = {
      {{"--bogus", "--", "true"}, "invalid: unknown option --bogus (see anvil exec --help)"},
      {{"--aproval", "never", "--", "true"},
       "invalid: unknown option --aproval (see anvil exec --help); did you mean --approval?"},
      {{"--netwrok=proxy", "--", "true"},
       "invalid: unknown option --netwrok=proxy (see anvil exec --help); did you mean "
       "--network?"},
  };
  for (const auto& [args, message] : rows) {
    auto r = ParseExecArgs(args, kEnv);
    ASSERT_FALSE(r) << args[0];
    EXPECT_EQ(r.error().ToString(), message) << args[0];
  }
  auto benign = ParseExecArgs({"--network", "none", "--clear-env", "--", "true"}, kEnv);
  ASSERT_TRUE(benign) << benign.error().ToString();
}

}  // namespace
}  // namespace exec_args_test
}  // namespace anvil::cli

// A directory "holds repositories" when one is a child or a grandchild of it; a widening is
// then never offered there. Symlinks are not followed, hidden entries are the directory's own.
TEST(HoldsRepositories, FindsChildrenAndGrandchildrenButNotThroughLinks) {
  char pattern[] = "/tmp/anvil-holds-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string top = pattern;
  auto mk = [](const std::string& p) { ASSERT_EQ(::mkdir(p.c_str(), 0755), 0) << p; };
  mk(top + "/plain");
  mk(top + "/plain/src");
  EXPECT_FALSE(anvil::cli::HoldsRepositories(top));
  mk(top + "/.git");  // the directory's own metadata
  mk(top + "/.cache");
  mk(top + "/.cache/x");
  mk(top + "/.cache/x/.git");
  EXPECT_FALSE(anvil::cli::HoldsRepositories(top));

  const std::string elsewhere = top + "-elsewhere";
  mk(elsewhere);
  mk(elsewhere + "/repo");
  mk(elsewhere + "/repo/.git");
  ASSERT_EQ(::symlink(elsewhere.c_str(), (top + "/link").c_str()), 0);
  ASSERT_EQ(::symlink((elsewhere + "/repo").c_str(), (top + "/plain/link").c_str()), 0);
  EXPECT_FALSE(anvil::cli::HoldsRepositories(top));

  mk(top + "/plain/lib");
  ASSERT_EQ(::close(::open((top + "/plain/lib/.hg").c_str(), O_CREAT | O_WRONLY, 0644)), 0);
  EXPECT_TRUE(anvil::cli::HoldsRepositories(top));             // a grandchild
  EXPECT_TRUE(anvil::cli::HoldsRepositories(top + "/plain"));  // a child

  EXPECT_TRUE(anvil::cli::HoldsRepositories(top + "/missing"));  // unknown: says yes
  std::filesystem::remove_all(top);
  std::filesystem::remove_all(elsewhere);
}
