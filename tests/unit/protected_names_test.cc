// T1/T8, pure layer: the protected names are one table (fs/protected_names.h) and both walls
// keep every name of it — the plugin side's grant decision (fs/path_glob.h, GrantAllows, which
// the gateway's fs ops apply) and the command sandbox's view of its writable roots (the top of
// a root: ComputeFileView; anywhere below: the walk and PlanProtectedNames) — and neither keeps
// a name that is not in it. What the sandbox does for a missing name, and where it pins.
#include "fs/protected_names.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "fake_git_tree.h"
#include "fs/path_glob.h"
#include "policy/git_metadata.h"
#include "policy/protected_names_plan.h"
#include "policy/sandbox_policy.h"

namespace anvil {
namespace {

using V = std::vector<std::string>;
using testing_support::FakeTree;

bool Contains(const V& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

std::string Upper(std::string s) {
  for (char& c : s) c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
  return s;
}

// The plugin wall: a wildcard grant never writes it, at the top of the workspace or deeper.
bool PluginWallKeeps(const std::string& name) {
  const V everything = {"**"};
  return IsProtectedName(name) && !GrantAllows(everything, name, Access::kWrite) &&
         !GrantAllows(everything, "a/b/" + name, Access::kWrite) &&
         !GrantAllows(everything, "a/b/" + name + "/x", Access::kWrite);
}

// The command sandbox's wall at the top of a writable root: the view binds it read-only.
bool SandboxKeepsAtTheTop(const std::string& name) {
  SandboxPolicy policy;
  policy.workspace = "/w";
  HostFs host;
  host.resolve = [&](const std::string& p) -> std::optional<std::string> {
    if (p == "/w" || p == "/w/" + name) return p;
    return std::nullopt;
  };
  host.read_gitdir_pointer = [](const std::string&) { return std::optional<std::string>(); };
  host.is_symlink = [](const std::string&) { return false; };
  auto view = ComputeFileView(policy, host);
  return view && Contains(view->writable_roots[0].read_only_subpaths, "/w/" + name);
}

// The command sandbox's wall below the top: the walk finds it and the plans keep it read-only
// (.git through the git plan, the others through PlanProtectedNames).
bool SandboxKeepsBelowTheTop(const std::string& name, bool directory) {
  FakeTree t;
  const std::string path = "/w/a/b/" + name;
  if (directory) {
    t.Dir(path);
  } else {
    t.File(path);
  }
  t.File("/w/a/b/other.txt");
  GitEnv env;
  auto fs = t.Fs();
  auto scan = ScanGitMetadata({"/w"}, env, fs, {});
  if (!scan) return false;
  auto git = PlanGitProtection(*scan, env, fs, {});
  auto names = PlanProtectedNames(scan->protected_names, {"/w"}, git.read_only, 0, 100);
  const bool kept = Contains(git.read_only, path) || Contains(names.read_only, path);
  return kept && !Contains(git.read_only, "/w/a/b/other.txt") &&
         !Contains(names.read_only, "/w/a/b/other.txt");
}

TEST(ProtectedNames, TheTableIsWhatBothWallsKeep) {
  std::set<ProtectedNameKind> kinds;
  for (const ProtectedName& p : kProtectedNames) {
    const std::string name(p.name);
    SCOPED_TRACE(name);
    kinds.insert(p.kind);
    EXPECT_EQ(ProtectedNameKindOf(name), p.kind);
    EXPECT_TRUE(PluginWallKeeps(name));
    EXPECT_TRUE(SandboxKeepsAtTheTop(name));
    for (const bool directory : {true, false}) {
      // A .git is a repository to the walk when it is a directory or a `gitdir:` file; an
      // empty file named .git is nothing git uses.
      if (p.kind == ProtectedNameKind::kGitMetadata && !directory) continue;
      EXPECT_TRUE(SandboxKeepsBelowTheTop(name, directory)) << "directory=" << directory;
      // In any case: a case-folding filesystem opens the entry under the other spelling.
      EXPECT_TRUE(PluginWallKeeps(Upper(name)));
      EXPECT_TRUE(SandboxKeepsBelowTheTop(Upper(name), directory)) << "directory=" << directory;
    }
  }
  // Every kind is named once: nothing the walls act on is missing from the table.
  EXPECT_EQ(kinds.size(), std::size(kProtectedNames));
}

TEST(ProtectedNames, FoldedSpellingsOfAnvilsOwnFilesAreKeptByBothWalls) {
  // NTFS/SMB drop trailing dots and spaces; ext4/f2fs casefold maps KELVIN SIGN to k.
  for (const std::string name : {"anvil.lock.", "Anvil.toml ", "anvil.loc\xE2\x84\xAA", ".ANVIL"}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(PluginWallKeeps(name));
    EXPECT_TRUE(SandboxKeepsBelowTheTop(name, false));
  }
}

TEST(ProtectedNames, OtherNamesAreLeftToBothWalls) {
  for (const std::string name : {"anvil.lock.bak", "my-anvil.lock", "Anvil.tom", "anvil",
                                 ".anvil-tmp-x", ".github", ".gitignore", "notes.txt"}) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(IsProtectedName(name));
    EXPECT_TRUE(GrantAllows({"**"}, "a/b/" + name, Access::kWrite));
    EXPECT_FALSE(SandboxKeepsAtTheTop(name));
    EXPECT_FALSE(SandboxKeepsBelowTheTop(name, false));
  }
}

TEST(MissingNamePlaceholders, GitInEveryRootAnvilTomlInTheWorkspace) {
  auto got = MissingNamePlaceholders({"/w", "/cache"}, "/w", false);
  V made;
  for (const auto& p : got) {
    EXPECT_TRUE(p.directory) << p.parent << "/" << p.name;
    made.push_back(p.parent + "/" + p.name);
  }
  EXPECT_EQ(made, (V{"/w/.git", "/cache/.git", "/w/Anvil.toml"}));
  got = MissingNamePlaceholders({"/w", "/cache"}, "/w", true);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].parent + "/" + got[0].name, "/w/Anvil.toml");
  // A workspace that is not a writable root (read-only policy) gets none.
  EXPECT_TRUE(MissingNamePlaceholders({}, "/w", true).empty());
}

