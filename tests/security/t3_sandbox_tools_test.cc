// T3 for the command sandbox, tools and benign controls: the real `rg` searches the workspace
// but cannot reach a secret through a planted or swapped symlink or through its own
// preprocessor hook; ordinary developer work — pipes, subprocesses, scripts, a private /tmp, a
// workspace under /tmp or with spaces in its path, debuggers and LeakSanitizer — keeps working.
#include <stdio.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace t3_sandbox_tools_test {
namespace {

constexpr char kRg[] = "/usr/bin/rg";

class T3SandboxTools : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    secret_ = UniqueToken("NEEDLE-SECRET");
    WriteFile(outside_ / "credentials.txt", secret_ + "\n", 0644);
    WriteFile(ws_ / "notes.txt", "NEEDLE in the workspace\n");
    caller_.Give(ws_.path());
  }
  RunResult Sh(const std::string& script, const std::vector<std::string>& flags = {}) {
    return SandboxSh(ws_.path(), script, flags, Opts());
  }

  TempDir outside_{"anvil-secret-tools", "/var/tmp"};
  TempDir ws_{"anvil-ws-tools"};
  std::string secret_;
};

TEST_P(T3SandboxTools, RgSearchesWorkspaceButNotThroughASymlinkOutside) {
  if (!Exists(kRg)) GTEST_SKIP() << "SKIPPED: " << kRg << " (Debian's ripgrep) is missing";
  ASSERT_EQ(symlink(outside_.path().c_str(), (ws_ / "vendor").c_str()), 0);
  ASSERT_EQ(symlink((outside_ / "credentials.txt").c_str(), (ws_ / "creds").c_str()), 0);
  caller_.Give(ws_.path());
  const std::vector<std::string> rg = {kRg, "--no-config", "--follow", "-n", "NEEDLE", "."};
  auto control = Sandbox(ws_.path(), {"--policy", "danger-full-access"}, rg, Opts());
  ASSERT_NE(control.out.find(secret_), std::string::npos)
      << "control: unconfined, rg --follow finds the secret through the links; " << control.err;

  for (const auto& flags : std::vector<std::vector<std::string>>{{}, {"--policy", "read-only"}}) {
    auto attack = Sandbox(ws_.path(), flags, rg, Opts());
    EXPECT_EQ(attack.out.find(secret_), std::string::npos) << attack.out;
    EXPECT_NE(attack.out.find("./notes.txt:1:NEEDLE in the workspace"), std::string::npos)
        << "benign: rg still finds the workspace match; " << attack.out << attack.err;
    auto direct = Sandbox(ws_.path(), flags,
                          {kRg, "--no-config", "NEEDLE", outside_ / "credentials.txt"}, Opts());
    EXPECT_NE(direct.status, 0);
    EXPECT_EQ(direct.out.find(secret_), std::string::npos);
  }
}

TEST_P(T3SandboxTools, RgPreprocessorRunsInsideTheSandbox) {
  // `rg --pre CMD` runs CMD for every file (T3's example of a tool's own execution feature).
  if (!Exists(kRg)) GTEST_SKIP() << "SKIPPED: " << kRg << " (Debian's ripgrep) is missing";
  WriteFile(ws_ / "pre.sh",
            "#!/bin/sh\ncat " + ShellQuote(outside_ / "credentials.txt") +
                " 2>/dev/null; echo pwned > " + ShellQuote(outside_ / "pre-pwned") +
                " 2>/dev/null; cat \"$1\"\n",
            0755);
  caller_.Give(ws_.path());
  auto result = Sandbox(ws_.path(), {},
                        {kRg, "--no-config", "--pre", "./pre.sh", "-n", "NEEDLE", "."}, Opts());
  EXPECT_EQ(result.out.find(secret_), std::string::npos) << result.out;
  EXPECT_FALSE(Exists(outside_ / "pre-pwned"));
  EXPECT_NE(result.out.find("NEEDLE in the workspace"), std::string::npos)
      << "benign: the preprocessor itself works; " << result.out << result.err;
}

