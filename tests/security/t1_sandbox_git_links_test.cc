// T1 for the command sandbox: a symlink the command leaves in the workspace that leads into what
// the run kept read-only — a repository's `.git` (its config, its hooks), a protected file such
// as `.vscode/tasks.json`. The link itself is the command's to make, but a host tool that later
// writes through it (an editor saving `notes.txt`, a build writing `out/pre-commit`) writes
// the repository's config or hooks, and git on the host then runs what it was given. Each
// attack is followed by such writes and the real git run on the host (the fixture's marker);
// each sits next to its benign neighbour, which stays.
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "git_sandbox_fixture.h"

namespace anvil::testing {
namespace t1_sandbox_git_links_test {
namespace {

std::string ReadLink(const std::string& path) {
  char buf[4096];
  const ssize_t n = readlink(path.c_str(), buf, sizeof(buf));
  return n < 0 ? "" : std::string(buf, static_cast<size_t>(n));
}

bool IsLink(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

class T1SandboxGitLinks : public GitSandboxTest {
 protected:
  void SetUp() override {
    GitSandboxTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_EQ(mkdir((ws_ + "/.vscode").c_str(), 0755), 0);
    caller_.Give(ws_ + "/.vscode");
    Write(ws_ + "/.vscode/tasks.json", "{\"version\": \"2.0.0\", \"tasks\": []}\n");
    // The user's own link into the repository, there before any run: it stays.
    ASSERT_EQ(symlink(".git", (ws_ + "/gitdir").c_str()), 0);
    caller_.Give(ws_ + "/gitdir");
  }

  // A host tool writing through `name` (relative to the workspace) as the caller: what an
  // editor saving a file, or a build writing its output there, does.
  void HostWrites(const std::string& name, const std::string& text, bool executable = false) {
    const std::string path = ShellQuote(ws_ + "/" + name);
    const std::string script = "printf '%s' " + ShellQuote(text) + " > " + path +
                               (executable ? " && chmod +x " + path : std::string());
    ::anvil::testing::Run({"/bin/sh", "-c", script + " 2>/dev/null; true"}, Env());
  }
};

// Review rev14: `ln -s .git/config notes.txt` (and every other way into the repository's
// metadata or onto a protected file) survived the run; a host editor saving notes.txt wrote git's
// config (core.fsmonitor), a build writing out/pre-commit wrote a hook.
TEST_P(T1SandboxGitLinks, ALinkIntoTheProtectedMetadataIsMovedAside) {
  const std::vector<std::pair<std::string, std::string>> links = {
      {"notes.txt", ".git/config"},                   // a file of the repository
      {"out", ".git/hooks"},                          // its hooks directory
      {"sub/build", "../.git"},                       // from a subdirectory
      {"abs", ws_ + "/.git/hooks"},                   // absolute
      {"pc", ".git/hooks/pre-commit"},                // to a hook not made yet
      {"chain", "hop"},                               // a link to a link to the metadata
      {"hop", ".git/hooks"},                          //
      {"olds", "gitdir/config"},                      // through the user's own link into it
      {"tasks", ".vscode/tasks.json"},                // a protected file
      {"sub/dots", "../src/../.git/info/../config"},  // `..` on the way
  };
  std::string script = "set -e; mkdir -p sub src";
  for (const auto& [name, target] : links) {
    script += " && ln -s " + ShellQuote(target) + " " + name;
  }
  auto attack = Sh(script);
  EXPECT_EQ(attack.status, 0) << attack.err;
  for (const auto& [name, target] : links) {
    EXPECT_FALSE(IsLink(ws_ + "/" + name)) << name << ": " << attack.err;
    // Renamed, a link would still lead there: it is a file holding its target.
    struct stat st {};
    if (lstat((ws_ + "/" + name + ".anvil-quarantine").c_str(), &st) != 0) {
      ADD_FAILURE() << name << " was not moved aside";
      continue;
    }
    EXPECT_TRUE(S_ISREG(st.st_mode)) << name;
    EXPECT_EQ(ReadFile(ws_ + "/" + name + ".anvil-quarantine"), target) << name;
  }
  EXPECT_NE(attack.err.find("kept read-only"), std::string::npos) << attack.err;
  EXPECT_EQ(ReadLink(ws_ + "/gitdir"), ".git") << "the user's own link stays";
  // Reported with the reason naming where it led.
  bool named = false;
  for (const auto& q : Quarantined(attack)) {
    named = named || (q.value("path", "") == ws_ + "/notes.txt" &&
                      q.value("reason", "").find(ws_ + "/.git") != std::string::npos);
  }
  EXPECT_TRUE(named) << attack.err;

  // The host's tools write where the links were; git on the host then runs nothing planted.
  Write(marker_ + "-fsm.sh", HookText(), 0755);
  const std::string config = "[core]\n\tfsmonitor = " + marker_ + "-fsm.sh\n";
  for (const char* name : {"notes.txt", "sub/build/config", "olds", "sub/dots"}) {
    HostWrites(name, config);
  }
  for (const char* name : {"out/pre-commit", "abs/post-commit", "pc", "chain/pre-commit"}) {
    HostWrites(name, HookText(), true);
  }
  HostWrites("tasks", "{\"tasks\": [{\"runOptions\": {\"runOn\": \"folderOpen\"}}]}\n");
  UseGitOnTheHost(ws_);
  EXPECT_FALSE(Exists(marker_)) << "git on the host ran what a write through a link planted";
  EXPECT_EQ(ReadFile(ws_ + "/.vscode/tasks.json"), "{\"version\": \"2.0.0\", \"tasks\": []}\n");

  // A second run leaves what the first moved aside, and the user's link, as they are.
  auto again = Sh("true");
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_TRUE(Quarantined(again).empty()) << again.err;
  EXPECT_EQ(ReadLink(ws_ + "/gitdir"), ".git");
}

// Review s15c: a workspace in a subdirectory of a repository (a monorepo's package): the
// repository above is read-only to the command but outside the roots, and links into its
// metadata stayed.
TEST_P(T1SandboxGitLinks, ALinkIntoTheRepositoryAboveTheWorkspaceIsMovedAside) {
  ASSERT_EQ(mkdir((ws_ + "/pkg").c_str(), 0755), 0);
  caller_.Give(ws_ + "/pkg");
  Write(ws_ + "/shared.txt", "shared\n");
  auto r =
      SandboxSh(ws_ + "/pkg",
                "set -e; ln -s ../.git/config l1 && ln -s ../.git/hooks l2 && ln -s " +
                    ShellQuote(ws_ + "/.git/hooks/pre-commit") + " l3 && ln -s ../shared.txt ok",
                {"--json"}, Env());
  EXPECT_EQ(r.status, 0) << r.err;
  for (const char* name : {"l1", "l2", "l3"}) {
    EXPECT_FALSE(IsLink(ws_ + "/pkg/" + name)) << name << ": " << r.err;
    EXPECT_TRUE(Exists(ws_ + "/pkg/" + name + ".anvil-quarantine")) << name << ": " << r.err;
  }
  EXPECT_EQ(ReadLink(ws_ + "/pkg/ok"), "../shared.txt") << r.err;
}

// The benign neighbours: links to ordinary files and directories of the workspace, into a
// repository the command made itself, a package manager's bin links, and the user's own link
// into the repository in a directory the command changed: all stay.
TEST_P(T1SandboxGitLinks, ALinkToAnOrdinaryPlaceStays) {
  auto benign =
      Sh("set -e; mkdir -p src shared sub node_modules/pkg node_modules/.bin && echo 'int x;' > "
         "src/main.c && ln -s src/main.c main.c && ln -s ../shared sub/lib && echo x > "
         "node_modules/pkg/bin.js && ln -s ../pkg/bin.js node_modules/.bin/x && git init -q mine "
         "&& ln -s mine/.git/config mineconf && ln -s mine/.git minegit && ln -s .vscode/"
         "settings.json settings && ln -s /dev/null devnull && ln -s /dev/stdout log && touch "
         "new-file");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_TRUE(Quarantined(benign).empty()) << benign.err;
  for (const char* name : {"main.c", "sub/lib", "node_modules/.bin/x", "mineconf", "minegit",
                           "settings", "devnull", "log", "gitdir"}) {
    EXPECT_TRUE(IsLink(ws_ + "/" + name)) << name;
  }
  EXPECT_EQ(ReadFile(ws_ + "/main.c"), "int x;\n");
}

// Review s15c: a link harmless where an earlier run left it (`p/a/b/l -> ../../.git/hooks`,
// which leads to a `p/.git/hooks` that is not there) leads into the workspace's `.git` once a
// later run moves a directory above it (`mv p/a a`). The link and its own directory are
// unchanged; the walk took that directory from the memo of the walk before, which kept no
// links. A directory found at another path than it was remembered at is listed anew.
TEST_P(T1SandboxGitLinks, ALinkWhoseDirectoryAboveWasRenamedIsJudgedAgain) {
  auto plant = Sh("set -e; mkdir -p p/a/b && ln -s ../../.git/hooks p/a/b/l");
  EXPECT_EQ(plant.status, 0) << plant.err;
  EXPECT_TRUE(IsLink(ws_ + "/p/a/b/l")) << plant.err;
  sleep(2);  // directories changed in the second before a walk are never cached
  ASSERT_EQ(Sh("true").status, 0);
  auto attack = Sh("mv p/a a");
  EXPECT_EQ(attack.status, 0) << attack.err;
  EXPECT_FALSE(IsLink(ws_ + "/a/b/l")) << attack.err;
  EXPECT_EQ(ReadFile(ws_ + "/a/b/l.anvil-quarantine"), "../../.git/hooks") << attack.err;
  EXPECT_EQ(ReadLink(ws_ + "/gitdir"), ".git") << "the user's own link stays";
}

// With the walk cache warm: the start takes the workspace's top from the memo of the run before
// and lists none of its links. A link made there since is younger than the directory was then:
// judged and moved aside. The user's link, older, stays though the command changed its directory.
TEST_P(T1SandboxGitLinks, ALinkMadeWhereTheStartTookTheCacheIsJudged) {
  sleep(2);  // directories changed in the second before a walk are never cached
  ASSERT_EQ(Sh("true").status, 0);
  auto attack = Sh("ln -s .git/config notes.txt && ln -s src/x main.c && touch new-file");
  EXPECT_EQ(attack.status, 0) << attack.err;
  auto report = JsonReport(attack);
  ASSERT_TRUE(report.contains("git")) << attack.err;
  EXPECT_GT(report["git"]["dirs_from_cache"].get<size_t>(), 0u) << attack.err;
  EXPECT_FALSE(IsLink(ws_ + "/notes.txt")) << attack.err;
  EXPECT_EQ(ReadFile(ws_ + "/notes.txt.anvil-quarantine"), ".git/config");
  EXPECT_EQ(Quarantined(attack).size(), 1u) << attack.err;
  EXPECT_EQ(ReadLink(ws_ + "/gitdir"), ".git") << "the user's own link stays";
  EXPECT_EQ(ReadLink(ws_ + "/main.c"), "src/x");
}

INSTANTIATE_TEST_SUITE_P(Callers, T1SandboxGitLinks, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t1_sandbox_git_links_test
}  // namespace anvil::testing
