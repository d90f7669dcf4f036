// T6 for the command sandbox, memory: a command that allocates without bound is killed at the
// sandbox's memory ceiling (a memory cgroup, where one can be had) and the run says so, while
// the caller and the host carry on; wherever the memory goes, the sandboxed tree is the OOM
// killer's first choice (oom_score_adj 1000), before the user's editor or shell. Benign: work
// under the ceiling runs normally, and `--limit mem` changes it.
#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace t6_sandbox_memory_test {
namespace {

constexpr char kFlood[] = R"py(
chunks = []
while True:
    chunks.append(b"x" * (16 << 20))  # written, so every page is really allocated
)py";

class T6SandboxMemory : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
    caller_.Give(ws_.path());
  }
  TempDir ws_{"anvil-ws-mem"};
};

TEST_P(T6SandboxMemory, TheSandboxedTreeIsTheOomKillersFirstChoice) {
  auto r = SandboxSh(ws_.path(),
                     "cat /proc/self/oom_score_adj /proc/1/oom_score_adj; "
                     "sh -c 'cat /proc/self/oom_score_adj'",
                     {}, Opts());
  EXPECT_EQ(r.out, "1000\n1000\n1000\n") << r.err;
  // Lowering it again needs CAP_SYS_RESOURCE, which the command does not have.
  auto lower = SandboxSh(ws_.path(), "echo 0 > /proc/self/oom_score_adj", {}, Opts());
  EXPECT_NE(lower.status, 0) << "the command lowered its OOM score";
}

TEST_P(T6SandboxMemory, WithoutConfinementTheCommandCanLowerItsScoreToZeroButNotBelow) {
  // external-sandbox and danger-full-access confine no file: nothing stops the write to
  // /proc/self/oom_score_adj, and the kernel lets a process without CAP_SYS_RESOURCE lower it
  // down to its floor (oom_score_adj_min, 0: init cannot raise it). Documented, not a wall.
  for (const char* policy : {"external-sandbox", "danger-full-access"}) {
    auto r = SandboxSh(ws_.path(),
                       "cat /proc/self/oom_score_adj; echo 0 > /proc/self/oom_score_adj; "
                       "echo -1 > /proc/self/oom_score_adj 2>/dev/null || echo refused; "
                       "cat /proc/self/oom_score_adj",
                       {"--policy", policy}, Opts());
    EXPECT_EQ(r.out, "1000\nrefused\n0\n") << policy << ": " << r.err;
  }
}

TEST_P(T6SandboxMemory, AnAllocationFloodIsKilledAtTheCeilingAndReported) {
  auto layers = ProbeLayers({"--limit", "mem=64M"}, Opts());
  if (layers.value("memory_limit", 0) == 0) {
    GTEST_SKIP() << "SKIPPED: no memory cgroup can be had by this caller here (cgroup v1 "
                    "memory is root's; v2 needs a delegated subtree), so there is no ceiling "
                    "to hit; the OOM-score half is tested separately";
  }
  EXPECT_EQ(layers.value("memory_limit", 0), 64 << 20);
  auto flood = SandboxPython(ws_.path(), kFlood, {"--limit", "mem=64M", "--json"}, Opts());
  EXPECT_EQ(flood.status, 128 + 9) << flood.err;
  EXPECT_NE(flood.err.find("memory ceiling (64 MiB)"), std::string::npos) << flood.err;
  EXPECT_NE(flood.err.find("--limit mem="), std::string::npos) << flood.err;
  auto report = JsonReport(flood);
  EXPECT_TRUE(report.value("out_of_memory", false)) << report.dump();
  // The caller and the host carry on: the next sandbox works, and so does work under a ceiling.
  auto under = SandboxPython(ws_.path(), "data = b'x' * (16 << 20)\nprint(len(data) >> 20)",
                             {"--limit", "mem=64M", "--json"}, Opts());
  EXPECT_EQ(under.status, 0) << under.err;
  EXPECT_EQ(under.out, "16\n");
  EXPECT_FALSE(JsonReport(under).value("out_of_memory", false));
}

// Loopback TCP connections whose peer never reads: the kernel queues their buffers, memory the
// process never allocated itself. cgroup v1 counts it only once a TCP limit is written.
constexpr char kTcpFlood[] = R"py(
import socket
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1024)
total, conns = 0, []
try:
    for i in range(300):
        c = socket.socket(); c.connect(srv.getsockname()); a, _ = srv.accept()
        c.setblocking(False)
        conns.append((c, a))
        try:
            while True:
                total += c.send(b"x" * 65536)
        except BlockingIOError:
            pass
except OSError:
    pass
print(total >> 20)
)py";

TEST_P(T6SandboxMemory, QueuedSocketBuffersCountAgainstTheCeiling) {
  auto layers = ProbeLayers({"--limit", "mem=64M"}, Opts());
  if (layers.value("memory_limit", 0) == 0) {
    GTEST_SKIP() << "SKIPPED: no memory cgroup can be had by this caller here";
  }
  auto flood = SandboxPython(ws_.path(), kTcpFlood, {"--limit", "mem=64M"}, Opts());
  if (flood.status == 0) {
    // Sends stop short (EAGAIN) at the ceiling; each connection may hold one buffer past it.
    ASSERT_FALSE(flood.out.empty()) << flood.err;
    EXPECT_LT(std::stoll(flood.out), 128) << "MiB of TCP buffers queued under mem=64M";
  } else {
    EXPECT_EQ(flood.status, 128 + 9) << flood.out << flood.err;
  }
  // Benign: a local test server and its client exchange a few MiB under the same ceiling.
  auto server = SandboxPython(ws_.path(), R"py(
import socket, threading
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
def serve():
    a, _ = srv.accept()
    while True:
        data = a.recv(1 << 16)
        if not data: break
        a.sendall(data)
    a.close()
t = threading.Thread(target=serve); t.start()
c = socket.create_connection(srv.getsockname())
got = 0
for i in range(64):
    c.sendall(b"y" * 65536)
    need = 65536
    while need:
        n = len(c.recv(need)); need -= n; got += n
c.close(); t.join()
print(got >> 20)
)py",
                              {"--limit", "mem=64M"}, Opts());
  EXPECT_EQ(server.status, 0) << server.err;
  EXPECT_EQ(server.out, "4\n") << server.err;
}

TEST_P(T6SandboxMemory, TheCeilingDefaultsToHalfTheMemoryAndTheFlagChangesIt) {
  auto bad = SandboxSh(ws_.path(), "echo ran", {"--limit", "mem=0"}, Opts());
  EXPECT_EQ(bad.status, 125);
  EXPECT_NE(bad.err.find("--limit mem"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.out, "");
  auto unlimited = ProbeLayers({"--limit", "mem=unlimited"}, Opts());
  EXPECT_EQ(unlimited.value("memory_limit", 1), 0) << unlimited.dump();
  auto defaults = ProbeLayers({}, Opts());
  if (defaults.value("memory_limit", 0) == 0) {
    GTEST_SKIP() << "SKIPPED: no memory cgroup can be had by this caller here";
  }
  std::string meminfo = ReadFile("/proc/meminfo");
  long long total_kib = std::stoll(meminfo.substr(meminfo.find("MemTotal:") + 9));
  EXPECT_EQ(defaults.value("memory_limit", 0LL), total_kib * 1024 / 2) << defaults.dump();
}

INSTANTIATE_TEST_SUITE_P(Callers, T6SandboxMemory, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t6_sandbox_memory_test
}  // namespace anvil::testing