TEST_P(T3SandboxTools, SymlinkSwappedDuringTheRunNeverYieldsTheSecret) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  WriteFile(ws_ / "inside.txt", "inside\n");
  caller_.Give(ws_.path());
  const std::string link = ws_ / "flip";
  const std::string tmp = ws_ / "flip.tmp";
  ASSERT_EQ(symlink("inside.txt", link.c_str()), 0);
  // The host swaps the link between a workspace file and the secret, atomically, as fast as
  // it can while the sandboxed reader loops (a check-then-use race for any path-based check).
  // Everything the thread touches is allocated before it starts: the harness forks while it
  // runs, and the thread must never hold the allocator's lock at that moment.
  const std::string targets[] = {"inside.txt", outside_ / "credentials.txt"};
  std::atomic<bool> stop{false};
  std::thread flipper([&] {
    for (unsigned i = 0; !stop; ++i) {
      unlink(tmp.c_str());
      if (symlink(targets[i % 2].c_str(), tmp.c_str()) == 0) rename(tmp.c_str(), link.c_str());
    }
  });
  // At least 5000 reads, and on until one read the workspace file (bounded at 20 s): on a busy
  // machine the flipper thread can be off the CPU, with the link pointing outside, for the
  // whole of 5000 quick reads.
  auto result = SandboxPython(ws_.path(), R"py(
import time
inside = leaked = failed = 0
n = 0
deadline = time.monotonic() + 20
while n < 5000 or (inside == 0 and time.monotonic() < deadline):
    n += 1
    try:
        data = open("flip").read()
    except OSError:
        failed += 1
        continue
    if data == "inside\n":
        inside += 1
    else:
        leaked += 1
        print(data, end="")
print("inside", inside > 0, "leaked", leaked)
)py",
                              {}, Opts());
  stop = true;
  flipper.join();
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(result.out.find(secret_), std::string::npos) << "the swapped link leaked the secret";
  EXPECT_EQ(result.out, "inside True leaked 0\n") << result.err;
}

TEST_P(T3SandboxTools, PipesSubprocessesAndScriptsWork) {
  WriteFile(ws_ / "hello.sh", "#!/bin/sh\necho \"script $1\"\n", 0755);
  caller_.Give(ws_.path());
  auto pipe = Sh("echo a | tr a b");
  EXPECT_EQ(pipe.status, 0) << pipe.err;
  EXPECT_EQ(pipe.out, "b\n");
  auto nested = Sh("sh -c 'sh -c \"echo nested\"' && ./hello.sh inner && (cd / && pwd)");
  EXPECT_EQ(nested.status, 0) << nested.err;
  EXPECT_EQ(nested.out, "nested\nscript inner\n/\n");
  auto script = Sandbox(ws_.path(), {}, {"./hello.sh", "top"}, Opts());
  EXPECT_EQ(script.status, 0) << script.err;
  EXPECT_EQ(script.out, "script top\n");
  if (Exists(kPython)) {
    auto sub = SandboxPython(
        ws_.path(),
        "import subprocess; print(subprocess.run(['/bin/echo', 'sub'], capture_output=True, "
        "text=True).stdout, end='')",
        {}, Opts());
    EXPECT_EQ(sub.status, 0) << sub.err;
    EXPECT_EQ(sub.out, "sub\n");
  }
  RunOptions with_stdin = Opts();
  with_stdin.stdin_data = "from-stdin\n";
  auto in = SandboxSh(ws_.path(), "cat", {}, with_stdin);
  EXPECT_EQ(in.out, "from-stdin\n") << in.err;
}

TEST_P(T3SandboxTools, WorkspaceUnderTmpWithSpacesInItsPathWorks) {
  TempDir spaced("anvil ws with spaces");
  caller_.Give(spaced.path());
  auto result = SandboxSh(spaced.path(),
                          "pwd && echo one > a.txt && mkdir d && mv a.txt d/b.txt && "
                          "cat d/b.txt && echo tmp > /tmp/x && cat /tmp/x && rm -r d && ls -A",
                          {}, Opts());
  EXPECT_EQ(result.status, 0) << result.err;
  // `.git` is the empty read-only placeholder that keeps the command from creating one
  // (T1SandboxWrite.CreatingGitWhereNoneExistsIsDenied); it is gone after the run. A missing
  // Anvil.toml has none (T8SandboxPluginLock.AnAnvilTomlMadeWhereMissingIsMovedAsideAfterTheRun).
  EXPECT_EQ(result.out, spaced.path() + "\none\ntmp\n.git\n");
  EXPECT_FALSE(Exists(spaced / ".git"));
  EXPECT_FALSE(Exists(spaced / "Anvil.toml"));
  EXPECT_FALSE(Exists(spaced / "d"));
  auto keep = SandboxSh(spaced.path(), "echo kept > kept.txt", {}, Opts());
  EXPECT_EQ(keep.status, 0) << keep.err;
  EXPECT_EQ(ReadFile(spaced / "kept.txt"), "kept\n") << "writes reach the real workspace";
}

