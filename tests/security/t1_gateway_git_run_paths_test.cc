// T1/T4 through the gateway's fs ops: a plugin with a write grant must not change what git runs
// or follows because the repository's config names it — the hooks directory of core.hooksPath
// (husky and friends), the program of core.fsmonitor, a diff driver's textconv, an include
// target — any more than it may change .git itself. The command sandbox keeps exactly these
// read-only (policy/git_metadata.h); the gateway refuses them to fs.write, fs.mkdir, fs.remove
// and fs.rename unless a grant names the exact path (red team 3, F2: fs.write = ["**"] rewrote
// the executable .githooks/pre-commit, keeping its mode, and the user's next `git commit` ran it).
// Each attack beside its benign neighbour; /usr/bin/git run on the host after the attacks shows
// that nothing planted runs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gateway_fixture.h"

namespace anvil::testing {
namespace t1_gateway_git_run_paths_test {
namespace {

constexpr char kGit[] = "/usr/bin/git";

class T1GatewayGitRunPaths : public GatewayTest {
 protected:
  void SetUp() override {
    GatewayTest::SetUp();
    if (::access(kGit, X_OK) != 0) GTEST_SKIP() << kGit << " is not installed";
    marker_ = *ws_ / "../" + UniqueToken("pwned-hook");
  }
  void TearDown() override {
    ::unlink(marker_.c_str());
    GatewayTest::TearDown();
  }
  void Start(std::vector<std::string> write = {"**"}, std::vector<std::string> extra = {}) {
    StartGateway(extra);
    Grant grant;
    grant.fs_read = {"**"};
    grant.fs_write = std::move(write);
    client_ = Client(RegisterPlugin("t1.gitrun", grant), "t1.gitrun");
  }
  std::string Do(const std::string& op, const std::vector<std::string>& args) {
    auto r = client_->Call(op, args);
    if (!r) return "transport: " + r.error().ToString();
    return r->ok ? "ok" : r->ErrorText();
  }
  // git on the host, in the workspace, with no user or system config.
  int Git(const std::string& args) {
    return Shell("cd " + ShellQuote(ws_->path()) +
                 " && HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=t "
                 "GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t " +
                 kGit + " " + args + " >/dev/null 2>&1");
  }
  // The red team's repository: an executable hook in .githooks, committed.
  void HookRepo(bool hooks_path) {
    ASSERT_EQ(Git("init -q"), 0);
    ASSERT_EQ(
        Shell("mkdir -p " + ShellQuote(*ws_ / ".githooks") + " " + ShellQuote(*ws_ / "notes")), 0);
    WriteFile(*ws_ / ".githooks/pre-commit", "#!/bin/sh\necho lint ok\n", 0755);
    WriteFile(*ws_ / "a.txt", "a\n");
    if (hooks_path) {
      ASSERT_EQ(Git("config core.hooksPath .githooks"), 0);
    }
    ASSERT_EQ(Git("add -A"), 0);
    ASSERT_EQ(Git("commit -qm init"), 0);
  }
  std::string Plant() const { return "#!/bin/sh\ntouch " + ShellQuote(marker_) + "\n"; }
  static bool Denied(const std::string& r) { return r.rfind("denied: ", 0) == 0; }

