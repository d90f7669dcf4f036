// `anvil run` end to end: manifest, consent and grants keyed by hash, anvil.lock, deadlines,
// and what a plugin can print on the user's terminal.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace run_command_test {
namespace {

class AnvilRun : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(ws_ / "a.txt", "alpha TODO");
    ASSERT_EQ(Shell("mkdir -p '" + ws_.path() + "/notes' '" + plugin_.path() + "/lib'"), 0);
  }
  void Plugin(const std::string& permissions, const std::string& code) {
    WriteFile(plugin_ / "anvil-plugin.toml",
              "id = \"test.run\"\nversion = \"1.0.0\"\nruntime = \"lua\"\nentry = \"main.lua\"\n\n"
              "[permissions]\n" +
                  permissions);
    WriteFile(plugin_ / "main.lua", code);
  }
  RunResult Anvil(std::vector<std::string> args) {
    args.insert(args.begin(), {AnvilBin(), "run", "--workspace", ws_.path()});
    RunOptions o;
    o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path()};
    return testing::Run(args, o);
  }
  // A plugin with a command that answers (`x`) and one that never does (`spin`), and the
  // environment of a run whose runtime directory is `runtime`.
  RunOptions SpinPluginWithRuntime(const std::string& runtime) {
    Plugin("fs.read = [\"**\"]\n",
           "anvil.command('x', function() return 'ok' end)\n"
           "anvil.command('spin', function() while true do end end)");
    RunOptions o;
    o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path(),
             "XDG_RUNTIME_DIR=" + runtime};
    return o;
  }
  TempDir ws_{"anvil-run-ws"};
  TempDir plugin_{"anvil-run-plugin"};
  TempDir state_{"anvil-run-state"};
};

TEST_F(AnvilRun, ApprovedPluginRunsAndPrintsItsResult) {
  Plugin("fs.read = [\"**\"]\n",
         "anvil.command('read', function(args) return sys.fs.read(args[1]) end)\n"
         "anvil.command('table', function() return {n = 1} end)");
  auto r = Anvil({"--approve", plugin_.path(), "read", "a.txt"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "alpha TODO\n");
  r = Anvil({plugin_.path(), "table"});  // the grant is stored now
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"n\": 1"), std::string::npos);
}

