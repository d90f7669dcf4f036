// T1 for the command sandbox, reads: a sandboxed command cannot read a secret outside its
// view by any name — absolute path, `..`, a planted symlink, /proc magic links, a hard link, or a
// descriptor the caller leaked — while the workspace and the runtime roots stay readable.
//
// The secret lives in /var/tmp (not /tmp, which the sandbox replaces anyway) with mode 0644, and
// every attack is also tried by the unprivileged test user: the caller itself may read the
// secret, so the sandbox is the only wall.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace t1_sandbox_read_escape_test {
namespace {

class T1SandboxRead : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    secret_ = UniqueToken("TOPSECRET");
    WriteFile(SecretPath(), secret_ + "\n", 0644);
    ws_ = outside_ / "ws";
    ASSERT_EQ(mkdir(ws_.c_str(), 0755), 0);
    WriteFile(ws_ + "/hello.txt", "benign\n");
    caller_.Give(ws_);
  }

  std::string SecretPath() const { return outside_ / "id_ed25519"; }
  RunResult Sh(const std::string& script, const std::vector<std::string>& flags = {},
               RunOptions options = {}) {
    return SandboxSh(ws_, script, flags, Opts(std::move(options)));
  }
  // The planted secret is readable by this caller without the sandbox: the test is live.
  void ExpectReadableWithoutConfinement(const std::string& script) {
    auto control = Sh(script, {"--policy", "danger-full-access"});
    ASSERT_TRUE(Printed(control, secret_))
        << "control failed: without confinement `" << script
        << "` should read the planted secret; status " << control.status << " " << control.err;
  }

  TempDir outside_{"anvil-secret", "/var/tmp"};
  std::string ws_;
  std::string secret_;
};

TEST_P(T1SandboxRead, ReadSecretByAbsolutePathIsDenied) {
  const std::string attack_script = "cat " + ShellQuote(SecretPath());
  ExpectReadableWithoutConfinement(attack_script);

  auto benign = Sh("cat hello.txt");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(benign.out, "benign\n");

  for (const auto& flags : std::vector<std::vector<std::string>>{
           {}, {"--policy", "read-only"}, {"--read-access", "restricted", "--network", "full"}}) {
    auto attack = Sh(attack_script, flags);
    EXPECT_NE(attack.status, 0) << "flags[0]=" << (flags.empty() ? "" : flags[0]);
    EXPECT_FALSE(Printed(attack, secret_)) << attack.out;
  }
}

TEST_P(T1SandboxRead, ReadSecretThroughDotDotIsDenied) {
  ASSERT_EQ(mkdir((ws_ + "/sub").c_str(), 0755), 0);
  caller_.Give(ws_);
  auto benign = Sh("cat sub/../hello.txt && cat ./sub/./../hello.txt");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(benign.out, "benign\nbenign\n");

  auto attack =
      Sh("cat ../id_ed25519; cat sub/../../id_ed25519; cat ../../../../../../.." + SecretPath() +
         "; cd .. && cat id_ed25519; cat " + ShellQuote(ws_) + "/../id_ed25519");
  EXPECT_NE(attack.status, 0);
  EXPECT_FALSE(Printed(attack, secret_)) << attack.out;
}

TEST_P(T1SandboxRead, ReadSecretThroughSymlinkPlantedInWorkspaceIsDenied) {
  // A malicious project ships links that point out of the tree.
  ASSERT_EQ(symlink(SecretPath().c_str(), (ws_ + "/abs-link").c_str()), 0);
  ASSERT_EQ(symlink("../id_ed25519", (ws_ + "/rel-link").c_str()), 0);
  ASSERT_EQ(symlink(outside_.path().c_str(), (ws_ + "/dir-link").c_str()), 0);
  ASSERT_EQ(symlink("hello.txt", (ws_ + "/inside-link").c_str()), 0);
  ASSERT_EQ(symlink("/etc/passwd", (ws_ + "/runtime-link").c_str()), 0);
  caller_.Give(ws_);
  ExpectReadableWithoutConfinement("cat abs-link");

  auto benign = Sh("cat inside-link && grep -c '^root:' runtime-link");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(benign.out, "benign\n1\n");

  for (const char* script : {"cat abs-link", "cat rel-link", "cat dir-link/id_ed25519",
                             "cd dir-link && cat id_ed25519"}) {
    auto attack = Sh(script);
    EXPECT_NE(attack.status, 0) << script;
    EXPECT_FALSE(Printed(attack, secret_)) << script << ": " << attack.out;
  }
}

