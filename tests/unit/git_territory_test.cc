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

// A link into what the run kept read-only, followed as the host follows it; its benign
// neighbours (a workspace file or directory, a repository the command made, a package's bin
// link, a standard stream) lead nowhere protected.
TEST(GitLinkIntoProtected, LinksByWhereTheHostLandsAndWhatTheyName) {
  FakeTree t;
  t.GitInit("/w");
  t.Dir("/w/.git/hooks");
  t.Dir("/w/.vscode");
  t.File("/w/.vscode/tasks.json");
  t.File("/w/.vscode/settings.json");
  t.Dir("/w/.claude");
  t.Dir("/w/src");
  t.File("/w/src/main.c");
  t.Dir("/w/sub");
  t.Dir("/w/shared");
  t.GitInit("/w/mine");  // the command's own repository: no read-only place
  t.Dir("/w/node_modules/pkg");
  t.File("/w/node_modules/pkg/bin.js");
  t.Dir("/w/node_modules/.bin");
  t.Dir("/outside");
  const V places = {"/w/.git", "/w/.vscode/tasks.json"};
  const V roots = {"/w"};
  const std::vector<std::pair<std::string, std::string>> protected_links = {
      {"/w/notes.txt", ".git/config"},
      {"/w/out", ".git/hooks"},
      {"/w/sub/build", "../.git"},
      {"/w/abs", "/w/.git/hooks"},
      {"/w/pc", ".git/hooks/pre-commit"},  // not made yet
      {"/w/chain", "hop"},
      {"/w/hop", ".git"},
      {"/w/dots", "src/../.git/config"},
      {"/w/tasks", ".vscode/tasks.json"},
      {"/w/agent", ".claude/settings.json"},  // a protected name, not made yet
      {"/w/lock", "sub/../Anvil.toml"},
      {"/w/hg", "sub/.hg/hgrc"},
      {"/w/cwd", "/proc/self/cwd/.git/config"},  // leads anywhere
  };
  const std::vector<std::pair<std::string, std::string>> benign_links = {
      {"/w/main.c", "src/main.c"},
      {"/w/sub/lib", "../shared"},
      {"/w/node_modules/.bin/x", "../pkg/bin.js"},
      {"/w/mineconf", "mine/.git/config"},
      {"/w/minegit", "mine/.git"},
      {"/w/settings", ".vscode/settings.json"},
      {"/w/vscode", ".vscode"},
      {"/w/through", ".git/../src"},
      {"/w/out2", "/outside/x"},
      {"/w/devnull", "/dev/null"},
      {"/w/log", "/dev/stdout"},
      {"/w/dangling", "missing/x"},
      {"/w/loop", "loop"},
      {"/w/empty", ""},
  };
  for (const auto& [link, target] : protected_links) t.Link(link, target);
  for (const auto& [link, target] : benign_links) t.Link(link, target);
  const GitFs fs = t.Fs();
  for (const auto& [link, target] : protected_links) {
    EXPECT_TRUE(GitLinkIntoProtected(link, places, roots, fs).has_value()) << link;
  }
  for (const auto& [link, target] : benign_links) {
    EXPECT_FALSE(GitLinkIntoProtected(link, places, roots, fs).has_value()) << link;
  }
  EXPECT_EQ(GitLinkIntoProtected("/w/notes.txt", places, roots, fs), "/w/.git");
  EXPECT_EQ(GitLinkIntoProtected("/w/tasks", places, roots, fs), "/w/.vscode/tasks.json");
  EXPECT_EQ(GitLinkIntoProtected("/w/agent", places, roots, fs), "/w/.claude");
  EXPECT_EQ(GitLinkIntoProtected("/w/cwd", places, roots, fs), "/proc/self");
  // Not a symlink, or no read-only place at all: nothing.
  EXPECT_FALSE(GitLinkIntoProtected("/w/src/main.c", places, roots, fs).has_value());
  EXPECT_FALSE(GitLinkIntoProtected("/w/out", {}, roots, fs).has_value());
}