TEST_F(AnvilRun, TodoFinderExampleFindsMarkersThroughSysExec) {
  // The README's example plugin: rg through the gateway's exec broker and anvil-exec-runner.
  ASSERT_EQ(Shell("cp -r '" + std::string(ANVIL_SOURCE_DIR) + "/examples/workspace/.' '" +
                  ws_.path() + "/'"),
            0);
  auto r = Anvil(
      {"--approve", std::string(ANVIL_SOURCE_DIR) + "/examples/plugins/todo-finder", "find-todos"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto found = nlohmann::json::parse(r.out.substr(0, r.out.rfind(']') + 1), nullptr, false);
  ASSERT_TRUE(found.is_array()) << r.out;
  bool main_c = false, readme = false;
  for (const auto& f : found) {
    main_c = main_c || (f.value("path", "") == "src/main.c" && f.value("line", 0) == 3);
    readme = readme || f.value("path", "") == "README.md";
  }
  EXPECT_TRUE(main_c) << r.out;
  EXPECT_TRUE(readme) << r.out;
}

TEST_F(AnvilRun, WithoutConsentNothingRuns) {
  Plugin("fs.write = [\"notes/**\"]\n",
         "sys.fs.write('notes/ran.txt', 'x')\nanvil.command('x', function() return 1 end)");
  auto r = Anvil({plugin_.path(), "x"});  // no terminal to ask on
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("denied"), std::string::npos);
  EXPECT_FALSE(Exists(ws_ / "notes/ran.txt"));
}

TEST_F(AnvilRun, AddedPermissionNeedsNewConsentRemovedOneDoesNot) {
  Plugin("fs.read = [\"**\"]\n", "anvil.command('x', function() return 'ok' end)");
  ASSERT_EQ(Anvil({"--approve", plugin_.path(), "x"}).status, 0);
  // The update asks for more: the old grant does not carry over to the new manifest hash.
  Plugin("fs.read = [\"**\"]\nfs.write = [\"**\"]\n",
         "anvil.command('x', function() return 'ok' end)");
  auto r = Anvil({plugin_.path(), "x"});
  EXPECT_EQ(r.status, 3) << r.err;
  // An update that only drops a permission runs without asking.
  Plugin("fs.read = [\"src/**\"]\n", "anvil.command('x', function() return 'ok' end)");
  Plugin("", "anvil.command('x', function() return 'ok' end)");
  r = Anvil({plugin_.path(), "x"});
  EXPECT_EQ(r.status, 0) << r.err;
}

// T8: `anvil plugin approve --sha256` grants only the manifest that inspect showed. A manifest
// changed between inspect and approve (asking for more) is refused with what it now requests,
// and nothing is granted; the hash inspect printed approves the unchanged one.
TEST_F(AnvilRun, ApproveWithTheInspectedHashRefusesAChangedManifest) {
  Plugin("fs.read = [\"docs/**\"]\n", "anvil.command('x', function() return 'ok' end)");
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path()};
  auto plugin = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {AnvilBin(), "plugin"});
    args.insert(args.end(), {"--workspace", ws_.path()});
    return testing::Run(args, o);
  };
  auto inspect = plugin({"inspect", plugin_.path()});
  ASSERT_EQ(inspect.status, 0) << inspect.err;
  const auto at = inspect.out.find("approve --sha256 ");
  ASSERT_NE(at, std::string::npos) << inspect.out;
  const std::string hash = inspect.out.substr(at + 17, 64);
  // Changed after the user looked: it now asks for everything.
  Plugin("fs.read = [\"**\"]\nfs.write = [\"**\"]\n",
         "anvil.command('x', function() return 'ok' end)");
  auto refused = plugin({"approve", "--sha256", hash, plugin_.path()});
  EXPECT_EQ(refused.status, 3) << refused.err;
  EXPECT_NE(refused.err.find("has changed since it was inspected"), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("Write files matching"), std::string::npos) << refused.err;
  EXPECT_EQ(Anvil({plugin_.path(), "x"}).status, 3);  // nothing was granted
  // The manifest the user saw, back: approved by its hash.
  Plugin("fs.read = [\"docs/**\"]\n", "anvil.command('x', function() return 'ok' end)");
  auto approved = plugin({"approve", "--sha256", hash, plugin_.path()});
  EXPECT_EQ(approved.status, 0) << approved.err;
  EXPECT_EQ(Anvil({plugin_.path(), "x"}).status, 0);
  EXPECT_EQ(plugin({"inspect", "--sha256", hash, plugin_.path()}).status, 2);
  // Upper case is the same hash; a cut one is refused as what it is, not as a change.
  std::string upper = hash;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(plugin({"approve", "--sha256", upper, plugin_.path()}).status, 0);
  auto cut = plugin({"approve", "--sha256", hash.substr(0, 12), plugin_.path()});
  EXPECT_EQ(cut.status, 2) << cut.err;
  EXPECT_NE(cut.err.find("is not a SHA-256"), std::string::npos) << cut.err;
}