TEST_P(T1SandboxRead, ReadSecretThroughProcSelfRootIsDenied) {
  auto benign =
      Sh("cat /proc/self/root" + ShellQuote(ws_) + "/hello.txt && cat /proc/self/cwd/hello.txt");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(benign.out, "benign\nbenign\n");

  auto attack = Sh("cat /proc/self/root" + ShellQuote(SecretPath()) +
                   "; cat /proc/self/cwd/../id_ed25519; cat /proc/$$/root" +
                   ShellQuote(SecretPath()) + "; cat /proc/1/root" + ShellQuote(SecretPath()) +
                   "; cat /proc/thread-self/root" + ShellQuote(SecretPath()));
  EXPECT_NE(attack.status, 0);
  EXPECT_FALSE(Printed(attack, secret_)) << attack.out;
}

TEST_P(T1SandboxRead, ReadSecretThroughProcPidRootOfOutsideProcessIsDenied) {
  // A process outside the sandbox owned by the same caller: its /proc/<pid>/root is the host's
  // root, and the caller may follow it — outside the sandbox.
  Spawned outside_process({"/bin/sleep", "1000"}, Opts());
  ASSERT_TRUE(WaitUntil([&] {
    return ReadFile("/proc/" + std::to_string(outside_process.pid()) + "/comm") == "sleep\n";
  }));
  const std::string via_pid =
      "/proc/" + std::to_string(outside_process.pid()) + "/root" + SecretPath();
  auto control = ::anvil::testing::Run({"/bin/cat", via_pid}, Opts());
  ASSERT_TRUE(Printed(control, secret_))
      << "control: the caller can read " << via_pid << " outside the sandbox; " << control.err;

  auto benign = Sh("cat /proc/$$/root" + ShellQuote(ws_) + "/hello.txt");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(benign.out, "benign\n");

  const std::string test_pid = std::to_string(getpid());
  auto attack = Sh("cat " + ShellQuote(via_pid) + "; cat /proc/" + test_pid + "/root" +
                   ShellQuote(SecretPath()));
  EXPECT_NE(attack.status, 0);
  EXPECT_FALSE(Printed(attack, secret_)) << attack.out;
}

TEST_P(T1SandboxRead, HardLinkToFileOutsideCannotBeCreatedOrRead) {
  auto benign = Sh("ln hello.txt hello-link.txt && cat hello-link.txt");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(benign.out, "benign\n");

  auto attack = Sh("ln " + ShellQuote(SecretPath()) +
                   " secret-link; cat secret-link; ln /etc/passwd passwd-link; "
                   "ln /proc/self/root" +
                   ShellQuote(SecretPath()) + " proc-link; cat proc-link");
  EXPECT_NE(attack.status, 0);
  EXPECT_FALSE(Printed(attack, secret_)) << attack.out;
  EXPECT_FALSE(Exists(ws_ + "/secret-link"));
  EXPECT_FALSE(Exists(ws_ + "/proc-link"));
  // A link to a runtime file is harmless to read but would let a write follow it out; the
  // read-only runtime mount refuses the link itself (EXDEV).
  EXPECT_FALSE(Exists(ws_ + "/passwd-link"));
}

