// T8 across the two walls: a command in `anvil sandbox` (workspace-write) must not be able to
// undo what pins a plugin's code or selects and configures plugins — the workspace's anvil.lock
// and Anvil.toml (fs/protected_names.h, the table the plugin side uses too) — and so get its
// own code run with the grant the user gave a plugin. The attack: the command writes its code
// into a locked plugin of the workspace, then removes or rewrites anvil.lock (or moves it, or
// moves the directory holding it aside and makes it anew); the user's next `anvil run` of the
// plugin must refuse, not run the command's code without asking. The same for Anvil.toml: not
// rewritten, not created where there was none. Beside each: ordinary files next to them stay
// writable, and the user's own `anvil plugin lock` on the host still works. Root and
// unprivileged callers.
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace t8_sandbox_plugin_lock_test {
namespace {

constexpr char kManifest[] =
    "id = \"test.lockpin\"\nversion = \"1.0.0\"\nruntime = \"lua\"\nentry = \"main.lua\"\n\n"
    "[permissions]\nfs.write = [\"notes/**\"]\n";
constexpr char kPluginCode[] =
    "anvil.command('go', function() sys.fs.write('notes/who.txt', 'plugin') return 'plugin' end)\n";
constexpr char kAgentCode[] =
    "anvil.command('go', function() sys.fs.write('notes/who.txt', 'agent') return 'agent' end)\n";

class T8SandboxPluginLock : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    ws_ = base_ / "ws";
    ASSERT_EQ(Shell("mkdir -p " + ShellQuote(base_ / "state") + " " + ShellQuote(base_ / "home") +
                    " " + ShellQuote(ws_ + "/notes")),
              0);
    caller_.Give(base_.path());
  }

  // A plugin in `dir` (relative to the workspace `ws`), approved and locked there by the user.
  void LockedPlugin(const std::string& ws, const std::string& dir) {
    ASSERT_EQ(Shell("mkdir -p " + ShellQuote(ws + "/" + dir) + " " + ShellQuote(ws + "/notes")), 0);
    WriteFile(ws + "/" + dir + "/anvil-plugin.toml", kManifest);
    WriteFile(ws + "/" + dir + "/main.lua", kPluginCode);
    caller_.Give(base_.path());
    auto approved = Anvil({"run", "--approve", "--workspace", ws, dir, "go"}, ws);
    ASSERT_EQ(approved.status, 0) << approved.err;
    ASSERT_EQ(approved.out, "plugin\n");
    auto locked = Anvil({"plugin", "lock", "--workspace", ws, dir}, ws);
    ASSERT_EQ(locked.status, 0) << locked.err;
    ASSERT_TRUE(Exists(ws + "/anvil.lock"));
  }

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
  RunResult Sh(const std::string& script, const std::vector<std::string>& flags = {}) {
    return SandboxSh(ws_, script, flags, Env(ws_));
  }
  // The user's next run of the plugin: whatever it runs, it must not be the command's code.
  void ExpectTheCommandsCodeDoesNotRun(const std::string& ws, const std::string& dir) {
    auto r = Anvil({"run", "--workspace", ws, dir, "go"}, ws);
    EXPECT_NE(r.status, 0) << r.out << r.err;
    EXPECT_EQ(r.out.find("agent"), std::string::npos) << r.out;
    EXPECT_FALSE(Exists(ws + "/notes/who.txt") && ReadFile(ws + "/notes/who.txt") == "agent");
  }

  // A plugin in `cfg` that shows the setting `who` the workspace's Anvil.toml hands it, or
  // "none"; approved by the user.
  void SettingsPlugin() {
    ASSERT_EQ(Shell("mkdir -p " + ShellQuote(ws_ + "/cfg")), 0);
    WriteFile(ws_ + "/cfg/anvil-plugin.toml",
              "id = \"test.cfg\"\nversion = \"1.0.0\"\nruntime = \"lua\"\nentry = "
              "\"main.lua\"\n");
    WriteFile(ws_ + "/cfg/main.lua",
              "anvil.command('go', function() return anvil.settings.who or 'none' end)\n");
    caller_.Give(base_.path());
    auto approved = Anvil({"run", "--approve", "--workspace", ws_, "cfg", "go"}, ws_);
    ASSERT_EQ(approved.status, 0) << approved.err;
    ASSERT_EQ(approved.out, "none\n");
  }
  // `text` for a single-quoted printf format: newlines as \n.
  static std::string Escaped(const std::string& text) {
    std::string out;
    for (char c : text) out += c == '\n' ? std::string("\\n") : std::string(1, c);
    return out;
  }

  TempDir base_{"anvil-plugin-lock", "/var/tmp"};
  RunResult first_;
  std::string ws_;
};