TEST(PlanProtectedNames, ReadOnlyOncePinnedOnTheWayDown) {
  auto plan = PlanProtectedNames(
      {"/w/anvil.lock", "/w/a/b/anvil.lock", "/w/a/b/Anvil.toml", "/w/a/.anvil",
       "/w/a/.anvil/x/anvil.lock", "/w/hooks/anvil.lock", "/w/inner/c/Anvil.toml", "/w",
       "/elsewhere/anvil.lock", "/w/a/b/anvil.lock"},
      {"/w", "/w/inner"}, {"/w/hooks"}, 0, 100);
  EXPECT_TRUE(plan.problems.empty());
  // Inside .anvil or a path the git plan keeps: covered by it. A root or outside every root:
  // nothing to keep.
  EXPECT_EQ(plan.read_only, (V{"/w/a/.anvil", "/w/a/b/Anvil.toml", "/w/a/b/anvil.lock",
                               "/w/anvil.lock", "/w/inner/c/Anvil.toml"}));
  // From the deepest root holding each; never a root itself.
  EXPECT_EQ(plan.pinned, (V{"/w/a", "/w/a/b", "/w/inner/c"}));
}

TEST(PlanProtectedNames, TheMountsAreBoundedWithTheGitPlans) {
  const V found = {"/w/a/anvil.lock", "/w/b/anvil.lock"};  // two binds, two pins
  EXPECT_TRUE(PlanProtectedNames(found, {"/w"}, {}, 6, 10).problems.empty());
  auto over = PlanProtectedNames(found, {"/w"}, {}, 7, 10);
  ASSERT_EQ(over.problems.size(), 1u);
  EXPECT_EQ(over.problems[0].code, "limit");
  EXPECT_NE(over.problems[0].message.find("'paths' bound is 10"), std::string::npos);
  EXPECT_NE(over.problems[0].message.find("--git-scan-limit paths=N"), std::string::npos);
}

}  // namespace
}  // namespace anvil