  std::string marker_;
  std::unique_ptr<ipc::GatewayClient> client_;
};

TEST_F(T1GatewayGitRunPaths, TheHooksDirOfCoreHooksPathIsNotWritten) {
  HookRepo(/*hooks_path=*/true);
  Start();
  // The red team's repro: the existing executable hook rewritten.
  std::string r = Do("fs.write", {".githooks/pre-commit", Plant()});
  EXPECT_TRUE(Denied(r)) << r;
  EXPECT_NE(r.find("core.hookspath"), std::string::npos) << r;  // as git spells the key
  EXPECT_EQ(ReadFile(*ws_ / ".githooks/pre-commit"), "#!/bin/sh\necho lint ok\n");
  // Every other route into the hooks dir.
  EXPECT_TRUE(Denied(Do("fs.write", {".githooks/post-commit", Plant()})));
  EXPECT_TRUE(Denied(Do("fs.write", {".GitHooks/pre-commit", Plant()})));
  EXPECT_TRUE(Denied(Do("fs.mkdir", {".githooks/sub", "0"})));
  EXPECT_TRUE(Denied(Do("fs.remove", {".githooks/pre-commit", "0"})));
  EXPECT_TRUE(Denied(Do("fs.remove", {".githooks", "1"})));
  EXPECT_TRUE(Denied(Do("fs.rename", {".githooks", "notes/old-hooks"})));
  ASSERT_EQ(Do("fs.write", {"notes/evil", Plant()}), "ok");
  EXPECT_TRUE(Denied(Do("fs.rename", {"notes/evil", ".githooks/pre-push"})));
  ASSERT_EQ(Do("fs.mkdir", {"notes/hooks", "0"}), "ok");
  ASSERT_EQ(Do("fs.write", {"notes/hooks/pre-commit", Plant()}), "ok");
  EXPECT_EQ(Do("fs.rename", {"notes/hooks", "hooks2"}), "ok");  // named by nothing
  // The benign neighbours: everything else under fs.write ["**"] is written as before.
  EXPECT_EQ(Do("fs.write", {"a.txt", "b\n"}), "ok");
  EXPECT_EQ(Do("fs.write", {"notes/todo.md", "x"}), "ok");
  EXPECT_EQ(Do("fs.mkdir", {"src/deep", "1"}), "ok");
  EXPECT_EQ(Do("fs.remove", {"notes/todo.md", "0"}), "ok");
  // git on the host: the commit runs the project's own hook, not a planted one.
  ASSERT_EQ(Git("commit -qam two"), 0);
  EXPECT_FALSE(Exists(marker_)) << "a planted hook ran on the host";
}

TEST_F(T1GatewayGitRunPaths, WithoutHooksPathTheDirectoryIsJustADirectory) {
  HookRepo(/*hooks_path=*/false);
  Start();
  EXPECT_EQ(Do("fs.write", {".githooks/pre-commit", "#!/bin/sh\nexit 0\n"}), "ok");
  EXPECT_EQ(Do("fs.write", {".githooks/post-commit", "x"}), "ok");
  EXPECT_EQ(Do("fs.rename", {".githooks", "hooks-old"}), "ok");
}

TEST_F(T1GatewayGitRunPaths, ALiteralGrantOfTheExactPathStillWritesIt) {
  HookRepo(/*hooks_path=*/true);
  Start({".githooks/pre-commit", "notes/**"});
  EXPECT_EQ(Do("fs.write", {".githooks/pre-commit", "#!/bin/sh\necho lint ok v2\n"}), "ok");
  EXPECT_TRUE(Denied(Do("fs.rename", {"notes", "x"})));  // outside the grant anyway
}

TEST_F(T1GatewayGitRunPaths, ProgramsAndIncludesTheConfigNamesAreNotWritten) {
  HookRepo(/*hooks_path=*/false);
  WriteFile(*ws_ / "fsmon.sh", "#!/bin/sh\n", 0755);
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(*ws_ / "tools")), 0);
  WriteFile(*ws_ / "tools/conv.sh", "#!/bin/sh\ncat \"$1\"\n", 0755);
  WriteFile(*ws_ / "shared.gitconfig", "[core]\n");
  ASSERT_EQ(Git("config core.fsmonitor ./fsmon.sh"), 0);
  ASSERT_EQ(Git("config diff.conv.textconv tools/conv.sh"), 0);
  ASSERT_EQ(Git("config include.path ../shared.gitconfig"), 0);
  Start();
  for (const char* path : {"fsmon.sh", "tools/conv.sh", "shared.gitconfig"}) {
    std::string r = Do("fs.write", {path, Plant()});
    EXPECT_TRUE(Denied(r)) << path << ": " << r;
  }
  EXPECT_TRUE(Denied(Do("fs.remove", {"tools", "1"})));
  EXPECT_EQ(Do("fs.write", {"tools/other.sh", "x"}), "ok");
  EXPECT_EQ(Do("fs.write", {"notes/readme", "x"}), "ok");
}

TEST_F(T1GatewayGitRunPaths, AHooksPathSetAfterTheGatewayStartedIsSeen) {
  HookRepo(/*hooks_path=*/false);
  Start();
  EXPECT_EQ(Do("fs.write", {".githooks/post-commit", "x"}), "ok");
  ASSERT_EQ(Git("config core.hooksPath .githooks"), 0);
  std::string r = Do("fs.write", {".githooks/pre-commit", Plant()});
  EXPECT_TRUE(Denied(r)) << r;
  EXPECT_EQ(Do("fs.write", {"notes/after", "x"}), "ok");
}

// A hook that is a symlink into the working tree (`ln -s ../../scripts/pre-commit
// .git/hooks/`): git runs the working-tree file as the hook, so it is refused like
// .githooks/pre-commit under core.hooksPath; a dangling hook link's target cannot be made; the
// files beside them stay writable.
TEST_F(T1GatewayGitRunPaths, WhatAHookLinkLeadsToIsNotWritten) {
  HookRepo(/*hooks_path=*/false);
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(*ws_ / "scripts")), 0);
  WriteFile(*ws_ / "scripts/pre-commit", "#!/bin/sh\necho lint ok\n", 0755);
  ASSERT_EQ(
      Shell("ln -s ../../scripts/pre-commit " + ShellQuote(*ws_ / ".git/hooks/pre-commit") +
            " && ln -s ../../scripts/post-commit " + ShellQuote(*ws_ / ".git/hooks/post-commit")),
      0);
  Start();
  std::string r = Do("fs.write", {"scripts/pre-commit", Plant()});
  EXPECT_TRUE(Denied(r)) << r;
  EXPECT_NE(r.find("hook"), std::string::npos) << r;
  EXPECT_TRUE(Denied(Do("fs.write", {"scripts/post-commit", Plant()})));
  EXPECT_TRUE(Denied(Do("fs.rename", {"scripts", "scripts.old"})));
  EXPECT_TRUE(Denied(Do("fs.remove", {"scripts/pre-commit", "0"})));
  Git("commit -q --allow-empty -m x");
  EXPECT_FALSE(Exists(marker_));
  EXPECT_EQ(Do("fs.write", {"scripts/other.sh", "x"}), "ok");
  EXPECT_EQ(Do("fs.write", {"notes/readme", "x"}), "ok");
}