TEST_P(T8SandboxPluginLock, TheWorkspaceLockCannotBeRemovedMovedOrRewritten) {
  LockedPlugin(ws_, "tools/p");
  const std::string lock = ReadFile(ws_ + "/anvil.lock");
  // What a rewrite with fresh hashes would put there: the lock of the command's code, made
  // outside (a command computes the same with sha256sum).
  TempDir forged_ws("anvil-plugin-lock-forged");
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(forged_ws / "tools/p")), 0);
  WriteFile(forged_ws / "tools/p/anvil-plugin.toml", kManifest);
  WriteFile(forged_ws / "tools/p/main.lua", kAgentCode);
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent"};
  ASSERT_EQ(
      ::anvil::testing::Run(
          {AnvilBin(), "plugin", "lock", "--workspace", forged_ws.path(), forged_ws / "tools/p"}, o)
          .status,
      0);
  WriteFile(ws_ + "/forged.lock", ReadFile(forged_ws / "anvil.lock"));
  caller_.Give(ws_);

  auto r = Sh(std::string("printf '%s' ") + ShellQuote(kAgentCode) +
              " > tools/p/main.lua || echo CODE-NOT-WRITTEN; "
              "rm -f anvil.lock 2>/dev/null && echo REMOVED; "
              "mv anvil.lock moved.lock 2>/dev/null && echo MOVED; "
              "cat forged.lock > anvil.lock 2>/dev/null && echo REWROTE; "
              "mv forged.lock anvil.lock 2>/dev/null && echo RENAMED-OVER; "
              "ln -f forged.lock anvil.lock 2>/dev/null && echo LINKED-OVER; "
              "chmod 0666 anvil.lock 2>/dev/null && echo CHMODDED; "
              "echo ok > notes/mine.txt && echo '-- notes' > tools/p/README.md && "
              "mkdir -p build && echo x > build/out && echo BENIGN");
  EXPECT_EQ(r.status, 0) << r.err;
  for (const char* done : {"CODE-NOT-WRITTEN", "REMOVED", "MOVED", "REWROTE", "RENAMED-OVER",
                           "LINKED-OVER", "CHMODDED"}) {
    EXPECT_EQ(r.out.find(done), std::string::npos) << done << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("BENIGN"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(ReadFile(ws_ + "/anvil.lock"), lock);
  EXPECT_EQ(ReadFile(ws_ + "/tools/p/main.lua"), kAgentCode);  // an ordinary file: written
  // A command that fails for it hears why, where the kernel lets Anvil watch refusals.
  if (ProbeLayers({}, Env(ws_)).value("refusal_observer", false)) {
    auto failed = Sh("echo x > anvil.lock");
    EXPECT_NE(failed.status, 0);
    EXPECT_NE(failed.err.find("anvil.lock pins the plugins' code"), std::string::npos)
        << failed.err;
  }
  ExpectTheCommandsCodeDoesNotRun(ws_, "tools/p");

  // The benign neighbour: the user, on the host, reviews the change and locks it; it runs.
  auto relock = Anvil({"plugin", "lock", "--workspace", ws_, "tools/p"}, ws_);
  EXPECT_EQ(relock.status, 0) << relock.err;
  auto ran = Anvil({"run", "--workspace", ws_, "tools/p", "go"}, ws_);
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_EQ(ran.out, "agent\n");
}

// The plugin directory itself moved aside and made anew: the lock pins the plugin by id, so the
// new directory's code does not match it.
TEST_P(T8SandboxPluginLock, ThePluginDirectoryMovedAsideAndMadeAnewDoesNotRun) {
  LockedPlugin(ws_, "tools/p");
  auto r = Sh(std::string("mv tools/p tools/p.old && mkdir tools/p && "
                          "cp tools/p.old/anvil-plugin.toml tools/p/ && printf '%s' ") +
              ShellQuote(kAgentCode) + " > tools/p/main.lua && echo SWAPPED");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("SWAPPED"), std::string::npos) << r.err;  // ordinary directories
  ExpectTheCommandsCodeDoesNotRun(ws_, "tools/p");
}

