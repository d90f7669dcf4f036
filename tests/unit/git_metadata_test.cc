#include "policy/git_metadata.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "fake_git_tree.h"
#include "linux/git_quarantine.h"
#include "policy/git_territory.h"

namespace anvil {
namespace git_metadata_test {
namespace {

using V = std::vector<std::string>;
using testing_support::FakeTree;

GitEnv Env() {
  GitEnv env = testing_support::TestGitEnv();
  env.passwd_file = "/etc/passwd";
  return env;
}

struct Planned {
  GitScan scan;
  GitProtectionPlan plan;
};

Planned Plan(FakeTree& t, const V& roots = {"/w"}, const GitScanLimits& limits = {},
             const GitEnv& env = Env()) {
  GitFs fs = t.Fs();
  auto scan = ScanGitMetadata(roots, env, fs, limits);
  EXPECT_TRUE(scan) << (scan ? "" : scan.error().ToString());
  if (!scan) return {};
  auto plan = PlanGitProtection(*scan, env, fs, limits);
  return {std::move(*scan), std::move(plan)};
}

// "dir|file PATH" for a named path's placeholder, "way PATH" for a directory made on the way.
V Placeholders(const GitProtectionPlan& plan) {
  V out;
  for (const auto& p : plan.placeholders) {
    out.push_back((p.on_the_way  ? "way "
                   : p.directory ? "dir "
                                 : "file ") +
                  p.parent + "/" + p.name);
  }
  return out;
}

bool Contains(const V& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// ---- words and keys ---------------------------------------------------------------------------

TEST(GitCommandWords, SplitsLikeAShellConservatively) {
  auto texts = [](std::string_view cmd, bool programs) {
    V out;
    for (const auto& w : GitCommandWords(cmd)) {
      if (w.program == programs) out.push_back(w.text);
    }
    return out;
  };
  EXPECT_EQ(texts("python3 tools/fsm.py --x 2", false), (V{"tools/fsm.py", "--x", "2"}));
  EXPECT_EQ(texts("python3 tools/fsm.py --x 2", true), (V{"python3"}));
  EXPECT_EQ(texts("sh -c 'cd tools && ./run.sh'", false),
            (V{"-c", "cd tools && ./run.sh", "tools"}));
  EXPECT_EQ(texts("sh -c 'cd tools && ./run.sh'", true), (V{"sh", "cd", "./run.sh"}));
  EXPECT_EQ(texts("f() { ./a.sh \"$@\"; }; f", true), (V{"f", "{", "./a.sh", "}", "f"}));
  EXPECT_EQ(texts("VAR=./x cmd --file=~/creds", false), (V{"./x", "--file=~/creds", "~/creds"}));
  EXPECT_EQ(texts("a\\ b \"c d\"e 'f'\"g\"", false), (V{"c de", "de", "fg"}));
  EXPECT_EQ(texts("if ./t; then run.sh; fi", true), (V{"if", "./t", "then", "run.sh", "fi"}));
  EXPECT_EQ(texts("cat <in.txt >out.txt | less", false), (V{"in.txt", "out.txt"}));
  EXPECT_EQ(texts("", false), V{});
  // Bounded whatever the input.
  std::string many;
  for (int i = 0; i < 5000; ++i) many += "w ";
  EXPECT_LE(GitCommandWords(many).size(), 512u);
}

GitConfigEntry Entry(const std::string& section, const std::string& sub, const std::string& key,
                     std::optional<std::string> value) {
  GitConfigEntry e;
  e.section = section;
  e.subsection = sub;
  e.has_subsection = !sub.empty();
  e.key = key;
  e.value = std::move(value);
  return e;
}

TEST(ClassifyGitConfigKey, EveryKeyGitExecutesOrFollows) {
  struct Case {
    const char* section;
    const char* sub;
    const char* key;
    GitKeyUse use;
  } cases[] = {
      {"core", "", "hookspath", GitKeyUse::kHooksDir},
      {"core", "x", "hookspath", GitKeyUse::kNone},  // [core "x"] is another section
      {"core", "", "fsmonitor", GitKeyUse::kCommandOrBool},
      {"core", "", "sshcommand", GitKeyUse::kCommand},
      {"core", "", "pager", GitKeyUse::kCommand},
      {"core", "", "editor", GitKeyUse::kCommand},
      {"core", "", "askpass", GitKeyUse::kCommand},
      {"core", "", "gitproxy", GitKeyUse::kCommand},
      {"core", "", "excludesfile", GitKeyUse::kNone},    // data, decided not protected
      {"core", "", "attributesfile", GitKeyUse::kNone},  //
      {"core", "", "worktree", GitKeyUse::kNone},
      {"include", "", "path", GitKeyUse::kInclude},
      {"includeif", "gitdir:~/w/", "path", GitKeyUse::kInclude},
      {"includeif", "", "path", GitKeyUse::kNone},
      {"init", "", "templatedir", GitKeyUse::kTemplateDir},
      {"diff", "", "external", GitKeyUse::kCommand},
      {"diff", "pdf", "textconv", GitKeyUse::kCommand},
      {"diff", "", "textconv", GitKeyUse::kNone},
      {"diff", "x", "command", GitKeyUse::kCommand},
      {"difftool", "x", "cmd", GitKeyUse::kCommand},
      {"mergetool", "x", "path", GitKeyUse::kCommand},
      {"merge", "x", "driver", GitKeyUse::kCommand},
      {"filter", "lfs", "clean", GitKeyUse::kCommand},
      {"filter", "lfs", "smudge", GitKeyUse::kCommand},
      {"filter", "lfs", "process", GitKeyUse::kCommand},
      {"filter", "lfs", "required", GitKeyUse::kNone},
      {"credential", "", "helper", GitKeyUse::kCommand},
      {"credential", "https://x", "helper", GitKeyUse::kCommand},
      {"gpg", "", "program", GitKeyUse::kCommand},
      {"gpg", "ssh", "program", GitKeyUse::kCommand},
      {"gpg", "ssh", "defaultkeycommand", GitKeyUse::kCommand},
      {"sequence", "", "editor", GitKeyUse::kCommand},
      {"pager", "", "log", GitKeyUse::kCommandOrBool},
      {"alias", "", "st", GitKeyUse::kBangCommand},
      {"submodule", "x", "update", GitKeyUse::kBangCommand},
      {"uploadpack", "", "packobjectshook", GitKeyUse::kCommand},
      {"remote", "origin", "uploadpack", GitKeyUse::kCommand},
      {"remote", "origin", "url", GitKeyUse::kNone},
      {"hook", "x", "command", GitKeyUse::kCommand},
      {"user", "", "name", GitKeyUse::kNone},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(ClassifyGitConfigKey(Entry(c.section, c.sub, c.key, "v")), c.use)
        << c.section << "." << c.sub << "." << c.key;
  }
}

TEST(GitEntryIsActive, OnlyValuesThatRunOrNameSomething) {
  EXPECT_FALSE(GitEntryIsActive(Entry("core", "", "fsmonitor", "true")));  // git's own daemon
  EXPECT_FALSE(GitEntryIsActive(Entry("core", "", "fsmonitor", "false")));
  EXPECT_TRUE(GitEntryIsActive(Entry("core", "", "fsmonitor", "./fsm.sh")));
  EXPECT_FALSE(GitEntryIsActive(Entry("alias", "", "st", "status -s")));
  EXPECT_TRUE(GitEntryIsActive(Entry("alias", "", "x", "!sh evil")));
  EXPECT_FALSE(GitEntryIsActive(Entry("credential", "", "helper", "")));  // resets the list
  EXPECT_FALSE(GitEntryIsActive(Entry("credential", "", "helper", std::nullopt)));
  EXPECT_FALSE(GitEntryIsActive(Entry("pager", "", "log", "false")));
  EXPECT_TRUE(GitEntryIsActive(Entry("pager", "", "log", "less -S")));
  EXPECT_TRUE(GitEntryIsActive(Entry("include", "", "path", std::nullopt)));
  EXPECT_FALSE(GitEntryIsActive(Entry("user", "", "name", "x")));
}

TEST(ApplyGitScanLimit, NamesAndValues) {
  GitScanLimits l;
  EXPECT_TRUE(ApplyGitScanLimit("entries=5", l));
  EXPECT_TRUE(ApplyGitScanLimit("depth=7", l));
  EXPECT_TRUE(ApplyGitScanLimit("seconds=0.5", l));
  EXPECT_TRUE(ApplyGitScanLimit("paths=9", l));
  EXPECT_EQ(l.entries, 5u);
  EXPECT_EQ(l.depth, 7u);
  EXPECT_EQ(l.seconds, 0.5);
  EXPECT_EQ(l.paths, 9u);
  for (const char* bad : {"entries", "entries=", "entries=0", "entries=-1", "entries=1x",
                          "seconds=0", "seconds=nan", "colour=3", "depth=1e3"}) {
    EXPECT_FALSE(ApplyGitScanLimit(bad, l)) << bad;
  }
}

// ---- the scan -------------------------------------------------------------------------------

TEST(ScanGitMetadata, FindsEveryRepositoryAtAnyDepthWithoutEnteringADotGit) {
  FakeTree t;
  t.GitInit("/w");
  t.GitInit("/w/vendor/lib");
  t.GitInit("/w/a/b/c/d/e/deep");
  t.Dir("/w/ci/.GIT/hooks");  // case-folding directories: git would use it
  t.File("/w/sub/.git", "gitdir: ../.git/modules/sub\n");
  t.GitInit("/w/.git/modules/sub/x");  // inside a git dir: never walked
  t.Link("/w/linked", "/w/vendor");    // a symlink is not followed
  t.File("/w/bare.git/HEAD", "ref: refs/heads/main\n");
  t.Dir("/w/bare.git/objects");
  t.Dir("/w/bare.git/refs");
  t.File("/w/bare.git/notes/.git/HEAD");  // below a bare repository: git started there uses it
  auto fs = t.Fs();
  auto scan = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(scan) << scan.error().ToString();
  V markers;
  for (const auto& r : scan->repos) markers.push_back(r.marker);
  std::sort(markers.begin(), markers.end());
  EXPECT_EQ(markers,
            (V{"/w/.git", "/w/a/b/c/d/e/deep/.git", "/w/bare.git", "/w/bare.git/notes/.git",
               "/w/ci/.GIT", "/w/sub/.git", "/w/vendor/lib/.git"}));
  for (const auto& r : scan->repos) {
    if (r.marker == "/w/sub/.git") {
      EXPECT_EQ(r.kind, GitMarkerKind::kGitFile);
      EXPECT_EQ(r.gitdir, "/w/sub/../.git/modules/sub");
      EXPECT_EQ(r.top, "/w/sub");
    }
    if (r.marker == "/w/bare.git") {
      EXPECT_EQ(r.kind, GitMarkerKind::kBareDir);
      EXPECT_EQ(r.top, "");
    }
  }
}

// The same walk collects Anvil's protected names (fs/protected_names.h) other than .git, at any
// depth and in any case, as directories or files; never a link, and nothing inside a .git.
TEST(ScanGitMetadata, CollectsAnvilsProtectedNamesAtAnyDepth) {
  FakeTree t;
  t.GitInit("/w");
  t.File("/w/anvil.lock");
  t.File("/w/Anvil.toml");
  t.Dir("/w/.anvil");
  t.File("/w/.anvil/rules.toml");
  t.File("/w/ws/sub/anvil.lock");
  t.File("/w/ws/sub/ANVIL.TOML");        // a case-folding filesystem's Anvil.toml
  t.File("/w/ws/sub/anvil.lock. ");      // NTFS/SMB drop trailing dots and spaces
  t.Dir("/w/odd/Anvil.toml");            // a directory of the name, as a placeholder is
  t.Link("/w/link/anvil.lock", "/etc");  // a link: Anvil's readers refuse it, nothing to keep
  t.File("/w/.git/anvil.lock");          // inside a git dir: never walked (read-only with it)
  t.File("/w/ws/anvil.lock.bak");
  t.File("/w/ws/my-anvil.lock");
  auto fs = t.Fs();
  auto scan = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(scan) << scan.error().ToString();
  V found = scan->protected_names;
  std::sort(found.begin(), found.end());
  EXPECT_EQ(found, (V{"/w/.anvil", "/w/Anvil.toml", "/w/anvil.lock", "/w/odd/Anvil.toml",
                      "/w/ws/sub/ANVIL.TOML", "/w/ws/sub/anvil.lock", "/w/ws/sub/anvil.lock. "}));
}

// A walk that takes a directory's entries from an earlier walk still finds the names in it.
TEST(ScanGitMetadata, AMemoKeepsAnvilsProtectedNames) {
  FakeTree t;
  t.wall = 100;
  t.File("/w/ws/anvil.lock");
  t.File("/w/ws/Anvil.toml");
  t.File("/w/ws/readme.md");
  auto fs = t.Fs();
  t.wall = 1000;
  auto first = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(first);
  auto again = ScanGitMetadata({"/w"}, Env(), fs, {}, &first->memo);
  ASSERT_TRUE(again);
  EXPECT_GT(again->memo_dirs, 0u);
  EXPECT_EQ(again->listed, 0u);
  V found = again->protected_names;
  std::sort(found.begin(), found.end());
  EXPECT_EQ(found, (V{"/w/ws/Anvil.toml", "/w/ws/anvil.lock"}));
}

TEST(ScanGitMetadata, HeadBesideCommondirIsAGitDirAsTheGatewayGuardSeesIt) {
  // git's is_git_directory: HEAD, and objects/ + refs/ where commondir points. The walk and the
  // plugin guard share the predicate (fs/git_dir_guard.h).
  FakeTree t;
  t.GitInit("/w");
  t.File("/w/wt/HEAD", "ref: refs/heads/main\n");
  t.File("/w/wt/commondir", "../.git\n");
  t.File("/w/docs/HEAD", "not a ref\n");  // HEAD alone, beside a docs folder named refs
  t.Dir("/w/docs/refs");
  auto fs = t.Fs();
  auto scan = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(scan) << scan.error().ToString();
  V markers;
  for (const auto& r : scan->repos) markers.push_back(r.marker);
  std::sort(markers.begin(), markers.end());
  EXPECT_EQ(markers, (V{"/w/.git", "/w/wt"}));
  for (const auto& r : scan->repos) {
    if (r.marker == "/w/wt") {
      EXPECT_EQ(r.kind, GitMarkerKind::kBareDir);
      EXPECT_EQ(r.commondir, "/w/wt/../.git");
    }
  }
}

TEST(ScanGitMetadata, ReadsCommondirWorktreeBackPointersConfigChainAndHooks) {
  FakeTree t;
  t.GitInit("/w/main");
  t.File("/w/main/.git/worktrees/wt/gitdir", "/w/wt/.git\n");
  t.File("/w/main/.git/worktrees/wt/commondir", "../..\n");
  t.File("/w/main/.git/worktrees/wt/HEAD", "ref: refs/heads/x\n");
  t.File("/w/wt/.git", "gitdir: /w/main/.git/worktrees/wt\n");
  t.File("/w/main/.git/config", "[include]\n\tpath = ../team.cfg\n");
  t.File("/w/main/team.cfg", "[include]\n\tpath = more.cfg\n[core]\n\tfsmonitor = ./fsm\n");
  t.File("/w/main/more.cfg", "[diff \"pdf\"]\n\ttextconv = tools/pdf2txt\n");
  t.File("/w/main/.git/hooks/pre-push", "#!/bin/sh\n");
  auto fs = t.Fs();
  auto scan = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(scan) << scan.error().ToString();
  const GitRepo* main = nullptr;
  const GitRepo* wt = nullptr;
  for (const auto& r : scan->repos) {
    if (r.marker == "/w/main/.git") main = &r;
    if (r.marker == "/w/wt/.git") wt = &r;
  }
  ASSERT_TRUE(main && wt);
  EXPECT_EQ(main->worktree_dotgits, (V{"/w/wt/.git"}));
  EXPECT_EQ(main->hooks, (V{"pre-push"}));
  V configs;
  for (const auto& c : main->configs) configs.push_back(c.path + (c.exists ? "" : " (missing)"));
  EXPECT_EQ(configs, (V{"/w/main/.git/config", "/w/main/.git/../team.cfg",
                        "/w/main/.git/../more.cfg", "/w/main/.git/config.worktree (missing)"}));
  EXPECT_EQ(wt->gitdir, "/w/main/.git/worktrees/wt");
  EXPECT_EQ(wt->commondir, "/w/main/.git/worktrees/wt/../..");
  EXPECT_EQ(wt->worktree_dotgits, (V{"/w/wt/.git"}));
  EXPECT_EQ(wt->hooks, (V{"pre-push"}));  // the common dir's hooks run for every worktree
}

TEST(ScanGitMetadata, HooksIdenticalToTheTemplatesAreNotCounted) {
  FakeTree t;
  t.File("/usr/share/git-core/templates/hooks/pre-commit", "#!/bin/sh\nframework\n");
  t.GitInit("/w/a");
  t.File("/w/a/.git/hooks/pre-commit", "#!/bin/sh\nframework\n");
  t.GitInit("/w/b");
  t.File("/w/b/.git/hooks/pre-commit", "#!/bin/sh\nevil\n");
  auto fs = t.Fs();
  auto scan = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(scan);
  for (const auto& r : scan->repos) {
    if (r.marker == "/w/a/.git") {
      EXPECT_TRUE(r.hooks.empty());
    }
    if (r.marker == "/w/b/.git") {
      EXPECT_EQ(r.hooks, (V{"pre-commit"}));
    }
  }
}

TEST(ScanGitMetadata, PastEachBoundItFailsNamingTheBoundAndTheWayOut) {
  FakeTree t;
  for (int i = 0; i < 50; ++i) t.File("/w/f" + std::to_string(i));
  t.Dir("/w/a/b/c/d");
  auto fs = t.Fs();
  struct Case {
    GitScanLimits limits;
    std::string bound;
  } cases[] = {
      {{.entries = 20}, "'entries' bound is 20"},
      {{.depth = 3}, "'depth' bound is 3"},
  };
  for (const auto& c : cases) {
    auto scan = ScanGitMetadata({"/w"}, Env(), fs, c.limits);
    ASSERT_FALSE(scan) << c.bound;
    EXPECT_EQ(scan.error().code, "limit");
    EXPECT_NE(scan.error().message.find(c.bound), std::string::npos) << scan.error().message;
    EXPECT_NE(scan.error().message.find("--git-scan-limit"), std::string::npos);
    EXPECT_NE(scan.error().message.find("--writable-git"), std::string::npos);
  }
  EXPECT_TRUE(ScanGitMetadata({"/w"}, Env(), fs, {.entries = 60, .depth = 4}));
  t.tick = std::chrono::milliseconds(400);
  auto slow = ScanGitMetadata({"/w"}, Env(), fs, {.seconds = 1});
  ASSERT_FALSE(slow);
  EXPECT_NE(slow.error().message.find("'seconds' bound is 1"), std::string::npos)
      << slow.error().message;
}

TEST(ScanGitMetadata, ADirectoryItCannotListFailsOnlyWhenTheCommandCouldWriteIt) {
  FakeTree t;
  t.Dir("/w/theirs");
  t.At("/w/theirs").listable = false;
  t.At("/w/theirs").writable = false;
  auto fs = t.Fs();
  EXPECT_TRUE(ScanGitMetadata({"/w"}, Env(), fs, {}));
  t.At("/w/theirs").writable = true;
  auto scan = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_FALSE(scan);
  EXPECT_NE(scan.error().message.find("/w/theirs"), std::string::npos);
}

TEST(ScanGitMetadata, ALaterWalkListsOnlyDirectoriesWhoseEntriesChanged) {
  FakeTree t;
  t.wall = 100;  // made long before the walk
  t.GitInit("/w");
  for (int i = 0; i < 20; ++i) t.File("/w/src/d" + std::to_string(i) + "/f.c");
  t.GitInit("/w/vendor/lib");
  t.Dir("/w/recent");
  auto fs = t.Fs();
  t.wall = 1000;
  t.Touch("/w/recent");  // changed in the second before the walk: never taken from the memo
  auto first = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(first);
  EXPECT_EQ(first->memo.dirs.count({1, t.At("/w/recent").ino}), 0u);
  EXPECT_GT(first->memo.dirs.size(), 20u);

  // The run: repositories made where nothing else changed, in a renamed-away-and-remade
  // directory, a deep new one, and a change in the directory that was too recent to trust.
  t.wall = 1002;
  t.GitInit("/w/src/d3/sub");
  t.Move("/w/vendor/lib", "/w/vendor/lib.old");
  t.GitInit("/w/vendor/lib");
  t.GitInit("/w/recent/r");
  t.File("/w/src/d7/.git", "gitdir: ../../.git\n");
  auto again = ScanGitMetadata({"/w"}, Env(), fs, {}, &first->memo);
  auto fresh = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(again && fresh);
  V a, b;
  for (const auto& r : again->repos) a.push_back(r.marker);
  for (const auto& r : fresh->repos) b.push_back(r.marker);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);
  EXPECT_TRUE(Contains(a, "/w/src/d3/sub/.git"));
  EXPECT_TRUE(Contains(a, "/w/vendor/lib/.git"));
  EXPECT_TRUE(Contains(a, "/w/vendor/lib.old/.git"));
  EXPECT_TRUE(Contains(a, "/w/recent/r/.git"));
  EXPECT_TRUE(Contains(a, "/w/src/d7/.git"));
  EXPECT_GT(again->memo_dirs, 15u);
  EXPECT_LT(again->listed, fresh->listed);
  // The bound counts what was walked, listed or remembered alike.
  EXPECT_EQ(again->entries, fresh->entries);
}

TEST(ScanGitMetadata, AMemoKeepsEveryDirectoryForTheWalkAfterAndItsBound) {
  FakeTree t;
  t.wall = 100;
  t.GitInit("/w");
  for (int i = 0; i < 10; ++i) t.File("/w/d" + std::to_string(i) + "/f.c");
  auto fs = t.Fs();
  t.wall = 1000;
  auto first = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(first);
  auto second = ScanGitMetadata({"/w"}, Env(), fs, {}, &first->memo);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->listed, 0u);
  // What the second walk took from the first is in its own memo: a third walk (the next run)
  // needs nothing listed either.
  EXPECT_EQ(second->memo.dirs.size(), first->memo.dirs.size());
  auto third = ScanGitMetadata({"/w"}, Env(), fs, {}, &second->memo);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->listed, 0u);
  // The entries bound stops a remembered walk exactly where it stops a listing one.
  auto bounded = ScanGitMetadata({"/w"}, Env(), fs, {.entries = first->entries - 1}, &first->memo);
  ASSERT_FALSE(bounded);
  EXPECT_NE(bounded.error().message.find("'entries' bound"), std::string::npos);
  EXPECT_TRUE(ScanGitMetadata({"/w"}, Env(), fs, {.entries = first->entries}, &first->memo));
}

TEST(ScanGitMetadata, AMemoIsNotTrustedOnAnotherMount) {
  FakeTree t;
  t.wall = 100;
  t.GitInit("/w");
  t.Dir("/w/a/b");
  auto fs = t.Fs();
  t.wall = 1000;
  auto first = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(first);
  ASSERT_FALSE(first->memo.dirs.empty());
  // Another filesystem attached where the same device number and inode numbers come back (a
  // loop device re-attached to another image): the same identities and ctimes, another mount.
  t.mnt = 8;
  t.GitInit("/w/a/b/inner");
  t.At("/w/a/b").ctime = first->memo.dirs.at({1, t.At("/w/a/b").ino}).ctime_sec;
  auto again = ScanGitMetadata({"/w"}, Env(), fs, {}, &first->memo);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->memo_dirs, 0u);
  bool found = false;
  for (const auto& r : again->repos) found |= r.marker == "/w/a/b/inner/.git";
  EXPECT_TRUE(found);
}

