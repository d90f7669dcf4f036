// T1 for the command sandbox: references from the writable roots (what the check after the run
// judges) into the sandbox homes and kept /tmp directories under Anvil's state dir (which the
// command writes, which outlive the run, and which no check walks). A repository there may hold
// any hook or config; a symlink or a remote URL in the workspace that leads the user's git there
// runs it on the host. Each attack is followed by the real git run on the host (the fixture's
// marker), each sits next to its benign neighbour, which is left alone and works.
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "git_sandbox_fixture.h"

namespace anvil::testing {
namespace t1_sandbox_git_territory_test {
namespace {

std::string ReadLink(const std::string& path) {
  char buf[4096];
  const ssize_t n = readlink(path.c_str(), buf, sizeof(buf));
  return n < 0 ? "" : std::string(buf, static_cast<size_t>(n));
}

class T1SandboxGitTerritory : public GitSandboxTest {
 protected:
  void SetUp() override {
    GitSandboxTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // The host paths of this workspace's sandbox home and kept /tmp, as the report names them.
    auto first = Sh("true");
    ASSERT_EQ(first.status, 0) << first.err;
    auto report = JsonReport(first);
    ASSERT_TRUE(report.contains("home")) << first.err;
    sandbox_home_ = report["home"].value("sandbox_home", "");
    kept_tmp_ = report["home"].value("tmp", "");
    ASSERT_FALSE(sandbox_home_.empty()) << first.err;
    ASSERT_EQ(kept_tmp_.front(), '/') << first.err;
  }

  // `path` relative to `from` (both absolute, lexical): "../../x".
  static std::string Relative(const std::string& from, const std::string& path) {
    std::string up;
    for (char c : from) up += c == '/' ? "../" : "";
    return up + path.substr(1);
  }

