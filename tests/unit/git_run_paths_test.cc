// policy/git_run_paths.h: what of a git protection plan lies in the workspace, and which
// workspace paths a write op may not change because of it (table-tested, each row beside its
// benign neighbour).
#include "policy/git_run_paths.h"

#include <gtest/gtest.h>

#include <set>

namespace anvil {
namespace git_run_paths_test {
namespace {

TEST(GitRunPaths, OnlyWhatLiesInTheWorkspaceRelativeToIt) {
  GitProtectionPlan plan;
  plan.named = {{"/w/.githooks", "core.hooksPath in /w/.git/config:3", 0},
                {"/home/u/bin/fsmon", "core.fsmonitor in /home/u/.gitconfig:1", -1},
                {"/w2/x", "a sibling with the same prefix", 0},
                {"/w/.git/hooks", "the repository's own hooks: .git's rule", 0},
                {"/w/tools/link.sh", "diff.x.textconv in /w/.git/config:5", 0},
                {"/w/tools/missing.sh", "filter.y.clean in /w/.git/config:7", 0}};
  plan.read_only = {"/w/.git", "/w/mirror.git"};  // git dirs: the git-dir guard's
  auto resolve = [](const std::string& p) -> std::optional<std::string> {
    if (p == "/w/tools/link.sh") return "/w/scripts/real.sh";
    if (p == "/w/tools/missing.sh") return std::nullopt;
    return p;
  };
  GitScan scan;
  GitRepo repo;
  repo.configs = {{"/w/.git/config", "", 0, true, {}, ""},
                  {"/w/shared.gitconfig", "/w/.git/config", 4, true, {}, ""}};
  scan.repos = {repo};
  const auto paths = GitRunPathsIn("/w", scan, plan, resolve);
  std::vector<std::string> got;
  for (const auto& p : paths) got.push_back(p.path);
  EXPECT_EQ(got, (std::vector<std::string>{".githooks", "scripts/real.sh", "shared.gitconfig",
                                           "tools/link.sh", "tools/missing.sh"}));
  EXPECT_EQ(paths[0].reason, "core.hooksPath in /w/.git/config:3");
  plan.named = {{"/w", "core.hooksPath = .", 0}};
  EXPECT_EQ(GitRunPathsIn("/w", GitScan{}, plan, resolve).front().path, ".");
}

// A config names paths as git spells them, existing or not: compared as written, the missing
// include "../local.gitconfig" of .git/config (".git/../local.gitconfig") and the missing hooks
// dir "./.hooks" matched no normalized workspace path, and the first was even taken for a path
// through .git and dropped. Each is where git opens it: through a link for the existing prefix.
TEST(GitRunPaths, MissingPathsAreWhereGitOpensThem) {
  GitProtectionPlan plan;
  plan.named = {{"/w/./.hooks", "core.hooksPath in /w/.git/config:3", 0},
                {"/w/tools/new/conv.sh", "diff.x.textconv in /w/.git/config:5", 0},
                {"/w/sub/../tools/../ok.sh", "core.fsmonitor in /w/.git/config:6", 0}};
  const std::set<std::string> existing = {"/", "/w", "/w/.git", "/w/sub", "/w/real"};
  auto resolve = [&](const std::string& p) -> std::optional<std::string> {
    if (p == "/w/tools") return "/w/real";
    if (existing.count(p)) return p;
    return std::nullopt;
  };
  GitScan scan;
  GitRepo repo;
  repo.configs = {{"/w/.git/config", "", 0, true, {}, ""},
                  {"/w/.git/../local.gitconfig", "/w/.git/config", 4, false, {}, ""}};
  scan.repos = {repo};
  std::vector<std::string> got;
  for (const auto& p : GitRunPathsIn("/w", scan, plan, resolve)) got.push_back(p.path);
  EXPECT_EQ(got, (std::vector<std::string>{".hooks", "local.gitconfig", "ok.sh", "real/new/conv.sh",
                                           "tools/new/conv.sh"}));
  // The benign neighbour: an existing path is compared as before, once.
  plan.named = {{"/w/sub", "core.hooksPath in /w/.git/config:3", 0}};
  got.clear();
  for (const auto& p : GitRunPathsIn("/w", GitScan{}, plan, resolve)) got.push_back(p.path);
  EXPECT_EQ(got, (std::vector<std::string>{"sub"}));
}

TEST(GitRunPaths, AtBeneathAndAbove) {
  const std::vector<GitRunPath> run = {{".githooks", "hooks"}, {"tools/conv.sh", "textconv"}};
  struct Row {
    const char* path;
    bool or_above;
    const char* hit;  // "" for none
  } rows[] = {
      {".githooks", false, ".githooks"},
      {".githooks/pre-commit", false, ".githooks"},
      {".GitHooks/pre-commit", false, ".githooks"},  // a case-folding file system
      {".githooks2/pre-commit", false, ""},          // another name with the same prefix
      {".github/workflows/ci.yml", false, ""},
      {"tools/conv.sh", false, "tools/conv.sh"},
      {"tools/other.sh", false, ""},
      {"tools", false, ""},              // making the directory on the way is harmless
      {"tools", true, "tools/conv.sh"},  // moving or removing it takes the program along
      {".", true, ".githooks"},
      {"src", true, ""},
  };
  for (const Row& row : rows) {
    auto hit = GitRunPathAt(run, row.path, row.or_above);
    EXPECT_EQ(hit ? hit->path : std::string(), row.hit) << row.path << " " << row.or_above;
  }
  EXPECT_TRUE(GitRunPathAt({{".", "the workspace"}}, "any/file", false));
  EXPECT_FALSE(GitRunPathAt({}, "any/file", true));
}

// The one rule of the gateway's fs writes and anvil serve's buffer edits.
TEST(GitRunPaths, WriteAllowedOnlyUnderAGrantNamingTheExactPath) {
  const std::vector<GitRunPath> run = {{".githooks", "core.hooksPath in /w/.git/config:3"}};
  const std::vector<std::string> all = {"**"};
  const std::vector<std::string> exact = {".githooks/pre-commit"};
  struct Row {
    const char* path;
    bool or_above;
    const std::vector<std::string>* globs;
    const char* want;  // "" for allowed, else a part of the refusal
  } rows[] = {
      {".githooks/pre-commit", false, &all,
       "editor.buffer.edit: .githooks/pre-commit lies beneath a path git runs or follows: "
       ".githooks (core.hooksPath in /w/.git/config:3); written only under a grant"},
      {".githooks", false, &all, ".githooks is a path git runs"},
      {".githooks/pre-commit", false, &exact, ""},
      {".githooks/pre-push", false, &exact, "lies beneath"},
      {".", true, &exact, "holds a path git runs"},  // no grant opens a move of it
      {"notes.txt", false, &all, ""},                // the benign neighbour
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.path);
    Status s = GitRunWriteAllowed(run, "editor.buffer.edit", row.path, row.or_above, *row.globs);
    if (std::string(row.want).empty()) {
      EXPECT_TRUE(s) << s.error().message;
    } else {
      ASSERT_FALSE(s);
      EXPECT_EQ(s.error().code, "denied");
      EXPECT_NE(s.error().message.find(row.want), std::string::npos) << s.error().message;
    }
  }
}

}  // namespace
}  // namespace git_run_paths_test
}  // namespace anvil
