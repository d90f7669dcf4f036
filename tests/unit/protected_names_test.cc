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
#include "linux/git_quarantine.h"
#include "linux/real_host.h"
#include "policy/git_metadata.h"
#include "policy/protected_names_plan.h"
#include "policy/sandbox_policy.h"

namespace anvil {
namespace protected_names_test {
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
bool SandboxKeepsAtTheTop(const std::string& name, bool writable_git = false) {
  SandboxPolicy policy;
  policy.workspace = "/w";
  policy.writable_git = writable_git;
  HostFs host;
  host.resolve = [&](const std::string& p) -> std::optional<std::string> {
    if (p == "/w" || p == "/w/" + name) return p;
    return std::nullopt;
  };
  host.read_gitdir_pointer = [](const std::string&) { return std::optional<std::string>(); };
  host.is_symlink = [](const std::string&) { return false; };
  // The root and the name exist; the platform's read roots and masked files as the real host
  // has them.
  host.lstat_kind = [&](const std::string& p) {
    if (p == "/w" || p == "/w/" + name) return HostFs::Kind::kOther;
    return RealHostFs({}).lstat_kind(p);
  };
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
  // Every kind is named: nothing the walls act on is missing from the table (only the agents'
  // configurations and the other repositories' metadata have more than one name).
  size_t shared_names = 0;
  for (const ProtectedName& p : kProtectedNames) {
    shared_names +=
        p.kind == ProtectedNameKind::kAgentConfig || p.kind == ProtectedNameKind::kVcsMetadata ? 1
                                                                                               : 0;
  }
  EXPECT_EQ(kinds.size() + shared_names - 2, std::size(kProtectedNames));
}

// Other programs' configuration that runs code on the host, by name: Mercurial's and
// Jujutsu's repository metadata (hgrc hooks and extensions, jj's repo config), and more AI
// agents' project configuration. Each kept by both walls, at the top and below it.
TEST(ProtectedNames, OtherRepositoriesAndAgentsConfigsAreKeptByBothWalls) {
  for (const std::string name :
       {".hg", ".jj", ".sl", "_darcs", ".pijul", ".kiro", ".qwen", ".continue", ".roo", ".amazonq",
        "crush.json", ".crush.json", ".zed"}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(PluginWallKeeps(name));
    EXPECT_TRUE(SandboxKeepsAtTheTop(name));
    for (const bool directory : {true, false}) {
      EXPECT_TRUE(SandboxKeepsBelowTheTop(name, directory)) << "directory=" << directory;
    }
  }
  EXPECT_TRUE(PluginWallKeeps(".HG"));
  EXPECT_TRUE(PluginWallKeeps("_DARCS"));
  EXPECT_TRUE(PluginWallKeeps("Crush.json."));
}

// VS Code's folder-open tasks and MCP servers: a file of that name inside a `.vscode`
// directory, kept by both walls at the top and below it, in any spelling a file system maps to
// them; the rest of `.vscode`, and files of those names elsewhere, are left.
TEST(ProtectedNames, VsCodesTasksAndMcpServersAreKeptByBothWalls) {
  const V everything = {"**"};
  for (const std::string path : {".vscode/tasks.json", ".vscode/mcp.json"}) {
    SCOPED_TRACE(path);
    EXPECT_TRUE(IsProtectedPath(path));
    EXPECT_TRUE(IsProtectedPath("a/b/" + path));
    EXPECT_TRUE(IsProtectedPath(Upper(path)));
    EXPECT_FALSE(GrantAllows(everything, path, Access::kWrite));
    EXPECT_FALSE(GrantAllows(everything, "a/b/" + path, Access::kWrite));
    EXPECT_TRUE(SandboxKeepsAtTheTop(path));
    EXPECT_TRUE(SandboxKeepsBelowTheTop(path, false));
    EXPECT_TRUE(SandboxKeepsBelowTheTop(Upper(path), false));
  }
  EXPECT_EQ(ProtectedNameKindIn(".vscode", "tasks.json"), ProtectedNameKind::kEditorAutorun);
  EXPECT_EQ(ProtectedNameKindIn(".VSCode", "MCP.json."), ProtectedNameKind::kEditorAutorun);
  EXPECT_EQ(ProtectedNameKindIn("src", ".hg"), ProtectedNameKind::kVcsMetadata);
  EXPECT_EQ(ProtectedNameKindIn("src", "tasks.json"), std::nullopt);
  for (const std::string path :
       {".vscode/settings.json", ".vscode/launch.json", ".vscode/extensions.json", "tasks.json",
        "a/mcp.json", "vscode/tasks.json", ".vscode/tasks.json.bak", ".vscode/x/tasks.json",
        ".vscode"}) {
    SCOPED_TRACE(path);
    EXPECT_FALSE(IsProtectedPath(path));
    EXPECT_TRUE(GrantAllows(everything, "a/" + path, Access::kWrite));
    EXPECT_FALSE(SandboxKeepsAtTheTop(path));
    EXPECT_FALSE(SandboxKeepsBelowTheTop(path, false));
  }
}

// --writable-git opens every repository's metadata at the top of a root, git's and the other
// version control systems'; Anvil's names and the agents' stay kept.
TEST(ProtectedNames, WritableGitOpensEveryRepositorysMetadataOnly) {
  for (const std::string name : {".git", ".hg", ".jj", ".sl", "_darcs", ".pijul"}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(SandboxKeepsAtTheTop(name));
    EXPECT_FALSE(SandboxKeepsAtTheTop(name, true));
  }
  for (const std::string name : {".anvil", "Anvil.toml", ".claude", ".vscode/tasks.json"}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(SandboxKeepsAtTheTop(name, true));
  }
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
  for (const std::string name :
       {"anvil.lock.bak", "my-anvil.lock", "Anvil.tom", "anvil", ".anvil-tmp-x", ".github",
        ".gitignore", "notes.txt", ".hgignore", ".hgtags", "hgrc", ".crush", ".vscode", ".idea",
        ".kiro-notes", "jj"}) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(IsProtectedName(name));
    EXPECT_TRUE(GrantAllows({"**"}, "a/b/" + name, Access::kWrite));
    EXPECT_FALSE(SandboxKeepsAtTheTop(name));
    EXPECT_FALSE(SandboxKeepsBelowTheTop(name, false));
  }
}

TEST(MissingNamePlaceholders, GitInEveryRootAndNothingElse) {
  auto got = MissingNamePlaceholders({"/w", "/cache"}, false);
  V made;
  for (const auto& p : got) {
    EXPECT_TRUE(p.directory) << p.parent << "/" << p.name;
    made.push_back(p.parent + "/" + p.name);
  }
  // No Anvil.toml: the check after the run takes care of it (WorkspaceConfigChange).
  EXPECT_EQ(made, (V{"/w/.git", "/cache/.git"}));
  EXPECT_TRUE(MissingNamePlaceholders({"/w", "/cache"}, true).empty());
  EXPECT_TRUE(MissingNamePlaceholders({}, false).empty());
}

TEST(WatchesWorkspaceConfig, WhenTheWorkspaceIsInsideAWritableRoot) {
  EXPECT_TRUE(WatchesWorkspaceConfig({"/w", "/cache"}, "/w"));
  EXPECT_TRUE(WatchesWorkspaceConfig({"/cache", "/home/u/src"}, "/home/u/src/proj"));
  // A read-only workspace (no writable roots), or one only a root below it is writable in.
  EXPECT_FALSE(WatchesWorkspaceConfig({}, "/w"));
  EXPECT_FALSE(WatchesWorkspaceConfig({"/w/build"}, "/w"));
  EXPECT_FALSE(WatchesWorkspaceConfig({"/w2"}, "/w"));
  EXPECT_FALSE(WatchesWorkspaceConfig({"/w"}, ""));
}

ConfigEntry Entry(ConfigEntryKind kind, uint64_t ino = 0, int64_t ctime = 100) {
  ConfigEntry e;
  e.kind = kind;
  if (kind == ConfigEntryKind::kMissing) return e;
  e.dev = 7;
  e.ino = ino;
  e.ctime_sec = ctime;
  e.ctime_nsec = 5;
  return e;
}

TEST(WorkspaceConfigChange, AnythingButTheSameEntryIsMovedAsideAndAStrictRunComparesCtime) {
  using K = ConfigEntryKind;
  const ConfigEntry missing = Entry(K::kMissing);
  const ConfigEntry file = Entry(K::kFile, 10);
  struct Row {
    const char* what;
    ConfigEntry before, after;
    bool moved_strict, moved_lenient;
  } rows[] = {
      {"nothing before, nothing after", missing, missing, false, false},
      {"made: a file written or renamed into place", missing, Entry(K::kFile, 11), true, true},
      {"made: a symbolic link", missing, Entry(K::kSymlink, 11), true, true},
      {"made: a directory", missing, Entry(K::kDir, 11), true, true},
      {"made: a fifo or socket", missing, Entry(K::kOther, 11), true, true},
      {"the user's file, untouched", file, file, false, false},
      {"the user's file, gone (another run moved it)", file, missing, false, false},
      {"renamed over: another inode (an editor's save by rename too)", file, Entry(K::kFile, 11),
       true, true},
      {"replaced by a symlink", file, Entry(K::kSymlink, 11), true, true},
      {"another inode with the same number on another device", file,
       [] {
         ConfigEntry e = Entry(K::kFile, 10);
         e.dev = 8;
         return e;
       }(),
       true, true},
      {"a symlink left alone, then replaced by a file", Entry(K::kSymlink, 20), Entry(K::kFile, 21),
       true, true},
      {"a symlink replaced by a file that got its inode number", Entry(K::kSymlink, 20),
       Entry(K::kFile, 20), true, true},
      // Not strict: no other run's command could reach the bound file, so the user on the host
      // changed it (an edit in place); strict: a command may have changed it and put it back.
      {"the same inode changed (edited in place, moved away and back, chmod)", file,
       Entry(K::kFile, 10, 101), true, false},
      {"the same inode, ctime nanoseconds apart", file,
       [] {
         ConfigEntry e = Entry(K::kFile, 10);
         e.ctime_nsec = 6;
         return e;
       }(),
       true, false},
      {"an older sandbox's placeholder directory, still there", Entry(K::kDir, 30),
       Entry(K::kDir, 30), false, false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    for (bool strict : {true, false}) {
      auto why = WorkspaceConfigChange(row.before, row.after, strict);
      EXPECT_EQ(why.has_value(), strict ? row.moved_strict : row.moved_lenient) << strict;
      if (why) {
        EXPECT_FALSE(why->empty());
      }
    }
  }
  EXPECT_NE(WorkspaceConfigChange(missing, file, false)->find("did not exist"), std::string::npos);
  EXPECT_NE(WorkspaceConfigChange(file, Entry(K::kFile, 11), false)->find("replaced"),
            std::string::npos);
  EXPECT_NE(WorkspaceConfigChange(file, Entry(K::kFile, 10, 101), true)->find("changed"),
            std::string::npos);
}

TEST(ConfigWatchIsStrict, OnlyWhenAnotherRunsLockWasSeenOrTheEntryMoved) {
  using K = ConfigEntryKind;
  const ConfigEntry missing = Entry(K::kMissing);
  const ConfigEntry file = Entry(K::kFile, 10);
  struct Row {
    const char* what;
    ConfigEntry probe, before;
    bool seen, strict;
  } rows[] = {
      {"an entry, no other lock", file, file, false, false},
      {"an entry, another run's lock seen", file, file, true, true},
      {"an entry whose ctime moved between the looks (no lock)", file, Entry(K::kFile, 10, 101),
       false, false},
      {"another inode by the record", file, Entry(K::kFile, 11), false, true},
      {"missing at the probe, there at the record", missing, file, false, true},
      {"another kind by the record", Entry(K::kDir, 10), file, false, true},
      {"missing at the record: a watcher, which compares nothing but presence", file, missing, true,
       false},
      {"missing both times", missing, missing, false, false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    EXPECT_EQ(ConfigWatchIsStrict(row.probe, row.before, row.seen), row.strict);
  }
}

TEST(ConfigWatchLockOffset, ZeroForWatchersAndStrictRunsElseOnePastTheInode) {
  using K = ConfigEntryKind;
  EXPECT_EQ(ConfigWatchLockOffset(Entry(K::kMissing), false), 0);
  EXPECT_EQ(ConfigWatchLockOffset(Entry(K::kMissing), true), 0);
  EXPECT_EQ(ConfigWatchLockOffset(Entry(K::kFile, 10), true), 0);
  EXPECT_EQ(ConfigWatchLockOffset(Entry(K::kFile, 10), false), 11);
  EXPECT_EQ(ConfigWatchLockOffset(Entry(K::kDir, 0), false), 1);
  // Inodes past 2^62 fold into the range a lock can start at; never 0.
  ConfigEntry big = Entry(K::kFile, ~uint64_t{0});
  EXPECT_EQ(ConfigWatchLockOffset(big, false), int64_t{1} << 62);
  big.ino = uint64_t{1} << 62;
  EXPECT_EQ(ConfigWatchLockOffset(big, false), 1);
  EXPECT_EQ(kConfigWatchAnyChangeOffset, 0);
}

TEST(ConfigQuarantineName, TheGitQuarantinesSuffixNumberedAndNeverAnvilToml) {
  EXPECT_EQ(kConfigQuarantineSuffix, kGitQuarantineSuffix);
  EXPECT_EQ(ConfigQuarantineName("Anvil.toml", 1), "Anvil.toml.anvil-quarantine");
  EXPECT_EQ(ConfigQuarantineName("Anvil.toml", 2), "Anvil.toml.anvil-quarantine-2");
  EXPECT_EQ(ConfigQuarantineName("Anvil.toml", 100), "Anvil.toml.anvil-quarantine-100");
  for (int n : {1, 2, kConfigQuarantineAttempts}) {
    EXPECT_FALSE(IsProtectedName(ConfigQuarantineName("Anvil.toml", n))) << n;
  }
}

TEST(ConfigQuarantineMessage, OneLineNamingTheFileWhyAndWhatToDo) {
  ConfigQuarantine q;
  q.path = "/w s/Anvil.toml";
  q.moved_to = "/w s/Anvil.toml.anvil-quarantine";
  q.reason = "it did not exist when the sandboxed command started";
  const std::string moved = ConfigQuarantineMessage(q);
  EXPECT_EQ(moved.find('\n'), std::string::npos);
  for (const char* part :
       {"/w s/Anvil.toml aside to /w s/Anvil.toml.anvil-quarantine", "did not exist", "Review it",
        "mv -n '/w s/Anvil.toml.anvil-quarantine' '/w s/Anvil.toml'"}) {
    EXPECT_NE(moved.find(part), std::string::npos) << part << "\n" << moved;
  }
  EXPECT_EQ(ConfigQuarantineRestore(q),
            "mv -n '/w s/Anvil.toml.anvil-quarantine' '/w s/Anvil.toml'");
  q.moved_to.clear();
  q.failure = "rename: Invalid argument";
  const std::string failed = ConfigQuarantineMessage(q);
  EXPECT_EQ(failed.find('\n'), std::string::npos);
  EXPECT_EQ(failed.rfind("WARNING: /w s/Anvil.toml could not be moved aside", 0), 0u) << failed;
  EXPECT_NE(failed.find("Invalid argument"), std::string::npos) << failed;
  EXPECT_TRUE(ConfigQuarantineRestore(q).empty());
}

// The names are the command's (red team s12 F4): a CR, ESC or OSC in one is shown escaped, and
// the restore command escapes those bytes so that what is shown is what a shell runs.
TEST(ConfigQuarantineMessage, TheCommandsNamesAreShownSanitized) {
  ConfigQuarantine q;
  q.path = "/w/p\x1b]0;T\aq\r/Anvil.toml";
  q.moved_to = q.path + ".anvil-quarantine";
  q.reason = "made in \x1b[2K/w/p";
  const std::string moved = ConfigQuarantineMessage(q);
  for (char c : {'\x1b', '\a', '\r', '\n'}) EXPECT_EQ(moved.find(c), std::string::npos) << moved;
  EXPECT_EQ(ConfigQuarantineRestore(q),
            "mv -n $'/w/p\\x1b]0;T\\x07q\\x0d/Anvil.toml.anvil-quarantine' "
            "$'/w/p\\x1b]0;T\\x07q\\x0d/Anvil.toml'");
  EXPECT_NE(moved.find(ConfigQuarantineRestore(q)), std::string::npos) << moved;
  q.moved_to.clear();
  q.failure = "rename \x1b[8m";
  const std::string failed = ConfigQuarantineMessage(q);
  for (char c : {'\x1b', '\a', '\r'}) EXPECT_EQ(failed.find(c), std::string::npos) << failed;
}

TEST(ConfigQuarantineMessage, EachNameSaysWhatItIs) {
  struct Case {
    ProtectedNameKind kind;
    const char* path;
    const char* says;
  } cases[] = {
      {ProtectedNameKind::kWorkspaceConfig, "/w/sub/Anvil.toml",
       "may not make or change Anvil.toml (it enables plugins and hands them settings)"},
      {ProtectedNameKind::kPluginLock, "/w/sub/ANVIL.LOCK",
       "may not make or change anvil.lock (it pins each plugin's manifest and code)"},
      {ProtectedNameKind::kAnvilState, "/w/sub/.anvil",
       "may not make or change .anvil (it holds Anvil's state for the workspace"},
      {ProtectedNameKind::kVcsMetadata, "/w/sub/.hg",
       "may not make or change a version control repository's metadata (it holds the config "
       "hg, jj, sl, darcs and pijul read on the host"},
      {ProtectedNameKind::kEditorAutorun, "/w/sub/.vscode/tasks.json",
       "may not make or change VS Code's folder-open tasks or MCP servers (it tells VS Code what "
       "to "
       "run on the host"},
  };
  for (const Case& c : cases) {
    ConfigQuarantine q;
    q.kind = c.kind;
    q.path = c.path;
    q.moved_to = std::string(c.path) + ".anvil-quarantine";
    q.reason = "it did not exist when the sandboxed command started";
    const std::string moved = ConfigQuarantineMessage(q);
    EXPECT_EQ(moved.rfind("moved " + q.path + " aside to " + q.moved_to + ": it did not", 0), 0u)
        << moved;
    EXPECT_NE(moved.find(c.says), std::string::npos) << moved;
    EXPECT_NE(moved.find("mv -n " + q.moved_to + " " + q.path), std::string::npos) << moved;
    q.moved_to.clear();
    q.failure = "rename: Invalid argument";
    const std::string failed = ConfigQuarantineMessage(q);
    EXPECT_EQ(failed.rfind("WARNING: " + q.path + " could not be moved aside", 0), 0u) << failed;
  }
}

TEST(NewProtectedNames, OnlyWhatTheWalkBeforeDidNotFind) {
  using K = ProtectedNameKind;
  struct Case {
    const char* what;
    V before;
    V after;
    V skip;
    std::vector<std::pair<std::string, K>> moved;  // path, kind
  } cases[] = {
      {"nothing new", {"/w/a/Anvil.toml", "/w/.anvil"}, {"/w/a/Anvil.toml", "/w/.anvil"}, {}, {}},
      {"nothing at all", {}, {}, {}, {}},
      {"one gone since (the user's rm on the host): nothing to do",
       {"/w/a/Anvil.toml"},
       {},
       {},
       {}},
      {"made below the top",
       {"/w/own/Anvil.toml"},
       {"/w/own/Anvil.toml", "/w/sub/Anvil.toml", "/w/sub/.anvil", "/w/d/e/anvil.lock"},
       {},
       {{"/w/d/e/anvil.lock", K::kPluginLock},
        {"/w/sub/.anvil", K::kAnvilState},
        {"/w/sub/Anvil.toml", K::kWorkspaceConfig}}},
      {"any spelling the table maps",
       {},
       {"/w/a/ANVIL.TOML", "/w/a/Anvil.toml.", "/w/b/.ANVIL"},
       {},
       {{"/w/a/ANVIL.TOML", K::kWorkspaceConfig},
        {"/w/a/Anvil.toml.", K::kWorkspaceConfig},
        {"/w/b/.ANVIL", K::kAnvilState}}},
      {"inside a new one: goes with it",
       {},
       {"/w/s/.anvil", "/w/s/.anvil/Anvil.toml", "/w/s/.anvil-x/anvil.lock"},
       {},
       {{"/w/s/.anvil", K::kAnvilState}, {"/w/s/.anvil-x/anvil.lock", K::kPluginLock}}},
      {"the workspace's Anvil.toml is its own check's",
       {},
       {"/w/Anvil.toml", "/w/sub/Anvil.toml"},
       {"/w/Anvil.toml"},
       {{"/w/sub/Anvil.toml", K::kWorkspaceConfig}}},
      {"at the top of a root, and in another root",
       {},
       {"/w/anvil.lock", "/t/Anvil.toml"},
       {},
       {{"/t/Anvil.toml", K::kWorkspaceConfig}, {"/w/anvil.lock", K::kPluginLock}}},
      {"never .git (the git check's), another name, a root itself or outside the roots",
       {},
       {"/w/a/.git", "/w/a/notes.toml", "/w", "/elsewhere/Anvil.toml"},
       {},
       {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto moves = NewProtectedNames(c.before, c.after, {"/w", "/t", "/w/inner"}, c.skip);
    std::vector<std::pair<std::string, K>> got;
    for (const auto& m : moves) got.emplace_back(m.path, m.kind);
    EXPECT_EQ(got, c.moved);
  }
  // Each with the deepest root holding it.
  auto moves =
      NewProtectedNames({}, {"/w/inner/x/Anvil.toml", "/w/x/Anvil.toml"}, {"/w", "/w/inner"}, {});
  ASSERT_EQ(moves.size(), 2u);
  EXPECT_EQ(moves[0].root, "/w/inner");
  EXPECT_EQ(moves[1].root, "/w");
}

// The git quarantine renames a repository aside before the names are moved: a new name inside
// it is moved where it lies now (after each rename, in order: an inner repository is renamed
// before the one holding it); one renamed aside itself is dropped. Elsewhere nothing changes.
TEST(ProtectedNamesAfterRenames, WhereTheyLieOnceRepositoriesAreMovedAside) {
  using K = ProtectedNameKind;
  const std::vector<ProtectedNameMove> moves = {
      {"/w/hk/Anvil.toml", "/w", K::kWorkspaceConfig},
      {"/w/hk/in/anvil.lock", "/w", K::kPluginLock},
      {"/w/hkx/Anvil.toml", "/w", K::kWorkspaceConfig},  // a sibling sharing the prefix
      {"/w/sub/.anvil", "/w", K::kAnvilState},           // itself a git dir, renamed aside
      {"/w/other/Anvil.toml", "/w", K::kWorkspaceConfig},
  };
  const std::vector<std::pair<std::string, std::string>> renamed = {
      {"/w/hk/in", "/w/hk/in.anvil-quarantine"},
      {"/w/hk", "/w/hk.anvil-quarantine"},
      {"/w/sub/.anvil", "/w/sub/.anvil.anvil-quarantine"},
  };
  auto got = ProtectedNamesAfterRenames(moves, renamed);
  V paths;
  for (const auto& m : got) {
    paths.push_back(m.path);
    EXPECT_EQ(m.root, "/w");
  }
  EXPECT_EQ(paths, (V{"/w/hk.anvil-quarantine/Anvil.toml",
                      "/w/hk.anvil-quarantine/in.anvil-quarantine/anvil.lock", "/w/hkx/Anvil.toml",
                      "/w/other/Anvil.toml"}));
  // Nothing renamed: the same moves.
  EXPECT_EQ(ProtectedNamesAfterRenames(moves, {}).size(), moves.size());
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
}  // namespace protected_names_test
}  // namespace anvil
