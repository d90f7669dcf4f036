// T1 for the git walk cache (linux/git_walk_cache.h): a start in an unchanged workspace takes
// each unchanged directory's entries from the walk of an earlier run instead of listing it.
// Two ways that could weaken the git metadata protection, each tried as root and as an
// unprivileged caller:
//   - a command that writes the cache could make a later run blind to a repository: it must not
//     be able to create, replace, edit, link, move or remove it, even from a writable root that
//     holds it (next to: the same run writes everything else of that root);
//   - a change the cache does not notice: after a cached start, repositories, `.git` files, hard
//     links, gitdir pointers and config includes appear in directories whose listing was cached
//     (made in place, renamed into place from a prepared subtree, with the mtime restored) and
//     the next start must still keep every one read-only;
//   - a start that keeps what it loaded leaves the memo file as it is (a workspace without .git,
//     whose top the run's own placeholder changes, is listed again but writes nothing), and the
//     first change after that is still written and still seen.
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "linux/git_walk_cache.h"
#include "sandbox_harness.h"

namespace anvil::testing {
namespace t1_sandbox_git_walk_cache_test {
namespace {

constexpr char kGit[] = "/usr/bin/git";

class T1SandboxGitWalkCache : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    if (access(kGit, X_OK) != 0) GTEST_SKIP() << "SKIPPED: no " << kGit;
    ws_ = base_ / "ws";
    prep_ = base_ / "prep";
    ASSERT_EQ(mkdir(ws_.c_str(), 0755), 0);
    cache_ = "/tmp/anvil-cache-" + std::to_string(caller_.uid());
  }

  RunResult Sh(const std::string& script, std::vector<std::string> flags = {}) {
    flags.push_back("--json");
    return SandboxSh(ws_, script, flags, Opts());
  }
  // On the host, as the caller (a chown afterwards would itself change every directory's ctime,
  // and the attack must meet the cache, not a fresh listing).
  void AsCaller(const std::string& script) {
    RunOptions o;
    o.env = {"PATH=/usr/bin:/bin", "HOME=" + base_.path(), "GIT_CONFIG_NOSYSTEM=1"};
    auto r = ::anvil::testing::Run({"/bin/sh", "-ec", script}, Opts(o));
    ASSERT_EQ(r.status, 0) << script << ": " << r.err;
  }
  void GitInit(const std::string& dir, const std::vector<std::string>& extra = {}) {
    std::string cmd = std::string(kGit) + " init -q";
    for (const auto& e : extra) cmd += " " + e;
    ASSERT_EQ(Shell(cmd + " " + ShellQuote(dir)), 0) << dir;
  }
  // Runs until a start takes directories from the cache (the first run lists and saves).
  nlohmann::json CachedStart() {
    // Directories changed in the second before a walk are never cached: let them age.
    sleep(2);
    EXPECT_EQ(Sh("true").status, 0);
    auto r = Sh("true");
    EXPECT_EQ(r.status, 0) << r.err;
    auto report = JsonReport(r);
    EXPECT_TRUE(report.contains("git")) << r.err;
    if (report.contains("git")) {
      EXPECT_GT(report["git"]["dirs_from_cache"].get<size_t>(), 3u) << r.err;
      // Nothing is listed again: no run makes anything at the workspace's top (a missing
      // Anvil.toml gets no placeholder, policy/protected_names_plan.h).
      EXPECT_EQ(report["git"]["entries_listed"].get<size_t>(), 0u) << r.err;
    }
    return report;
  }