TEST(ScanGitMetadata, NoMemoWhereCtimeDoesNotTrackEntries) {
  FakeTree t;
  t.wall = 100;
  t.GitInit("/w");
  t.Dir("/w/a/b");
  t.ctime_tracks_entries = false;  // a network or FUSE filesystem
  t.wall = 1000;
  auto fs = t.Fs();
  auto first = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->memo.dirs.empty());
}

// ---- the plan -------------------------------------------------------------------------------

TEST(PlanGitProtection, NestedRepositoriesMetadataIsReadOnlyTheirWorkingTreesAreNot) {
  FakeTree t;
  t.GitInit("/w");
  t.GitInit("/w/vendor/lib");
  t.File("/w/vendor/lib/src.c");
  t.File("/w/sub/.git", "gitdir: ../.git/modules/sub\n");
  t.GitInit("/w/.git/modules/sub");
  t.File("/w/ext/.git", "gitdir: /w2/.git/worktrees/ext\n");  // outside the roots
  t.GitInit("/w2");
  auto p = Plan(t);
  EXPECT_TRUE(p.plan.problems.empty());
  EXPECT_EQ(p.plan.read_only, (V{"/w/.git", "/w/ext/.git", "/w/sub/.git", "/w/vendor/lib/.git"}));
  EXPECT_TRUE(p.plan.placeholders.empty());
}