// T8: an approval is for one copy of the plugin. A copied directory with the same id and the
// same manifest bytes but other code is another plugin as far as consent goes, lockfile or not.
TEST_F(AnvilRun, CopiedPluginWithTheSameManifestButOtherCodeAsksAgain) {
  Plugin(
      "fs.write = [\"notes/**\"]\n",
      "anvil.command('x', function() sys.fs.write('notes/who.txt', 'original') return 'ok' end)");
  ASSERT_EQ(Anvil({"--approve", plugin_.path(), "x"}).status, 0);
  TempDir copy("anvil-run-copy");
  ASSERT_EQ(Shell("cp -r '" + plugin_.path() + "/.' '" + copy.path() + "/'"), 0);
  WriteFile(copy / "main.lua",
            "sys.fs.write('notes/who.txt', 'impostor')\n"
            "anvil.command('x', function() sys.fs.write('notes/who.txt', 'impostor') end)");
  auto r = Anvil({copy.path(), "x"});  // no terminal to ask on
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("denied: permission not granted"), std::string::npos) << r.err;
  EXPECT_EQ(ReadFile(ws_ / "notes/who.txt"), "original");
  // A module added beside an unchanged entry is other code too.
  TempDir copy2("anvil-run-copy");
  ASSERT_EQ(Shell("cp -r '" + plugin_.path() + "/.' '" + copy2.path() + "/'"), 0);
  WriteFile(copy2 / "lib/extra.lua", "return {}");
  EXPECT_EQ(Anvil({copy2.path(), "x"}).status, 3);
  // The inspector says the same.
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path()};
  auto inspect =
      testing::Run({AnvilBin(), "plugin", "inspect", "--workspace", ws_.path(), copy.path()}, o);
  EXPECT_NE(inspect.out.find("granted:  no"), std::string::npos) << inspect.out;
}

// Red team: a vendored byte-identical copy whose manifest differs only cosmetically (or asks
// for less) runs unasked, once — it must not become the approved copy, or every later change of
// its code (a pull, a sandboxed command writing the workspace) would run with the user's grant.
TEST_F(AnvilRun, AnIdenticalCopyWithAnEditedManifestDoesNotTakeOverTheApproval) {
  Plugin("fs.write = [\"notes/**\"]\n",
         "anvil.command('x', function() sys.fs.write('notes/who.txt', 'original') return 'ok' "
         "end)");
  ASSERT_EQ(Anvil({"--approve", plugin_.path(), "x"}).status, 0);
  TempDir copy("anvil-run-copy");
  ASSERT_EQ(Shell("cp -r '" + plugin_.path() + "/.' '" + copy.path() + "/'"), 0);
  ASSERT_EQ(Shell("echo '# vendored' >> '" + copy.path() + "/anvil-plugin.toml'"), 0);
  auto r = Anvil({copy.path(), "x"});
  EXPECT_EQ(r.status, 0) << r.err;  // identical code, nothing more asked for
  WriteFile(copy / "main.lua",
            "anvil.command('x', function() sys.fs.write('notes/who.txt', 'impostor') end)");
  r = Anvil({copy.path(), "x"});  // no terminal to ask on
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("denied: permission not granted"), std::string::npos) << r.err;
  EXPECT_EQ(ReadFile(ws_ / "notes/who.txt"), "original");
  // The user's own copy still runs unasked.
  r = Anvil({plugin_.path(), "x"});
  EXPECT_EQ(r.status, 0) << r.err;
}