// An AI agent's configuration that is a symlink (`.claude -> shared-claude`): the agent reads
// what it leads to, so a plugin may not write there either.
TEST_F(T1GatewayGitRunPaths, WhatAnAgentConfigLinkLeadsToIsNotWritten) {
  HookRepo(/*hooks_path=*/false);
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(*ws_ / "shared-claude") + " && ln -s shared-claude " +
                  ShellQuote(*ws_ / ".claude")),
            0);
  WriteFile(*ws_ / "shared-claude/settings.json", "{}\n");
  Start();
  std::string r = Do("fs.write", {"shared-claude/settings.json", "{\"hooks\":{}}"});
  EXPECT_TRUE(Denied(r)) << r;
  EXPECT_EQ(ReadFile(*ws_ / "shared-claude/settings.json"), "{}\n");
  EXPECT_TRUE(Denied(Do("fs.rename", {"shared-claude", "elsewhere"})));
  EXPECT_EQ(Do("fs.write", {"notes/readme", "x"}), "ok");
}

// A config names a path that does not exist yet, the way git spells it: an include
// `../local.gitconfig` (relative to .git/config: .git/../local.gitconfig), a hooks dir
// `./.hooks`. Compared as written, neither matched the plugin's `local.gitconfig` or `.hooks`
// (and .git/.. was taken for a path through .git), so a plugin wrote the include with a
// core.fsmonitor command and the user's next `git status` ran it on the host.
TEST_F(T1GatewayGitRunPaths, AMissingPathTheConfigNamesIsComparedAsGitOpensIt) {
  HookRepo(/*hooks_path=*/false);
  ASSERT_EQ(Git("config include.path ../local.gitconfig"), 0);
  ASSERT_EQ(Git("config core.hooksPath ./.hooks"), 0);
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(*ws_ / "real") + " && ln -s real " +
                  ShellQuote(*ws_ / "tools")),
            0);
  ASSERT_EQ(Git("config diff.conv.textconv tools/sub/conv.sh"), 0);
  Start();
  const std::string planted = "[core]\n\tfsmonitor = touch " + ShellQuote(marker_) + "\n";
  std::string r = Do("fs.write", {"local.gitconfig", planted});
  EXPECT_TRUE(Denied(r)) << r;
  EXPECT_NE(r.find("local.gitconfig"), std::string::npos) << r;
  EXPECT_TRUE(Denied(Do("fs.mkdir", {".hooks", "0"})));
  EXPECT_TRUE(Denied(Do("fs.write", {".hooks/pre-commit", Plant()})));
  // Through the link: the textconv program, written where git looks for it (its directory
  // may be made, as any directory above a named path).
  EXPECT_EQ(Do("fs.mkdir", {"real/sub", "0"}), "ok");
  EXPECT_TRUE(Denied(Do("fs.write", {"real/sub/conv.sh", Plant()})));
  Git("status");
  EXPECT_FALSE(Exists(marker_));
  // The benign neighbours: names beside them.
  EXPECT_EQ(Do("fs.write", {"local.gitconfig.txt", "x"}), "ok");
  EXPECT_EQ(Do("fs.mkdir", {".hooks2", "0"}), "ok");
  EXPECT_EQ(Do("fs.write", {"real/other.sh", "x"}), "ok");
}

// A session whose plugins have no fs.write (anvil run and anvil mcp pass --no-fs-write then):
// the gateway never scans the workspace for what git runs, and refuses every write op itself,
// whatever grant a registration carries. Reads are served as before.
TEST_F(T1GatewayGitRunPaths, WithNoFsWriteEveryWriteIsRefusedAndReadsAreServed) {
  HookRepo(true);
  Start({"**"}, {"--no-fs-write"});
  for (const auto& [op, args] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"fs.write", {"notes/n.txt", "x"}},
           {"fs.write", {".githooks/pre-commit", Plant()}},
           {"fs.mkdir", {"newdir", "0"}},
           {"fs.remove", {"a.txt", "0"}},
           {"fs.rename", {"a.txt", "b.txt"}}}) {
    const std::string r = Do(op, args);
    EXPECT_TRUE(Denied(r)) << op << ": " << r;
    EXPECT_NE(r.find("--no-fs-write"), std::string::npos) << op << ": " << r;
  }
  EXPECT_EQ(ReadFile(*ws_ / "a.txt"), "a\n");
  EXPECT_FALSE(Exists(*ws_ / "notes/n.txt"));
  EXPECT_EQ(Do("fs.read", {"a.txt"}), "ok");
}

}  // namespace
}  // namespace t1_gateway_git_run_paths_test
}  // namespace anvil::testing
