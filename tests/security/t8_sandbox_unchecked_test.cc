// T8 across the two walls when the check after a sandbox run cannot finish its walk (red team
// s5 rtcmd5): the command pushes the walk past a bound on purpose (here: more files at the top
// than the 'entries' bound), so a project below the top is not walked after the run and the
// Anvil.toml it made there is not moved aside. The run exits 125 and names the subtree, and the
// next sandbox there does not start until it is within the bounds — but `anvil run` walks
// nothing: it read the command's Anvil.toml and handed its settings to the user's plugin. Now
// plugin admission refuses, naming the subtree and what to do, until a sandbox run that walks
// it (and moves aside what the earlier command could have made there) resolves the record.
// Beside it: a complete run refuses nothing, and an incomplete run elsewhere keeps nothing out.
// Root and unprivileged callers.
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace t8_sandbox_unchecked_test {
namespace {

class T8SandboxUnchecked : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    ws_ = base_ / "ws";
    proj_ = ws_ + "/proj";
    ASSERT_EQ(Shell("mkdir -p " + ShellQuote(base_ / "state") + " " + ShellQuote(base_ / "home") +
                    " " + ShellQuote(proj_ + "/cfg") + " " + ShellQuote(base_ / "elsewhere")),
              0);
    WriteFile(proj_ + "/cfg/anvil-plugin.toml",
              "id = \"test.cfg\"\nversion = \"1.0.0\"\nruntime = \"lua\"\nentry = \"main.lua\"\n");
    WriteFile(proj_ + "/cfg/main.lua",
              "anvil.command('go', function() return anvil.settings.who or 'none' end)\n");
    caller_.Give(base_.path());
    auto approved = Anvil({"run", "--approve", "--workspace", proj_, "cfg", "go"}, proj_);
    ASSERT_EQ(approved.status, 0) << approved.err;
    ASSERT_EQ(approved.out, "none\n");
  }

 public:
  RunOptions EnvFor(const std::string& cwd) const { return Env(cwd); }

 protected:
  RunOptions Env(const std::string& cwd) const {
    RunOptions o;
    o.cwd = cwd;
    o.env = {"PATH=/usr/bin:/bin", "HOME=" + base_ / "home", "XDG_STATE_HOME=" + base_ / "state"};
    return Opts(o);
  }
  RunResult Anvil(std::vector<std::string> args, const std::string& cwd) {
    args.insert(args.begin(), AnvilBin());
    return ::anvil::testing::Run(args, Env(cwd));
  }
  RunResult Sh(const std::string& ws, const std::string& script,
               const std::vector<std::string>& flags = {}) {
    return SandboxSh(ws, script, flags, Env(ws));
  }
  // The command's files at the top, past the bound, then its settings for the user's plugin.
  RunResult PlantPastTheBound(const std::string& ws, const std::string& config_dir) {
    return Sh(ws,
              "for i in $(seq 40); do : > f$i; done && mkdir -p " + config_dir +
                  " && printf '[plugins.settings.\"test.cfg\"]"
                  "\\nwho = \"agent\"\\n' > " +
                  config_dir + "/Anvil.toml && echo PLANTED",
              {"--git-scan-limit", "entries=30"});
  }

  TempDir base_{"anvil-unchecked", "/var/tmp"};
  std::string ws_, proj_;
};