// A developer's debugging works on the command's own processes (docs/policy.md, "Debuggers and
// sanitizers"): LeakSanitizer's exit-time check (it stops the threads with ptrace) reports a
// leak with ASan's exit status instead of dying with "LeakSanitizer has encountered a fatal
// error", strace traces, gdb stops at a breakpoint (writing it into the program) and runs on.
TEST_P(T3SandboxTools, DebuggersAndLeakSanitizerWork) {
  const std::string leak = ws_ / "leak", clean = ws_ / "clean";
  if (!CompileC("#include <stdlib.h>\nvoid *volatile kept;\n"
                "int main(void) { kept = malloc(100); kept = 0; return 0; }\n",
                leak, "-g -fsanitize=address") ||
      !CompileC("#include <stdlib.h>\nvoid *volatile kept;\n"
                "int main(void) { kept = malloc(100); free(kept); return 0; }\n",
                clean, "-g -fsanitize=address")) {
    GTEST_SKIP() << "SKIPPED: gcc cannot build with -fsanitize=address here";
  }
  // Without a sanitizer for gdb: LeakSanitizer never works under a debugger, sandbox or not.
  ASSERT_TRUE(CompileC("int main(void) { return 0; }\n", ws_ / "plain", "-g"));
  caller_.Give(ws_.path());
  auto leaked = Sandbox(ws_.path(), {"--quiet"}, {"./leak"}, Opts());
  EXPECT_EQ(leaked.status, 1) << leaked.err;
  EXPECT_NE(leaked.err.find("Direct leak of 100 byte(s)"), std::string::npos) << leaked.err;
  EXPECT_EQ(leaked.err.find("fatal error"), std::string::npos) << leaked.err;
  auto freed = Sandbox(ws_.path(), {"--quiet"}, {"./clean"}, Opts());
  EXPECT_EQ(freed.status, 0) << freed.err;

  if (Exists("/usr/bin/strace")) {
    auto traced = Sandbox(ws_.path(), {"--quiet"},
                          {"/usr/bin/strace", "-f", "-e", "trace=execve", "/bin/true"}, Opts());
    EXPECT_EQ(traced.status, 0) << traced.err;
    EXPECT_NE(traced.err.find("execve(\"/bin/true\""), std::string::npos) << traced.err;
  }
  if (Exists("/usr/bin/gdb")) {
    auto debugged =
        Sandbox(ws_.path(), {"--quiet"},
                {"/usr/bin/gdb", "-batch", "-nx", "-ex", "set disable-randomization off", "-ex",
                 "break main", "-ex", "run", "-ex", "bt", "-ex", "continue", "./plain"},
                Opts());
    EXPECT_EQ(debugged.status, 0) << debugged.out << debugged.err;
    EXPECT_NE(debugged.out.find("Breakpoint 1, main"), std::string::npos)
        << debugged.out << debugged.err;
    EXPECT_NE(debugged.out.find("exited normally"), std::string::npos)
        << debugged.out << debugged.err;
  }
}

// A program that checks for a debugger with PTRACE_TRACEME (it succeeds without one) makes its
// parent, here the sandbox's init, its tracer: init lets it go at each stop, so it runs on
// through a child's SIGCHLD and an exec (whose SIGTRAP would kill it if passed on) instead of
// waiting, stopped, for a tracer that never resumes it.
TEST_P(T3SandboxTools, AProgramThatMakesInitItsTracerRunsOn) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  auto result = SandboxPython(ws_.path(), R"py(
import ctypes, os, subprocess
print("traceme", ctypes.CDLL(None).ptrace(0, 0, None, None), flush=True)
print("child", subprocess.run(["/bin/true"]).returncode, flush=True)
os.execv("/bin/echo", ["echo", "after exec"])
)py",
                              {"--quiet", "--timeout", "30"}, Opts());
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(result.out, "traceme 0\nchild 0\nafter exec\n") << result.err;
}