// The way is followed link by link from the link's directory; where a component is missing the
// rest is kept; a loop or an empty link leads nowhere.
TEST(FollowGitWay, EndsWhereTheKernelWould) {
  FakeTree t;
  t.Dir("/w/a/b");
  t.Link("/w/up", "a/b/..");
  t.Link("/w/loop", "loop");
  t.Dir("/proc/self");
  const GitFs fs = t.Fs();
  auto way = FollowGitWay("/w", "up/b", fs, {});
  EXPECT_EQ(way.end, GitWayEnd::kReached);
  EXPECT_EQ(way.at, "/w/a/b");
  way = FollowGitWay("/w", "up/x/y", fs, {});
  EXPECT_EQ(way.end, GitWayEnd::kMissing);
  EXPECT_EQ(way.at, "/w/a");
  EXPECT_EQ(way.rest, (V{"x", "y"}));
  EXPECT_EQ(FollowGitWay("/w", "loop", fs, {}).end, GitWayEnd::kNowhere);
  V dirs;
  way = FollowGitWay("/", "/w/up", fs, [&](const std::string& dir, const std::string&) {
    dirs.push_back(dir);
    return false;
  });
  EXPECT_EQ(way.end, GitWayEnd::kStopped);
  EXPECT_EQ(dirs, V{"/w"});
  EXPECT_EQ(FollowGitWay("/", "/proc/self/cwd/x", fs, {}, true).end, GitWayEnd::kMagic);
}

// Which links the command may have made: the table of facts.
TEST(GitLinkMayBeNew, OnlyALinkProvablyThereBeforeTheRunIsTheUsers) {
  auto link_facts = [](uint64_t ino, int64_t ctime) {
    GitFileFacts f;
    f.type = GitFileType::kSymlink;
    f.dev = 1;
    f.ino = ino;
    f.ctime_sec = ctime;
    return f;
  };
  GitFileFacts dir;
  dir.type = GitFileType::kDir;
  dir.dev = 1;
  dir.ino = 7;
  dir.ctime_sec = 2000;
  GitLinksBefore before;
  before.walk_start = 1000;
  before.listed["/w/a"] = link_facts(10, 500);
  before.remembered_dirs[{1, 8}] = "/w";
  struct Row {
    const char* what;
    std::string link;
    GitFileFacts now;
    GitFileFacts dir;
    bool may_be_new;
  };
  GitFileFacts remembered = dir;
  remembered.ino = 8;
  const Row rows[] = {
      {"listed before, unchanged", "/w/a", link_facts(10, 500), dir, false},
      {"listed before, made anew (another inode)", "/w/a", link_facts(11, 1500), dir, true},
      {"listed before, same inode reused with a new ctime", "/w/a", link_facts(10, 1500), dir,
       true},
      {"listed at another path (its directory moved)", "/w/moved/a", link_facts(10, 500), dir,
       true},
      {"not listed, in a directory listed anew", "/w/b", link_facts(12, 500), dir, true},
      {"in a directory taken from the memo, older than the walk", "/w/c", link_facts(13, 900),
       remembered, false},
      {"in a directory taken from the memo, made in the second before the walk", "/w/c",
       link_facts(13, 999), remembered, true},
      {"in a directory taken from the memo, made during the run", "/w/c", link_facts(13, 1001),
       remembered, true},
      {"its directory unknown", "/w/d", link_facts(14, 500), GitFileFacts{}, true},
      {"in a directory taken from the memo at another path (moved since)", "/w/x/c",
       link_facts(13, 900), remembered, true},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(GitLinkMayBeNew(r.link, r.now, r.dir, before), r.may_be_new) << r.what;
  }
  // Another run over the roots was going: nothing is taken as the user's.
  before.trust_none = true;
  EXPECT_TRUE(GitLinkMayBeNew("/w/a", link_facts(10, 500), dir, before));
}

}  // namespace
}  // namespace git_territory_test
}  // namespace anvil
