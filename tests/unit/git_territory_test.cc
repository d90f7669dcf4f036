// policy/git_territory.h: which paths, symlinks and config values lead into the sandbox homes.
#include "policy/git_territory.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fake_git_tree.h"

namespace anvil {
namespace git_territory_test {
namespace {

using testing_support::FakeTree;
using V = std::vector<std::string>;

constexpr char kHomes[] = "/home/u/.local/state/anvil/homes";

bool Has(const V& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

TEST(GitLocalRepoPaths, NetworkUrlsAreNoLocalPathsEverySpellingOfAPathIs) {
  const V bases = {"/w/sub"};
  for (const char* remote : {"https://example.com/x.git", "ssh://h/x", "git@github.com:o/r.git",
                             "host:path/x", "~/evil.git", "~u/evil.git", ""}) {
    EXPECT_TRUE(GitLocalRepoPaths(remote, bases).empty()) << remote;
  }
  EXPECT_EQ(GitLocalRepoPaths("/s/evil.git", bases), V{"/s/evil.git"});
  EXPECT_EQ(GitLocalRepoPaths("file:///s/evil.git", bases), V{"/s/evil.git"});
  EXPECT_EQ(GitLocalRepoPaths("file://localhost/s/evil.git", bases), V{"/s/evil.git"});
  EXPECT_TRUE(Has(GitLocalRepoPaths("file:///s/%65vil.git", bases), "/s/evil.git"));
  // A colon after a slash: a local path, not host:path.
  EXPECT_TRUE(Has(GitLocalRepoPaths("./a:b", bases), "/w/sub/./a:b"));
  // Relative: from the base and every directory above it, with and without the leading dots.
  const V rel = GitLocalRepoPaths("../../s/evil.git", bases);
  for (const char* p :
       {"/w/sub/../../s/evil.git", "/w/sub/s/evil.git", "/w/s/evil.git", "/s/evil.git"}) {
    EXPECT_TRUE(Has(rel, p)) << p;
  }
  EXPECT_TRUE(Has(GitLocalRepoPaths("origin", bases), "/w/sub/origin"));
}

struct Territory {
  FakeTree t;
  GitFs fs;
  GitTerritory territory;
  Territory() {
    t.GitInit(std::string(kHomes) + "/ws-1/home/proj");
    t.Dir(std::string(kHomes) + "/ws-1/tmp");
    t.Dir(std::string(kHomes) + "/other-2/home");
    t.Dir("/w/lib");
    t.Dir("/usr/share");
    t.Dir("/home/u/.local/state/anvil/unchecked");
    t.Link("/w/hop", std::string(kHomes) + "/ws-1/home");
    t.Link("/w/fine", "/usr/share");
    fs = t.Fs();
    territory = GitTerritoryOf({kHomes}, fs);
  }
};

TEST(GitTerritoryJudge, PathsAreJudgedByWhereTheyLead) {
  Territory x;
  GitTerritoryJudge judge(x.territory, x.fs);
  const std::string home = std::string(kHomes) + "/ws-1/home";
  struct Case {
    std::string path;
    bool into;
  };
  const Case cases[] = {
      {home + "/proj", true},
      {home + "/proj/.git/hooks", true},
      {std::string(kHomes) + "/ws-1/tmp/evil.git", true},  // made later: by its prefix
      {std::string(kHomes) + "/other-2/home", true},       // another workspace's home
      {"/w/../home/u/.local/state/anvil/homes/ws-1/home/proj", true},
      {"/w/hop/proj", true},                                       // through a symlink
      {"/w/hop/not-yet/../../home/proj", true},                    // a missing part, then dots
      {"/w/missing/../../home/u/.local/state/anvil/homes", true},  // lexically, once made
      {"/w/lib", false},
      {"/w/fine/x", false},
      {"/usr/share", false},
      {"/home/u/.local/state/anvil", false},  // above it: nothing the command writes
      {"/home/u/.local/state/anvil/unchecked", false},
      {"/home/u/.local/state/anvil/homesX/y", false},
      {"relative/path", false},
  };
  for (const auto& c : cases) EXPECT_EQ(judge.Path(c.path).has_value(), c.into) << c.path;
}

// Another path to the same directory (a bind mount: the same device and inode) is the same
// place.
TEST(GitTerritoryJudge, AnAliasOfAHomeIsTheHome) {
  Territory x;
  x.t.Dir("/mnt/alias/proj");
  GitFs fs = x.fs;
  const GitFileFacts home = x.fs.lstat(std::string(kHomes) + "/ws-1/home");
  fs.lstat = [inner = x.fs.lstat, home](const std::string& path) {
    return path == "/mnt/alias" ? home : inner(path);
  };
  GitTerritoryJudge judge(x.territory, fs);
  EXPECT_TRUE(judge.Path("/mnt/alias/proj").has_value());
  EXPECT_FALSE(judge.Path("/mnt").has_value());
}

TEST(GitTerritoryJudge, SymlinksByTheirTargetAsTheHostResolvesIt) {
  Territory x;
  x.t.Link("/w/abs", std::string(kHomes) + "/ws-1/home/proj");
  x.t.Link("/w/sub/rel", "../../home/u/.local/state/anvil/homes/ws-1/home/proj");
  x.t.Link("/w/later", std::string(kHomes) + "/ws-1/home/not-yet");
  x.t.Link("/w/dangling", "missing");
  x.t.Link("/w/sibling", "lib");
  GitTerritoryJudge judge(x.territory, x.fs);
  for (const char* link : {"/w/abs", "/w/sub/rel", "/w/later", "/w/hop"}) {
    EXPECT_TRUE(judge.Symlink(link).has_value()) << link;
  }
  for (const char* link : {"/w/dangling", "/w/sibling", "/w/fine", "/w/lib"}) {
    EXPECT_FALSE(judge.Symlink(link).has_value()) << link;
  }
}

// A way through a link that lies in a sandbox home leads there, even where that link leads back
// out now (into the workspace, rt13): the host's git follows the link as written, and a later run
// of the workspace re-points the home's link at a repository of its own there.
TEST(GitTerritoryJudge, AWayThroughALinkOfASandboxHomeLeadsThereWhereverItEndsNow) {
  Territory x;
  const std::string home = std::string(kHomes) + "/ws-1/home";
  x.t.Link(home + "/back", "/w/lib");
  x.t.Link(home + "/back-rel", "../../../../../../../../w/lib");
  x.t.Link("/w/via-home", home + "/back");
  x.t.Link("/w/via-rel", home + "/back-rel");
  x.t.Link("/w/two", "/w/via-home");  // a link of the workspace, then the home's
  x.t.Link("/w/lib-link", "lib");     // benign: within the workspace only
  x.fs = x.t.Fs();
  GitTerritoryJudge judge(x.territory, x.fs);
  for (const char* link : {"/w/via-home", "/w/via-rel", "/w/two"}) {
    EXPECT_TRUE(judge.Symlink(link).has_value()) << link;
  }
  EXPECT_TRUE(judge.Path(home + "/back/x").has_value());
  EXPECT_TRUE(judge.Path("/w/via-home").has_value());
  for (const char* link : {"/w/lib-link", "/w/fine"}) {
    EXPECT_FALSE(judge.Symlink(link).has_value()) << link;
  }
  EXPECT_FALSE(judge.Path("/w/lib-link/x").has_value());
}

// The key a walk memo is kept with: the same territory (in any order, repeated) has the same
// key; another homes directory, the same one made again, or none has another.
TEST(GitTerritoryKey, NamesTheHomesDirectoriesByPathAndObject) {
  Territory x;
  const std::string key = GitTerritoryKey(x.territory);
  EXPECT_FALSE(key.empty());
  EXPECT_EQ(GitTerritoryKey(GitTerritoryOf({kHomes}, x.fs)), key);
  EXPECT_EQ(GitTerritoryKey(GitTerritoryOf({kHomes, kHomes}, x.fs)), key);  // a repeat
  x.t.Dir("/o/anvil/homes");
  x.t.Link("/s", "/home/u/.local/state");
  const GitFs fs = x.t.Fs();
  // Another spelling of the same directory is the same place.
  EXPECT_EQ(GitTerritoryKey(GitTerritoryOf({"/s/anvil/homes"}, fs)), key);
  EXPECT_EQ(GitTerritoryKey(GitTerritoryOf({"/o/anvil/homes", kHomes}, fs)),
            GitTerritoryKey(GitTerritoryOf({kHomes, "/o/anvil/homes"}, fs)));
  EXPECT_NE(GitTerritoryKey(GitTerritoryOf({"/o/anvil/homes"}, fs)), key);
  EXPECT_NE(GitTerritoryKey(GitTerritoryOf({"/o/anvil/homes", kHomes}, fs)), key);
  EXPECT_EQ(GitTerritoryKey(GitTerritory{}), "");
  EXPECT_NE(GitTerritoryKey(GitTerritoryOf({"/missing/anvil/homes"}, fs)), "");
  // The same path, another object (removed and made again).
  GitFs again = fs;
  again.lstat = [inner = fs.lstat](const std::string& path) {
    GitFileFacts f = inner(path);
    if (path == kHomes) f.ino += 1000;
    return f;
  };
  EXPECT_NE(GitTerritoryKey(GitTerritoryOf({kHomes}, again)), key);
}

// Red team s13 H2/H3: a way through a magic link leads wherever the process following it is
// (the check's own cwd is not the user's git's), so it leads anywhere; judged at every step as
// the kernel walks it, a `..` after the link included.
TEST(GitMagicLinkPath, AWayThroughProcOrDevFdLeadsAnywhere) {
  const std::vector<std::pair<std::string, std::string>> magic = {
      {"/proc/self/cwd/../../x/repo", "/proc/self"},
      {"/proc/self/cwd", "/proc/self"},
      {"/proc/1234/root/home/u", "/proc/1234"},
      {"/proc/thread-self/fd/3", "/proc/thread-self"},
      {"/w/../proc/self/cwd/x", "/proc/self"},
      {"/proc/self/cwd/../../../../../../w", "/proc/self"},
      {"/dev/fd/3/x", "/dev/fd"},
      {"/dev/fd", "/dev/fd"},
      {"/dev/stdin", "/dev/stdin"},
      {"/dev/./stdout/../x", "/dev/stdout"},
  };
  for (const auto& [path, prefix] : magic) {
    EXPECT_EQ(GitMagicLinkPath(path), prefix) << path;
  }
  // Benign: /dev/null, a /proc elsewhere, /proc itself left by `..`, relative paths, and the
  // rest of /proc (Anvil's dangling placeholders for missing autorun places lead there).
  for (const char* path : {"/proc/anvil-sandbox-placeholder", "/proc/cpuinfo", "/dev/null",
                           "/w/proc/self/cwd", "/procfs/x", "/proc/../w", "/proc", "/dev",
                           "/devfd/x", "proc/self/cwd", "", "/w/dev/fd/3"}) {
    EXPECT_FALSE(GitMagicLinkPath(path).has_value()) << path;
  }
}

TEST(GitTerritoryJudge, APathThroughAMagicLinkLeadsAnywhere) {
  Territory x;
  x.t.Link("/w/cwd", "/proc/self/cwd/../../home/u/.local/state/anvil/homes/ws-1/home/proj");
  x.t.Link("/w/fd", "/dev/fd/3/proj");
  x.t.Link("/w/rel", "../proc/self/cwd/x");
  x.t.Link("/w/ok", "/dev/null");
  x.t.Link("/w/placeholder", "/proc/anvil-sandbox-placeholder");
  GitTerritoryJudge judge(x.territory, x.fs);
  EXPECT_EQ(judge.Symlink("/w/cwd"), "/proc/self");
  EXPECT_EQ(judge.Symlink("/w/fd"), "/dev/fd");
  EXPECT_EQ(judge.Symlink("/w/rel"), "/proc/self");
  EXPECT_FALSE(judge.Symlink("/w/ok").has_value());
  EXPECT_FALSE(judge.Symlink("/w/placeholder").has_value());
  EXPECT_EQ(judge.Path("/proc/self/cwd/../x/evil.git"), "/proc/self");
  // A log file linked to a standard stream (containers' /dev/stdout) is left alone; anything
  // after the stream's name, or another descriptor, is not.
  for (const char* to :
       {"/dev/stdout", "/dev/stderr", "/dev/stdin", "/proc/self/fd/1", "/dev/fd/2"}) {
    x.t.Link("/w/log", to);
    EXPECT_FALSE(judge.Symlink("/w/log").has_value()) << to;
  }
  x.t.Link("/w/log2", "/dev/stdout/..");
  EXPECT_TRUE(judge.Symlink("/w/log2").has_value());
  x.t.Link("/w/log3", "/proc/self/fd/3");
  EXPECT_TRUE(judge.Symlink("/w/log3").has_value());
}

TEST(GitTerritoryJudge, NoTerritoryJudgesNothing) {
  FakeTree t;
  t.Link("/w/x", "/anything");
  GitFs fs = t.Fs();
  GitTerritory none;
  GitTerritoryJudge judge(none, fs);
  EXPECT_FALSE(judge.Symlink("/w/x").has_value());
  EXPECT_FALSE(judge.Path("/anything").has_value());
}

}  // namespace
}  // namespace git_territory_test
}  // namespace anvil