// The benign neighbours: the approved directory edited in place (the author's loop, an update)
// and a byte-identical copy elsewhere run without asking.
TEST_F(AnvilRun, EditedInPlaceOrIdenticalCopyRunsWithoutAsking) {
  Plugin("fs.write = [\"notes/**\"]\n",
         "anvil.command('x', function() sys.fs.write('notes/v.txt', '1') return 'v1' end)");
  ASSERT_EQ(Anvil({"--approve", plugin_.path(), "x"}).status, 0);
  // A byte-identical copy of what was approved, elsewhere (moved, installed twice).
  TempDir copy("anvil-run-copy");
  ASSERT_EQ(Shell("cp -r '" + plugin_.path() + "/.' '" + copy.path() + "/'"), 0);
  auto r = Anvil({copy.path(), "x"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "v1\n");
  // The approved directory, edited.
  WriteFile(plugin_ / "main.lua",
            "anvil.command('x', function() sys.fs.write('notes/v.txt', '2') return 'v2' end)");
  r = Anvil({plugin_.path(), "x"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "v2\n");
  EXPECT_EQ(ReadFile(ws_ / "notes/v.txt"), "2");
}

TEST_F(AnvilRun, GrantIsEnforcedNotTheManifest) {
  Plugin("fs.read = [\"notes/**\"]\n",
         "anvil.command('x', function() return sys.fs.read('a.txt') end)");
  auto r = Anvil({"--approve", plugin_.path(), "x"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("denied: fs.read outside the grant"), std::string::npos) << r.err;
}

TEST_F(AnvilRun, TamperedLockfileIsRefusedNamingTheFile) {
  Plugin("fs.read = [\"**\"]\n", "anvil.command('x', function() return 'ok' end)");
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "XDG_STATE_HOME=" + state_.path()};
  auto lock =
      testing::Run({AnvilBin(), "plugin", "lock", "--workspace", ws_.path(), plugin_.path()}, o);
  ASSERT_EQ(lock.status, 0) << lock.err;
  ASSERT_EQ(Anvil({"--approve", plugin_.path(), "x"}).status, 0);
  WriteFile(plugin_ / "main.lua", "anvil.command('x', function() return 'evil' end)");
  auto r = Anvil({"--approve", plugin_.path(), "x"});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("main.lua"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("evil"), std::string::npos);
}

TEST_F(AnvilRun, DeadlineKillsThePluginWith124) {
  Plugin("", "anvil.command('spin', function() while true do end end)");
  auto start = std::chrono::steady_clock::now();
  auto r = Anvil({"--approve", "--timeout", "0.5", plugin_.path(), "spin"});
  EXPECT_EQ(r.status, 124) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// A grant without `exec` starts no exec broker (and so no warm runner), and a grant with one
// does; either way, once `anvil run` has exited, no process of the session is left.
TEST_F(AnvilRun, OnlyWhatTheGrantNeedsIsStartedAndNothingIsLeftAfter) {
  for (const bool exec : {false, true}) {
    Plugin(exec ? "exec = [\"rg\"]\n" : "fs.read = [\"**\"]\n",
           "anvil.command('spin', function() while true do end end)\n"
           "anvil.command('rg', function() local ok, e = pcall(sys.exec, {program = 'rg', args = "
           "{'x'}}) "
           "return ok and 'ran' or tostring(e) end)");
    RunOptions o;
    o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path()};
    Spawned run({AnvilBin(), "run", "--workspace", ws_.path(), "--approve", "--timeout", "3",
                 plugin_.path(), "spin"},
                o);
    // `anvil run` itself, the gateway and the plugin host name the workspace; the exec broker is
    // a fork of the gateway and names it too.
    size_t seen = 0;
    WaitUntil([&] {
      seen = ProcessesWithMarker(ws_.path()).size();
      return seen >= (exec ? 4u : 3u);
    });
    if (exec) {
      EXPECT_GE(seen, 4u);
    } else {
      EXPECT_EQ(seen, 3u);
    }
    if (!exec) {
      // Stays there for a while: no broker appears later either.
      for (int i = 0; i < 10; ++i) {
        usleep(20000);
        EXPECT_EQ(ProcessesWithMarker(ws_.path()).size(), 3u);
      }
    }
    EXPECT_TRUE(run.Wait(std::chrono::seconds(20)).has_value());  // the budget or the deadline
    EXPECT_TRUE(WaitUntil([&] { return ProcessesWithMarker(ws_.path()).empty(); }))
        << "left behind: " << ProcessesWithMarker(ws_.path()).size();
    // Without the grant, sys.exec says what is missing (not that the session has no broker).
    auto r = Anvil({plugin_.path(), "rg"});
    EXPECT_EQ(r.status, 0) << r.err;
    if (!exec) {
      EXPECT_NE(r.out.find("executable not granted: rg"), std::string::npos) << r.out;
    }
    EXPECT_TRUE(WaitUntil([&] { return ProcessesWithMarker(ws_.path()).empty(); }));
  }
}

TEST_F(AnvilRun, NotificationsCannotWriteEscapeSequencesToTheTerminal) {
  Plugin("",
         "anvil.command('x', function()\n"
         "  editor.notify('\\27[2J\\27]0;pwned\\7fake\\r\\nAllow? [y/N]')\n"
         "  print('\\27[31mred')\n"
         "  return 'done' end)");
  auto r = Anvil({"--approve", plugin_.path(), "x"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\a'), std::string::npos);
  EXPECT_NE(r.err.find("[test.run]"), std::string::npos) << r.err;
  // Every line the plugin caused is attributed: none starts like Anvil's own prompt.
  for (const auto& line : Lines(r.err)) {
    EXPECT_TRUE(line.rfind("[test.run", 0) == 0) << line;
  }
}

TEST_F(AnvilRun, ProgressLineOnlyOnATerminal) {
  Plugin("", "anvil.command('x', function() editor.notify('half way') return 'done' end)");
  // stderr a pipe (scripts, CI): no progress line, not one escape sequence.
  auto r = Anvil({"--approve", plugin_.path(), "x"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "done\n");
  EXPECT_EQ(r.err, "[test.run] half way\n");
  // On a terminal (script(1) runs it on a pty): the line says what Anvil waits for and is
  // erased before the plugin's notification and before the result.
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "TERM=xterm",
           "XDG_STATE_HOME=" + state_.path()};
  auto t = testing::Run({"/usr/bin/script", "-qec",
                         ShellQuote(AnvilBin()) + " run --workspace " + ShellQuote(ws_.path()) +
                             " " + ShellQuote(plugin_.path()) + " x",
                         "/dev/null"},
                        o);
  ASSERT_EQ(t.status, 0) << t.out << t.err;
  EXPECT_NE(t.out.find("\r\x1b[Kanvil: starting the sandbox for test.run"), std::string::npos)
      << t.out;
  EXPECT_NE(t.out.find("\r\x1b[Kanvil: running test.run x\r\x1b[K[test.run] half way"),
            std::string::npos)
      << t.out;
  EXPECT_NE(t.out.find("\r\x1b[Kanvil: running test.run x\r\x1b[Kdone"), std::string::npos)
      << t.out;
}

// The command is run without asking the host for its list first; a failure still tells a
// command the plugin does not have, and a plugin that did not load, from a command that failed.
TEST_F(AnvilRun, UnknownCommandNamesTheCommandsThePluginHas) {
  Plugin("fs.read = [\"**\"]\n",
         "anvil.command('alpha', function() return 'a' end)\n"
         "anvil.command('beta', function() return 'b' end)");
  auto r = Anvil({"--approve", plugin_.path(), "gamma"});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("has no command 'gamma'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("alpha"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("beta"), std::string::npos) << r.err;
  // Its neighbour: a command that exists runs.
  r = Anvil({plugin_.path(), "beta"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "b\n");
}

TEST_F(AnvilRun, ACommandRaisingNotFoundIsItsOwnErrorNotAMissingCommand) {
  Plugin("fs.read = [\"**\"]\n",
         "anvil.command('read', function() return sys.fs.read('missing.txt') end)");
  auto r = Anvil({"--approve", plugin_.path(), "read"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.err.find("has no command"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not_found"), std::string::npos) << r.err;
  // With --json the command's error is the one JSON line on stdout.
  r = Anvil({"--json", plugin_.path(), "read"});
  EXPECT_EQ(r.status, 1) << r.err;
  auto line = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(line.is_object()) << r.out;
  EXPECT_EQ(line.value("ok", true), false);
}

// A plugin that does not load answers the command with its load error: on stderr with the
// plugin's lines marked, and under --json as the one JSON line with its trace, as a command's.
TEST_F(AnvilRun, APluginThatDoesNotLoadAnswersTheCommandWithItsLoadError) {
  Plugin("fs.read = [\"**\"]\n", "anvil.command('x', function() return 1 end)\nerror('boom')");
  auto r = Anvil({"--approve", plugin_.path(), "x"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("boom"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("has no command"), std::string::npos) << r.err;
  r = Anvil({"--json", plugin_.path(), "x"});
  EXPECT_EQ(r.status, 1) << r.err;
  auto line = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(line.is_object()) << r.out;
  EXPECT_EQ(line.value("ok", true), false);
  EXPECT_NE(line.value("error", "").find("boom"), std::string::npos) << r.out;
  EXPECT_TRUE(line.contains("trace")) << r.out;
  // A module the entry requires that is not there is a load error with the code not_found:
  // still the load error, not a missing command.
  Plugin("fs.read = [\"**\"]\n", "require('nowhere')\nanvil.command('x', function() return 1 end)");
  r = Anvil({"--approve", plugin_.path(), "x"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("nowhere"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("has no command"), std::string::npos) << r.err;
}

// A plugin refused at its admission leaves no process and no word of a gateway behind.
TEST_F(AnvilRun, ARefusedPluginLeavesNoGatewayBehind) {
  Plugin("fs.write = [\"notes/**\"]\n", "anvil.command('x', function() return 1 end)");
  auto r = Anvil({plugin_.path(), "x"});  // no terminal to ask on: denied
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_EQ(r.err.find("anvil-gateway"), std::string::npos) << r.err;
  EXPECT_TRUE(ProcessesWithMarker(ws_.path()).empty());
  // Its neighbour: approved, the same plugin runs.
  r = Anvil({"--approve", plugin_.path(), "x"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "1\n");
}

// A session whose grant has no net is served by the offline gateway, which `anvil` runs in a
// forked child of its own (no exec of the helper): that process must be what the helper would
// be — its name, locked down (seccomp filter, no_new_privs), only its own descriptors.
TEST_F(AnvilRun, TheForkedOfflineGatewayIsLockedDownAsTheHelperWouldBe) {
  Plugin("fs.read = [\"**\"]\n", "anvil.command('spin', function() while true do end end)");
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path()};
  Spawned run({AnvilBin(), "run", "--workspace", ws_.path(), "--approve", "--timeout", "3",
               plugin_.path(), "spin"},
              o);
  pid_t gateway = -1;
  auto comm_of = [](pid_t pid) {
    std::string comm = ReadFile("/proc/" + std::to_string(pid) + "/comm");
    while (!comm.empty() && comm.back() == '\n') comm.pop_back();
    return comm;
  };
  ASSERT_TRUE(WaitUntil([&] {
    for (pid_t pid : ProcessesWithMarker(ws_.path())) {
      if (comm_of(pid) == "anvil-gateway-o") gateway = pid;
    }
    return gateway > 0 &&
           ReadFile("/proc/" + std::to_string(gateway) + "/status").find("Seccomp:\t2") !=
               std::string::npos;
  })) << "no locked-down offline gateway among the session's processes";
  const std::string proc = "/proc/" + std::to_string(gateway);
  char exe[4096] = {};
  ASSERT_GT(readlink((proc + "/exe").c_str(), exe, sizeof(exe) - 1), 0);
  char anvil[4096] = {};
  ASSERT_NE(realpath(AnvilBin().c_str(), anvil), nullptr);
  EXPECT_EQ(std::string(exe), std::string(anvil)) << "the gateway was exec'd, not forked";
  const std::string status = ReadFile(proc + "/status");
  EXPECT_NE(status.find("NoNewPrivs:\t1"), std::string::npos) << status;
  // A process group of its own (the terminal's Ctrl-C reaches the trusted side only), and with
  // SIGTTOU ignored: under `stty tostop` a line on the terminal from a background group would
  // otherwise stop it and hang the session.
  EXPECT_EQ(getpgid(gateway), gateway);
  const std::size_t ignored_at = status.find("SigIgn:\t");
  ASSERT_NE(ignored_at, std::string::npos) << status;
  const unsigned long long ignored = std::stoull(status.substr(ignored_at + 8, 16), nullptr, 16);
  EXPECT_TRUE(ignored & (1ULL << (SIGTTOU - 1))) << status;
  // Nothing of `anvil run`'s own descriptors crossed: each one the gateway holds is a socket,
  // a pipe, an anonymous inode, /dev/null or a file of the session (its audit log, the
  // pending-writes journal), never the grant store or the plugin's files.
  for (const auto& entry : std::filesystem::directory_iterator(proc + "/fd")) {
    char target[4096] = {};
    const std::string fd = entry.path().filename();
    if (readlink(entry.path().c_str(), target, sizeof(target) - 1) <= 0) continue;
    const std::string t(target);
    EXPECT_EQ(t.find("grants.json"), std::string::npos) << fd << " -> " << t;
    EXPECT_EQ(t.find(plugin_.path()), std::string::npos) << fd << " -> " << t;
  }
  EXPECT_TRUE(run.Wait(std::chrono::seconds(20)).has_value());
  EXPECT_TRUE(WaitUntil([&] { return ProcessesWithMarker(ws_.path()).empty(); }));
}

// The gateway's runtime directory (its socket's) goes with its session, however the session
// ends: the runtime base holds nothing of it afterwards.
TEST_F(AnvilRun, NothingIsLeftInTheRuntimeDirectory) {
  TempDir runtime("anvil-run-rt");
  const RunOptions o = SpinPluginWithRuntime(runtime.path());
  for (const char* command : {"x", "spin"}) {
    auto r = testing::Run({AnvilBin(), "run", "--workspace", ws_.path(), "--approve", "--timeout",
                           "0.5", plugin_.path(), command},
                          o);
    EXPECT_TRUE(r.status == 0 || r.status == 124) << command << ": " << r.err;
    size_t left = 0;
    for (const auto& e : std::filesystem::directory_iterator(runtime / "anvil")) {
      ADD_FAILURE() << command << " left " << e.path();
      ++left;
    }
    EXPECT_EQ(left, 0u);
  }
}

// Ctrl-C at the terminal signals the whole foreground group; SIGTERM or SIGHUP may reach
// `anvil run` alone. Either way the session is stopped in order, well before the deadline:
// the plugin host killed, the gateway shut down (its socket and directory gone), no process
// left, and the exit status says which signal (128 + it, as under --watch). Before, Ctrl-C
// killed `anvil` and the gateway where they stood, leaving the gateway's socket and directory.
TEST_F(AnvilRun, CtrlCStopsTheSessionInOrderAndLeavesNothing) {
  TempDir runtime("anvil-run-rt");
  const RunOptions o = SpinPluginWithRuntime(runtime.path());
  ASSERT_EQ(testing::Run(
                {AnvilBin(), "run", "--workspace", ws_.path(), "--approve", plugin_.path(), "x"}, o)
                .status,
            0);
  struct Case {
    int sig;
    bool group;  // the terminal's way: the whole process group
  };
  for (const Case c : {Case{SIGINT, true}, Case{SIGTERM, false}, Case{SIGHUP, false}}) {
    const auto start = std::chrono::steady_clock::now();
    Spawned run(
        {AnvilBin(), "run", "--workspace", ws_.path(), "--timeout", "30", plugin_.path(), "spin"},
        o);
    // `anvil run`, the gateway and the plugin host (all three name the workspace).
    ASSERT_TRUE(WaitUntil([&] { return ProcessesWithMarker(ws_.path()).size() >= 3u; }))
        << ProcessesWithMarker(ws_.path()).size();
    usleep(200000);  // the command is running
    ASSERT_EQ(c.group ? ::kill(-run.pid(), c.sig) : ::kill(run.pid(), c.sig), 0);
    const auto status = run.Wait(std::chrono::seconds(20));
    ASSERT_TRUE(status.has_value());
    EXPECT_EQ(*status, 128 + c.sig) << strsignal(c.sig);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    EXPECT_TRUE(WaitUntil([&] { return ProcessesWithMarker(ws_.path()).empty(); }))
        << strsignal(c.sig) << ": left behind " << ProcessesWithMarker(ws_.path()).size();
    for (const auto& e : std::filesystem::directory_iterator(runtime / "anvil")) {
      ADD_FAILURE() << strsignal(c.sig) << " left " << e.path();
    }
  }
}

TEST_F(AnvilRun, AKilledAnvilLeavesNoSocketAndALaterStopSweepsItsDirectory) {
  TempDir runtime("anvil-run-rt");
  const RunOptions o = SpinPluginWithRuntime(runtime.path());
  ASSERT_EQ(testing::Run(
                {AnvilBin(), "run", "--workspace", ws_.path(), "--approve", plugin_.path(), "x"}, o)
                .status,
            0);
  Spawned run(
      {AnvilBin(), "run", "--workspace", ws_.path(), "--timeout", "30", plugin_.path(), "spin"}, o);
  ASSERT_TRUE(WaitUntil([&] { return ProcessesWithMarker(ws_.path()).size() >= 3u; }))
      << ProcessesWithMarker(ws_.path()).size();
  usleep(200000);  // the command is running
  // The live gateway holds its directory's lock: a sweep takes it for a live session's.
  std::vector<std::filesystem::path> dirs;
  for (const auto& e : std::filesystem::directory_iterator(runtime / "anvil")) {
    dirs.push_back(e.path());
  }
  ASSERT_EQ(dirs.size(), 1u);
  {
    const int d = ::open(dirs[0].c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(d, 0);
    EXPECT_NE(::flock(d, LOCK_EX | LOCK_NB), 0);
    ::close(d);
  }
  ASSERT_EQ(::kill(run.pid(), SIGKILL), 0);
  ASSERT_TRUE(run.Wait(std::chrono::seconds(20)).has_value());
  EXPECT_TRUE(WaitUntil([&] { return ProcessesWithMarker(ws_.path()).empty(); }))
      << "left behind " << ProcessesWithMarker(ws_.path()).size();
  // The gateway stopped in order on its parent-death signal: its socket is gone. Its directory,
  // which a locked-down gateway may not remove, is all that stays.
  std::vector<std::filesystem::path> left;
  for (const auto& e : std::filesystem::directory_iterator(runtime / "anvil")) {
    left.push_back(e.path());
  }
  ASSERT_EQ(left.size(), 1u);
  for (const auto& e : std::filesystem::directory_iterator(left[0])) {
    ADD_FAILURE() << "left " << e.path();
  }
  // Once it has not changed for a while, the next session's stop removes it.
  const timespec old[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, left[0].c_str(), old, 0), 0);
  ASSERT_EQ(
      testing::Run({AnvilBin(), "run", "--workspace", ws_.path(), plugin_.path(), "x"}, o).status,
      0);
  EXPECT_FALSE(std::filesystem::exists(left[0]));
}

TEST_F(AnvilRun, BadManifestIsAUsageErrorNamingTheLine) {
  WriteFile(plugin_ / "anvil-plugin.toml",
            "id = \"Bad Id\"\nversion = \"1\"\nruntime = \"lua\"\n"
            "entry = \"main.lua\"\n");
  WriteFile(plugin_ / "main.lua", "");
  auto r = Anvil({"--approve", plugin_.path(), "x"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(":1"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace run_command_test
}  // namespace anvil::testing