TEST_P(T8SandboxUnchecked, APluginDoesNotRunInWhatTheCheckAfterTheRunDidNotWalk) {
  // Benign neighbour first: a run whose check is complete keeps nothing out.
  auto benign =
      Sh(ws_, "echo a > proj/notes.txt && echo BENIGN", {"--git-scan-limit", "entries=30"});
  EXPECT_EQ(benign.status, 0) << benign.err;
  caller_.Give(base_.path());
  auto run = Anvil({"run", "--workspace", proj_, "cfg", "go"}, proj_);
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "none\n");

  // The attack.
  auto r = PlantPastTheBound(ws_, "proj");
  EXPECT_NE(r.out.find("PLANTED"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(r.status, 125) << r.err;
  EXPECT_NE(r.err.find("did not walk"), std::string::npos) << r.err;
  ASSERT_TRUE(Exists(proj_ + "/Anvil.toml")) << "the walk reached proj after all";

  caller_.Give(base_.path());
  run = Anvil({"run", "--workspace", proj_, "cfg", "go"}, proj_);
  EXPECT_NE(run.status, 0) << run.out << run.err;
  EXPECT_EQ(run.out.find("agent"), std::string::npos) << run.out;
  EXPECT_NE(run.err.find(proj_), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("unchecked"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("anvil sandbox --cwd " + ws_ + " -- true"), std::string::npos) << run.err;
  // The workspace above it too: it holds what was not checked.
  run = Anvil({"run", "--workspace", ws_, "proj/cfg", "go"}, ws_);
  EXPECT_NE(run.status, 0) << run.out << run.err;
  EXPECT_EQ(run.out.find("agent"), std::string::npos) << run.out;

  // What the message says: the next sandbox run there walks proj, takes what it holds as the
  // earlier command's and moves its Anvil.toml aside; then the plugin runs, without it.
  ASSERT_EQ(Shell("rm -f " + ShellQuote(ws_) + "/f*"), 0);
  auto resolve = Sandbox(ws_, {}, {"/bin/true"}, Env(ws_));
  EXPECT_EQ(resolve.status, 0) << resolve.err;
  EXPECT_FALSE(Exists(proj_ + "/Anvil.toml"));
  EXPECT_TRUE(Exists(proj_ + "/Anvil.toml.anvil-quarantine")) << resolve.err;
  caller_.Give(base_.path());
  run = Anvil({"run", "--workspace", proj_, "cfg", "go"}, proj_);
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "none\n");

  // Benign neighbour: an incomplete run in another workspace keeps nothing out here.
  auto other = PlantPastTheBound(base_ / "elsewhere", "sub");
  EXPECT_EQ(other.status, 125) << other.err;
  caller_.Give(base_.path());
  run = Anvil({"run", "--workspace", proj_, "cfg", "go"}, proj_);
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "none\n");
}

// An `anvil` killed (SIGKILL) while its command runs checks nothing afterwards: what the command
// made (here its settings in proj/Anvil.toml) was never looked at. Its pending record keeps
// plugins out of the workspace until a sandbox run there checks it (and moves the file aside).
// Benign neighbour: while a run is going, a plugin in the same workspace still starts.
TEST_P(T8SandboxUnchecked, AKilledAnvilLeavesThePluginsOutUntilARunChecks) {
  Spawned anvil({AnvilBin(), "sandbox", "--cwd", ws_, "--", "/bin/sh", "-c",
                 "printf '[plugins.settings.\"test.cfg\"]\\nwho = \"agent\"\\n' > "
                 "proj/Anvil.toml && echo up > up && exec sleep 1000"},
                Env(ws_));
  ASSERT_TRUE(WaitUntil([&] { return Exists(ws_ + "/up"); })) << "the sandbox never started";
  caller_.Give(base_.path());
  // The run's own record is live: not in the way.
  auto during = Anvil({"run", "--approve", "--workspace", ws_, "proj/cfg", "go"}, ws_);
  EXPECT_EQ(during.status, 0) << during.err;
  EXPECT_EQ(during.out, "none\n");

  ASSERT_EQ(kill(anvil.pid(), SIGKILL), 0);
  EXPECT_EQ(anvil.Wait(std::chrono::seconds(10)).value_or(-1), 128 + SIGKILL);
  ASSERT_TRUE(Exists(proj_ + "/Anvil.toml"));
  caller_.Give(base_.path());
  auto run = Anvil({"run", "--workspace", proj_, "cfg", "go"}, proj_);
  EXPECT_NE(run.status, 0) << run.out << run.err;
  EXPECT_EQ(run.out.find("agent"), std::string::npos) << run.out;
  EXPECT_NE(run.err.find("did not finish"), std::string::npos) << run.err;

  auto resolve = Sandbox(ws_, {}, {"/bin/true"}, Env(ws_));
  EXPECT_EQ(resolve.status, 0) << resolve.err;
  EXPECT_FALSE(Exists(proj_ + "/Anvil.toml"));
  caller_.Give(base_.path());
  run = Anvil({"run", "--workspace", proj_, "cfg", "go"}, proj_);
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "none\n");
}

