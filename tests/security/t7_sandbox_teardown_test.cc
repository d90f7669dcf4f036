// T7 for the command sandbox, teardown and cancellation: no process outlives the sandbox — not
// a double-forked setsid daemon that ignores SIGHUP/SIGTERM, not the tree of a command that
// passed --timeout, not the tree of an `anvil` that was itself SIGKILLed — while a forwarded
// SIGTERM still ends the command the ordinary way.
#include <signal.h>

#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace {

class T7SandboxTeardown : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    caller_.Give(ws_.path());
  }

  // Shell text that double-forks a setsid daemon ignoring HUP/TERM/INT, whose command line
  // carries `marker` (assembled at run time so that only the daemon's argv holds it, not
  // anvil's), and waits until the daemon is up.
  static std::string DaemonScript(const std::string& marker) {
    auto dash = marker.find('-');
    std::string head = marker.substr(0, dash + 1), tail = marker.substr(dash + 1);
    return "m=" + head +
           "; ( setsid /bin/sh -c \"trap '' HUP TERM INT; echo up > daemon-up; "
           "sleep 1000; : ${m}" +
           tail +
           "\" & ); "
           "until [ -e daemon-up ]; do sleep 0.02; done; ";
  }
  std::vector<std::string> SandboxArgv(const std::vector<std::string>& flags,
                                       const std::string& script) const {
    std::vector<std::string> argv = {AnvilBin(), "sandbox", "--cwd", ws_.path()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
    return argv;
  }
  bool Gone(const std::string& marker) {
    return WaitUntil([&] { return ProcessesWithMarker(marker).empty(); });
  }

  TempDir ws_{"anvil-ws-teardown"};
};

TEST_P(T7SandboxTeardown, SetsidDaemonIsDeadAfterTheSandboxExits) {
  const std::string marker = UniqueToken("anvildaemon");
  auto result = SandboxSh(ws_.path(), DaemonScript(marker) + "echo started", {}, Opts());
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(result.out, "started\n");
  ASSERT_TRUE(Exists(ws_ / "daemon-up")) << "the daemon never ran: the test would prove nothing";
  EXPECT_TRUE(Gone(marker)) << "a setsid daemon outlived the sandbox";

  // Benign: background work that finishes before the command does is not disturbed.
  auto benign =
      SandboxSh(ws_.path(), "(sleep 0.1; echo bg > bg.txt) & wait; cat bg.txt", {}, Opts());
  EXPECT_EQ(benign.out, "bg\n") << benign.err;
}

TEST_P(T7SandboxTeardown, TimeoutGives124AndKillsTheTreeIncludingASetsidDescendant) {
  const std::string marker = UniqueToken("anviltimeout");
  RunOptions options;
  options.timeout_seconds = 20;  // backstop far above --timeout 1
  auto result = SandboxSh(ws_.path(), DaemonScript(marker) + "exec sleep 1000",
                          {"--timeout", "1", "--json"}, Opts(options));
  EXPECT_EQ(result.status, 124) << result.err;
  EXPECT_EQ(result.err.find("[harness: killed"), std::string::npos)
      << "anvil did not return after its own timeout";
  auto report = JsonReport(result);
  ASSERT_FALSE(report.is_discarded()) << result.err;
  EXPECT_EQ(report.value("outcome", ""), "timed_out");
  EXPECT_EQ(report.value("exit_code", 0), 124);
  EXPECT_TRUE(Exists(ws_ / "daemon-up"));
  EXPECT_TRUE(Gone(marker)) << "the setsid descendant survived the timeout";

  // Benign: a command that finishes within its timeout keeps its own status.
  auto quick = SandboxSh(ws_.path(), "exit 5", {"--timeout", "30"}, Opts());
  EXPECT_EQ(quick.status, 5) << quick.err;
}

TEST_P(T7SandboxTeardown, SigkillOfAnvilKillsTheWholeSandboxedTree) {
  const std::string daemon = UniqueToken("anvilorphan");
  const std::string main_marker = UniqueToken("anvilmain");
  auto dash = main_marker.find('-');
  const std::string script = DaemonScript(daemon) + "n=" + main_marker.substr(0, dash + 1) +
                             "; exec /bin/sh -c \"echo up > main-up; sleep 1000; : ${n}" +
                             main_marker.substr(dash + 1) + "\"";
  Spawned anvil(SandboxArgv({}, script), Opts());
  ASSERT_TRUE(WaitUntil([&] { return Exists(ws_ / "main-up") && Exists(ws_ / "daemon-up"); }))
      << "the sandboxed tree never started";
  ASSERT_FALSE(ProcessesWithMarker(main_marker).empty());
  ASSERT_FALSE(ProcessesWithMarker(daemon).empty());

  ASSERT_EQ(kill(anvil.pid(), SIGKILL), 0);  // only anvil itself, not its process group
  EXPECT_EQ(anvil.Wait(std::chrono::seconds(10)).value_or(-1), 128 + SIGKILL);
  EXPECT_TRUE(Gone(main_marker)) << "the command outlived a SIGKILLed anvil";
  EXPECT_TRUE(Gone(daemon)) << "the setsid daemon outlived a SIGKILLed anvil";
}

TEST_P(T7SandboxTeardown, SigtermToAnvilIsForwardedAndTheTreeEnds) {
  const std::string daemon = UniqueToken("anvilterm");
  Spawned anvil(SandboxArgv({}, DaemonScript(daemon) + "echo up > main-up; exec sleep 1000"),
                Opts());
  ASSERT_TRUE(WaitUntil([&] { return Exists(ws_ / "main-up"); }));
  ASSERT_EQ(kill(anvil.pid(), SIGTERM), 0);
  EXPECT_EQ(anvil.Wait(std::chrono::seconds(10)).value_or(-1), 128 + SIGTERM)
      << "the command should die of the forwarded SIGTERM and anvil report 143";
  EXPECT_TRUE(Gone(daemon)) << "the daemon (which ignores SIGTERM) outlived the sandbox";
}

INSTANTIATE_TEST_SUITE_P(Callers, T7SandboxTeardown, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace anvil::testing