  std::string sandbox_home_, kept_tmp_;
};

// Red team s12 F1: a nested repository whose config holds only keys git remote add writes, its
// remote a bare repository with a pre-receive hook in the sandbox home (or the kept /tmp): the
// user's `git push` there ran the hook on the host. Every spelling of that path (absolute,
// file://, relative through `..`) makes the repository one that is moved aside.
TEST_P(T1SandboxGitTerritory, ARemoteIntoTheSandboxHomeIsNotInert) {
  const std::vector<std::pair<std::string, std::string>> remotes = {
      {"abs", sandbox_home_ + "/evil.git"},
      {"url", "file://" + sandbox_home_ + "/evil.git"},
      {"rel", Relative(ws_ + "/rel", sandbox_home_ + "/evil.git")},
      {"tmp", kept_tmp_ + "/evil.git"},
  };
  std::string script = "git init -q --bare ~/evil.git && " + Plant("~/evil.git/hooks/pre-receive") +
                       " && git init -q --bare /tmp/evil.git && " +
                       Plant("/tmp/evil.git/hooks/pre-receive");
  for (const auto& [name, url] : remotes) {
    script += " && git init -q " + name + " && git -C " + name +
              " commit -q --allow-empty -m x && git -C " + name + " remote add origin " +
              ShellQuote(url);
  }
  auto attack = Sh(script);
  EXPECT_EQ(attack.status, 0) << attack.err;
  for (const auto& [name, url] : remotes) {
    EXPECT_FALSE(Exists(ws_ + "/" + name + "/.git")) << name << ": " << attack.err;
    EXPECT_TRUE(Exists(ws_ + "/" + name + "/.git.anvil-quarantine")) << name;
    Git(ws_ + "/" + name, {"push", "-q", "origin", "HEAD:main"});
    Git(ws_ + "/" + name + "/.git.anvil-quarantine", {"push", "-q", "origin", "HEAD:main"});
  }
  EXPECT_NE(attack.err.find("sandbox home"), std::string::npos) << attack.err;
  EXPECT_FALSE(Exists(marker_)) << "git push on the host ran a hook planted in the sandbox home";

  // Benign: a remote that is a sibling repository on the host, and one that is a bare
  // repository inside the workspace (walked and judged itself): left alone, and git push works.
  const std::string upstream = outside_ / "upstream.git";
  GitOk(outside_.path(), {"init", "-q", "--bare", upstream});
  caller_.Give(upstream);
  auto benign =
      Sh("git init -q mine && git -C mine commit -q --allow-empty -m x && git -C mine remote add "
         "origin " +
         ShellQuote(upstream) +
         " && git init -q --bare local.git && git -C mine remote add here ../local.git && git -C "
         "mine remote add rel " +
         ShellQuote(Relative(ws_ + "/mine", upstream)));
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_TRUE(Quarantined(benign).empty()) << benign.err;
  EXPECT_EQ(Git(ws_ + "/mine", {"push", "-q", "origin", "HEAD:main"}).status, 0);
  EXPECT_EQ(Git(ws_ + "/mine", {"push", "-q", "here", "HEAD:main"}).status, 0);
  EXPECT_EQ(Git(ws_ + "/mine", {"push", "-q", "rel", "HEAD:side"}).status, 0);
}

// Red team s12 F2: a directory symlink in the workspace to a repository in the sandbox home
// whose core.fsmonitor is the command's: `cd vendor && git status` (a git-aware prompt) ran it.
// Moved aside however the link spells its way there (absolute, relative, through another link,
// into the kept /tmp, or to a place not made yet).
TEST_P(T1SandboxGitTerritory, ASymlinkIntoTheSandboxHomeIsMovedAside) {
  Write(marker_ + "-fsm.sh", HookText(), 0755);
  const std::vector<std::pair<std::string, std::string>> links = {
      {"abs", sandbox_home_ + "/proj"},
      {"rel", Relative(ws_, sandbox_home_ + "/proj")},
      {"tmp", kept_tmp_ + "/proj"},
      {"later", sandbox_home_ + "/not-yet/proj"},
      {"dots", sandbox_home_ + "/proj/../proj"},
  };
  std::string script =
      "for d in ~/proj /tmp/proj; do git init -q $d && git -C $d config "
      "core.fsmonitor " +
      marker_ + "-fsm.sh || exit 1; done && mkdir -p sub/deep && ln -s " +
      ShellQuote(sandbox_home_) + " sub/deep/hop";
  for (const auto& [name, target] : links) {
    script += " && ln -s " + ShellQuote(target) + " " + name;
  }
  script += " && ln -s sub/deep/hop/proj viahop";
  auto attack = Sh(script);
  EXPECT_EQ(attack.status, 0) << attack.err;
  for (const auto& [name, target] : links) {
    EXPECT_FALSE(Exists(ws_ + "/" + name)) << name << ": " << attack.err;
    // Renamed, a link would still lead there: it is a file holding its target.
    struct stat st {};
    ASSERT_EQ(lstat((ws_ + "/" + name + ".anvil-quarantine").c_str(), &st), 0) << name;
    EXPECT_TRUE(S_ISREG(st.st_mode)) << name;
    EXPECT_EQ(ReadFile(ws_ + "/" + name + ".anvil-quarantine"), target) << name;
  }
  EXPECT_FALSE(Exists(ws_ + "/sub/deep/hop")) << attack.err;
  for (const char* dir : {"/abs", "/rel", "/tmp", "/dots", "/viahop", "/sub/deep/hop/proj",
                          "/abs.anvil-quarantine"}) {
    Git(ws_ + dir, {"status"});
  }
  // A second run leaves what the first moved aside as it is.
  auto again = Sh("true");
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_TRUE(Quarantined(again).empty()) << again.err;
  // The restore command shown puts the link back as it was.
  const auto shown = Quarantined(attack);
  ASSERT_FALSE(shown.empty());
  const std::string restore = shown[0]["restore"];
  const std::string target = ReadFile(shown[0]["moved_to"]);
  EXPECT_EQ(Shell("bash -c " + ShellQuote(restore)), 0) << restore;
  EXPECT_EQ(ReadLink(shown[0]["path"]), target) << restore;
  EXPECT_FALSE(Exists(shown[0]["moved_to"])) << restore;
  Shell("rm -f " + ShellQuote(shown[0]["path"].get<std::string>()));
  EXPECT_FALSE(Exists(marker_)) << "git status on the host ran a sandbox home repository's "
                                   "fsmonitor through a workspace symlink";

  // Benign: symlinks to /usr/share, to another directory of the workspace, and to a directory
  // on the host outside the state dir stay, and git works through them.
  const std::string sibling = outside_ / "sibling";
  GitOk(outside_.path(), {"init", "-q", sibling});
  caller_.Give(sibling);
  auto benign = Sh("mkdir -p lib/a && ln -s /usr/share share && ln -s lib/a alink && ln -s " +
                   ShellQuote(sibling) + " sib && ln -s missing dangling");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_TRUE(Quarantined(benign).empty()) << benign.err;
  for (const char* name : {"/share", "/alink", "/sib", "/dangling"}) {
    struct stat st {};
    EXPECT_EQ(lstat((ws_ + name).c_str(), &st), 0) << name;
    EXPECT_TRUE(S_ISLNK(st.st_mode)) << name;
  }
  EXPECT_EQ(Git(ws_ + "/sib", {"status", "--short"}).status, 0);
}

// Red team rt13 (left over): a link of the workspace into the sandbox home whose place there is a
// link back into the workspace ended in the workspace and stayed. The next run of the workspace
// re-pointed the home's link at a repository of its own there, and the walk memo kept the
// unchanged directory's link unjudged: `cd vendor && git status` on the host ran that
// repository's fsmonitor. The way is judged link by link now: moved aside at the first run.
// Benign: a link of the workspace to a directory of it stays.
TEST_P(T1SandboxGitTerritory, AWayThroughALinkOfTheSandboxHomeBackIntoTheWorkspaceIsMovedAside) {
  Write(marker_ + "-fsm.sh", HookText(), 0755);
  auto first =
      Sh("mkdir -p lib/real && ln -s " + ShellQuote(ws_ + "/lib/real") + " ~/back && ln -s " +
         ShellQuote(sandbox_home_ + "/back") + " vendor && ln -s lib/real mine");
  EXPECT_EQ(first.status, 0) << first.err;
  struct stat st {};
  EXPECT_NE(lstat((ws_ + "/vendor").c_str(), &st), 0) << "the link through the home stayed";
  EXPECT_EQ(lstat((ws_ + "/vendor.anvil-quarantine").c_str(), &st), 0) << first.err;
  ASSERT_EQ(lstat((ws_ + "/mine").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  auto second = Sh("git init -q ~/evil && git -C ~/evil config core.fsmonitor " +
                   ShellQuote(marker_ + "-fsm.sh") + " && ln -sfn " +
                   ShellQuote(sandbox_home_ + "/evil") + " ~/back");
  EXPECT_EQ(second.status, 0) << second.err;
  Git(ws_ + "/vendor", {"status"});
  EXPECT_FALSE(Exists(marker_)) << "git status on the host ran a sandbox home repository's "
                                   "fsmonitor through a link of the home";
  EXPECT_EQ(Git(ws_ + "/mine", {"status", "--short"}).status, 0);
}

// Review s12: a directory the command leaves readable but not searchable (chmod 600) bars the
// walk's way to the directories in it, which an unprivileged caller then could neither list nor
// write: they were skipped as the caller's own unwritable ones, with a link into the sandbox
// home in them (and a repository would have been as hidden). The walk opens the parent too.
// Benign: the directory's mode is put back as the command left it.
TEST_P(T1SandboxGitTerritory, ALinkBehindADirectoryMadeUnsearchableIsStillJudged) {
  Write(marker_ + "-fsm.sh", HookText(), 0755);
  auto attack = Sh("git init -q ~/proj && git -C ~/proj config core.fsmonitor " + marker_ +
                   "-fsm.sh && mkdir -p a/b && ln -s " + ShellQuote(sandbox_home_ + "/proj") +
                   " a/b/vendor && git init -q a/b/repo && " +
                   Plant("a/b/repo/.git/hooks/post-checkout") + " && chmod 600 a");
  EXPECT_EQ(attack.status, 0) << attack.err;
  struct stat st {};
  ASSERT_EQ(lstat((ws_ + "/a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "the command's mode is put back";
  ASSERT_EQ(chmod((ws_ + "/a").c_str(), 0700), 0);
  EXPECT_FALSE(Exists(ws_ + "/a/b/vendor")) << attack.err;
  EXPECT_TRUE(Exists(ws_ + "/a/b/vendor.anvil-quarantine")) << attack.err;
  EXPECT_FALSE(Exists(ws_ + "/a/b/repo/.git")) << attack.err;
  Git(ws_ + "/a/b/vendor", {"status"});
  EXPECT_FALSE(Exists(marker_)) << "git status on the host ran a sandbox home repository's "
                                   "fsmonitor through a link the walk did not reach";
}

// Review s12: the walk memo a run keeps for the next one (linux/git_walk_cache.h) was trusted
// by any run of the same caller, but the links in it were judged against the territory of the
// run that made it. A run whose state dir is elsewhere ($XDG_STATE_HOME), or that has none (no
// $HOME), leaves a link into the real sandbox home unjudged, and its memo kept later runs from
// listing that directory again: the link was never judged. A memo is now trusted only by a run
// whose territory is the one it was judged against.
TEST_P(T1SandboxGitTerritory, AWalkMemoJudgedAgainstAnotherTerritoryHidesNoLink) {
  Write(marker_ + "-fsm.sh", HookText(), 0755);
  const std::string other_state = outside_ / "other-state";
  ASSERT_EQ(mkdir(other_state.c_str(), 0755), 0);
  caller_.Give(other_state);
  RunOptions elsewhere = Env();
  elsewhere.env.push_back("XDG_STATE_HOME=" + other_state);
  RunOptions homeless = Env();
  std::erase_if(homeless.env, [](const std::string& e) { return e.rfind("HOME=", 0) == 0; });
  const std::vector<std::pair<std::string, RunOptions>> firsts = {{"state", elsewhere},
                                                                  {"nohome", homeless}};
  std::string plant =
      "git init -q ~/proj && git -C ~/proj config core.fsmonitor " + marker_ + "-fsm.sh";
  for (const auto& [name, env] : firsts) {
    // The first run's check judges the link against its own territory, which it is not in; the
    // directory ages past a second before that check, so its walk remembers it.
    auto first = SandboxSh(ws_,
                           "mkdir " + name + " && ln -s " + ShellQuote(sandbox_home_ + "/proj") +
                               " " + name + "/vendor && sleep 2",
                           {"--json"}, env);
    ASSERT_EQ(first.status, 0) << name << ": " << first.err;
    ASSERT_TRUE(Exists(ws_ + "/" + name + "/vendor")) << name << ": " << first.err;
    // The next run has the real territory (and makes the repository the link leads to).
    auto second = Sh(plant);
    plant = "true";
    EXPECT_EQ(second.status, 0) << name << ": " << second.err;
    EXPECT_FALSE(Exists(ws_ + "/" + name + "/vendor")) << name << ": " << second.err;
    EXPECT_TRUE(Exists(ws_ + "/" + name + "/vendor.anvil-quarantine")) << name;
    Git(ws_ + "/" + name + "/vendor", {"status"});
  }
  EXPECT_FALSE(Exists(marker_)) << "git status on the host ran a sandbox home repository's "
                                   "fsmonitor through a link a memo of another territory hid";

  // Benign: repeated runs with one territory still take the unchanged directories from the memo
  // and list nothing again.
  sleep(2);
  ASSERT_EQ(Sh("true").status, 0);
  auto again = Sh("true");
  ASSERT_EQ(again.status, 0) << again.err;
  auto report = JsonReport(again);
  ASSERT_TRUE(report.contains("git")) << again.err;
  EXPECT_GE(report["git"]["dirs_from_cache"].get<size_t>(), 3u) << again.err;  // ws, state, nohome
  EXPECT_EQ(report["git"]["entries_listed"].get<size_t>(), 0u) << again.err;
  EXPECT_TRUE(Quarantined(again).empty()) << again.err;
}

// Red team s13 H2/H3: a symlink, and a remote URL, whose way goes through /proc/self/cwd: the
// check resolved it in its own process (its cwd the workspace), the user's git in the directory
// it runs in, one level deeper, where the same `..`s reach the sandbox home. A path through a
// magic link leads wherever the process that follows it is: the link is moved aside, the
// repository is not inert.
TEST_P(T1SandboxGitTerritory, APathThroughAProcMagicLinkLeadsAnywhere) {
  Write(marker_ + "-fsm.sh", HookText(), 0755);
  // `to` relative to `from`, the fewest `..` (as a shell's relpath): from one level higher up
  // the same spelling leads elsewhere.
  auto relpath = [](const std::string& from, const std::string& to) {
    size_t common = 0;
    for (size_t i = 0; i <= from.size() && i <= to.size(); ++i) {
      const bool end_from = i == from.size() || from[i] == '/';
      const bool end_to = i == to.size() || to[i] == '/';
      if (end_from && end_to) common = i;
      if (i == from.size() || i == to.size() || from[i] != to[i]) break;
    }
    std::string up;
    for (size_t i = common; i < from.size(); ++i) up += from[i] == '/' ? "../" : "";
    return up + to.substr(common + 1);
  };
  const std::string rel_sub = relpath(ws_ + "/sub", sandbox_home_);
  const std::string rel_s2 = relpath(ws_ + "/s2", sandbox_home_);
  auto attack =
      Sh("set -e; git init -q ~/repo && git -C ~/repo config core.fsmonitor " + marker_ +
         "-fsm.sh && git init -q --bare ~/evil.git && " + Plant("~/evil.git/hooks/pre-receive") +
         " && mkdir sub && ln -s " + ShellQuote("/proc/self/cwd/" + rel_sub + "/repo") +
         " sub/vendor && git init -q s2 && git -C s2 commit -q --allow-empty -m x && "
         "git -C s2 remote add origin " +
         ShellQuote("/proc/self/cwd/" + rel_s2 + "/evil.git") + " && ln -s " +
         ShellQuote("/dev/fd/3/" + rel_sub + "/repo") + " sub/fd");
  EXPECT_EQ(attack.status, 0) << attack.err;
  EXPECT_FALSE(Exists(ws_ + "/sub/vendor")) << attack.err;
  EXPECT_FALSE(Exists(ws_ + "/sub/fd")) << attack.err;
  EXPECT_TRUE(Exists(ws_ + "/sub/vendor.anvil-quarantine")) << attack.err;
  EXPECT_FALSE(Exists(ws_ + "/s2/.git")) << attack.err;
  ::anvil::testing::Run(
      {"/bin/sh", "-c", "cd " + ShellQuote(ws_ + "/sub") + " && cd vendor && " + kGit + " status"},
      Env());
  Git(ws_ + "/s2", {"push", "-q", "origin", "HEAD:main"});
  Git(ws_ + "/s2/.git.anvil-quarantine", {"push", "-q", "origin", "HEAD:main"});
  EXPECT_FALSE(Exists(marker_)) << "git on the host followed a /proc magic link into the "
                                   "sandbox home";

  // Benign: a link to /dev/null and to a directory of the workspace stay.
  auto benign = Sh("mkdir -p lib && ln -s /dev/null devnull && ln -s ../lib sub/lib");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_TRUE(Quarantined(benign).empty()) << benign.err;
}

INSTANTIATE_TEST_SUITE_P(Callers, T1SandboxGitTerritory, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t1_sandbox_git_territory_test
}  // namespace anvil::testing