// Two runs at once in one workspace (an agent's parallel calls; red team s6 rtcmd4): run A's
// command makes a nested repository with a hook; run B, started meanwhile, found it in its walk
// before the run. B's command hides it from A's check inside a new `.git` directory (never
// entered) until A has ended, then puts it back: A's check saw nothing, and B's took it for the
// user's because it was there when B started. Now a run started while another goes over the
// same roots takes as the user's only what that run took as the user's, so B's check judges
// the repository as new and moves it aside. Benign neighbour: the user's own nested repository
// with a hook, there before both runs, stays where it is.
TEST_P(T8SandboxUnchecked, ARunStartedMeanwhileDoesNotTakeAnotherRunsWorkAsTheUsers) {
  ASSERT_EQ(Shell("cd " + ShellQuote(ws_) +
                  " && git init -q usr && printf '#!/bin/sh\\nexit 0\\n' > "
                  "usr/.git/hooks/pre-commit && chmod +x usr/.git/hooks/pre-commit"),
            0);
  caller_.Give(base_.path());
  Spawned a({AnvilBin(), "sandbox", "--cwd", ws_, "--", "/bin/sh", "-c",
             "git init -q sub && printf '#!/bin/sh\\necho PWNED\\n' > sub/.git/hooks/pre-commit "
             "&& chmod +x sub/.git/hooks/pre-commit && : > planted && "
             "while [ ! -e hidden ]; do sleep 0.05; done"},
            Env(ws_));
  ASSERT_TRUE(WaitUntil([&] { return Exists(ws_ + "/planted"); })) << "run A never started";
  Spawned b({AnvilBin(), "sandbox", "--cwd", ws_, "--", "/bin/sh", "-c",
             "mkdir -p hide/.git && mv sub hide/.git/sub && : > hidden && "
             "while [ ! -e release ]; do sleep 0.05; done; "
             "mv hide/.git/sub sub && rmdir hide/.git hide && rm -f planted hidden release"},
            Env(ws_));
  EXPECT_EQ(a.Wait(std::chrono::seconds(60)).value_or(-1), 0);
  ASSERT_TRUE(Exists(ws_ + "/hide/.git/sub/.git/hooks/pre-commit")) << "run B never hid it";
  ASSERT_EQ(Shell(": > " + ShellQuote(ws_ + "/release")), 0);
  EXPECT_EQ(b.Wait(std::chrono::seconds(60)).value_or(-1), 0);
  EXPECT_FALSE(Exists(ws_ + "/sub/.git/hooks/pre-commit")) << "the hooked repository survived";
  EXPECT_TRUE(Exists(ws_ + "/sub/.git.anvil-quarantine"));
  // The user's, there before both runs, stays.
  EXPECT_TRUE(Exists(ws_ + "/usr/.git/hooks/pre-commit"));
  EXPECT_FALSE(Exists(ws_ + "/usr/.git.anvil-quarantine"));
}

// A name at a root's top that another live run's command made (red team s7 review1 #1): run
// B takes it as the user's, then run A's check moves it aside — a rename from outside B's
// mount namespace, which carries B's read-only mount with it — and B's command writes its own
// under the name. Now B trusts at the top too only what A trusts, and compares each name by
// what it is, not where: B's file is moved aside. Benign neighbour: the user's own
// `.mcp.json` at the top stays through both runs.
TEST_P(T8SandboxUnchecked, ANameAtTheTopThatAnotherRunsCheckMovesIsNotTakenOver) {
  const std::string mine = proj_ + "/.claude";
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(mine) + " && echo '{}' > " + ShellQuote(mine) +
                  "/settings.json"),
            0);
  caller_.Give(base_.path());
  Spawned a({AnvilBin(), "sandbox", "--cwd", ws_, "--", "/bin/sh", "-c",
             "echo '{\"mcpServers\":{}}' > .mcp.json && : > a-planted && "
             "while [ ! -e b-started ]; do sleep 0.05; done"},
            Env(ws_));
  ASSERT_TRUE(WaitUntil([&] { return Exists(ws_ + "/a-planted"); })) << "run A never started";
  Spawned b({AnvilBin(), "sandbox", "--cwd", ws_, "--", "/bin/sh", "-c",
             ": > b-started; while [ -e .mcp.json ]; do sleep 0.05; done; "
             "echo '{\"mcpServers\":{\"pwn\":{\"command\":\"id\"}}}' > .mcp.json; "
             "rm -f a-planted b-started"},
            Env(ws_));
  EXPECT_EQ(a.Wait(std::chrono::seconds(60)).value_or(-1), 0);
  b.Wait(std::chrono::seconds(60));
  const std::string left = Exists(ws_ + "/.mcp.json") ? ReadFile(ws_ + "/.mcp.json") : "";
  EXPECT_EQ(left.find("pwn"), std::string::npos) << "B's server definition stayed";
  EXPECT_TRUE(Exists(mine + "/settings.json")) << "the user's own .claude was moved";
}