TEST_P(T1SandboxRead, ShadowIsMaskedWhilePasswdAndHostnameAreReadable) {
  std::string host_shadow = ReadFile("/etc/shadow");
  if (host_shadow.empty()) GTEST_SKIP() << "SKIPPED: this host has no readable /etc/shadow";
  // As root the caller could read it; the mask is the only wall.
  auto attack = Sh("cat /etc/shadow; cat /etc/gshadow");
  EXPECT_EQ(attack.out, "") << "credential files must be masked";
  EXPECT_EQ(attack.out.find("root:"), std::string::npos);

  auto benign = Sh("cat /etc/passwd");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(benign.out, ReadFile("/etc/passwd"));
  if (Exists("/etc/hostname")) {
    auto hostname = Sh("cat /etc/hostname");
    EXPECT_EQ(hostname.status, 0) << hostname.err;
    EXPECT_EQ(hostname.out, ReadFile("/etc/hostname"));
  }
}

TEST_P(T1SandboxRead, DescriptorsLeakedByTheCallerDoNotReachTheCommand) {
  // A careless caller leaves a file and a directory fd open across exec: openat(dirfd, ..)
  // would be the classic escape from any path-based wall.
  constexpr int kFileFd = 77, kDirFd = 78;
  int file = open(SecretPath().c_str(), O_RDONLY);
  int dir = open(outside_.path().c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(file, 0);
  ASSERT_GE(dir, 0);
  ASSERT_EQ(dup2(file, kFileFd), kFileFd);
  ASSERT_EQ(dup2(dir, kDirFd), kDirFd);
  close(file);
  close(dir);
  const std::string probe =
      "cat /proc/self/fd/77; cat /proc/self/fd/78/id_ed25519; "
      "test -e /proc/self/fd/77 && echo LEAKED-77; test -e /proc/self/fd/78 && echo LEAKED-78; "
      "true";
  auto control = ::anvil::testing::Run({"/bin/sh", "-c", probe}, Opts());
  RunOptions options;
  options.stdin_data = "hello-stdin\n";
  auto result = Sh("cat; " + probe, {}, options);
  close(kFileFd);
  close(kDirFd);
  ASSERT_TRUE(Printed(control, secret_) && Printed(control, "LEAKED-78"))
      << "control: without the sandbox the leaked descriptors reach the child; " << control.err;
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(result.out, "hello-stdin\n") << "stdin reaches the command; nothing else does";
  EXPECT_FALSE(Printed(result, secret_));
  EXPECT_FALSE(Printed(result, "LEAKED"));
}

TEST_P(T1SandboxRead, HostTmpAndDevShmAreNotVisibleButPrivateOnesWork) {
  const std::string host_name = UniqueToken("anvil-host-only");
  const std::string mine = UniqueToken("anvil-sandbox-only");
  WriteFile("/tmp/" + host_name, secret_ + "\n", 0644);
  bool have_shm = Exists("/dev/shm");
  if (have_shm) WriteFile("/dev/shm/" + host_name, secret_ + "\n", 0644);

  auto attack = Sh("cat /tmp/" + host_name + "; cat /dev/shm/" + host_name);
  EXPECT_NE(attack.status, 0);
  EXPECT_FALSE(Printed(attack, secret_)) << attack.out;
  auto listing = Sh("ls -a /tmp /dev/shm");
  EXPECT_EQ(listing.out.find(host_name), std::string::npos)
      << "the host's /tmp and /dev/shm must not even be listable: " << listing.out;

  auto benign =
      Sh("echo private > /tmp/" + mine + " && cat /tmp/" + mine + " && echo shm > /dev/shm/" +
         mine + " && cat /dev/shm/" + mine + " && mktemp >/dev/null && echo mktemp-ok");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(benign.out, "private\nshm\nmktemp-ok\n");
  EXPECT_FALSE(Exists("/tmp/" + mine)) << "the sandbox's /tmp is private";
  EXPECT_FALSE(Exists("/dev/shm/" + mine)) << "the sandbox's /dev/shm is private";
  std::remove(("/tmp/" + host_name).c_str());
  if (have_shm) std::remove(("/dev/shm/" + host_name).c_str());
}

INSTANTIATE_TEST_SUITE_P(Callers, T1SandboxRead, ::testing::ValuesIn(kAllCallers), CallerParamName);

}  // namespace
}  // namespace t1_sandbox_read_escape_test
}  // namespace anvil::testing
