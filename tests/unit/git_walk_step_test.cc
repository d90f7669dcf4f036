// The walk looks through every directory it lists alike (policy/git_walk_step.h): a directory
// that is a git dir by its shape is recorded as a repository and still walked, so neither
// Anvil's protected names nor the repositories git finds when started below it are hidden by
// it; a `.git` is never entered. Each attack beside its benign neighbour.
#include "policy/git_walk_step.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fake_git_tree.h"
#include "policy/git_metadata.h"

namespace anvil {
namespace git_walk_step_test {
namespace {

using V = std::vector<std::string>;
using testing_support::FakeTree;

using testing_support::GitDirShape;

GitEnv Env() { return testing_support::TestGitEnv(); }
V Markers(const GitScan& scan) { return testing_support::SortedMarkers(scan); }

V Names(const GitScan& scan) {
  V out = scan.protected_names;
  std::sort(out.begin(), out.end());
  return out;
}

TEST(DecideGitWalkEntry, EveryEntryTheSameInEveryDirectory) {
  using D = GitWalkDescent;
  const auto kDir = GitFileType::kDir;
  const auto kFile = GitFileType::kFile;
  const auto kLink = GitFileType::kSymlink;
  const auto kOther = GitFileType::kOther;
  struct Row {
    const char* name;
    GitFileType type;
    size_t depth;
    bool protected_name;
    std::optional<GitMarkerKind> marker;
    D descent;
  } rows[] = {
      {"src", kDir, 0, false, std::nullopt, D::kWalk},
      {"objects", kDir, 3, false, std::nullopt, D::kWalk},  // a git dir's own: walked too
      {"refs", kDir, 3, false, std::nullopt, D::kWalk},
      {"HEAD", kFile, 3, false, std::nullopt, D::kNone},
      {"Anvil.toml", kFile, 0, true, std::nullopt, D::kNone},
      {"ANVIL.TOML", kFile, 5, true, std::nullopt, D::kNone},  // any spelling the table maps
      {"Anvil.toml", kDir, 1, true, std::nullopt, D::kWalk},   // a directory of the name
      {".anvil", kDir, 2, true, std::nullopt, D::kWalk},
      {"anvil.lock", kFile, 2, true, std::nullopt, D::kNone},
      {"anvil.lock", kLink, 2, false, std::nullopt, D::kNone},  // Anvil refuses a link
      {"anvil.lock.bak", kFile, 2, false, std::nullopt, D::kNone},
      // hg and jj follow a link by their name, as an agent does its own: the link counts.
      {".hg", kDir, 1, true, std::nullopt, D::kWalk},
      {".hg", kLink, 1, true, std::nullopt, D::kNone},
      {".JJ", kLink, 3, true, std::nullopt, D::kNone},
      {".claude", kLink, 1, true, std::nullopt, D::kNone},
      {".hgignore", kFile, 0, false, std::nullopt, D::kNone},
      {".git", kDir, 1, false, GitMarkerKind::kGitDir, D::kNone},  // never entered
      // Another spelling: a git dir where names fold case, an ordinary directory elsewhere.
      {".GIT", kDir, 1, false, GitMarkerKind::kGitDir, D::kWalk},
      {".Git", kDir, 10, false, GitMarkerKind::kGitDir, D::kPastDepth},
      {".GIT", kFile, 1, false, GitMarkerKind::kGitFile, D::kNone},
      {".git", kFile, 1, false, GitMarkerKind::kGitFile, D::kNone},
      {".git", kLink, 1, false, GitMarkerKind::kGitLink, D::kNone},
      {".git", kOther, 1, false, std::nullopt, D::kNone},  // a socket: nothing git reads
      // Spellings a file system may fold to `.git` when git looks it up (red team s5 rtcmd5:
      // the marker test was ASCII case only): the protected names' one fold.
      {".g\u200cit", kFile, 1, false, GitMarkerKind::kGitFile, D::kNone},  // ZWNJ, ignored
      {".\u200dgit", kLink, 1, false, GitMarkerKind::kGitLink, D::kNone},
      {"\ufeff.GIT", kFile, 1, false, GitMarkerKind::kGitFile, D::kNone},  // BOM
      {".gi\u202et", kDir, 1, false, GitMarkerKind::kGitDir, D::kWalk},    // walked too
      {".git.", kFile, 1, false, GitMarkerKind::kGitFile, D::kNone},       // trailing dot
      {".git ", kDir, 1, false, GitMarkerKind::kGitDir, D::kWalk},
      // Benign neighbours: names that are not `.git` under any fold.
      {".gitignore", kFile, 0, false, std::nullopt, D::kNone},
      {".github", kDir, 0, false, std::nullopt, D::kWalk},
      {".git\u00e9", kFile, 0, false, std::nullopt, D::kNone},
      {".g\u00eft", kFile, 0, false, std::nullopt, D::kNone},
      {"git", kFile, 0, false, std::nullopt, D::kNone},
      {"linked", kLink, 0, false, std::nullopt, D::kNone},  // not followed
      {"deep", kDir, 9, false, std::nullopt, D::kWalk},
      {"deeper", kDir, 10, false, std::nullopt, D::kPastDepth},
      {".anvil", kDir, 10, true, std::nullopt, D::kPastDepth},  // recorded, not entered
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(row.name) + " at depth " + std::to_string(row.depth));
    const GitWalkStep step = DecideGitWalkEntry({row.name, row.type}, "src", row.depth, 10);
    EXPECT_EQ(step.protected_name, row.protected_name);
    EXPECT_EQ(step.marker, row.marker);
    EXPECT_EQ(step.descent, row.descent);
  }
}

// A file of kProtectedFilesIn (VS Code's tasks.json and mcp.json) is a protected name in a
// directory named `.vscode`, in any spelling the table folds, and a link by its name too (VS
// Code follows one); the same name elsewhere, and .vscode's other files, are not.
TEST(DecideGitWalkEntry, VsCodesTasksAreProtectedOnlyInItsDirectory) {
  const auto kFile = GitFileType::kFile;
  struct Row {
    const char* dir;
    const char* name;
    GitFileType type;
    bool protected_name;
  } rows[] = {
      {".vscode", "tasks.json", kFile, true},
      {".vscode", "mcp.json", kFile, true},
      {".VSCODE", "Tasks.json.", kFile, true},
      {".vscode", "tasks.json", GitFileType::kSymlink, true},
      {".vscode", "tasks.json", GitFileType::kDir, true},
      {".vscode", "settings.json", kFile, false},
      {".vscode", "launch.json", kFile, false},
      {".vscode", "extensions.json", kFile, false},
      {"src", "tasks.json", kFile, false},
      {"vscode", "mcp.json", kFile, false},
      {".vscode", ".hg", GitFileType::kDir, true},  // a protected name in any directory
      // A `.vscode` symlink: VS Code reads the tasks through it (review s14); a directory by
      // that name is walked, only its listed files protected.
      {"src", ".vscode", GitFileType::kSymlink, true},
      {"src", ".VSCode.", GitFileType::kSymlink, true},
      {"src", ".vscode", GitFileType::kDir, false},
      {"src", "vscode", GitFileType::kSymlink, false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(row.dir) + "/" + row.name);
    EXPECT_EQ(DecideGitWalkEntry({row.name, row.type}, row.dir, 1, 10).protected_name,
              row.protected_name);
  }
}

// The attack: a command shapes `sub` (either shape, or the top itself) like a git dir and
// plants below it. Everything below is found: the names, and the repositories git started
// there would use.
TEST(ScanGitMetadata, NothingBelowADirectoryShapedLikeAGitDirIsHidden) {
  FakeTree t;
  t.GitInit("/w");
  GitDirShape(t, "/w/sub");
  t.File("/w/sub/Anvil.toml");
  t.Dir("/w/sub/.anvil");
  t.File("/w/sub/a/b/anvil.lock");
  t.GitInit("/w/sub/a");                   // git started in sub/a uses sub/a/.git
  GitDirShape(t, "/w/sub/objects/inner");  // and in sub/objects/inner, that git dir
  t.File("/w/wt/HEAD", "ref: refs/heads/main\n");
  t.File("/w/wt/commondir", "../.git\n");
  t.File("/w/wt/deep/Anvil.toml");
  auto fs = t.Fs();
  for (GitBoundMode mode : {GitBoundMode::kFail, GitBoundMode::kSkipAndName}) {
    auto scan = ScanGitMetadata({"/w"}, Env(), fs, {}, nullptr, mode);
    ASSERT_TRUE(scan) << scan.error().ToString();
    EXPECT_EQ(Names(*scan), (V{"/w/sub/.anvil", "/w/sub/Anvil.toml", "/w/sub/a/b/anvil.lock",
                               "/w/wt/deep/Anvil.toml"}));
    EXPECT_EQ(Markers(*scan),
              (V{"/w/.git", "/w/sub", "/w/sub/a/.git", "/w/sub/objects/inner", "/w/wt"}));
    EXPECT_TRUE(scan->unwalked.empty());
  }
}

// The attack on a file system that does not fold case: `.GIT` is an ordinary directory there,
// and git started in `.GIT/w` uses `.GIT/w/.git`, Anvil started in `.GIT` reads its
// Anvil.toml. Recorded as a repository (where names fold case it is one) and walked below.
// Benign neighbour: `.git` itself is still not entered.
TEST(ScanGitMetadata, NothingBelowAnotherSpellingOfDotGitIsHidden) {
  FakeTree t;
  t.GitInit("/w");
  t.File("/w/.git/Anvil.toml");  // inside the real one: not entered
  t.File("/w/sub/.GIT/Anvil.toml");
  t.GitInit("/w/sub/.GIT/w");
  auto fs = t.Fs();
  for (GitBoundMode mode : {GitBoundMode::kFail, GitBoundMode::kSkipAndName}) {
    auto scan = ScanGitMetadata({"/w"}, Env(), fs, {}, nullptr, mode);
    ASSERT_TRUE(scan) << scan.error().ToString();
    EXPECT_EQ(Names(*scan), V{"/w/sub/.GIT/Anvil.toml"});
    EXPECT_EQ(Markers(*scan), (V{"/w/.git", "/w/sub/.GIT", "/w/sub/.GIT/w/.git"}));
  }
}

TEST(ScanGitMetadata, ATopShapedLikeAGitDirIsWalkedBelow) {
  FakeTree t;
  GitDirShape(t, "/w");
  t.Dir("/w/.anvil");
  t.File("/w/anvil.lock");
  t.File("/w/sub/Anvil.toml");
  t.GitInit("/w/sub");
  auto fs = t.Fs();
  auto scan = ScanGitMetadata({"/w"}, Env(), fs, {}, nullptr, GitBoundMode::kSkipAndName);
  ASSERT_TRUE(scan) << scan.error().ToString();
  EXPECT_EQ(Names(*scan), (V{"/w/.anvil", "/w/anvil.lock", "/w/sub/Anvil.toml"}));
  EXPECT_EQ(Markers(*scan), (V{"/w", "/w/sub/.git"}));
}

// Walked within the same bounds as the rest: past 'depth' below a git dir shape, the walk
// before the run fails and the one after names the subtree; its entries count.
TEST(ScanGitMetadata, BelowAGitDirShapeTheSameBoundsApply) {
  FakeTree t;
  GitDirShape(t, "/w/sub");
  t.File("/w/sub/a/b/Anvil.toml");
  auto fs = t.Fs();
  const GitScanLimits shallow{.depth = 2};
  auto before = ScanGitMetadata({"/w"}, Env(), fs, shallow);
  ASSERT_FALSE(before);
  EXPECT_NE(before.error().message.find("/w/sub/a/b"), std::string::npos) << before.error().message;
  auto after = ScanGitMetadata({"/w"}, Env(), fs, shallow, nullptr, GitBoundMode::kSkipAndName);
  ASSERT_TRUE(after) << after.error().ToString();
  ASSERT_EQ(after->unwalked.size(), 1u);
  EXPECT_EQ(after->unwalked[0].path, "/w/sub/a/b");
  auto all = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(all);
  // /w: sub; sub: HEAD objects refs a; a: b; b: Anvil.toml.
  EXPECT_EQ(all->entries, 7u);
}

// The attack where names fold (a casefold ext4 or tmpfs directory ignores default-ignorable code
// points): a `.g\u200cit` file is the `.git` git opens there, pointing where the command likes,
// and a `.\u200dgit` directory is the repository git uses. Each is recorded as a repository,
// also when a later walk takes the directory's entries from the memo; the directory is walked
// too. Benign neighbour: `.gitignore` and `.github` are nothing of git's.
TEST(ScanGitMetadata, EverySpellingOfDotGitThatFoldsIsARepository) {
  FakeTree t;
  t.wall = 100;
  t.GitInit("/w");
  t.File("/w/a/.g\u200cit", "gitdir: ../../evil\n");
  t.Dir("/w/b/.\u200dgit/hooks");
  t.File("/w/b/.\u200dgit/x/Anvil.toml");
  t.File("/w/c/.gitignore");
  t.Dir("/w/c/.github/workflows");
  auto fs = t.Fs();
  t.wall = 1000;
  auto first = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(first) << first.error().ToString();
  const V markers{"/w/.git", "/w/a/.g\u200cit", "/w/b/.\u200dgit"};
  EXPECT_EQ(Markers(*first), markers);
  EXPECT_EQ(Names(*first), V{"/w/b/.\u200dgit/x/Anvil.toml"});
  auto again = ScanGitMetadata({"/w"}, Env(), fs, {}, &first->memo);
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_GT(again->memo_dirs, 0u);
  EXPECT_EQ(Markers(*again), markers);
  EXPECT_EQ(Names(*again), V{"/w/b/.\u200dgit/x/Anvil.toml"});
}

// A later walk that takes a directory's entries from the memo still walks below the shape.
TEST(ScanGitMetadata, AMemoKeepsWhatLiesBelowAGitDirShape) {
  FakeTree t;
  t.wall = 100;
  GitDirShape(t, "/w/sub");
  t.File("/w/sub/x/Anvil.toml");
  t.GitInit("/w/sub/y");
  auto fs = t.Fs();
  t.wall = 1000;
  auto first = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(first);
  auto again = ScanGitMetadata({"/w"}, Env(), fs, {}, &first->memo);
  ASSERT_TRUE(again);
  EXPECT_GT(again->memo_dirs, 0u);
  EXPECT_EQ(Names(*again), V{"/w/sub/x/Anvil.toml"});
  EXPECT_EQ(Markers(*again), (V{"/w/sub", "/w/sub/y/.git"}));
}

// Benign: a real bare repository is one repository, with nothing of Anvil's; what it holds is
// walked (a few directories), and a `.git` is still not entered.
TEST(ScanGitMetadata, ARealBareRepositoryIsOneRepository) {
  FakeTree t;
  t.GitInit("/w");
  GitDirShape(t, "/w/vendor/mirror.git");
  t.File("/w/vendor/mirror.git/config", "[core]\n\tbare = true\n");
  t.Dir("/w/vendor/mirror.git/objects/pack");
  t.File("/w/vendor/mirror.git/objects/pack/pack-1.pack");
  t.Dir("/w/vendor/mirror.git/refs/heads");
  t.File("/w/vendor/mirror.git/hooks/update.sample");
  t.File("/w/.git/anvil.lock");  // inside a .git: not entered
  auto fs = t.Fs();
  auto scan = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(scan) << scan.error().ToString();
  EXPECT_EQ(Markers(*scan), (V{"/w/.git", "/w/vendor/mirror.git"}));
  EXPECT_TRUE(scan->protected_names.empty());
  for (const auto& r : scan->repos) {
    EXPECT_FALSE(GitRepoRunsCode(r).has_value()) << r.marker;
  }
}

}  // namespace
}  // namespace git_walk_step_test
}  // namespace anvil