// An `anvil` killed after its run said what it trusts: what its command made at the top of the
// workspace (`.mcp.json`, `.claude`) is moved aside by the next run, as below the top; the
// user's own `.claude` in proj, there before, stays.
TEST_P(T8SandboxUnchecked, AKilledRunsNamesAtTheTopAreJudgedByWhatItTrusted) {
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(proj_ + "/.claude")), 0);
  caller_.Give(base_.path());
  Spawned anvil({AnvilBin(), "sandbox", "--cwd", ws_, "--", "/bin/sh", "-c",
                 "mkdir -p .claude && echo '{}' > .claude/settings.json && echo '{}' > .mcp.json "
                 "&& echo '# made' > Anvil.toml && : > up && exec sleep 1000"},
                Env(ws_));
  ASSERT_TRUE(WaitUntil([&] { return Exists(ws_ + "/up"); })) << "the sandbox never started";
  ASSERT_EQ(kill(anvil.pid(), SIGKILL), 0);
  anvil.Wait(std::chrono::seconds(10));
  auto next = Sandbox(ws_, {}, {"/bin/true"}, Env(ws_));
  EXPECT_FALSE(Exists(ws_ + "/.mcp.json")) << next.err;
  EXPECT_FALSE(Exists(ws_ + "/.claude")) << next.err;
  EXPECT_FALSE(Exists(ws_ + "/Anvil.toml")) << next.err;
  EXPECT_TRUE(Exists(ws_ + "/Anvil.toml.anvil-quarantine")) << next.err;
  EXPECT_TRUE(Exists(proj_ + "/.claude"));
}

// Benign neighbour of the two above (red team s7 review2 #2): with no other run going, your
// editor saving `.mcp.json` by rename during a run (a new inode under the name) is yours, and
// stays; the command could not have replaced it through its read-only mount.
TEST_P(T8SandboxUnchecked, YourRenameSaveDuringALoneRunStays) {
  WriteFile(ws_ + "/.mcp.json", "{}\n");
  WriteFile(proj_ + "/.mcp.json", "{}\n");
  caller_.Give(base_.path());
  Spawned run({AnvilBin(), "sandbox", "--cwd", ws_, "--", "/bin/sh", "-c",
               ": > up && while [ ! -e saved ]; do sleep 0.05; done"},
              Env(ws_));
  ASSERT_TRUE(WaitUntil([&] { return Exists(ws_ + "/up"); })) << "the sandbox never started";
  for (const std::string& f : {ws_ + "/.mcp.json", proj_ + "/.mcp.json"}) {
    WriteFile(f + ".new", "{\"a\":1}\n");
    ASSERT_EQ(std::rename((f + ".new").c_str(), f.c_str()), 0);
  }
  WriteFile(ws_ + "/saved", "");
  EXPECT_EQ(run.Wait(std::chrono::seconds(60)).value_or(-1), 0);
  EXPECT_EQ(ReadFile(ws_ + "/.mcp.json"), "{\"a\":1}\n");
  EXPECT_EQ(ReadFile(proj_ + "/.mcp.json"), "{\"a\":1}\n");
  EXPECT_FALSE(Exists(ws_ + "/.mcp.json.anvil-quarantine"));
}