  TempDir base_{"anvil-walk-cache", "/var/tmp"};
  std::string ws_, prep_, cache_;
};

TEST_P(T1SandboxGitWalkCache, ACommandCannotCreateReplaceEditOrMoveTheCache) {
  ASSERT_EQ(Shell("mkdir -p " + ws_ + "/a/b"), 0);
  caller_.Give(base_.path());
  ASSERT_EQ(Sh("true").status, 0);
  // What the first run saved.
  auto listing =
      ::anvil::testing::Run({"/bin/sh", "-c", "ls " + cache_ + " | grep '^walk-' | head -1"});
  ASSERT_EQ(listing.status, 0);
  const std::string name = Lines(listing.out).empty() ? "" : Lines(listing.out).front();
  ASSERT_FALSE(name.empty()) << "no walk cache file in " << cache_;
  const std::string path = cache_ + "/" + name;
  const std::string before = ReadFile(path);
  struct stat dir_before {};
  ASSERT_EQ(stat(cache_.c_str(), &dir_before), 0);

  // The benign neighbour: a writable root holding the cache (the host's /tmp) is writable
  // everywhere else.
  TempDir elsewhere{"anvil-walk-cache-benign", "/tmp"};
  caller_.Give(elsewhere.path());
  const std::string C = ShellQuote(cache_), F = ShellQuote(path);
  const std::string x = ShellQuote(elsewhere / "x");
  const std::pair<const char*, std::string> tries[] = {
      {"edit", "echo forged > " + F},
      {"append", "echo forged >> " + F},
      {"touch", "touch " + F},
      {"create", "printf x > " + C + "/walk-new"},
      {"mkdir", "mkdir " + C + "/sub"},
      {"symlink", "ln -s /etc " + C + "/walk-link"},
      {"link-out", "ln " + F + " /tmp/walk-hl-$$"},
      {"link-in", "ln " + x + " " + C + "/walk-hl"},
      {"rename", "mv " + F + " " + F + ".old"},
      {"unlink", "rm -f " + F},
      {"chmod", "chmod 777 " + C},
      {"move-dir", "mv " + C + " " + C + ".moved"},
      {"remove-dir", "rm -rf " + C},
      {"rmdir", "rmdir " + C},
  };
  std::string attack = "r=''; ";
  for (const auto& [label, command] : tries) {
    attack += command + " && r=\"$r " + label + "\"; ";
  }
  attack += "echo ok > " + ShellQuote(elsewhere / "benign") + " || r=\"$r benign-failed\"; ";
  attack += "echo \"[$r]\"";
  WriteFile(elsewhere / "x", "x");
  caller_.Give(elsewhere / "x");
  // --writable-git: the shield does not depend on the git protection (and the host's /tmp,
  // shared with everything else on the machine, is not walked).
  auto r = Sh("{ " + attack + "; } 2>/dev/null", {"--writable-root", "/tmp", "--writable-git"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("[]"), std::string::npos) << "the command changed the cache: " << r.out;
  EXPECT_EQ(ReadFile(elsewhere / "benign"), "ok\n");
  EXPECT_EQ(ReadFile(path), before);
  struct stat dir_after {};
  ASSERT_EQ(stat(cache_.c_str(), &dir_after), 0);
  EXPECT_EQ(dir_after.st_ino, dir_before.st_ino);
  EXPECT_EQ(dir_after.st_mode & 07777, 0700u);
  EXPECT_FALSE(Exists(cache_ + ".moved"));
  // Only anvil's own saves (after the run, outside the sandbox) may have changed the listing.
  for (const auto& line : Lines(::anvil::testing::Run({"/bin/ls", "-a", cache_}).out)) {
    EXPECT_TRUE(line == "." || line == ".." || line.rfind("walk-", 0) == 0 ||
                line.rfind(".tmp-", 0) == 0)
        << line;
    EXPECT_NE(line, "walk-new");
    EXPECT_NE(line, "walk-link");
    EXPECT_NE(line, "walk-hl");
  }
}

TEST_P(T1SandboxGitWalkCache, TheCacheItselfAsAWritableRootIsRefusedAndIsNotInThePrivateTmp) {
  ASSERT_EQ(Sh("true").status, 0);  // the cache exists
  auto r = Sh("echo ran", {"--writable-root", cache_});
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("git walk cache"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("ran"), std::string::npos);
  // Benign: without the host's /tmp as a writable root the command's /tmp is its own.
  auto own = Sh("ls -d /tmp/anvil-cache-* 2>/dev/null; echo done > /tmp/x && cat /tmp/x");
  EXPECT_EQ(own.status, 0) << own.err;
  EXPECT_EQ(own.out, "done\n");
}

TEST_P(T1SandboxGitWalkCache, RepositoriesMadeInCachedDirectoriesAreStillProtected) {
  ASSERT_EQ(Shell("mkdir -p " + ws_ + "/a/b/c " + ws_ + "/d/e " + ws_ + "/f " + ws_ + "/g " + ws_ +
                  "/h/old " + ws_ + "/k " + prep_ + "/inner"),
            0);
  GitInit(ws_);
  GitInit(prep_ + "/inner");  // a subtree prepared outside, aged with the rest
  caller_.Give(base_.path());
  CachedStart();

  // On the host, in directories whose listing the cache holds: a nested repository, a `.git`
  // file, one made and the directory's mtime put back, a hard link of a `.git` file, a
  // directory replaced by another of the same name, and a prepared subtree renamed into place.
  const std::string w = ShellQuote(ws_);
  AsCaller("git init -q " + w + "/a/b/c/nested; " + "echo 'gitdir: " + prep_ + "/inner/.git' > " +
           w + "/d/e/.git; " + "git init -q " + w + "/f; touch -d '2001-01-01 00:00' " + w +
           "/f; " + "ln " + w + "/d/e/.git " + w + "/g/.git; " + "rm -rf " + w + "/h; mkdir " + w +
           "/h; git init -q " + w + "/h; " + "mv " + ShellQuote(prep_) + " " + w + "/k/prep");

  const std::vector<std::string> gitdirs = {"a/b/c/nested/.git", "f/.git", "h/.git",
                                            "k/prep/inner/.git"};
  const std::vector<std::string> gitfiles = {"d/e/.git", "g/.git"};
  std::string attack = "r=''; ";
  for (const auto& d : gitdirs) {
    attack += "printf '#!/bin/sh\\n' > " + d + "/hooks/pre-commit && r=\"$r " + d + "\"; ";
    attack += "echo '[core]' >> " + d + "/config && r=\"$r " + d + "/config\"; ";
  }
  for (const auto& f : gitfiles) {
    attack += "echo 'gitdir: /tmp' > " + f + " && r=\"$r " + f + "\"; ";
  }
  // The benign neighbour: the working trees are writable.
  attack += "echo x > a/b/c/nested/src.c && echo x > k/prep/inner/src.c || r=\"$r benign\"; ";
  attack += "echo \"[$r]\"";
  auto r = Sh("{ " + attack + "; } 2>/dev/null");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("[]"), std::string::npos) << "written in the run: " << r.out;
  auto report = JsonReport(r);
  ASSERT_TRUE(report.contains("git")) << r.err;
  // Unchanged directories still came from the cache: the attack was against a cached start.
  EXPECT_GT(report["git"]["dirs_from_cache"].get<size_t>(), 0u);
  for (const auto& d : gitdirs) EXPECT_FALSE(Exists(ws_ + "/" + d + "/hooks/pre-commit")) << d;
  EXPECT_EQ(ReadFile(ws_ + "/d/e/.git"), "gitdir: " + prep_ + "/inner/.git\n");
  EXPECT_EQ(ReadFile(ws_ + "/g/.git"), "gitdir: " + prep_ + "/inner/.git\n");
  EXPECT_EQ(ReadFile(ws_ + "/a/b/c/nested/src.c"), "x\n");
}

TEST_P(T1SandboxGitWalkCache, PointersAndIncludesChangedUnderCachedDirectoriesAreReadAgain) {
  ASSERT_EQ(Shell("mkdir -p " + ws_ + "/sub " + ws_ + "/mods/b/hooks " + ws_ + "/conf"), 0);
  GitInit(ws_);
  GitInit(base_ / "gitdir-a", {"--bare"});
  WriteFile(ws_ + "/sub/.git", "gitdir: " + base_.path() + "/gitdir-a\n");
  WriteFile(ws_ + "/mods/b/config", "[core]\n\tbare = false\n");
  caller_.Give(base_.path());
  CachedStart();

  // File contents, not entries: no directory's ctime moves. The pointer now leads to a git dir
  // in the workspace, and the repository's config includes a file there.
  AsCaller("echo 'gitdir: ../mods/b' > " + ShellQuote(ws_ + "/sub/.git") +
           "; printf '[include]\\n\\tpath = ../conf/extra\\n' >> " +
           ShellQuote(ws_ + "/.git/config"));

  auto r =
      Sh("r=''; printf '#!/bin/sh\\n' > mods/b/hooks/post-checkout && r=\"$r hook\"; "
         "echo '[core]' >> mods/b/config && r=\"$r config\"; "
         "printf '[core]\\n\\tfsmonitor = /tmp/x\\n' > conf/extra && r=\"$r include\"; "
         "echo x > conf/other || r=\"$r benign\"; echo \"[$r]\"");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("[]"), std::string::npos) << "written in the run: " << r.out;
  EXPECT_FALSE(Exists(ws_ + "/mods/b/hooks/post-checkout"));
  EXPECT_FALSE(Exists(ws_ + "/conf/extra") && ReadFile(ws_ + "/conf/extra").size() > 0);
  EXPECT_EQ(ReadFile(ws_ + "/conf/other"), "x\n");
}