// A workspace nested in the sandbox's writable root (the user runs Anvil in proj/, the agent in
// the directory above): its lock is kept, and the directory holding it cannot be moved aside
// and made anew without one.
TEST_P(T8SandboxPluginLock, ANestedWorkspacesLockAndItsDirectoryStay) {
  const std::string proj = ws_ + "/proj";
  LockedPlugin(proj, "tools/p");
  const std::string lock = ReadFile(proj + "/anvil.lock");
  auto r = Sh(std::string("printf '%s' ") + ShellQuote(kAgentCode) +
              " > proj/tools/p/main.lua || echo CODE-NOT-WRITTEN; "
              "rm -f proj/anvil.lock 2>/dev/null && echo REMOVED; "
              "echo x > proj/anvil.lock 2>/dev/null && echo REWROTE; "
              "mv proj proj.old 2>/dev/null && echo MOVED-WORKSPACE; "
              "mv proj/tools proj/tools.old 2>/dev/null && echo MOVED-TOOLS; "
              "rmdir proj 2>/dev/null && echo REMOVED-WORKSPACE; "
              "echo ok > proj/notes/mine.txt && echo ok > beside.txt && echo BENIGN");
  EXPECT_EQ(r.status, 0) << r.err;
  for (const char* done :
       {"CODE-NOT-WRITTEN", "REMOVED", "REWROTE", "MOVED-WORKSPACE", "REMOVED-WORKSPACE"}) {
    EXPECT_EQ(r.out.find(done), std::string::npos) << done << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("BENIGN"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(ReadFile(proj + "/anvil.lock"), lock);
  // Moving proj/tools aside is allowed (no lock below it), and changes nothing: the lock
  // pins the plugin by id, wherever its directory is.
  if (r.out.find("MOVED-TOOLS") != std::string::npos) {
    ASSERT_EQ(Shell("mv " + ShellQuote(proj + "/tools.old") + " " + ShellQuote(proj + "/tools")),
              0);
  }
  ExpectTheCommandsCodeDoesNotRun(proj, "tools/p");
}

TEST_P(T8SandboxPluginLock, WritableGitStillKeepsTheLock) {
  LockedPlugin(ws_, "tools/p");
  auto r =
      Sh("rm -f anvil.lock 2>/dev/null && echo REMOVED; "
         "echo x > anvil.lock 2>/dev/null && echo REWROTE; echo ok > notes/x && echo BENIGN",
         {"--writable-git"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("REMOVED"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("REWROTE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BENIGN"), std::string::npos) << r.out << r.err;
}

TEST_P(T8SandboxPluginLock, AnExistingAnvilTomlCannotBeRewrittenAtAnyDepth) {
  const std::string config = "[plugins]\nenable = [\"test.lockpin\"]\n";
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(ws_ + "/sub")), 0);
  WriteFile(ws_ + "/Anvil.toml", config);
  WriteFile(ws_ + "/sub/Anvil.toml", config);
  caller_.Give(ws_);
  for (const std::string dir : {".", "sub"}) {
    auto r = Sh("cd " + dir +
                " && { printf '[plugins.settings.\"test.lockpin\"]\\ncmd = \"evil\"\\n' >> "
                "Anvil.toml 2>/dev/null && echo APPENDED; "
                "rm -f Anvil.toml 2>/dev/null && echo REMOVED; "
                "mv Anvil.toml old.toml 2>/dev/null && echo MOVED; "
                "echo 'x = 1' > other.toml && echo BENIGN; }");
    EXPECT_EQ(r.status, 0) << r.err;
    for (const char* done : {"APPENDED", "REMOVED", "MOVED"}) {
      EXPECT_EQ(r.out.find(done), std::string::npos) << dir << ": " << done << "\n" << r.out;
    }
    EXPECT_NE(r.out.find("BENIGN"), std::string::npos) << r.out << r.err;
    EXPECT_EQ(ReadFile(ws_ + "/" + dir + "/Anvil.toml"), config) << dir;
    // The user's own, kept as it was: nothing to move aside after the run.
    EXPECT_EQ(r.err.find("moved"), std::string::npos) << r.err;
    EXPECT_FALSE(Exists(ws_ + "/Anvil.toml.anvil-quarantine"));
  }
  // The nested one's directory cannot be moved aside and made anew either.
  auto r = Sh("mv sub sub.old 2>/dev/null && echo MOVED");
  EXPECT_EQ(r.out.find("MOVED"), std::string::npos) << r.out;
}

// Missing at the workspace's top: no placeholder (the command sees the workspace as it is), but
// whatever the command leaves under the name is moved aside after the run, however it made it
// and however the run ended, so the user's next Anvil there neither enables a plugin nor hands it
// the command's settings. The line on stderr names the file, says why and how to put it back.
TEST_P(T8SandboxPluginLock, AnAnvilTomlMadeWhereMissingIsMovedAsideAfterTheRun) {
  SettingsPlugin();
  const std::string config = "[plugins.settings.\"test.cfg\"]\nwho = \"agent\"\n";
  WriteFile(ws_ + "/notes.toml", config);
  caller_.Give(ws_);
  struct Way {
    const char* what;
    std::string script;
    std::vector<std::string> flags;
  } ways[] = {
      {"written", "printf '" + Escaped(config) + "' > Anvil.toml && echo MADE", {}},
      {"renamed into place",
       "printf '" + Escaped(config) + "' > t && mv t Anvil.toml && echo MADE",
       {}},
      {"hard-linked to a file that was there", "ln notes.toml Anvil.toml && echo MADE", {}},
      {"a symbolic link", "ln -s notes.toml Anvil.toml && echo MADE", {}},
      {"then the command killed itself",
       "printf '" + Escaped(config) + "' > Anvil.toml && echo MADE && kill -KILL $$",
       {}},
      {"then the run timed out",
       "printf '" + Escaped(config) + "' > Anvil.toml && echo MADE && sleep 60",
       {"--timeout", "10"}},  // room for a loaded machine to start it first
  };
  int n = 0;
  for (const Way& way : ways) {
    SCOPED_TRACE(way.what);
    auto r = Sh(way.script, way.flags);
    ++n;
    EXPECT_NE(r.out.find("MADE"), std::string::npos) << r.out << r.err;
    struct stat st {};
    EXPECT_NE(lstat((ws_ + "/Anvil.toml").c_str(), &st), 0) << "still there after the run";
    const std::string to =
        ws_ + "/Anvil.toml.anvil-quarantine" + (n == 1 ? "" : "-" + std::to_string(n));
    EXPECT_EQ(lstat(to.c_str(), &st), 0) << to;
    EXPECT_NE(r.err.find("anvil sandbox: moved " + ws_ + "/Anvil.toml aside to " + to + ": "),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("did not exist when the sandboxed command started"), std::string::npos)
        << r.err;
    // The user's next run of the plugin: not the command's settings (a symlink would have made
    // it refuse the workspace).
    auto run = Anvil({"run", "--workspace", ws_, "cfg", "go"}, ws_);
    EXPECT_EQ(run.status, 0) << run.err;
    EXPECT_EQ(run.out, "none\n");
  }
  // What was quarantined stays as it was, and the line's command puts it back: then it is read.
  EXPECT_EQ(ReadFile(ws_ + "/Anvil.toml.anvil-quarantine"), config);
  EXPECT_EQ(ReadFile(ws_ + "/notes.toml"), config);
  ASSERT_EQ(Shell("mv -n " + ShellQuote(ws_ + "/Anvil.toml.anvil-quarantine") + " " +
                  ShellQuote(ws_ + "/Anvil.toml")),
            0);
  caller_.Give(ws_);
  auto run = Anvil({"run", "--workspace", ws_, "cfg", "go"}, ws_);
  EXPECT_EQ(run.out, "agent\n") << run.err;
}

// Below the workspace's top (with $HOME as the workspace: every project in it): a protected
// name the command makes where there was none — an Anvil.toml, a .anvil directory, an
// anvil.lock in any spelling the table maps to it — is moved aside after the run like the
// top's Anvil.toml, so `anvil run` in that directory hands the plugin none of the command's
// settings. Beside them: ordinary files stay, the user's own Anvil.toml elsewhere is left as it
// was, and a run that makes no such name prints nothing about one.
TEST_P(T8SandboxPluginLock, ProtectedNamesMadeBelowTheTopAreMovedAsideAfterTheRun) {
  const std::string sub = ws_ + "/sub";
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(sub + "/cfg") + " " + ShellQuote(ws_ + "/own")), 0);
  WriteFile(sub + "/cfg/anvil-plugin.toml",
            "id = \"test.cfg\"\nversion = \"1.0.0\"\nruntime = \"lua\"\nentry = \"main.lua\"\n");
  WriteFile(sub + "/cfg/main.lua",
            "anvil.command('go', function() return anvil.settings.who or 'none' end)\n");
  const std::string own = "[plugins.settings.\"test.cfg\"]\nwho = \"user\"\n";
  WriteFile(ws_ + "/own/Anvil.toml", own);
  caller_.Give(base_.path());
  auto approved = Anvil({"run", "--approve", "--workspace", sub, "cfg", "go"}, sub);
  ASSERT_EQ(approved.status, 0) << approved.err;
  ASSERT_EQ(approved.out, "none\n");
  ASSERT_FALSE(Exists(sub + "/.anvil"));
  ASSERT_FALSE(Exists(sub + "/Anvil.toml"));

  // The benign neighbour first: ordinary work below the top, nothing moved, nothing said.
  auto benign =
      Sh("echo a > sub/other.toml && mkdir -p deep/er && echo b > deep/er/notes.txt && "
         "echo BENIGN");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_NE(benign.out.find("BENIGN"), std::string::npos) << benign.out << benign.err;
  EXPECT_EQ(benign.err.find("moved"), std::string::npos) << benign.err;
  EXPECT_EQ(benign.err.find("quarantine"), std::string::npos) << benign.err;
  EXPECT_EQ(ReadFile(ws_ + "/deep/er/notes.txt"), "b\n");

  const std::string config = "[plugins.settings.\"test.cfg\"]\nwho = \"agent\"\n";
  auto r = Sh("printf '" + Escaped(config) +
              "' > sub/Anvil.toml && mkdir sub/.anvil && echo x > sub/.anvil/x && "
              "echo kept > sub/notes.txt && mkdir -p deep/a && : > deep/a/ANVIL.LOCK && "
              "echo MADE");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("MADE"), std::string::npos) << r.out << r.err;
  struct Moved {
    std::string path;
  } moved[] = {{sub + "/Anvil.toml"}, {sub + "/.anvil"}, {ws_ + "/deep/a/ANVIL.LOCK"}};
  for (const Moved& m : moved) {
    SCOPED_TRACE(m.path);
    struct stat st {};
    EXPECT_NE(lstat(m.path.c_str(), &st), 0) << "still there after the run";
    const std::string to = m.path + ".anvil-quarantine";
    EXPECT_EQ(lstat(to.c_str(), &st), 0) << to;
    EXPECT_NE(r.err.find("anvil sandbox: moved " + m.path + " aside to " + to +
                         ": it did not exist when the sandboxed command started"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("mv -n " + to + " " + m.path), std::string::npos) << r.err;
  }
  EXPECT_EQ(ReadFile(sub + "/.anvil.anvil-quarantine/x"), "x\n");
  EXPECT_EQ(ReadFile(sub + "/notes.txt"), "kept\n");
  EXPECT_EQ(ReadFile(ws_ + "/own/Anvil.toml"), own);
  EXPECT_FALSE(Exists(ws_ + "/own/Anvil.toml.anvil-quarantine"));
  EXPECT_EQ(r.err.find(ws_ + "/own"), std::string::npos) << r.err;
  // The user's next run in sub: not the command's settings.
  caller_.Give(base_.path());
  auto run = Anvil({"run", "--workspace", sub, "cfg", "go"}, sub);
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "none\n");
  // The line's command puts it back: then it is read.
  ASSERT_EQ(Shell("mv -n " + ShellQuote(sub + "/Anvil.toml.anvil-quarantine") + " " +
                  ShellQuote(sub + "/Anvil.toml")),
            0);
  caller_.Give(base_.path());
  run = Anvil({"run", "--workspace", sub, "cfg", "go"}, sub);
  EXPECT_EQ(run.out, "agent\n") << run.err;
  // Now the user's: a later run keeps it where it is, and says nothing.
  auto later = Sh("echo c > sub/more.txt && echo LATER");
  EXPECT_NE(later.out.find("LATER"), std::string::npos) << later.out << later.err;
  EXPECT_EQ(later.err.find("moved"), std::string::npos) << later.err;
  EXPECT_EQ(ReadFile(sub + "/Anvil.toml"), config);
}

