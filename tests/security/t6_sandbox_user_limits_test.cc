// T6 for the command sandbox, the caller's per-user kernel quotas: inotify instances and watches
// (and fanotify groups, namespaces) are counted at every level of the user-namespace chain, so a
// sandbox's use counts against its caller's host-wide quota (max_user_instances, 128). A command
// that takes every instance it can must leave the caller's own processes theirs. Benign: a file
// watcher inside still works.
#include <sys/inotify.h>

#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace t6_sandbox_user_limits_test {
namespace {

// Takes inotify instances until the kernel refuses, says how many and why, then waits to be
// killed (so they stay taken while the host-side probe runs).
constexpr char kHog[] = R"py(
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
fds = []
while len(fds) < 4096:
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    fds.append(fd)
open(sys.argv[1], "w").write("%d %d" % (len(fds), ctypes.get_errno()))
time.sleep(60)
)py";

// The caller's own process, beside the sandbox: one inotify instance.
constexpr char kProbe[] = R"py(
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
print("ok" if fd >= 0 else "EMFILE" if ctypes.get_errno() == 24 else "errno %d" % ctypes.get_errno())
)py";

constexpr char kWatcher[] = R"py(
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
wd = libc.inotify_add_watch(fd, b".", 0x2 | 0x100)  # IN_MODIFY | IN_CREATE
open("watched.txt", "w").write("x")
data = os.read(fd, 4096)
name = data[16:16 + struct.unpack("iIII", data[:16])[3]].rstrip(b"\0")
print(name.decode())
)py";

class T6SandboxUserLimits : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
    caller_.Give(ws_.path());
  }
  TempDir ws_{"anvil-ws-ulimits"};
};

TEST_P(T6SandboxUserLimits, AnInotifyHogLeavesTheCallersOwnQuota) {
  const std::string report = ws_ / "hog-report";
  std::vector<std::string> argv = {AnvilBin(), "sandbox", "--cwd", ws_.path(), "--",
                                   kPython,    "-c",      kHog,    report};
  Spawned hog(argv, Opts());
  ASSERT_TRUE(WaitUntil([&] { return !ReadFile(report).empty(); }, std::chrono::seconds(30)))
      << "the hog did not report";
  int taken = -1, err = -1;
  std::sscanf(ReadFile(report).c_str(), "%d %d", &taken, &err);
  EXPECT_GT(taken, 0);
  EXPECT_EQ(err, EMFILE);
  // The caller's own process, outside, while the sandbox holds all it could take.
  auto probe = ::anvil::testing::Run({kPython, "-c", kProbe}, Opts());
  EXPECT_EQ(probe.out, "ok\n") << "the sandbox took the caller's inotify quota (" << taken
                               << " instances): " << probe.err;
  // The sandbox's share is what its user namespace says, a part of the caller's.
  auto limits = SandboxSh(ws_.path(),
                          "cat /proc/sys/user/max_inotify_instances "
                          "/proc/sys/user/max_inotify_watches",
                          {}, Opts());
  auto lines = Lines(limits.out);
  ASSERT_EQ(lines.size(), 2u) << limits.out << limits.err;
  const long instances = std::stol(lines[0]);
  EXPECT_GE(instances, 1);
  EXPECT_LE(instances, std::stol(ReadFile("/proc/sys/user/max_inotify_instances")) / 4);
  EXPECT_LE(std::stol(lines[1]), std::stol(ReadFile("/proc/sys/user/max_inotify_watches")) / 4);
}

TEST_P(T6SandboxUserLimits, AFileWatcherInsideStillWorks) {
  auto r = SandboxPython(ws_.path(), kWatcher, {}, Opts());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "watched.txt\n") << r.err;
}

INSTANTIATE_TEST_SUITE_P(Callers, T6SandboxUserLimits, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t6_sandbox_user_limits_test
}  // namespace anvil::testing
