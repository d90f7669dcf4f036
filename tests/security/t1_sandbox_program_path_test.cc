// T1 (TOCTOU) for the command sandbox's program: CMD is looked up once, outside, and opened
// there; inside, it runs under the path that lookup produced only when that path still names
// the very file that was opened. A program replaced between the lookup and the exec is refused
// (nothing runs), never executed under the user's name. The benign neighbours are what the path
// is for: scripts see the path they were run by ($0, BASH_SOURCE, __file__, dirname "$0"), as
// they do outside, whether run as ./x.sh, scripts/x.sh, through PATH or through a symlink, and
// binaries keep argv[0] as typed.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace t1_sandbox_program_path_test {
namespace {

constexpr char kBashScript[] = R"sh(#!/bin/bash
. "$(dirname "$0")/lib.sh"
echo "0=$0 source=${BASH_SOURCE[0]} dir=$(dirname "$0") lib=$LIB"
)sh";

class T1SandboxProgramPath : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_EQ(Shell("mkdir -p '" + ws_.path() + "/scripts' '" + ws_.path() + "/bin'"), 0);
    for (const std::string dir : {"", "scripts/"}) {
      WriteFile(ws_ / (dir + "x.sh"), kBashScript, 0755);
      WriteFile(ws_ / (dir + "lib.sh"),
                "LIB=" + (dir.empty() ? std::string("top") : "scripts") + "\n");
    }
    WriteFile(ws_ / "bin/tool", kBashScript, 0755);
    WriteFile(ws_ / "bin/lib.sh", "LIB=bin\n");
    ASSERT_EQ(symlink("scripts/x.sh", (ws_ / "link.sh").c_str()), 0);
    WriteFile(ws_ / "py.py",
              "#!/usr/bin/env python3\nimport os, sys\n"
              "print('file', __file__, 'argv0', sys.argv[0], 'dir', "
              "os.path.dirname(os.path.abspath(__file__)))\n",
              0755);
    caller_.Give(ws_.path());
  }
  RunResult Run(const std::vector<std::string>& command, const std::string& path = "") {
    RunOptions options;
    options.env = {"PATH=" + (path.empty() ? "" : path + ":") + "/usr/local/bin:/usr/bin:/bin",
                   "HOME=/tmp", "LANG=C.UTF-8"};
    return Sandbox(ws_.path(), {}, command, Opts(options));
  }
  TempDir ws_{"anvil-ws-prog"};
};

TEST_P(T1SandboxProgramPath, ScriptsSeeThePathTheyWereRunBy) {
  auto dot = Run({"./x.sh"});
  EXPECT_EQ(dot.out, "0=./x.sh source=./x.sh dir=. lib=top\n") << dot.err;
  auto sub = Run({"scripts/x.sh"});
  EXPECT_EQ(sub.out, "0=scripts/x.sh source=scripts/x.sh dir=scripts lib=scripts\n") << sub.err;
  auto abs = Run({ws_ / "scripts/x.sh"});
  EXPECT_EQ(abs.out, "0=" + ws_ / "scripts/x.sh" + " source=" + ws_ / "scripts/x.sh" +
                         " dir=" + ws_ / "scripts" + " lib=scripts\n")
      << abs.err;
  // Through PATH, as a shell does: the PATH entry joined with the name.
  auto via_path = Run({"tool"}, ws_ / "bin");
  EXPECT_EQ(via_path.out, "0=" + ws_ / "bin/tool" + " source=" + ws_ / "bin/tool" +
                              " dir=" + ws_ / "bin" + " lib=bin\n")
      << via_path.err;
  // A symlink to the script: the path as typed, as outside.
  auto link = Run({"./link.sh"});
  EXPECT_EQ(link.out, "0=./link.sh source=./link.sh dir=. lib=top\n") << link.err;
}

TEST_P(T1SandboxProgramPath, EnvPythonScriptSeesItsFileAndBinariesTheirArgv0) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  auto py = Run({"./py.py"});
  EXPECT_EQ(py.out, "file " + ws_.path() + "/./py.py argv0 ./py.py dir " + ws_.path() + "\n")
      << py.err;
  EXPECT_EQ(py.out.find("/dev/fd"), std::string::npos);
  auto argv0 = Run({"sh", "-c", "echo $0; cat /proc/self/comm"});
  EXPECT_EQ(argv0.out, "sh\ncat\n") << argv0.err;
}