TEST_P(T1SandboxGitWalkCache, AnUnchangedWorkspaceKeepsItsMemoAndTheNextChangeIsStillSeen) {
  // No .git at the top: every run makes its placeholder there (and removes it after).
  ASSERT_EQ(Shell("mkdir -p " + ws_ + "/a/b " + ws_ + "/c"), 0);
  caller_.Give(base_.path());
  char real[PATH_MAX];
  ASSERT_NE(realpath(ws_.c_str(), real), nullptr);
  const std::string memo = cache_ + "/" + GitWalkCacheFileName({real});
  sleep(2);
  ASSERT_EQ(Sh("true").status, 0);  // lists everything, saves
  auto identity = [&memo]() {
    struct stat st {};
    EXPECT_EQ(stat(memo.c_str(), &st), 0) << memo;
    return std::to_string(st.st_ino) + "@" + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec);
  };
  const std::string saved = identity();
  const std::string bytes = ReadFile(memo);
  for (int i = 0; i < 2; ++i) {
    auto r = Sh("true");
    ASSERT_EQ(r.status, 0) << r.err;
    auto report = JsonReport(r);
    ASSERT_TRUE(report.contains("git")) << r.err;
    EXPECT_GE(report["git"]["dirs_from_cache"].get<size_t>(), 3u) << r.err;  // a, a/b, c
    EXPECT_EQ(identity(), saved) << "run " << i << " wrote a memo it had loaded";
    EXPECT_EQ(ReadFile(memo), bytes);
  }
  EXPECT_FALSE(Exists(ws_ + "/.git"));  // the placeholder went

  // The attack the unchanged memo must not hide: a repository made in a cached directory. Its
  // directory's ctime moves, so the memo is written again and the next start protects it.
  AsCaller("git init -q " + ShellQuote(ws_ + "/c/nested"));
  auto r = Sh(
      "r=''; printf '#!/bin/sh\\n' > c/nested/.git/hooks/pre-commit 2>/dev/null && r=\"$r hook\"; "
      "echo x > c/nested/file || r=\"$r benign\"; echo \"[$r]\"");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("[]"), std::string::npos) << "written in the run: " << r.out;
  EXPECT_FALSE(Exists(ws_ + "/c/nested/.git/hooks/pre-commit"));
  EXPECT_EQ(ReadFile(ws_ + "/c/nested/file"), "x\n");
  EXPECT_NE(identity(), saved) << "a changed walk was not saved";
}

INSTANTIATE_TEST_SUITE_P(Callers, T1SandboxGitWalkCache, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t1_sandbox_git_walk_cache_test
}  // namespace anvil::testing