// Two runs over one workspace by two paths (red team s7 review3 #2): B, over the real path,
// cannot match A's trusted names (paths of the alias) and moves the user's `.mcp.json` aside,
// which carries A's read-only mount with it; A's command then writes its own. A's check finds
// what was there at its start beside the name, moved aside, and moves A's command's file aside
// too.
TEST_P(T8SandboxUnchecked, ANameAnotherRunMovedAsideIsNotTakenOverLater) {
  WriteFile(ws_ + "/.mcp.json", "{}\n");
  caller_.Give(base_.path());
  TempDir alias_dir("anvil-alias", "/var/tmp");
  const std::string alias = alias_dir.path();
  ASSERT_EQ(::mount(ws_.c_str(), alias.c_str(), nullptr, MS_BIND, nullptr), 0);
  Spawned a({AnvilBin(), "sandbox", "--cwd", alias, "--", "/bin/sh", "-c",
             ": > a-up; while [ -e .mcp.json ]; do sleep 0.05; done; "
             "echo '{\"mcpServers\":{\"pwn\":{\"command\":\"id\"}}}' > .mcp.json; : > a-wrote"},
            EnvFor(alias));
  const bool up = WaitUntil([&] { return Exists(ws_ + "/a-up"); });
  auto b = Sandbox(ws_, {}, {"/bin/true"}, Env(ws_));
  a.Wait(std::chrono::seconds(60));
  ::umount2(alias.c_str(), MNT_DETACH);
  ASSERT_TRUE(up) << "run A never started";
  ASSERT_NE(b.err.find("moved " + ws_ + "/.mcp.json aside"), std::string::npos)
      << "run B never moved the name aside, so the attack was not tried: " << b.err;
  const std::string left = Exists(ws_ + "/.mcp.json") ? ReadFile(ws_ + "/.mcp.json") : "";
  EXPECT_EQ(left.find("pwn"), std::string::npos) << "A's command's .mcp.json stayed: " << b.err;
}

// Run A (in the workspace) makes a hooked `<rel>/sub/.git`; run B, started meanwhile in
// `alias` (a bind mount of `<rel>`), hides it from A's check inside a new `.git` directory and
// puts it back once A has ended (the shape of ARunStartedMeanwhile...). Whether the hook
// survived both checks.
bool HookSurvivesHideAndRestoreThroughAnAlias(T8SandboxUnchecked& t, const std::string& ws,
                                              const std::string& rel) {
  TempDir alias_dir("anvil-alias", "/var/tmp");
  const std::string alias = alias_dir.path();
  const std::string source = rel.empty() ? ws : ws + "/" + rel;
  const std::string in = rel.empty() ? "" : rel + "/";
  if (::mount(source.c_str(), alias.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    ADD_FAILURE() << "cannot bind-mount " << source;
    return false;
  }
  Spawned a({AnvilBin(), "sandbox", "--cwd", ws, "--", "/bin/sh", "-c",
             "git init -q " + in + "sub && printf '#!/bin/sh\\necho PWNED\\n' > " + in +
                 "sub/.git/hooks/pre-commit && chmod +x " + in +
                 "sub/.git/hooks/pre-commit && : > planted && while [ ! -e " + in +
                 "hidden ]; do sleep 0.05; done"},
            t.EnvFor(ws));
  const bool started = WaitUntil([&] { return Exists(ws + "/planted"); });
  Spawned b({AnvilBin(), "sandbox", "--cwd", alias, "--", "/bin/sh", "-c",
             "mkdir -p hide/.git && mv sub hide/.git/sub && : > hidden && "
             "while [ ! -e release ]; do sleep 0.05; done; "
             "mv hide/.git/sub sub && rmdir hide/.git hide && rm -f hidden release"},
            t.EnvFor(alias));
  a.Wait(std::chrono::seconds(60));
  (void)Shell(": > " + ShellQuote(source + "/release"));
  b.Wait(std::chrono::seconds(60));
  ::umount2(alias.c_str(), MNT_DETACH);
  (void)Shell("rm -f " + ShellQuote(ws + "/planted"));
  EXPECT_TRUE(started) << "run A never started";
  return Exists(source + "/sub/.git/hooks/pre-commit");
}

// The same workspace reached through a bind mount, or a directory of it (red team s7 review1
// #4, review2 #4): overlap is decided by where the file system holds the roots, so the
// hide-and-restore fails through the alias too.
TEST_P(T8SandboxUnchecked, TheWorkspaceOrADirectoryOfItThroughABindMountOverlaps) {
  caller_.Give(base_.path());
  EXPECT_FALSE(HookSurvivesHideAndRestoreThroughAnAlias(*this, ws_, ""));
  EXPECT_FALSE(HookSurvivesHideAndRestoreThroughAnAlias(*this, ws_, "proj"));
}

INSTANTIATE_TEST_SUITE_P(Callers, T8SandboxUnchecked, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t8_sandbox_unchecked_test
}  // namespace anvil::testing
