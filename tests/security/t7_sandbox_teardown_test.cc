// T7 for the command sandbox, teardown and cancellation: no process outlives the sandbox — not
// a double-forked setsid daemon that ignores SIGHUP/SIGTERM, not the tree of a command that
// passed --timeout, not the tree of an `anvil` that was itself SIGKILLed — while a forwarded
// SIGTERM still ends the command the ordinary way.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace t7_sandbox_teardown_test {
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

// The pids cgroup directories `anvil` makes for root (`<pids cgroup of this process>/anvil-PID-N`)
// of the anvil process `pid`, v1 or v2; the parent directory goes to `parent`.
std::vector<std::string> AnvilPidsCgroups(pid_t pid, std::string* parent) {
  std::ifstream in("/proc/self/cgroup");
  std::string line, v1, v2;
  while (std::getline(in, line)) {
    auto a = line.find(':'), b = line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (("," + controllers + ",").find(",pids,") != std::string::npos) v1 = path;
    if (controllers.empty()) v2 = path;
  }
  std::vector<std::string> bases = {"/sys/fs/cgroup/pids" + (v1 == "/" ? "" : v1),
                                    "/sys/fs/cgroup" + (v2 == "/" ? "" : v2),
                                    "/sys/fs/cgroup/unified" + (v2 == "/" ? "" : v2)};
  std::vector<std::string> found;
  const std::string prefix = "anvil-" + std::to_string(pid) + "-";
  for (const auto& base : bases) {
    DIR* dir = opendir(base.c_str());
    if (!dir) continue;
    while (dirent* e = readdir(dir)) {
      if (std::string(e->d_name).rfind(prefix, 0) == 0) {
        found.push_back(base + "/" + e->d_name);
        *parent = base;
      }
    }
    closedir(dir);
  }
  return found;
}

// Root's sandboxes get a pids cgroup (the kernel exempts uid 0 from RLIMIT_NPROC); an `anvil`
// that was SIGKILLed cannot remove its own. The next sandbox start removes every empty one whose
// creator is gone and that is older than a minute; a live anvil's and a fresh one stay.
TEST_P(T7SandboxTeardown, PidsCgroupOfASigkilledAnvilIsRemovedByALaterRun) {
  if (Unprivileged() || geteuid() != 0) GTEST_SKIP() << "SKIPPED: root's pids cgroup only";
  Spawned anvil(SandboxArgv({}, "echo up > main-up; sleep 1000"), Opts());
  ASSERT_TRUE(WaitUntil([&] { return Exists(ws_ / "main-up"); })) << "the sandbox never started";
  std::string parent;
  auto left = AnvilPidsCgroups(anvil.pid(), &parent);
  if (left.empty()) GTEST_SKIP() << "SKIPPED: no pids cgroup was made here (no pids controller)";
  ASSERT_EQ(kill(anvil.pid(), SIGKILL), 0);
  anvil.Wait(std::chrono::seconds(10));
  ASSERT_TRUE(WaitUntil([&] {
    std::ifstream procs(left[0] + "/cgroup.procs");
    std::string any;
    return !(procs >> any);
  })) << "the sandbox's processes stayed in "
      << left[0];
  ASSERT_TRUE(Exists(left[0])) << "nothing was left to clean up";

  // Three planted neighbours: a stale one (dead creator, an hour old), a fresh one (dead
  // creator, just made: it could be a sandbox being set up in another pid namespace), and an old
  // one whose creator is alive (this test process).
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_GT(dead, 0);
  waitpid(dead, nullptr, 0);
  const std::string stale = parent + "/anvil-" + std::to_string(dead) + "-7";
  const std::string fresh = parent + "/anvil-" + std::to_string(dead) + "-8";
  const std::string live = parent + "/anvil-" + std::to_string(getpid()) + "-9";
  for (const auto& d : {stale, fresh, live}) ASSERT_EQ(mkdir(d.c_str(), 0755), 0) << d;
  timespec old[2] = {{time(nullptr) - 3600, 0}, {time(nullptr) - 3600, 0}};
  for (const auto& d : {left[0], stale, live}) {
    ASSERT_EQ(utimensat(AT_FDCWD, d.c_str(), old, 0), 0) << d;
  }

  auto r = testing::Run({AnvilBin(), "sandbox", "--cwd", ws_.path(), "--", "/bin/true"}, Opts());
  EXPECT_EQ(r.status, 0) << r.err;  // benign control: the next sandbox runs
  EXPECT_FALSE(Exists(left[0])) << "the SIGKILLed anvil's cgroup is still there";
  EXPECT_FALSE(Exists(stale));
  EXPECT_TRUE(Exists(fresh)) << "a cgroup made a moment ago was removed";
  EXPECT_TRUE(Exists(live)) << "the cgroup of a live process was removed";
  for (const auto& d : {stale, fresh, live}) rmdir(d.c_str());
}

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
  options.timeout_seconds = 30;  // backstop far above --timeout 4
  // Long enough for the daemon to be up first on a loaded machine (the sandbox's start and the
  // shell count against it): a timeout before that would prove nothing.
  auto result = SandboxSh(ws_.path(), DaemonScript(marker) + "exec sleep 1000",
                          {"--timeout", "4", "--json"}, Opts(options));
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
}  // namespace t7_sandbox_teardown_test
}  // namespace anvil::testing
