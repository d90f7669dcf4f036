// policy/protected_subtrees.h: the one matcher of what git runs, Anvil's trust state and plugin
// code (table-tested: each kind, each reach, each refusal beside its benign neighbour).
#include "policy/protected_subtrees.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace anvil {
namespace protected_subtrees_test {
namespace {

TEST(ProtectedSubtrees, FoldsEachComponent) {
  EXPECT_EQ(FoldWorkspacePath("."), "");
  EXPECT_EQ(FoldWorkspacePath(""), "");
  EXPECT_EQ(FoldWorkspacePath(".GitHooks/Pre-Commit"), ".githooks/pre-commit");
  EXPECT_EQ(FoldWorkspacePath("cfg./Anvil "), "cfg/anvil");  // trailing dots and spaces
}

TEST(ProtectedSubtrees, MatchesAtBeneathAndAbove) {
  const ProtectedSubtrees roots({{ProtectedKind::kGitRun, ".githooks", "hooks"},
                                 {ProtectedKind::kTrustState, "cfg/anvil"},
                                 {ProtectedKind::kPluginCode, "plugins/p", "p"}});
  struct Row {
    const char* path;
    bool or_above;
    const char* root;  // "" for none
    ProtectedReach reach;
  } rows[] = {
      {".githooks", false, ".githooks", ProtectedReach::kAt},
      {".githooks/pre-commit", false, ".githooks", ProtectedReach::kBeneath},
      {".GitHooks/pre-commit", false, ".githooks", ProtectedReach::kBeneath},  // case-folding
      {".githooks./x", false, ".githooks", ProtectedReach::kBeneath},          // trailing dot
      {"CFG/Anvil/grants.json", false, "cfg/anvil", ProtectedReach::kBeneath},
      {"plugins/p/main.lua", false, "plugins/p", ProtectedReach::kBeneath},
      {"cfg", true, "cfg/anvil", ProtectedReach::kHolds},  // a move or removal takes it along
      {"plugins", true, "plugins/p", ProtectedReach::kHolds},
      {".", true, ".githooks", ProtectedReach::kHolds},  // the first root, in order
      // Benign neighbours.
      {"cfg", false, "", ProtectedReach::kAt},  // making the parent on the way: harmless
      {".githooks2/pre-commit", false, "", ProtectedReach::kAt},  // the same prefix, not a name
      {"cfg/anvil2", true, "", ProtectedReach::kAt},
      {"plugins/q", true, "", ProtectedReach::kAt},
      {".", false, "", ProtectedReach::kAt},
      {"README.md", true, "", ProtectedReach::kAt},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(row.path) + (row.or_above ? " or_above" : ""));
    auto hit = roots.Match(row.path, row.or_above);
    if (std::string(row.root).empty()) {
      EXPECT_FALSE(hit) << hit->root->path;
      continue;
    }
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->root->path, row.root);
    EXPECT_EQ(hit->reach, row.reach);
  }
}

TEST(ProtectedSubtrees, TheWorkspaceAsARootHoldsEveryPath) {
  const ProtectedSubtrees roots({{ProtectedKind::kTrustState, "."}});
  for (const char* path : {".", "a", "a/b/c"}) {
    auto hit = roots.Match(path, false);
    ASSERT_TRUE(hit) << path;
    EXPECT_EQ(hit->reach,
              std::string(path) == "." ? ProtectedReach::kAt : ProtectedReach::kBeneath);
  }
  EXPECT_FALSE(ProtectedSubtrees().Match(".", true));
}

TEST(ProtectedSubtrees, EachKindRefusesInItsOwnWords) {
  const ProtectedRoot git{ProtectedKind::kGitRun, ".githooks",
                          "core.hooksPath in /w/.git/config:3"};
  const ProtectedRoot trust{ProtectedKind::kTrustState, "cfg/anvil"};
  const ProtectedRoot whole{ProtectedKind::kTrustState, "."};
  const ProtectedRoot plugin{ProtectedKind::kPluginCode, "plugins/p", "acme.p"};
  const ProtectedRoot unparsed{ProtectedKind::kPluginCode, "."};
  struct Row {
    const ProtectedRoot* root;
    ProtectedReach reach;
    const char* path;
    const char* want;
  } rows[] = {
      {&git, ProtectedReach::kBeneath, ".githooks/pre-commit",
       "fs.write: .githooks/pre-commit lies beneath a path git runs or follows: .githooks "
       "(core.hooksPath in /w/.git/config:3); written only under a grant that names the exact "
       "path"},
      {&git, ProtectedReach::kAt, ".githooks",
       "fs.write: .githooks is a path git runs or follows: .githooks (core.hooksPath in "
       "/w/.git/config:3); written only under a grant that names the exact path"},
      {&git, ProtectedReach::kHolds, ".",
       "fs.write: . holds a path git runs or follows: .githooks (core.hooksPath in "
       "/w/.git/config:3)"},
      {&trust, ProtectedReach::kBeneath, "cfg/anvil/k.pub",
       "fs.write: cfg/anvil/k.pub lies in Anvil's own trust state (cfg/anvil: the grant store, "
       "trusted keys, command rules, config): a plugin never writes, makes, moves or removes it, "
       "whatever its grant, since it decides what every plugin may do (fix: change it with "
       "`anvil` outside the plugin, e.g. `anvil plugin approve`)"},
      {&trust, ProtectedReach::kHolds, "cfg", "fs.write: cfg holds Anvil's own trust state (cfg/"},
      {&whole, ProtectedReach::kBeneath, "a", "(the workspace itself: the grant store"},
      {&plugin, ProtectedReach::kBeneath, "plugins/p/main.lua",
       "fs.write: plugins/p/main.lua is plugin code of plugin acme.p (in plugins/p): a plugin "
       "never writes, makes, moves or removes a plugin's code, whatever its grant, since that "
       "plugin would run it with its own grant (fix: edit the plugin's files yourself)"},
      {&unparsed, ProtectedReach::kBeneath, "x.lua",
       "fs.write: x.lua is plugin code of the plugin in the workspace itself: "},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.path);
    const Error e = ProtectedWriteRefusal({row.root, row.reach}, "fs.write", row.path);
    EXPECT_EQ(e.code, "denied");
    EXPECT_NE(e.message.find(row.want), std::string::npos) << e.message;
  }
}

}  // namespace
}  // namespace protected_subtrees_test
}  // namespace anvil