// The command cannot keep its Anvil.toml by leaving the check no way to move it: not by taking
// every numbered quarantine name first, not by taking the owner's write permission off the
// workspace (a same-user command can chmod it). The user's next run does not read it.
TEST_P(T8SandboxPluginLock, AnAnvilTomlCannotBeKeptByTakingTheQuarantinesWayOut) {
  SettingsPlugin();
  const std::string config = "[plugins.settings.\"test.cfg\"]\nwho = \"agent\"\n";
  caller_.Give(ws_);
  struct Way {
    const char* what;
    std::string script;
  } ways[] = {
      {"every numbered name taken",
       "for i in '' $(seq 2 100); do : > Anvil.toml.anvil-quarantine${i:+-$i}; done; printf '" +
           Escaped(config) + "' > Anvil.toml && echo MADE"},
      {"the workspace made read-only",
       "printf '" + Escaped(config) + "' > Anvil.toml && chmod 555 . && echo MADE"},
      {"the workspace made unsearchable",
       "printf '" + Escaped(config) + "' > Anvil.toml && chmod 0 . && echo MADE"},
  };
  for (const Way& way : ways) {
    SCOPED_TRACE(way.what);
    auto r = Sh(way.script);
    EXPECT_NE(r.out.find("MADE"), std::string::npos) << r.out << r.err;
    ASSERT_EQ(Shell("chmod 755 " + ShellQuote(ws_)), 0);
    struct stat st {};
    EXPECT_NE(lstat((ws_ + "/Anvil.toml").c_str(), &st), 0) << "still there after the run";
    EXPECT_NE(r.err.find("anvil sandbox: moved " + ws_ + "/Anvil.toml aside to "),
              std::string::npos)
        << r.err;
    auto run = Anvil({"run", "--workspace", ws_, "cfg", "go"}, ws_);
    EXPECT_EQ(run.status, 0) << run.err;
    EXPECT_EQ(run.out, "none\n");
    ASSERT_EQ(Shell("rm -rf " + ShellQuote(ws_) + "/Anvil.toml.anvil-quarantine*"), 0);
  }
  // Nothing of the run's own is left behind either (.git's placeholder went).
  EXPECT_FALSE(Exists(ws_ + "/.git"));
}