TEST(PlanGitProtection, ConfigNamedPathsExistingAreReadOnlyMissingGetPlaceholders) {
  struct Case {
    std::string config;
    V read_only;     // besides /w/.git
    V placeholders;  // "dir|file PATH"
  } cases[] = {
      {"[core]\n\thooksPath = .husky\n", {"/w/.husky"}, {}},
      {"[core]\n\thooksPath = hooks-missing\n", {}, {"dir /w/hooks-missing"}},
      // Its parent missing too: the directories on the way are made (and pinned).
      {"[core]\n\thooksPath = nothere/hooks\n", {}, {"way /w/nothere", "dir /w/nothere/hooks"}},
      {"[core]\n\tfsmonitor = ./a/b/fsm\n", {}, {"way /w/a", "way /w/a/b", "file /w/a/b/fsm"}},
      {"[include]\n\tpath = ../conf.d/extra.inc\n",
       {},
       {"way /w/conf.d", "file /w/conf.d/extra.inc"}},
      // What git could not open either through a missing directory: checked after the run.
      {"[include]\n\tpath = ../gone/../x.inc\n", {}, {}},
      {"[diff \"pdf\"]\n\ttextconv = python3 nothere/conv.py\n",
       {},
       {"way /w/nothere", "file /w/nothere/conv.py"}},
      // An argument without '/' may be no path at all: named, never made.
      {"[diff \"pdf\"]\n\ttextconv = python3 absent.py\n", {}, {}},
      {"[core]\n\tfsmonitor = ./fsm.sh\n", {"/w/fsm.sh"}, {}},
      {"[core]\n\tfsmonitor = ./absent.sh\n", {}, {"file /w/absent.sh"}},
      {"[core]\n\tfsmonitor = true\n", {}, {}},
      {"[diff \"pdf\"]\n\ttextconv = python3 tools/conv.py --x\n", {"/w/tools/conv.py"}, {}},
      {"[diff \"pdf\"]\n\ttextconv = python3 conv.py\n", {"/w/conv.py"}, {}},
      {"[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n", {}, {}},  // subcommands, no paths
      {"[core]\n\tsshCommand = ssh -F ./tools/ssh.cfg\n", {"/w/tools/ssh.cfg"}, {}},
      {"[alias]\n\tx = !./tools/x.sh\n\ty = log --oneline\n", {"/w/tools/x.sh"}, {}},
      {"[alias]\n\ty = tools/x.sh\n", {}, {}},  // not a shell alias
      {"[credential]\n\thelper = store --file .creds\n", {"/w/.creds"}, {}},
      {"[include]\n\tpath = ../team.cfg\n", {"/w/team.cfg"}, {}},
      {"[includeIf \"onbranch:x\"]\n\tpath = ../nope.cfg\n", {}, {"file /w/nope.cfg"}},
      {"[include]\n\tpath = ../team.cfg\n", {"/w/team.cfg"}, {}},
      {"[core]\n\tpager = less -R\n\teditor = vim\n", {}, {}},
      {"[sequence]\n\teditor = sh -c 'exec tools/ed.sh \"$1\"'\n", {"/w/tools/ed.sh"}, {}},
      {"[core]\n\tfsmonitor = .\n", {}, {}},         // a directory word holding the root
      {"[core]\n\tfsmonitor = tools\n", {}, {}},     // a program word without '/': PATH lookup
      {"[core]\n\tfsmonitor = sh tools\n", {}, {}},  // an argument without '.' or '/'
      {"[core]\n\tfsmonitor = sh ./tools\n", {"/w/tools"}, {}},
  };
  for (const auto& c : cases) {
    FakeTree t;
    t.GitInit("/w");
    t.File("/w/.git/config", c.config);
    t.File("/w/.husky/pre-commit", "#!/bin/sh\n");
    t.File("/w/fsm.sh");
    t.File("/w/conv.py");
    t.File("/w/.creds");
    t.File("/w/tools/conv.py");
    t.File("/w/tools/x.sh");
    t.File("/w/tools/ed.sh");
    t.File("/w/tools/ssh.cfg");
    t.File("/w/team.cfg", "[user]\n\tname = x\n");
    auto p = Plan(t);
    EXPECT_TRUE(p.plan.problems.empty()) << c.config << p.plan.problems.front().message;
    V want{"/w/.git"};
    want.insert(want.end(), c.read_only.begin(), c.read_only.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(p.plan.read_only, want) << c.config;
    EXPECT_EQ(Placeholders(p.plan), c.placeholders) << c.config;
  }
}

// What git runs as a hook is kept read-only wherever the links on the way lead, and its other
// hard links are handed on for the search of their names; the benign neighbours (plain hooks,
// samples, a link out of the roots) add nothing.
TEST(PlanGitProtection, HooksAreFollowedThroughEveryLink) {
  struct Case {
    std::string what;
    std::function<void(FakeTree&)> make;
    V read_only;     // besides /w/.git
    V placeholders;  // "dir|file PATH"
    V hard_linked;
    bool problem = false;
  } cases[] = {
      {"a plain hook",
       [](FakeTree& t) { t.File("/w/.git/hooks/pre-commit", "#!/bin/sh\n"); },
       {},
       {},
       {}},
      {"a sample linked out",
       [](FakeTree& t) {
         t.File("/w/scripts/x");
         t.Link("/w/.git/hooks/pre-commit.sample", "../../scripts/x");
       },
       {},
       {},
       {}},
      {"a hook linked into the working tree",
       [](FakeTree& t) {
         t.File("/w/scripts/pre-commit", "#!/bin/sh\n");
         t.Link("/w/.git/hooks/pre-commit", "../../scripts/pre-commit");
       },
       {"/w/scripts/pre-commit"},
       {},
       {}},
      {"an absolute link, through a second link",
       [](FakeTree& t) {
         t.File("/w/tools/real-hook", "#!/bin/sh\n");
         t.Link("/w/scripts/pc", "../tools/real-hook");
         t.Link("/w/.git/hooks/pre-push", "/w/scripts/pc");
       },
       {"/w/tools/real-hook"},
       {},
       {}},
      {"a dangling hook link: its target made as a placeholder",
       [](FakeTree& t) {
         t.Dir("/w/scripts");
         t.Link("/w/.git/hooks/post-checkout", "../../scripts/post-checkout");
       },
       {},
       {"file /w/scripts/post-checkout"},
       {}},
      {"`..` after a symlinked directory, as the kernel takes it",
       [](FakeTree& t) {
         t.Dir("/w/real/sub");
         t.File("/w/real/x", "#!/bin/sh\n");
         t.File("/w/x", "#!/bin/sh\n");
         t.Link("/w/lnk", "real/sub");
         t.Link("/w/.git/hooks/pre-commit", "../../lnk/../x");
       },
       {"/w/real/x"},
       {},
       {}},
      {"a link out of the roots",
       [](FakeTree& t) {
         t.File("/opt/hooks/pre-commit", "#!/bin/sh\n");
         t.Link("/w/.git/hooks/pre-commit", "/opt/hooks/pre-commit");
       },
       {},
       {},
       {}},
      {"the hooks directory a link into the working tree",
       [](FakeTree& t) {
         t.Remove("/w/.git/hooks");
         t.File("/w/githooks/pre-commit", "#!/bin/sh\n");
         t.Link("/w/.git/hooks", "../githooks");
       },
       {"/w/githooks"},
       {},
       {}},
      {"the hooks directory a dangling link",
       [](FakeTree& t) {
         t.Remove("/w/.git/hooks");
         t.Link("/w/.git/hooks", "../githooks");
       },
       {},
       {"dir /w/githooks"},
       {}},
      {"a link in core.hooksPath",
       [](FakeTree& t) {
         t.File("/w/.git/config", "[core]\n\thooksPath = .githooks\n");
         t.File("/w/scripts/post-commit", "#!/bin/sh\n");
         t.Link("/w/.githooks/post-commit", "../scripts/post-commit");
       },
       {"/w/.githooks", "/w/scripts/post-commit"},
       {},
       {}},
      {"a hard-linked hook",
       [](FakeTree& t) {
         t.File("/w/.git/hooks/pre-commit", "#!/bin/sh\n");
         t.At("/w/.git/hooks/pre-commit").nlink = 2;
       },
       {},
       {},
       {"/w/.git/hooks/pre-commit"}},
      {"a link to a hard-linked file",
       [](FakeTree& t) {
         t.File("/w/scripts/pre-commit", "#!/bin/sh\n");
         t.At("/w/scripts/pre-commit").nlink = 3;
         t.Link("/w/.git/hooks/pre-commit", "../../scripts/pre-commit");
       },
       {"/w/scripts/pre-commit"},
       {},
       {"/w/scripts/pre-commit"}},
      {"a submodule's hook linked into the working tree",
       [](FakeTree& t) {
         t.File("/w/sub/.git", "gitdir: ../.git/modules/sub\n");
         t.GitInit("/w/.git/modules/sub");
         t.File("/w/sub/hook.sh", "#!/bin/sh\n");
         t.Link("/w/.git/modules/sub/hooks/pre-commit", "../../../../sub/hook.sh");
       },
       {"/w/sub/.git", "/w/sub/hook.sh"},
       {},
       {}},
      {"a loop of links",
       [](FakeTree& t) {
         t.Link("/w/scripts/a", "b");
         t.Link("/w/scripts/b", "a");
         t.Link("/w/.git/hooks/pre-commit", "../../scripts/a");
       },
       {},
       {},
       {},
       true},
  };
  for (const auto& c : cases) {
    FakeTree t;
    t.GitInit("/w");
    c.make(t);
    auto p = Plan(t);
    EXPECT_EQ(!p.plan.problems.empty(), c.problem)
        << c.what << (p.plan.problems.empty() ? "" : ": " + p.plan.problems.front().message);
    if (c.problem) continue;
    V want{"/w/.git"};
    want.insert(want.end(), c.read_only.begin(), c.read_only.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(p.plan.read_only, want) << c.what;
    EXPECT_EQ(Placeholders(p.plan), c.placeholders) << c.what;
    EXPECT_EQ(p.plan.hard_linked, c.hard_linked) << c.what;
  }
}

TEST(PlanGitProtection, IncludesAreFollowedRelativeToTheIncludingFile) {
  FakeTree t;
  t.GitInit("/w");
  t.File("/w/.git/config", "[include]\n\tpath = ../cfg/a.cfg\n");
  t.File("/w/cfg/a.cfg", "[includeIf \"gitdir:/x/\"]\n\tpath = b.cfg\n");
  t.File("/w/cfg/b.cfg", "[include]\n\tpath = ~/home.cfg\n[core]\n\thooksPath = hooks\n");
  t.File("/home/u/home.cfg", "[core]\n\tfsmonitor = /w/cfg/fsm\n");
  t.File("/w/cfg/fsm");
  auto p = Plan(t);
  EXPECT_TRUE(p.plan.problems.empty());
  // cfg/a.cfg, cfg/b.cfg, the fsmonitor named by the file in $HOME; hooksPath = hooks is
  // relative to the working tree: /w/hooks, missing, gets a placeholder.
  EXPECT_EQ(p.plan.read_only, (V{"/w/.git", "/w/cfg/a.cfg", "/w/cfg/b.cfg", "/w/cfg/fsm"}));
  EXPECT_EQ(Placeholders(p.plan), (V{"dir /w/hooks"}));
}

TEST(PlanGitProtection, IncludeLoopsAndDepthAreBounded) {
  FakeTree t;
  t.GitInit("/w");
  t.File("/w/.git/config", "[include]\n\tpath = ../loop.cfg\n");
  t.File("/w/loop.cfg", "[include]\n\tpath = loop.cfg\n\tpath = loop.cfg\n");
  auto p = Plan(t);
  ASSERT_FALSE(p.plan.problems.empty());
  EXPECT_NE(p.plan.problems.front().message.find("/w/"), std::string::npos);
}

TEST(PlanGitProtection, TheUsersOwnConfigsCountAndApplyToEveryRepository) {
  FakeTree t;
  t.GitInit("/w");
  t.GitInit("/w/nested");
  t.File("/home/u/.gitconfig",
         "[core]\n\thooksPath = .githooks\n\teditor = /w/tools/ed\n[include]\n\tpath = "
         "/w/shared.cfg\n");
  t.File("/w/tools/ed");
  t.Dir("/w/nested/.githooks");
  GitEnv env = Env();
  env.xdg_config_home = "/w/xdg";  // $XDG_CONFIG_HOME/git/config inside the workspace
  t.Dir("/w/xdg/git");
  auto p = Plan(t, {"/w"}, {}, env);
  EXPECT_TRUE(p.plan.problems.empty());
  EXPECT_EQ(p.plan.read_only,
            (V{"/w/.git", "/w/nested/.git", "/w/nested/.githooks", "/w/tools/ed"}));
  // Missing: /w/.githooks (for the top repository), the included /w/shared.cfg, and the XDG
  // config file git would read.
  EXPECT_EQ(Placeholders(p.plan),
            (V{"dir /w/.githooks", "file /w/shared.cfg", "file /w/xdg/git/config"}));
}

TEST(PlanGitProtection, WhatCannotBeKeptReadOnlyIsAProblem) {
  struct Case {
    std::string what;
    std::function<void(FakeTree&)> setup;
    std::string message;
  } cases[] = {
      {"hooksPath is the workspace",
       [](FakeTree& t) { t.File("/w/.git/config", "[core]\n\thooksPath = .\n"); },
       "writable root /w"},
      {"a nested repository's hooksPath is the workspace",
       [](FakeTree& t) {
         t.GitInit("/w/n");
         t.File("/w/n/.git/config", "[core]\n\thooksPath = ..\n");
       },
       "writable root /w"},
      {"config git cannot parse", [](FakeTree& t) { t.File("/w/.git/config", "[core\n"); },
       "/w/.git/config"},
      {"nested config git cannot parse",
       [](FakeTree& t) {
         t.GitInit("/w/n");
         t.File("/w/n/.git/config", "[s]\nk = \"open\n");
       },
       "/w/n/.git/config"},
      {"workspace is a git dir",
       [](FakeTree& t) {
         t.Dir("/w/objects");
         t.Dir("/w/refs");
         t.File("/w/HEAD");
       },
       "is itself a git directory"},
  };
  for (const auto& c : cases) {
    FakeTree t;
    t.GitInit("/w");
    c.setup(t);
    auto p = Plan(t);
    ASSERT_FALSE(p.plan.problems.empty()) << c.what;
    EXPECT_NE(p.plan.problems.front().message.find(c.message), std::string::npos)
        << c.what << ": " << p.plan.problems.front().message;
    EXPECT_NE(p.plan.problems.front().message.find("--writable-git"), std::string::npos);
  }
}

TEST(PlanGitProtection, TheNumberOfPathsIsBounded) {
  FakeTree t;
  t.GitInit("/w");
  for (int i = 0; i < 10; ++i) t.GitInit("/w/r" + std::to_string(i));
  auto p = Plan(t, {"/w"}, {.paths = 5});
  ASSERT_FALSE(p.plan.problems.empty());
  EXPECT_NE(p.plan.problems.front().message.find("'paths' bound is 5"), std::string::npos)
      << p.plan.problems.front().message;
  EXPECT_TRUE(Plan(t, {"/w"}, {.paths = 11}).plan.problems.empty());
}

TEST(PlanGitProtection, PlanningIsBoundedInTimeAndSkipsWhatIsMovedAside) {
  FakeTree t;
  t.GitInit("/w");
  for (int i = 0; i < 5; ++i) {
    const std::string r = "/w/r" + std::to_string(i);
    t.GitInit(r);
    t.File(r + "/.git/config", "[core]\n\tfsmonitor = ./fsm.sh\n");
    t.File(r + "/fsm.sh");
  }
  auto fs = t.Fs();
  auto scan = ScanGitMetadata({"/w"}, Env(), fs, {});
  ASSERT_TRUE(scan);
  auto full = PlanGitProtection(*scan, Env(), fs, {});
  EXPECT_FALSE(full.incomplete);
  EXPECT_EQ(full.read_only.size(), 11u);  // six .git, five fsm.sh
  // A repository moved aside anyway: its config is not looked through.
  std::set<int> skip;
  for (size_t i = 0; i < scan->repos.size(); ++i) {
    if (scan->repos[i].marker == "/w/r0/.git") skip.insert(static_cast<int>(i));
  }
  auto skipped = PlanGitProtection(*scan, Env(), fs, {}, skip);
  EXPECT_FALSE(Contains(skipped.read_only, "/w/r0/fsm.sh"));
  EXPECT_TRUE(Contains(skipped.read_only, "/w/r1/fsm.sh"));
  // Out of time: stops, says so.
  t.tick = std::chrono::milliseconds(600);
  auto slow = PlanGitProtection(*scan, Env(), fs, {.seconds = 1});
  EXPECT_TRUE(slow.incomplete);
  ASSERT_FALSE(slow.problems.empty());
  EXPECT_NE(slow.problems.back().message.find("'seconds' bound is 1"), std::string::npos);
}

TEST(PlanGitProtection, TheRepositoryAboveTheWorkspaceCountsToo) {
  // A monorepo whose hooks live in tools/hooks, and the sandbox run in tools/: git run there
  // uses the monorepo, so its config names paths in the workspace.
  FakeTree t;
  t.GitInit("/repo");
  t.File("/repo/.git/config", "[core]\n\thooksPath = tools/hooks\n\tfsmonitor = tools/fsm\n");
  t.File("/repo/tools/hooks/pre-commit");
  t.Dir("/repo/tools/src");
  auto p = Plan(t, {"/repo/tools"});
  EXPECT_TRUE(p.plan.problems.empty());
  EXPECT_EQ(p.plan.read_only, (V{"/repo/tools/hooks"}));
  EXPECT_EQ(Placeholders(p.plan), (V{"file /repo/tools/fsm"}));
  ASSERT_FALSE(p.scan.repos.empty());
  EXPECT_TRUE(p.scan.repos.back().encloses_root);

  // The sandbox run inside a git dir: its hooks would be the command's.
  auto inside = Plan(t, {"/repo/.git/hooks"});
  ASSERT_FALSE(inside.plan.problems.empty());
  EXPECT_NE(inside.plan.problems.front().message.find("lies inside the git dir /repo/.git"),
            std::string::npos)
      << inside.plan.problems.front().message;
}

TEST(PlanGitProtection, ASymlinkedNameLeadingOutIsWatchedNotBound) {
  FakeTree t;
  t.GitInit("/w");
  t.File("/w/.git/config", "[core]\n\tfsmonitor = tools/fsm\n");
  t.File("/opt/tools/fsm");
  t.Link("/w/tools", "/opt/tools");
  auto p = Plan(t);
  EXPECT_EQ(p.plan.read_only, (V{"/w/.git"}));
  ASSERT_FALSE(p.plan.named.empty());
  EXPECT_EQ(p.plan.named.front().path, "/w/tools/fsm");
}

TEST(PlanGitProtection, TheWayToAConfigFileIsPinnedAndAMissingOneIsMade) {
  struct Case {
    std::string what;
    std::function<void(FakeTree&, GitEnv&)> setup;
    V roots;
    V placeholders;
    V pinned;
  } cases[] = {
      {"the user's XDG config in a home workspace, ~/.config/git missing",
       [](FakeTree& t, GitEnv&) { t.Dir("/home/u/.config"); },
       {"/home/u"},
       {"way /home/u/.config/git", "file /home/u/.config/git/config", "file /home/u/.gitconfig"},
       {"/home/u/.config", "/home/u/.config/git"}},
      {"the same, ~/.config missing too",
       [](FakeTree& t, GitEnv&) { t.Dir("/home/u"); },
       {"/home/u"},
       {"way /home/u/.config", "way /home/u/.config/git", "file /home/u/.config/git/config",
        "file /home/u/.gitconfig"},
       {"/home/u/.config", "/home/u/.config/git"}},
      {"the user's XDG config existing: read-only, the way to it pinned",
       [](FakeTree& t, GitEnv&) {
         t.File("/home/u/.gitconfig", "[user]\n\tname = u\n");
         t.File("/home/u/.config/git/config", "[user]\n\tname = u\n");
       },
       {"/home/u"},
       {},
       {"/home/u/.config", "/home/u/.config/git"}},
      {"a repository's include whose directory is missing",
       [](FakeTree& t, GitEnv&) {
         t.File("/w/.git/config", "[include]\n\tpath = ../conf.d/extra.inc\n");
       },
       {"/w"},
       {"way /w/conf.d", "file /w/conf.d/extra.inc"},
       {"/w/conf.d"}},
      {"an include that exists, deep down: every directory on the way pinned",
       [](FakeTree& t, GitEnv&) {
         t.File("/w/.git/config", "[include]\n\tpath = ../a/b/team.inc\n");
         t.File("/w/a/b/team.inc", "[user]\n\tname = t\n");
       },
       {"/w"},
       {},
       {"/w/a", "/w/a/b"}},
      {"an include inside the git dir: the read-only git dir covers it, nothing pinned",
       [](FakeTree& t, GitEnv&) { t.File("/w/.git/config", "[include]\n\tpath = extra/x.inc\n"); },
       {"/w"},
       {},
       {}},
      {"a hooks directory on the way to an include: the hooks directory wins, nothing below it",
       [](FakeTree& t, GitEnv&) {
         t.File("/w/.git/config",
                "[core]\n\thooksPath = tools\n[include]\n\tpath = ../tools/x/y.inc\n");
       },
       {"/w"},
       {"dir /w/tools"},
       {}},
      {"a config outside the writable roots: nothing",
       [](FakeTree& t, GitEnv&) { t.File("/home/u/.gitconfig", "[user]\n\tname = u\n"); },
       {"/w"},
       {},
       {}},
  };
  for (const auto& c : cases) {
    FakeTree t;
    t.GitInit("/w");
    GitEnv env = Env();
    c.setup(t, env);
    auto p = Plan(t, c.roots, {}, env);
    EXPECT_TRUE(p.plan.problems.empty()) << c.what;
    EXPECT_EQ(Placeholders(p.plan), c.placeholders) << c.what;
    EXPECT_EQ(p.plan.pinned, c.pinned) << c.what;
  }
}

TEST(PlanGitProtection, PinsAndDirectoriesOnTheWayCountTowardThePathsBound) {
  FakeTree t;
  t.GitInit("/w");
  t.File("/w/.git/config", "[include]\n\tpath = ../a/b/c.inc\n");
  // /w/.git, the ways /w/a and /w/a/b (made and pinned), the placeholder /w/a/b/c.inc.
  EXPECT_TRUE(Plan(t, {"/w"}, {.paths = 4}).plan.problems.empty());
  auto over = Plan(t, {"/w"}, {.paths = 3});
  ASSERT_FALSE(over.plan.problems.empty());
  EXPECT_NE(over.plan.problems.front().message.find("'paths' bound is 3"), std::string::npos);
}

// ---- after the run --------------------------------------------------------------------------

struct SandboxRun {
  FakeTree t;
  GitEnv env = Env();
  GitIdentitySet before;
  GitWatchedConfigs configs;
  GitProtectionPlan plan;  // the start's
  // As GitGuard::Prepare: scan, plan, make the placeholders, record.
  void Start(const V& roots = {"/w"}) {
    auto p = Plan(t, roots, {}, env);
    for (const auto& ph : p.plan.placeholders) {
      const std::string path = ph.parent + "/" + ph.name;
      if (ph.directory) {
        t.Dir(path);
      } else {
        t.File(path);
      }
    }
    // As the guard does: one resolution of each path for both records.
    auto fs = ResolvingOnce(t.Fs());
    before = GitIdentities(p.scan, p.plan, fs);
    configs = GitConfigIdentities(p.scan, fs);
    plan = std::move(p.plan);
  }
  // The placeholders removed again (as the guard does once the run is over).
  void RemovePlaceholders() {
    for (auto it = plan.placeholders.rbegin(); it != plan.placeholders.rend(); ++it) {
      t.Remove(it->parent + "/" + it->name);
    }
  }
  std::vector<GitQuarantineAction> After(const V& roots = {"/w"}) {
    auto p = Plan(t, roots, {}, env);
    auto fs = t.Fs();
    const GitTerritory territory = GitTerritoryOf(env.sandbox_homes, fs);
    return DecideGitQuarantine(before, configs, p.scan, p.plan, fs, territory, env);
  }
};

V Paths(const std::vector<GitQuarantineAction>& actions) {
  V out;
  for (const auto& a : actions) out.push_back(a.path);
  return out;
}

TEST(ResolvingOnce, AsksEachPathOnceAndKeepsTheAnswerMissingOrNot) {
  FakeTree t;
  t.File("/home/u/.gitconfig");
  t.Link("/home/u/.config", "/elsewhere");
  std::map<std::string, int> asked;
  GitFs counting = t.Fs();
  counting.resolve = [&asked, inner = counting.resolve](const std::string& path) {
    ++asked[path];
    return inner(path);
  };
  const GitFs once = ResolvingOnce(counting);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(once.resolve("/home/u/.gitconfig"), t.Fs().resolve("/home/u/.gitconfig"));
    EXPECT_EQ(once.resolve("/home/u/.config/git/config"), std::nullopt);
  }
  EXPECT_EQ(asked["/home/u/.gitconfig"], 1);
  EXPECT_EQ(asked["/home/u/.config/git/config"], 1);
  // A copy taken before shares nothing: each record's stretch starts afresh.
  EXPECT_EQ(ResolvingOnce(counting).resolve("/home/u/.gitconfig"),
            once.resolve("/home/u/.gitconfig"));
  EXPECT_EQ(asked["/home/u/.gitconfig"], 2);
}

// A run after one whose check did not walk `/w/deep` (policy/unchecked_subtrees.h): what lies
// there was found by this run's walk before it, but may be the earlier command's, so it is
// judged as new — a repository there that runs code is moved aside. Benign neighbours: one with
// a hook elsewhere stays, a plain one in the subtree stays, and a record naming the whole root
// never moves the root's own `.git`.
TEST(GitIdentitiesWithin, RepositoriesInUncheckedSubtreesAreJudgedAsNew) {
  for (const V& suspect : {V{"/w/deep"}, V{"/w"}}) {
    SCOPED_TRACE(suspect.front());
    SandboxRun r;
    r.t.GitInit("/w");
    r.t.File("/w/.git/hooks/pre-commit", "#!/bin/sh\nthe user's\n");
    r.t.GitInit("/w/deep/a");
    r.t.File("/w/deep/a/.git/hooks/pre-commit", "#!/bin/sh\nevil\n");
    r.t.GitInit("/w/deep/plain");
    r.t.GitInit("/w/other");
    r.t.File("/w/other/.git/hooks/post-checkout", "#!/bin/sh\nthe user's\n");
    r.Start();
    auto p = Plan(r.t, {"/w"}, {}, r.env);
    const GitFs fs = ResolvingOnce(r.t.Fs());
    for (const GitFileId& id : GitIdentitiesWithin(p.scan, p.plan, fs, suspect)) r.before.erase(id);
    const V expected =
        suspect.front() == "/w/deep" ? V{"/w/deep/a/.git"} : V{"/w/deep/a/.git", "/w/other/.git"};
    V moved = Paths(r.After());
    std::sort(moved.begin(), moved.end());
    EXPECT_EQ(moved, expected);
  }
  // Nothing suspect: nothing moved.
  SandboxRun r;
  r.t.GitInit("/w/deep/a");
  r.t.File("/w/deep/a/.git/hooks/pre-commit", "#!/bin/sh\nevil\n");
  r.Start();
  auto p = Plan(r.t, {"/w"}, {}, r.env);
  EXPECT_TRUE(GitIdentitiesWithin(p.scan, p.plan, r.t.Fs(), {}).empty());
  EXPECT_TRUE(r.After().empty());
}

// The attack (red team s5 rtcmd5): a `.git` the command makes that leads outside the writable
// roots to a git dir that is not there yet, or is plain now — in another workspace's sandbox
// home, which a later run there fills with hooks and no check walks, or in /tmp, where anyone
// may make it. Moved aside whatever the target holds now. Benign neighbours: a worktree's and
// a submodule's `.git` leading into the workspace's own repository, and a pointer out of the
// roots that was there before the run.
TEST(DecideGitQuarantine, NewPointersOutOfTheRootsAreMovedAside) {
  SandboxRun r;
  r.t.GitInit("/w");
  r.t.GitInit("/elsewhere/old-top");
  r.t.File("/w/old/.git", "gitdir: /elsewhere/old-top/.git\n");
  r.t.GitInit("/home/u/.local/state/anvil/homes/b/home/plain");
  r.Start({"/w"});
  r.t.File("/w/missing/.git", "gitdir: /tmp/not-yet\n");
  r.t.File("/w/home/.git", "gitdir: /home/u/.local/state/anvil/homes/b/home/plain/.git\n");
  r.t.Link("/w/dangling/.git", "/tmp/nothing-here");
  // Benign: the workspace's own worktree and submodule.
  r.t.File("/w/.git/worktrees/wt/HEAD", "ref: refs/heads/x\n");
  r.t.File("/w/.git/worktrees/wt/commondir", "../..\n");
  r.t.File("/w/.git/worktrees/wt/gitdir", "/w/wt/.git\n");
  r.t.File("/w/wt/.git", "gitdir: /w/.git/worktrees/wt\n");
  r.t.File("/w/.git/modules/lib/HEAD", "ref: refs/heads/main\n");
  r.t.Dir("/w/.git/modules/lib/objects");
  r.t.Dir("/w/.git/modules/lib/refs");
  r.t.File("/w/lib/.git", "gitdir: ../.git/modules/lib\n");
  V moved = Paths(r.After({"/w"}));
  std::sort(moved.begin(), moved.end());
  EXPECT_EQ(moved, (V{"/w/dangling/.git", "/w/home/.git", "/w/missing/.git"}));
}

// References into the sandbox homes and kept /tmp directories (red team s12 F1, F2): a symlink
// of the roots that leads there, and a new repository whose remote is a path there, are moved
// aside as a `.git` pointer out of the roots is. Benign neighbours: symlinks elsewhere, a remote
// that is a sibling repository on the host, a bare repository in the roots, a network URL.
TEST(DecideGitQuarantine, ReferencesIntoTheSandboxHomesAreMovedAside) {
  const std::string homes = "/home/u/.local/state/anvil/homes";
  SandboxRun r;
  r.env.sandbox_homes = {homes};
  r.t.GitInit("/w");
  r.t.GitInit(homes + "/ws-1/home/proj");
  r.t.Dir(homes + "/ws-1/tmp");
  r.t.GitInit("/srv/upstream");
  r.Start({"/w"});
  r.t.Link("/w/vendor", homes + "/ws-1/home/proj");
  r.t.Link("/w/deep/rel", "../../home/u/.local/state/anvil/homes/ws-1/tmp/proj");
  r.t.Link("/w/share", "/usr/share");
  r.t.Link("/w/alib", "deep");
  auto remote = [&](const std::string& top, const std::string& url) {
    r.t.GitInit(top);
    r.t.File(top + "/.git/config", "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = " + url +
                                       "\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n");
  };
  remote("/w/abs", homes + "/ws-1/home/evil.git");
  remote("/w/url", "file://" + homes + "/ws-1/tmp/evil.git");
  remote("/w/sub/rel", "../../../home/u/.local/state/anvil/homes/ws-1/home/evil.git");
  remote("/w/tilde", "~/.local/state/anvil/homes/ws-1/home/evil.git");
  remote("/w/sibling", "/srv/upstream");
  remote("/w/inside", "../local.git");
  GitDirShape(r.t, "/w/local.git");
  remote("/w/net", "https://example.com/x.git");
  r.t.GitInit("/w/branch");
  r.t.File("/w/branch/.git/config",
           "[branch \"main\"]\n\tremote = " + homes + "/ws-1/home/evil.git\n\tmerge = x\n");
  V moved = Paths(r.After({"/w"}));
  std::sort(moved.begin(), moved.end());
  EXPECT_EQ(moved, (V{"/w/abs/.git", "/w/branch/.git", "/w/deep/rel", "/w/sub/rel/.git",
                      "/w/tilde/.git", "/w/url/.git", "/w/vendor"}));
}

// Links the command may have made into what the run kept read-only are moved aside as files
// holding their targets; the same links not among those it may have made (there before the run)
// stay, and so does a link that is itself a protected name (NewProtectedNames judges those).
TEST(DecideGitQuarantine, NewLinksIntoWhatTheRunKeptReadOnlyAreMovedAside) {
  SandboxRun r;
  r.t.GitInit("/w");
  r.t.Dir("/w/src");
  r.Start({"/w"});
  ASSERT_TRUE(std::find(r.plan.read_only.begin(), r.plan.read_only.end(), "/w/.git") !=
              r.plan.read_only.end());
  r.t.Link("/w/notes.txt", ".git/config");
  r.t.Link("/w/src/build", "../.git");
  r.t.Link("/w/old", ".git/hooks");
  r.t.Link("/w/main.c", "src/main.c");
  r.t.Link("/w/.claude", ".git");
  auto p = Plan(r.t, {"/w"}, {}, r.env);
  auto fs = r.t.Fs();
  GitLinkCheck links;
  links.places = r.plan.read_only;
  links.new_links = {"/w/notes.txt", "/w/src/build", "/w/main.c", "/w/.claude"};
  auto actions = DecideGitQuarantine(r.before, r.configs, p.scan, p.plan, fs, {}, r.env, links);
  EXPECT_EQ(Paths(actions), (V{"/w/notes.txt", "/w/src/build"}));
  for (const auto& a : actions) {
    EXPECT_TRUE(a.link) << a.path;
    EXPECT_NE(a.reason.find("leads into /w/.git, which the run kept read-only"), std::string::npos)
        << a.reason;
  }
  // No check asked for: nothing.
  EXPECT_TRUE(DecideGitQuarantine(r.before, r.configs, p.scan, p.plan, fs, {}, r.env).empty());
}

// What leads into the roots leads to what the walk judges, even where the roots themselves lie in
// a sandbox home: only the way out of them into the rest of it counts.
TEST(DecideGitQuarantine, ASymlinkThatStaysInTheRootsIsNoReference) {
  const std::string homes = "/s/anvil/homes";
  SandboxRun r;
  r.env.sandbox_homes = {homes};
  const std::string w = homes + "/ws-1/home/w";
  r.t.GitInit(w);
  r.t.GitInit(homes + "/ws-1/home/proj");
  r.Start({w});
  r.t.Dir(w + "/lib");
  r.t.Link(w + "/a", "lib");
  r.t.Link(w + "/b", homes + "/ws-1/home/proj");
  EXPECT_EQ(Paths(r.After({w})), V{w + "/b"});
}

// The same through a git dir's own `commondir` (red team s5 rtnew5): git reads the config and
// hooks of a new `.git` directory, or of a new bare one, from where its commondir file leads, so
// one that leads out of the roots to what is not there yet is moved aside like a `.git` file.
// Benign neighbours: a new repository whose commondir stays in the roots, and one without any.
TEST(DecideGitQuarantine, NewGitDirsWhoseCommondirLeavesTheRootsAreMovedAside) {
  SandboxRun r;
  r.t.GitInit("/w");
  r.Start({"/w"});
  r.t.File("/w/cd/.git/HEAD", "ref: refs/heads/main\n");
  r.t.File("/w/cd/.git/commondir", "/tmp/later\n");
  r.t.File("/w/bare/HEAD", "ref: refs/heads/main\n");
  r.t.File("/w/bare/commondir", "../../tmp/later-bare\n");
  // Benign: a commondir inside the roots, and a plain `git init`.
  r.t.GitInit("/w/shared");
  r.t.File("/w/in/.git/HEAD", "ref: refs/heads/main\n");
  r.t.File("/w/in/.git/commondir", "../../shared/.git\n");
  r.t.GitInit("/w/plain");
  V moved = Paths(r.After({"/w"}));
  std::sort(moved.begin(), moved.end());
  EXPECT_EQ(moved, (V{"/w/bare", "/w/cd/.git"}));
}

TEST(DecideGitQuarantine, NewRepositoriesThatRunCodeAreMovedAsidePlainOnesStay) {
  SandboxRun r;
  r.t.GitInit("/w");
  r.Start();
  r.t.GitInit("/w/plain");  // a fresh `git init`
  r.t.GitInit("/w/hooked");
  r.t.File("/w/hooked/.git/hooks/pre-commit", "#!/bin/sh\nevil\n");
  r.t.GitInit("/w/configured");
  r.t.File("/w/configured/.git/config", "[core]\n\tfsmonitor = /bin/evil\n");
  r.t.GitInit("/w/included");
  r.t.File("/w/included/.git/config", "[include]\n\tpath = /anywhere\n");
  r.t.GitInit("/w/aliased");
  r.t.File("/w/aliased/.git/config", "[alias]\n\tst = !evil\n");
  r.t.GitInit("/w/broken");
  r.t.File("/w/broken/.git/config", "[core\n");
  r.t.GitInit("/w/linkhooks");
  r.t.Link("/w/linkhooks/.git/hooks", "/elsewhere");
  r.t.File("/w/bare/HEAD");
  r.t.Dir("/w/bare/objects");
  r.t.Dir("/w/bare/refs");
  r.t.File("/w/bare/hooks/pre-receive", "#!/bin/sh\n");
  auto actions = r.After();
  EXPECT_EQ(Paths(actions), (V{"/w/aliased/.git", "/w/bare", "/w/broken/.git", "/w/configured/.git",
                               "/w/hooked/.git", "/w/included/.git", "/w/linkhooks/.git"}));
  for (const auto& a : actions) EXPECT_TRUE(a.git_dir) << a.path;
}

// A repository below a git dir by shape, which the walk enters: git started where it lies finds
// it under the outer one's new name too, so both are moved aside, the inner one first. What the
// outer one holds that is no repository (a config-named path) goes with it, as before.
TEST(DecideGitQuarantine, ARepositoryInsideAnotherMovedAsideIsMovedFirst) {
  SandboxRun r;
  r.t.GitInit("/w");
  r.Start();
  for (const char* dir : {"/w/hk", "/w/hk/sub"}) {
    r.t.File(std::string(dir) + "/HEAD", "ref: refs/heads/main\n");
    r.t.Dir(std::string(dir) + "/objects");
    r.t.Dir(std::string(dir) + "/refs");
    r.t.File(std::string(dir) + "/hooks/post-checkout", "#!/bin/sh\nevil\n");
  }
  r.t.GitInit("/w/hk/sub/in");
  r.t.File("/w/hk/sub/in/.git/hooks/pre-commit", "#!/bin/sh\nevil\n");
  r.t.GitInit("/w/hk/plain");  // runs nothing: stays, and goes with hk
  r.t.GitInit("/w/zz");
  r.t.File("/w/zz/.git/hooks/pre-commit", "#!/bin/sh\nevil\n");
  auto actions = r.After();
  EXPECT_EQ(Paths(actions), (V{"/w/hk/sub/in/.git", "/w/hk/sub", "/w/hk", "/w/zz/.git"}));
  for (const auto& a : actions) EXPECT_TRUE(a.git_dir) << a.path;
}

// One directory the walk records twice (`.GIT`: a `.git` by name, and a git dir by the shape it
// finds inside when it walks it) inside another moved aside: moved once, first. Twice, the second
// move found nothing there and was reported as a failure.
TEST(DecideGitQuarantine, ADirectoryRecordedTwiceIsMovedOnce) {
  SandboxRun r;
  r.t.GitInit("/w");
  r.Start();
  for (const char* dir : {"/w/hk", "/w/hk/x/.GIT"}) {
    r.t.File(std::string(dir) + "/HEAD", "ref: refs/heads/main\n");
    r.t.Dir(std::string(dir) + "/objects");
    r.t.Dir(std::string(dir) + "/refs");
    r.t.File(std::string(dir) + "/hooks/post-checkout", "#!/bin/sh\nevil\n");
  }
  auto actions = r.After();
  EXPECT_EQ(Paths(actions), (V{"/w/hk/x/.GIT", "/w/hk"}));
}

// A writable root made into a git dir cannot be renamed away: its HEAD is. A plain one (no
// key beyond the inert ones) stays, as a plain nested init does.
TEST(DecideGitQuarantine, AWritableRootMadeIntoAGitDirLosesItsHead) {
  SandboxRun r;
  r.t.Dir("/w");
  r.Start();
  r.t.File("/w/HEAD", "ref: refs/heads/main\n");
  r.t.Dir("/w/objects");
  r.t.Dir("/w/refs");
  auto plain = r.After();
  EXPECT_TRUE(plain.empty()) << Paths(plain).front();
  r.t.File("/w/config", "[core]\n\tpager = /bin/evil\n");
  auto actions = r.After();
  EXPECT_EQ(Paths(actions), V{"/w/HEAD"});
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_FALSE(actions[0].git_dir);
}

TEST(DecideGitQuarantine, ANewGitFileIsJudgedByWhatItPointsAt) {
  SandboxRun r;
  r.t.GitInit("/w");
  r.t.File("/w/.git/config", "[core]\n\thooksPath = .husky\n");
  r.t.Dir("/w/.husky");
  r.t.GitInit("/w/clean");
  r.Start();
  // Into the top repository, whose hooksPath is relative: src/.husky would run.
  r.t.File("/w/src/.git", "gitdir: ../.git\n");
  // Into a planted git dir with an fsmonitor.
  r.t.File("/w/sub/.git", "gitdir: ../evil\n");
  r.t.File("/w/evil/HEAD");
  r.t.Dir("/w/evil/objects");
  r.t.Dir("/w/evil/refs");
  r.t.File("/w/evil/config", "[core]\n\tfsmonitor = ./x\n");
  // Into a repository that runs nothing: harmless.
  r.t.File("/w/other/.git", "gitdir: ../clean/.git\n");
  EXPECT_EQ(Paths(r.After()), (V{"/w/evil", "/w/src/.git", "/w/sub/.git"}));
}

TEST(DecideGitQuarantine, ASwappedOrRepointedRepositoryIsNew) {
  SandboxRun r;
  r.t.GitInit("/w");
  r.t.GitInit("/w/vendor/lib");
  r.t.File("/w/vendor/mod/.git", "gitdir: ../../.git/modules/mod\n");
  r.t.GitInit("/w/.git/modules/mod");
  r.Start();
  // The parent of a protected .git renamed away, a new .git made in its place.
  r.t.Move("/w/vendor/lib", "/w/vendor/lib.old");
  r.t.GitInit("/w/vendor/lib");
  r.t.File("/w/vendor/lib/.git/hooks/post-checkout", "#!/bin/sh\n");
  // A submodule's .git file moved one level down: its relative pointer now leads to a planted
  // git dir.
  r.t.Dir("/w/vendor/x");
  r.t.Move("/w/vendor/mod", "/w/vendor/x/mod");
  r.t.GitInit("/w/vendor/.git/modules/mod");
  r.t.File("/w/vendor/.git/modules/mod/config", "[core]\n\tfsmonitor = ./x\n");
  auto actions = r.After();
  // The moved original (lib.old/.git) is the protected object: left alone.
  EXPECT_TRUE(Contains(Paths(actions), "/w/vendor/lib/.git"));
  EXPECT_TRUE(Contains(Paths(actions), "/w/vendor/x/mod/.git"));
  EXPECT_FALSE(Contains(Paths(actions), "/w/vendor/lib.old/.git"));
}

TEST(DecideGitQuarantine, ConfigNamedPathsMadeOrSwappedDuringTheRunAreMovedAside) {
  SandboxRun r;
  r.t.GitInit("/w");
  r.t.GitInit("/w/n");
  r.t.File("/w/n/.git/config",
           "[core]\n\thooksPath = .husky\n\tfsmonitor = sh ./fsm.sh\n[diff \"x\"]\n\ttextconv = "
           "tools/deep/conv\n");
  r.t.Dir("/w/n/.husky");
  r.t.File("/w/n/fsm.sh");
  r.Start();
  // n renamed and remade: its .git moves along (the same object), but the names its config
  // uses now lead to what the command made.
  r.t.Move("/w/n", "/w/m");
  r.t.File("/w/n/.git", "gitdir: ../m/.git\n");
  r.t.File("/w/n/.husky/pre-commit", "#!/bin/sh\n");
  r.t.File("/w/m/tools/deep/conv", "#!/bin/sh\n");  // parent was missing at the start
  auto actions = r.After();
  EXPECT_EQ(Paths(actions), (V{"/w/m/tools/deep/conv", "/w/n/.git"}));
}

TEST(DecideGitQuarantine, NothingChangedNothingMoved) {
  SandboxRun r;
  r.t.GitInit("/w");
  r.t.File("/w/.git/config", "[core]\n\thooksPath = .husky\n");
  r.t.Dir("/w/.husky");
  r.t.File("/w/.git/hooks/pre-commit", "#!/bin/sh\nthe user's own\n");
  r.t.GitInit("/w/vendor/lib");
  r.Start();
  r.t.File("/w/src/new.c");
  r.t.File("/w/vendor/lib/new.c");
  EXPECT_TRUE(r.After().empty());
}

// Every config file git reads (the user's, an include: existing at the start or not) that
// leads elsewhere after the run is moved aside; the placeholders made at the start are taken
// away first where a row says so, as if the command had got past them (a symlink on the way,
// which no mount can pin).
TEST(DecideGitQuarantine, ConfigFilesMadeOrSwappedDuringTheRunAreMovedAside) {
  const std::string fsm = "[core]\n\tfsmonitor = /x/pwn.sh\n";
  struct Case {
    std::string what;
    V roots;
    std::function<void(FakeTree&)> before;
    std::function<void(FakeTree&)> command;  // after the placeholders were made
    bool past_placeholders;                  // the placeholders removed before `command`
    V moved;
  } cases[] = {
      // Repro: a home workspace, ~/.config/git missing, the XDG config made.
      {"~/.config/git/config made where ~/.config/git did not exist",
       {"/home/u"},
       [](FakeTree& t) { t.Dir("/home/u/.config"); },
       [&](FakeTree& t) { t.File("/home/u/.config/git/config", fsm); },
       true,
       {"/home/u/.config/git/config"}},
      {"~/.config/git/config made where ~/.config did not exist either",
       {"/home/u"},
       [](FakeTree& t) { t.Dir("/home/u"); },
       [&](FakeTree& t) { t.File("/home/u/.config/git/config", fsm); },
       true,
       {"/home/u/.config/git/config"}},
      {"~/.gitconfig made",
       {"/home/u"},
       [](FakeTree& t) { t.Dir("/home/u"); },
       [&](FakeTree& t) { t.File("/home/u/.gitconfig", fsm); },
       true,
       {"/home/u/.gitconfig"}},
      {"an existing ~/.config/git/config whose directory was renamed away and made anew",
       {"/home/u"},
       [](FakeTree& t) { t.File("/home/u/.config/git/config", "[user]\n\tname = u\n"); },
       [&](FakeTree& t) {
         t.Move("/home/u/.config", "/home/u/.config.old");
         t.File("/home/u/.config/git/config", fsm);
       },
       false,
       {"/home/u/.config/git/config"}},
      // Repro: an include whose directory did not exist.
      {"a repository's include made where its directory did not exist",
       {"/w"},
       [](FakeTree& t) { t.File("/w/.git/config", "[include]\n\tpath = ../conf.d/extra.inc\n"); },
       [&](FakeTree& t) { t.File("/w/conf.d/extra.inc", fsm); },
       true,
       {"/w/conf.d/extra.inc"}},
      {"an includeIf target made",
       {"/w"},
       [](FakeTree& t) {
         t.File("/w/.git/config", "[includeIf \"onbranch:main\"]\n\tpath = ../c/d/x.inc\n");
       },
       [&](FakeTree& t) { t.File("/w/c/d/x.inc", fsm); },
       true,
       {"/w/c/d/x.inc"}},
      {"an include of the user's config made in the workspace",
       {"/w"},
       [](FakeTree& t) { t.File("/home/u/.gitconfig", "[include]\n\tpath = /w/cfg/u.inc\n"); },
       [&](FakeTree& t) { t.File("/w/cfg/u.inc", fsm); },
       true,
       {"/w/cfg/u.inc"}},
      {"an include's directory, a symlink, replaced by a directory of the command's",
       {"/w"},
       [](FakeTree& t) {
         t.File("/w/.git/config", "[include]\n\tpath = ../conf.d/extra.inc\n");
         t.Dir("/w/real.d");
         t.Link("/w/conf.d", "real.d");
       },
       [&](FakeTree& t) {
         t.Remove("/w/conf.d");
         t.File("/w/conf.d/extra.inc", fsm);
       },
       false,
       {"/w/conf.d/extra.inc"}},
      {"an existing include swapped for a symlink to another repository's config",
       {"/w"},
       [](FakeTree& t) {
         t.File("/w/.git/config", "[include]\n\tpath = ../team.inc\n");
         t.File("/w/team.inc", "[user]\n\tname = t\n");
         t.GitInit("/w/vendor/lib");
         t.File("/w/vendor/lib/.git/config", "[core]\n\tfsmonitor = ./lib-fsm\n");
       },
       [&](FakeTree& t) {
         t.Remove("/w/team.inc");
         t.Link("/w/team.inc", "vendor/lib/.git/config");
       },
       false,
       {"/w/team.inc"}},
      {"an include that leads out of the workspace through a symlink the command made",
       {"/w"},
       [](FakeTree& t) {
         t.File("/w/.git/config", "[include]\n\tpath = ../conf.d/extra.inc\n");
         t.File("/elsewhere/extra.inc", "[core]\n\tpager = /x/pwn.sh\n");
       },
       [&](FakeTree& t) { t.Link("/w/conf.d", "/elsewhere"); },
       true,
       {"/w/conf.d"}},
      {"an include that the scan before the run did not know, of a config made in the run",
       {"/w"},
       [](FakeTree& t) { t.File("/w/.git/config", "[include]\n\tpath = ../a.inc\n"); },
       [&](FakeTree& t) {
         t.File("/w/a.inc", "[include]\n\tpath = b.inc\n");
         t.File("/w/b.inc", fsm);
       },
       true,
       {"/w/a.inc", "/w/b.inc"}},
      // Benign neighbours: nothing moved.
      {"ordinary files written, next to the config's directory and inside it",
       {"/home/u"},
       [](FakeTree& t) { t.Dir("/home/u/.config"); },
       [](FakeTree& t) {
         t.File("/home/u/.config/nvim/init.lua", "x");
         t.File("/home/u/.config/git/ignore", "*.o\n");
         t.File("/home/u/notes.txt", "x");
       },
       false,
       {}},
      {"an include removed: git skips a missing one",
       {"/w"},
       [](FakeTree& t) {
         t.File("/w/.git/config", "[include]\n\tpath = ../team.inc\n");
         t.File("/w/team.inc", "[user]\n\tname = t\n");
       },
       [](FakeTree& t) { t.Remove("/w/team.inc"); },
       false,
       {}},
      {"the user's own config outside the workspace rewritten meanwhile",
       {"/w"},
       [](FakeTree& t) { t.File("/home/u/.gitconfig", "[user]\n\tname = u\n"); },
       [&](FakeTree& t) {
         t.Remove("/home/u/.gitconfig");
         t.File("/home/u/.gitconfig", "[user]\n\tname = v\n");
       },
       false,
       {}},
      {"a plain git init, and a workspace file written",
       {"/w"},
       [](FakeTree& t) { t.File("/w/.git/config", "[include]\n\tpath = ../team.inc\n"); },
       [](FakeTree& t) {
         t.GitInit("/w/fresh");
         t.File("/w/src/main.c", "int x;\n");
       },
       false,
       {}},
  };
  for (const auto& c : cases) {
    SandboxRun r;
    r.t.GitInit("/w");
    c.before(r.t);
    r.Start(c.roots);
    if (c.past_placeholders) r.RemovePlaceholders();
    c.command(r.t);
    EXPECT_EQ(Paths(r.After(c.roots)), c.moved) << c.what;
  }
}

TEST(ApplyGitQuarantine, MovesAsideWithoutReplacingAndDisarmsGitDirs) {
  FakeTree t;
  t.GitInit("/w/evil");
  t.Dir("/w/evil/.git.anvil-quarantine");  // an earlier quarantine
  t.File("/w/fsm.sh");
  t.File("/outside/x");
  auto fs = t.Fs();
  auto result = ApplyGitQuarantine({{"/w/evil/.git", true, "hook pre-commit"},
                                    {"/w/fsm.sh", false, "named"},
                                    {"/outside/x", false, "named"}},
                                   {"/w"}, fs);
  ASSERT_EQ(result.moved.size(), 2u);
  EXPECT_EQ(result.moved[0].moved_to, "/w/evil/.git.anvil-quarantine-2");
  EXPECT_FALSE(t.Has("/w/evil/.git"));
  EXPECT_FALSE(t.Has("/w/evil/.git.anvil-quarantine-2/HEAD"));
  EXPECT_TRUE(t.Has("/w/evil/.git.anvil-quarantine-2/HEAD.anvil-quarantine"));
  EXPECT_EQ(result.moved[0].restore,
            "mv /w/evil/.git.anvil-quarantine-2/HEAD.anvil-quarantine "
            "/w/evil/.git.anvil-quarantine-2/HEAD && mv /w/evil/.git.anvil-quarantine-2 "
            "/w/evil/.git");
  EXPECT_EQ(result.moved[1].moved_to, "/w/fsm.sh.anvil-quarantine");
  EXPECT_TRUE(t.Has("/outside/x"));
  ASSERT_EQ(result.failures.size(), 1u);
  EXPECT_NE(result.failures[0].find("/outside/x"), std::string::npos);
}

// A symlink into a sandbox home renamed aside would still lead there (a prompt in
// `vendor.anvil-quarantine` would run what is there): it becomes a file holding its target, and
// the restore command makes the link again.
TEST(ApplyGitQuarantine, ASymlinkBecomesAFileHoldingItsTarget) {
  FakeTree t;
  t.Link("/w/vendor", "/s/homes/x/home/proj");
  t.File("/w/vendor.anvil-quarantine");  // taken
  auto fs = t.Fs();
  GitQuarantineAction a{"/w/vendor", false, "a symlink into a sandbox home"};
  a.link = true;
  auto result = ApplyGitQuarantine({a}, {"/w"}, fs);
  ASSERT_EQ(result.moved.size(), 1u) << (result.failures.empty() ? "" : result.failures[0]);
  EXPECT_FALSE(t.Has("/w/vendor"));
  EXPECT_EQ(result.moved[0].moved_to, "/w/vendor.anvil-quarantine-2");
  EXPECT_EQ(t.At("/w/vendor.anvil-quarantine-2").type, GitFileType::kFile);
  EXPECT_EQ(t.At("/w/vendor.anvil-quarantine-2").content, "/s/homes/x/home/proj");
  EXPECT_EQ(result.moved[0].restore,
            "ln -s /s/homes/x/home/proj /w/vendor && rm /w/vendor.anvil-quarantine-2");
}

}  // namespace
}  // namespace git_metadata_test
}  // namespace anvil