// A child of the command that seizes it (PTRACE_SEIZE) and never waits keeps the command's exit
// from init: the kernel reports a traced process's exit to its tracer only. Init watches the
// command's pidfd: the run ends at once with the command's own status, and the tracer is gone,
// with and without the refusal observer (--quiet), whose waits differ, and in read-only's
// fallback without a pid namespace, where init is a subreaper (unprivileged callers only).
constexpr char kSeizeParent[] = R"py(
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_DETACH = 0x4206, 0x4207, 17
mode = sys.argv[2]
parent = os.getpid()
r, w = os.pipe()
if os.fork() == 0:
    ok = libc.ptrace(PTRACE_SEIZE, parent, None, None) == 0
    if ok and mode == "detach":
        libc.ptrace(PTRACE_INTERRUPT, parent, None, None)
        os.waitpid(parent, 0x40000000)  # __WALL: the interrupt's stop
        ok = libc.ptrace(PTRACE_DETACH, parent, None, None) == 0
    os.write(w, b"1" if ok else b"0")
    if mode == "wait":
        os.waitpid(parent, 0x40000000)  # the exit, as a debugger takes it
    time.sleep(60)
    os._exit(0)
print("seized", os.read(r, 1).decode(), flush=True)
os._exit(3)
)py";

TEST_P(T3SandboxTools, ATracerThatNeverWaitsDoesNotHoldTheRunOpen) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  std::vector<std::vector<std::string>> runs = {{"--quiet"}, {}};
  RunOptions options;
  if (Unprivileged()) {
    runs.push_back({"--quiet", "--policy", "read-only", "--unsafe-test-fail-layer", "clone"});
    options.env = {"PATH=/usr/bin:/bin", "HOME=/tmp", "ANVIL_ALLOW_TEST_FAULTS=1"};
  }
  for (const auto& flags : runs) {
    SCOPED_TRACE(::testing::PrintToString(flags));
    const std::string marker = UniqueToken("seized-by-child");
    std::vector<std::string> all = flags;
    all.insert(all.end(), {"--timeout", "30"});
    const auto start = std::chrono::steady_clock::now();
    auto result = SandboxPython(ws_.path(), kSeizeParent, all, Opts(options), {marker, "never"});
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(result.out, "seized 1\n") << result.err;
    EXPECT_EQ(result.status, 3) << "the command's own status, not the timeout's; " << result.err;
    EXPECT_LT(took, std::chrono::seconds(10)) << "the run lasted until --timeout; " << result.err;
    EXPECT_TRUE(ProcessesWithMarker(marker).empty()) << "the tracer outlived the run";
  }
}

// The benign neighbours: a child that attaches, stops the command and detaches, and one that
// waits for the command's exit as a debugger does; the run reports the command's status.
TEST_P(T3SandboxTools, ATracerThatDetachesOrWaitsLeavesTheCommandsStatus) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  for (const char* mode : {"detach", "wait"}) {
    for (const auto& flags : std::vector<std::vector<std::string>>{{"--quiet"}, {}}) {
      SCOPED_TRACE(std::string(mode) + (flags.empty() ? " with the refusal observer" : " --quiet"));
      const std::string marker = UniqueToken("traced-by-child");
      std::vector<std::string> all = flags;
      all.insert(all.end(), {"--timeout", "30"});
      auto result = SandboxPython(ws_.path(), kSeizeParent, all, Opts(), {marker, mode});
      EXPECT_EQ(result.out, "seized 1\n") << result.err;
      EXPECT_EQ(result.status, 3) << result.err;
      EXPECT_TRUE(ProcessesWithMarker(marker).empty());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Callers, T3SandboxTools, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t3_sandbox_tools_test
}  // namespace anvil::testing