// Holds an exclusive lock on the workspace's .git: a sandbox start takes a shared one there
// (protected_placeholders.h) after it has looked CMD up, so it waits right between the lookup
// and the exec until the lock is dropped.
class GitLock {
 public:
  explicit GitLock(const std::string& git_dir)
      : fd_(open(git_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    if (fd_ >= 0 && flock(fd_, LOCK_EX) != 0) {
      close(fd_);
      fd_ = -1;
    }
    struct stat st {};
    if (fd_ >= 0 && fstat(fd_, &st) == 0) ino_ = std::to_string(st.st_ino);
  }
  ~GitLock() { Release(); }
  bool ok() const { return fd_ >= 0; }
  // Whether someone waits for the lock (a "->" line of /proc/locks on this inode).
  bool Contended() const {
    std::ifstream in("/proc/locks");
    std::string line;
    while (std::getline(in, line)) {
      if (line.find("->") != std::string::npos &&
          line.find(":" + ino_ + " ") != std::string::npos) {
        return true;
      }
    }
    return false;
  }
  void Release() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
  std::string ino_;
};

TEST_P(T1SandboxProgramPath, AProgramReplacedBetweenLookupAndExecIsRefused) {
  ASSERT_EQ(mkdir((ws_ / ".git").c_str(), 0755), 0);
  WriteFile(ws_ / "build.sh", "#!/bin/sh\necho ORIGINAL\n", 0755);
  WriteFile(ws_ / "planted.sh", "#!/bin/sh\necho SWAPPED\n", 0755);
  caller_.Give(ws_.path());
  TempDir out_dir("anvil-prog-out");
  chmod(out_dir.path().c_str(), 0777);
  auto start = [&](const std::string& tag) {
    const std::string script = "'" + AnvilBin() + "' sandbox --cwd '" + ws_.path() +
                               "' -- ./build.sh >'" + out_dir / (tag + ".out") + "' 2>'" +
                               out_dir / (tag + ".err") + "'; echo $? >'" +
                               out_dir / (tag + ".rc") + "'";
    return std::make_unique<Spawned>(std::vector<std::string>{"/bin/sh", "-c", script}, Opts());
  };
  auto result = [&](const std::string& tag) {
    return std::vector<std::string>{ReadFile(out_dir / (tag + ".rc")),
                                    ReadFile(out_dir / (tag + ".out")),
                                    ReadFile(out_dir / (tag + ".err"))};
  };

  // Benign: held up at the same point and let go, the program runs.
  {
    GitLock lock(ws_ / ".git");
    ASSERT_TRUE(lock.ok());
    auto run = start("benign");
    ASSERT_TRUE(WaitUntil([&] { return lock.Contended(); })) << "the sandbox never waited";
    lock.Release();
    ASSERT_TRUE(run->Wait(std::chrono::seconds(60)));
    auto r = result("benign");
    EXPECT_EQ(r[0], "0\n") << r[2];
    EXPECT_EQ(r[1], "ORIGINAL\n") << r[2];
  }
  // Attack: while it waits, the looked-up file is replaced by another one at the same path.
  {
    GitLock lock(ws_ / ".git");
    ASSERT_TRUE(lock.ok());
    auto run = start("attack");
    ASSERT_TRUE(WaitUntil([&] { return lock.Contended(); })) << "the sandbox never waited";
    ASSERT_EQ(rename((ws_ / "planted.sh").c_str(), (ws_ / "build.sh").c_str()), 0);
    lock.Release();
    ASSERT_TRUE(run->Wait(std::chrono::seconds(60)));
    auto r = result("attack");
    EXPECT_EQ(r[0], "126\n") << r[1] << r[2];
    EXPECT_EQ(r[1].find("SWAPPED"), std::string::npos) << "the planted program ran";
    EXPECT_EQ(r[1].find("ORIGINAL"), std::string::npos);
    EXPECT_NE(r[2].find("replaced after it was looked up"), std::string::npos) << r[2];
  }
}

TEST_P(T1SandboxProgramPath, AProgramThePathNoLongerShowsRunsAsTheFileThatWasLookedUp) {
  // A script reached through a symlink whose target the view does not show (outside every
  // readable root): the path names nothing inside, so the looked-up file is what Landlock
  // judges — outside the policy's reads, it does not run (126), as before.
  TempDir outside("anvil-prog-outside", "/var/tmp");
  WriteFile(outside / "tool.sh", "#!/bin/sh\necho OUTSIDE-RAN\n", 0755);
  ASSERT_EQ(symlink((outside / "tool.sh").c_str(), (ws_ / "outside-link.sh").c_str()), 0);
  caller_.Give(ws_.path());
  auto r = Run({"./outside-link.sh"});
  EXPECT_EQ(r.status, 126) << r.out << r.err;
  EXPECT_EQ(r.out.find("OUTSIDE-RAN"), std::string::npos);
  // With the whole filesystem readable the same link names the same file: it runs by its path.
  RunOptions options;
  options.env = {"PATH=/usr/bin:/bin", "HOME=/tmp"};
  auto full = Sandbox(ws_.path(), {"--read-access", "full"}, {"./outside-link.sh"}, Opts(options));
  EXPECT_EQ(full.out, "OUTSIDE-RAN\n") << full.err;
}

INSTANTIATE_TEST_SUITE_P(Callers, T1SandboxProgramPath, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t1_sandbox_program_path_test
}  // namespace anvil::testing