// The benign neighbour: a fresh workspace looks as it is while the command runs (no Anvil.toml
// in a listing or a glob), other config files are written as ever, and nothing is moved.
TEST_P(T8SandboxPluginLock, AFreshWorkspaceShowsNoAnvilTomlAndOtherTomlFilesWork) {
  WriteFile(ws_ + "/own.toml", "a = 1\n");
  caller_.Give(ws_);
  auto r =
      Sh("ls -A; python3 -c 'import glob; print(sorted(glob.glob(\"*.toml\")))'; "
         "printf '[project]\\nname = \"x\"\\n' > pyproject.toml && "
         "printf '[package]\\nname = \"x\"\\n' > Cargo.toml && "
         "python3 -c 'import glob; print(sorted(glob.glob(\"*.toml\")))' && echo BENIGN");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("Anvil"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("['own.toml']\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("['Cargo.toml', 'own.toml', 'pyproject.toml']\nBENIGN"), std::string::npos)
      << r.out << r.err;
  EXPECT_EQ(r.err.find("Anvil.toml"), std::string::npos) << r.err;
  EXPECT_EQ(ReadFile(ws_ + "/pyproject.toml"), "[project]\nname = \"x\"\n");
  EXPECT_TRUE(Exists(ws_ + "/Cargo.toml"));
  EXPECT_FALSE(Exists(ws_ + "/Anvil.toml"));
  EXPECT_FALSE(Exists(ws_ + "/Anvil.toml.anvil-quarantine"));
  // The user makes one on the host between runs: the next run keeps it and Anvil reads it.
  WriteFile(ws_ + "/Anvil.toml", "[sandbox]\npolicy = \"read-only\"\n");
  caller_.Give(ws_);
  auto narrowed = Sh("echo x > notes/after.txt 2>/dev/null && echo WROTE");
  EXPECT_EQ(narrowed.out.find("WROTE"), std::string::npos) << narrowed.out;
  EXPECT_EQ(narrowed.err.find("moved"), std::string::npos) << narrowed.err;
  EXPECT_TRUE(Exists(ws_ + "/Anvil.toml"));
}

// Concurrent runs: one the user makes on the host while a run that did not see it is going is
// moved aside (neither run can tell the user's file from the first run's command's: the
// conservative side, and the line says how to put it back) — by a run started after the file was
// there, which takes as the user's only what the first run does, or else by the first run.
TEST_P(T8SandboxPluginLock, AnAnvilTomlMadeOnTheHostDuringARunIsMovedAsideByThatRun) {
  std::thread first([&] {
    first_ =
        Sh("touch started; while [ ! -e go ]; do sleep 0.05; done; echo DONE", {"--timeout", "60"});
  });
  // The first run's command is going once it has made its mark (the run recorded the name
  // before the command started).
  for (int i = 0; i < 1200 && !Exists(ws_ + "/started"); ++i) usleep(50000);
  EXPECT_TRUE(Exists(ws_ + "/started"));
  WriteFile(ws_ + "/Anvil.toml", "[sandbox]\nnetwork = \"none\"\n");
  caller_.Give(ws_);
  auto second = Sh("cat Anvil.toml && echo SECOND");
  EXPECT_NE(second.out.find("SECOND"), std::string::npos) << second.out << second.err;
  EXPECT_NE(second.err.find("anvil sandbox: moved " + ws_ + "/Anvil.toml aside"), std::string::npos)
      << second.err;
  EXPECT_NE(second.err.find("another sandbox run here"), std::string::npos) << second.err;
  WriteFile(ws_ + "/go", "");
  first.join();
  EXPECT_NE(first_.out.find("DONE"), std::string::npos) << first_.out << first_.err;
  EXPECT_FALSE(Exists(ws_ + "/Anvil.toml"));
  EXPECT_EQ(ReadFile(ws_ + "/Anvil.toml.anvil-quarantine"), "[sandbox]\nnetwork = \"none\"\n");
}

// The attack the ctime is for: run A starts with no Anvil.toml and its command makes one; run B
// starts meanwhile and records it (bound read-only for B). A's command, which has no mount on the
// name, unlinks it and links the same file back (the unlink detaches B's mount), so B's command
// can write it; A's check moves it aside, and B's command renames it back: the same inode. B
// takes as the user's only what A does (A had not seen it), and moves it aside again.
TEST_P(T8SandboxPluginLock, AnAnvilTomlPutBackByAConcurrentRunIsMovedAsideByThatRun) {
  SettingsPlugin();
  const std::string config = "[plugins.settings.\"test.cfg\"]\nwho = \"agent\"\n";
  caller_.Give(ws_);
  std::thread a([&] {
    first_ = Sh("printf '" + Escaped(config) +
                    "' > Anvil.toml && touch a-made; while [ ! -e b-started ]; do sleep 0.05; "
                    "done; ln Anvil.toml keep && rm Anvil.toml && mv keep Anvil.toml && "
                    "touch a-relinked; while [ ! -e go-a ]; do sleep 0.05; done; echo A-DONE",
                {"--timeout", "60"});
  });
  for (int i = 0; i < 1200 && !Exists(ws_ + "/a-made"); ++i) usleep(50000);
  EXPECT_TRUE(Exists(ws_ + "/a-made"));
  RunResult b;
  std::thread b_thread([&] {
    b =
        Sh("touch b-started; while [ ! -e a-relinked ]; do sleep 0.05; done; "
           "printf '# b\\n' >> Anvil.toml && echo WROTE; touch b-wrote; "
           "while [ ! -e Anvil.toml.anvil-quarantine ]; do sleep 0.05; done; "
           "mv Anvil.toml.anvil-quarantine Anvil.toml && echo PUT-BACK",
           {"--timeout", "60"});
  });
  for (int i = 0; i < 1200 && !Exists(ws_ + "/b-wrote"); ++i) usleep(50000);
  EXPECT_TRUE(Exists(ws_ + "/b-wrote"));
  WriteFile(ws_ + "/go-a", "");
  a.join();
  b_thread.join();
  EXPECT_NE(first_.out.find("A-DONE"), std::string::npos) << first_.out << first_.err;
  EXPECT_NE(first_.err.find("anvil sandbox: moved " + ws_ + "/Anvil.toml aside"), std::string::npos)
      << first_.err;
  EXPECT_NE(b.out.find("WROTE"), std::string::npos) << b.out << b.err;
  EXPECT_NE(b.out.find("PUT-BACK"), std::string::npos) << b.out << b.err;
  EXPECT_NE(b.err.find("anvil sandbox: moved " + ws_ + "/Anvil.toml aside"), std::string::npos)
      << b.err;
  // B takes as the user's only what A does, and A had not seen it.
  EXPECT_NE(b.err.find("another sandbox run here"), std::string::npos) << b.err;
  EXPECT_FALSE(Exists(ws_ + "/Anvil.toml"));
  auto run = Anvil({"run", "--workspace", ws_, "cfg", "go"}, ws_);
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "none\n");
}

// The benign neighbour: the user edits the workspace's existing Anvil.toml on the host while a
// long-running sandbox (a dev server) is going and no other run is. Edited in place (most
// editors), it stays: the run's mount kept its command from changing it. Saved by rename
// (another inode), it is moved aside: once the file the run bound is replaced, the command can
// write the new one, so the check cannot keep it; the line says how to put it back.
TEST_P(T8SandboxPluginLock, TheUsersEditOfAnExistingAnvilTomlDuringARun) {
  const std::string config = "[sandbox]\nnetwork = \"none\"\n";
  WriteFile(ws_ + "/Anvil.toml", config);
  caller_.Give(ws_);
  auto long_run = [&](const std::string& tag) {
    return std::thread([&, tag] {
      first_ = Sh("touch " + tag + "-started; while [ ! -e " + tag +
                      "-go ]; do sleep 0.05; done; cat Anvil.toml; echo DONE",
                  {"--timeout", "60"});
    });
  };
  auto wait_for = [&](const std::string& name) {
    for (int i = 0; i < 1200 && !Exists(ws_ + "/" + name); ++i) usleep(50000);
    EXPECT_TRUE(Exists(ws_ + "/" + name)) << name;
  };
  {
    std::thread run = long_run("inplace");
    wait_for("inplace-started");
    usleep(20000);
    WriteFile(ws_ + "/Anvil.toml", config + "# edited in place\n");
    WriteFile(ws_ + "/inplace-go", "");
    run.join();
    EXPECT_NE(first_.out.find("DONE"), std::string::npos) << first_.out << first_.err;
    EXPECT_EQ(first_.err.find("moved"), std::string::npos) << first_.err;
    EXPECT_EQ(ReadFile(ws_ + "/Anvil.toml"), config + "# edited in place\n");
    EXPECT_FALSE(Exists(ws_ + "/Anvil.toml.anvil-quarantine"));
  }
  {
    std::thread run = long_run("rename");
    wait_for("rename-started");
    WriteFile(ws_ + "/.Anvil.toml.swp", config + "# saved by rename\n");
    ASSERT_EQ(rename((ws_ + "/.Anvil.toml.swp").c_str(), (ws_ + "/Anvil.toml").c_str()), 0);
    WriteFile(ws_ + "/rename-go", "");
    run.join();
    EXPECT_NE(first_.out.find("DONE"), std::string::npos) << first_.out << first_.err;
    EXPECT_NE(first_.err.find("anvil sandbox: moved " + ws_ + "/Anvil.toml aside"),
              std::string::npos)
        << first_.err;
    EXPECT_NE(first_.err.find("replaced"), std::string::npos) << first_.err;
    EXPECT_EQ(ReadFile(ws_ + "/Anvil.toml.anvil-quarantine"), config + "# saved by rename\n");
  }
}

INSTANTIATE_TEST_SUITE_P(Callers, T8SandboxPluginLock, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t8_sandbox_plugin_lock_test
}  // namespace anvil::testing
