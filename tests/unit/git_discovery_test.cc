// The walk takes for a git dir (and reads the pointers of) what git's own discovery takes:
// objects/refs judged by access(X_OK) as git judges them (an executable file counts), names that
// fold alike never hiding one another, and `.git`/`commondir` pointers read byte for byte as
// git reads them. Each attack beside its benign neighbour.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "fake_git_tree.h"
#include "policy/git_metadata.h"

namespace anvil {
namespace git_discovery_test {
namespace {

using V = std::vector<std::string>;
using testing_support::FakeTree;

using testing_support::GitDirShape;

GitEnv Env() { return testing_support::TestGitEnv(); }
V Markers(const GitScan& scan) { return testing_support::SortedMarkers(scan); }

TEST(GitDiscovery, ObjectsAndRefsCountAsAccessXOkTakesThem) {
  FakeTree t;
  GitDirShape(t, "/w/dirs", "dir", "dir");
  GitDirShape(t, "/w/execs", "exec", "exec");
  GitDirShape(t, "/w/mixed", "exec", "dir");
  GitDirShape(t, "/w/links", "link", "exec");
  GitDirShape(t, "/w/plain", "file", "file");  // no execute bit: access(X_OK) refuses, git too
  GitDirShape(t, "/w/half", "exec", "file");
  auto fs = t.Fs();
  auto scan = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(scan) << scan.error().ToString();
  EXPECT_EQ(Markers(*scan), (V{"/w/dirs", "/w/execs", "/w/links", "/w/mixed"}));
}

TEST(GitDiscovery, AnExecuteBitSetAfterAnEarlierWalkIsSeen) {
  // chmod changes the file's ctime, not its directory's: the directory's listing comes from the
  // memo, the execute bits never do.
  FakeTree t;
  t.wall = 100;
  GitDirShape(t, "/w/d", "file", "file");
  t.File("/w/d/config", "[core]\n\tfsmonitor = /x\n");
  auto fs = t.Fs();
  t.wall = 1000;
  auto before = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(before);
  EXPECT_EQ(Markers(*before), V{});
  t.Chmod("/w/d/objects", true);
  t.Chmod("/w/d/refs", true);
  auto after = ScanGitMetadata({"/w"}, Env(), fs, {}, &before->memo);
  ASSERT_TRUE(after);
  EXPECT_GT(after->memo_dirs, 0u);
  EXPECT_EQ(Markers(*after), V{"/w/d"});
}

TEST(GitDiscovery, NamesThatFoldAlikeDoNotHideOneAnother) {
  // The walk compares names folded; on an exact-lookup directory "objects." is another name,
  // and git finds the directory `objects` whatever else is listed after it.
  FakeTree t;
  GitDirShape(t, "/w/d", "dir", "dir");
  t.File("/w/d/objects.");
  t.File("/w/d/refs ");
  t.Dir("/w/d/head");  // a directory folding to HEAD does not undo the file HEAD
  auto fs = t.Fs();
  auto scan = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(scan);
  EXPECT_EQ(Markers(*scan), V{"/w/d"});
}

TEST(GitDiscovery, AboveTheRootExecutableFilesCountToo) {
  FakeTree t;
  GitDirShape(t, "/p", "exec", "exec");
  t.Dir("/p/w");
  GitDirShape(t, "/q", "file", "file");
  t.Dir("/q/w");
  auto fs = t.Fs();
  auto p = ScanGitMetadata({"/p/w"}, Env(), fs, {});
  auto q = ScanGitMetadata({"/q/w"}, Env(), fs, {});
  ASSERT_TRUE(p && q);
  EXPECT_EQ(Markers(*p), V{"/p"});
  EXPECT_EQ(Markers(*q), V{});
}

TEST(GitDiscovery, PointersReadAsGitReadsThem) {
  using K = GitPointerKind;
  struct Case {
    std::string text;
    K kind;
    std::optional<std::string> path;
  } cases[] = {
      {"gitdir: ../.git/modules/a\n", K::kDotGitFile, "../.git/modules/a"},
      {"gitdir: /abs\r\n\n", K::kDotGitFile, "/abs"},
      // Blanks are part of the path: git opens "x " and " x".
      {"gitdir: x \n", K::kDotGitFile, "x "},
      {"gitdir:  x\n", K::kDotGitFile, " x"},
      // The whole file is the path, a line end inside it too.
      {"gitdir: a\nb\n", K::kDotGitFile, "a\nb"},
      // Up to a NUL: git reads a C string.
      {std::string("gitdir: a\0junk", 14), K::kDotGitFile, "a"},
      {"gitdir:x\n", K::kDotGitFile, std::nullopt},  // no "gitdir: ": not a pointer to git
      {"GITDIR: x\n", K::kDotGitFile, std::nullopt},
      {"gitdir: \n", K::kDotGitFile, std::nullopt},
      {"", K::kDotGitFile, std::nullopt},
      {"../..\n", K::kCommonDir, "../.."},
      {"../.. \n", K::kCommonDir, "../.. "},
      {"/w/main/.git/worktrees/wt/../..\n", K::kCommonDir, "/w/main/.git/worktrees/wt/../.."},
      {"\n", K::kCommonDir, std::nullopt},
      {"/w/wt/.git \n", K::kBackPointer, "/w/wt/.git"},  // strbuf_rtrim
  };
  for (const auto& c : cases) {
    EXPECT_EQ(ParseGitPointer(c.text, c.kind), c.path) << ::testing::PrintToString(c.text);
  }
}

// What the pointer really names is judged: a decoy where a trimmed reading would lead does not
// hide the git dir git uses.
TEST(GitDiscovery, AGitFileIsJudgedByThePathGitOpens) {
  FakeTree t;
  t.GitInit("/w");
  auto fs = t.Fs();
  auto start = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(start);
  auto plan = PlanGitProtection(*start, Env(), fs, {});
  const GitIdentitySet before = GitIdentities(*start, plan, fs);
  const GitWatchedConfigs configs = GitConfigIdentities(*start, fs);
  // The run: a plain repository whose git dir (never walked) holds a decoy and the real one.
  t.GitInit("/w/plain");
  t.GitInit("/w/plain/.git/x");
  t.File("/w/plain/.git/x /HEAD", "ref: refs/heads/main\n");
  t.Dir("/w/plain/.git/x /objects");
  t.Dir("/w/plain/.git/x /refs");
  t.File("/w/plain/.git/x /config", "[core]\n\tfsmonitor = /evil\n");
  t.File("/w/src/.git", "gitdir: ../plain/.git/x \n");
  // Benign: a pointer to the plain one.
  t.File("/w/ok/.git", "gitdir: ../plain/.git/x/.git\n");
  auto after = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(after);
  auto after_plan = PlanGitProtection(*after, Env(), fs, {});
  auto actions = DecideGitQuarantine(before, configs, *after, after_plan, fs);
  V paths;
  for (const auto& a : actions) paths.push_back(a.path);
  // The plain one's git dir holds more than git writes there (the decoy's git dirs): moved
  // aside too (policy/git_dir_closed.h); the pointer is still judged by the path git opens.
  EXPECT_EQ(paths, (V{"/w/plain/.git", "/w/src/.git"}));
  EXPECT_NE(actions.back().reason.find("fsmonitor"), std::string::npos) << actions.back().reason;
}

// ---- the walk after the run: a bound stops only what lies past it -----------------------------

TEST(GitBoundMode, PastTheDepthBoundTheRestIsStillWalkedAndTheDeepPartNamed) {
  FakeTree t;
  t.GitInit("/w/sub");
  t.Dir("/w/a/b/c/d");
  t.GitInit("/w/z");
  const GitScanLimits limits{.depth = 2};
  auto fs = t.Fs();
  EXPECT_FALSE(ScanGitMetadata({"/w"}, Env(), fs, limits));  // before the run: no start
  auto scan = ScanGitMetadata({"/w"}, Env(), fs, limits, nullptr, GitBoundMode::kSkipAndName);
  ASSERT_TRUE(scan) << scan.error().ToString();
  EXPECT_EQ(Markers(*scan), (V{"/w/sub/.git", "/w/z/.git"}));
  ASSERT_EQ(scan->unwalked.size(), 1u);
  EXPECT_EQ(scan->unwalked[0].path, "/w/a/b/c");
  EXPECT_EQ(scan->unwalked[0].why, "past the 'depth' bound (2)");
  EXPECT_EQ(scan->unwalked_total, 1u);
}

TEST(GitBoundMode, PastTheEntriesOrTimeBoundWhatWasNotWalkedIsNamed) {
  FakeTree t;
  t.GitInit("/w/sub");
  for (int i = 0; i < 30; ++i) t.File("/w/zmany/f" + std::to_string(i));  // listed first
  t.Dir("/w/x/y");
  auto fs = t.Fs();
  auto scan =
      ScanGitMetadata({"/w"}, Env(), fs, {.entries = 20}, nullptr, GitBoundMode::kSkipAndName);
  ASSERT_TRUE(scan) << scan.error().ToString();
  EXPECT_GT(scan->unwalked_total, 0u);
  for (const auto& u : scan->unwalked) EXPECT_EQ(u.why, "past the 'entries' bound (20)") << u.path;

  // Out of time: every repository found but not read counts as one that runs code.
  t.tick = std::chrono::milliseconds(400);
  auto slow =
      ScanGitMetadata({"/w"}, Env(), fs, {.seconds = 1}, nullptr, GitBoundMode::kSkipAndName);
  ASSERT_TRUE(slow) << slow.error().ToString();
  EXPECT_GT(slow->unwalked_total, 0u);
  for (const auto& repo : slow->repos) {
    if (repo.unread.empty()) continue;
    EXPECT_TRUE(GitRepoRunsCode(repo).has_value()) << repo.marker;
  }
}

TEST(GitBoundMode, ADirectoryTheCommandCouldWriteButNotListIsNamed) {
  FakeTree t;
  t.GitInit("/w/sub");
  t.Dir("/w/locked");
  t.At("/w/locked").listable = false;  // writable: the command could have filled it
  t.Dir("/w/theirs");
  t.At("/w/theirs").listable = false;
  t.At("/w/theirs").writable = false;  // neither: left alone, as before the run
  auto fs = t.Fs();
  auto scan = ScanGitMetadata({"/w"}, Env(), fs, {}, nullptr, GitBoundMode::kSkipAndName);
  ASSERT_TRUE(scan) << scan.error().ToString();
  ASSERT_EQ(scan->unwalked.size(), 1u);
  EXPECT_EQ(scan->unwalked[0].path, "/w/locked");
  EXPECT_EQ(Markers(*scan), V{"/w/sub/.git"});
}

// The check after the run opens what the caller owns (GitFs::open_up): the command, running as
// the caller, could have chmodded it closed over a repository; what the caller does not own
// stays as before, and before the run nothing is opened.
TEST(GitBoundMode, ADirectoryTheCallerOwnsButCannotListIsOpenedAfterTheRun) {
  FakeTree t;
  t.GitInit("/w/closed/r");
  t.At("/w/closed").listable = false;
  t.At("/w/closed").writable = false;
  t.Dir("/w/theirs");
  t.At("/w/theirs").listable = false;
  t.At("/w/theirs").writable = false;
  auto fs = t.Fs();
  std::vector<std::string> opened;
  fs.open_up = [&](const std::string& dir) -> Status {
    opened.push_back(dir);
    if (dir != "/w/closed") return Fail("denied", dir + " is not a directory of the caller's");
    t.At(dir).listable = true;
    return Ok();
  };
  auto before = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(before) << before.error().ToString();
  EXPECT_TRUE(opened.empty());
  EXPECT_TRUE(Markers(*before).empty());
  auto after = ScanGitMetadata({"/w"}, Env(), fs, {}, nullptr, GitBoundMode::kSkipAndName);
  ASSERT_TRUE(after) << after.error().ToString();
  std::sort(opened.begin(), opened.end());
  // A directory that could not be opened has its parent tried too (a parent left readable but
  // not searchable bars the way to it): here the root, not the caller's either in this tree.
  EXPECT_EQ(opened, (V{"/w", "/w/closed", "/w/theirs"}));
  EXPECT_EQ(after->opened_up, 1u);
  EXPECT_TRUE(after->unwalked.empty());
  EXPECT_EQ(Markers(*after), V{"/w/closed/r/.git"});
}

}  // namespace
}  // namespace git_discovery_test
}  // namespace anvil
