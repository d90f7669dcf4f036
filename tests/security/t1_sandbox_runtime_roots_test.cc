// T1 for the command sandbox, the runtime roots: /opt is shown as /usr is, so the software
// installed there (Chrome for puppeteer, conda, vendor SDKs) runs, and it stays a wall like
// /usr: nothing under it can be written, created or removed, a host daemon's Unix socket under
// it cannot be connected to, and the credentials of a home inside it stay covered. What the
// policy hides (/var) stays absent. Each attack next to its benign neighbour, as root and as an
// unprivileged caller who owns the files (so only the sandbox stands in the way).
//
// /opt here is a tmpfs that only this test's mount namespace has: the host's /opt is never
// written, and other tests running meanwhile see the host's as it is.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace {

// argv: PATH PAYLOAD. Prints CONNECTED or "ERR <errno name>".
constexpr char kClient[] = R"py(
import errno, socket, sys
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(sys.argv[1])
    s.sendall(sys.argv[2].encode())
    s.close()
    print("CONNECTED")
except OSError as e:
    print("ERR", errno.errorcode.get(e.errno, e.errno))
)py";

const std::vector<std::vector<std::string>> kConfining = {
    {}, {"--policy", "read-only"}, {"--network", "full"}};

std::string FlagsName(const std::vector<std::string>& flags) {
  return flags.empty() ? "default" : flags.back();
}

class T1SandboxRuntimeRoots : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
    // A mount namespace of this test process's own (each test runs in a process of its own).
    ASSERT_EQ(unshare(CLONE_NEWNS), 0) << "unshare: " << strerror(errno);
    ASSERT_EQ(mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0) << strerror(errno);
    if (!Exists("/opt")) {
      ASSERT_EQ(mkdir("/opt", 0755), 0) << strerror(errno);
      made_opt_ = true;
    }
    ASSERT_EQ(mount("tmpfs", "/opt", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755"), 0)
        << strerror(errno);
    mounted_ = true;
    ASSERT_EQ(mkdir(kVendor, 0755), 0);
    ASSERT_EQ(mkdir((std::string(kVendor) + "/bin").c_str(), 0755), 0);
    WriteFile(std::string(kVendor) + "/data.txt", "opt-data\n", 0644);
    WriteFile(std::string(kVendor) + "/bin/tool", "#!/bin/sh\necho tool-ran\n", 0755);
    caller_.Give(kVendor);
    caller_.Give(ws_.path());
  }
  void TearDown() override {
    listener_.reset();
    if (mounted_) umount2("/opt", MNT_DETACH);
    if (made_opt_) rmdir("/opt");
  }

  static constexpr char kVendor[] = "/opt/vendor";
  TempDir ws_{"anvil-ws-opt"};  // in /tmp: nothing of /var is a path of the view
  bool mounted_ = false;
  bool made_opt_ = false;
  std::optional<HostListener> listener_;
};

TEST_P(T1SandboxRuntimeRoots, OptIsReadableAndRunsButNothingUnderItIsWritable) {
  // Control: without confinement the caller may write there (the files are the caller's).
  auto control = SandboxSh(ws_.path(), "echo x > /opt/vendor/control && rm /opt/vendor/control",
                           {"--policy", "danger-full-access"}, Opts());
  ASSERT_EQ(control.status, 0) << control.err;
  const std::string script =
      "cat /opt/vendor/data.txt; /opt/vendor/bin/tool; ls /opt/vendor | tr '\\n' ' '; echo; "
      "echo x > /opt/vendor/new 2>/dev/null && echo wrote || echo write-refused; "
      "rm /opt/vendor/data.txt 2>/dev/null && echo removed || echo rm-refused; "
      "chmod 0777 /opt/vendor/bin/tool 2>/dev/null && echo chmodded || echo chmod-refused; "
      "mkdir /opt/made 2>/dev/null && echo made || echo mkdir-refused; "
      "test -e /var && echo var-visible || echo var-absent";
  for (const auto& flags : kConfining) {
    auto r = SandboxSh(ws_.path(), script, flags, Opts());
    EXPECT_EQ(r.out,
              "opt-data\ntool-ran\nbin data.txt \nwrite-refused\nrm-refused\nchmod-refused\n"
              "mkdir-refused\nvar-absent\n")
        << FlagsName(flags) << ": " << r.err;
  }
  EXPECT_EQ(ReadFile(std::string(kVendor) + "/data.txt"), "opt-data\n");
  EXPECT_FALSE(Exists(std::string(kVendor) + "/new"));
  EXPECT_FALSE(Exists("/opt/made"));
  struct stat st {};
  ASSERT_EQ(stat((std::string(kVendor) + "/bin/tool").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

TEST_P(T1SandboxRuntimeRoots, AHostSocketUnderOptIsUnreachable) {
  const std::string path = std::string(kVendor) + "/agent.sock";
  listener_.emplace(path, /*world_connectable=*/true);
  ASSERT_TRUE(listener_->ok()) << strerror(errno);
  auto control = ::anvil::testing::Run({kPython, "-c", kClient, path, "control"}, Opts());
  ASSERT_EQ(control.out, "CONNECTED\n") << control.err;
  ASSERT_EQ(listener_->Received(2000).value_or("<nothing>"), "control");
  for (const auto& flags : kConfining) {
    // Benign: the file beside it reads as ever.
    auto benign = SandboxSh(ws_.path(), "cat /opt/vendor/data.txt", flags, Opts());
    EXPECT_EQ(benign.out, "opt-data\n") << FlagsName(flags) << ": " << benign.err;
    auto attack = SandboxPython(ws_.path(), kClient, flags, Opts(), {path, "attack"});
    EXPECT_EQ(attack.out.rfind("ERR", 0), 0u)
        << FlagsName(flags) << ": " << attack.out << attack.err;
    EXPECT_FALSE(listener_->Received(20)) << FlagsName(flags) << ": it reached the host daemon";
  }
}

TEST_P(T1SandboxRuntimeRoots, TheCredentialsOfAHomeInsideOptStayCovered) {
  const std::string home = "/opt/svc";
  const std::string secret = UniqueToken("OPTSECRET");
  ASSERT_EQ(mkdir(home.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((home + "/.ssh").c_str(), 0755), 0);
  // World-readable: only the sandbox's cover stands between any reader and them.
  WriteFile(home + "/.ssh/id_ed25519", secret + "\n", 0644);
  WriteFile(home + "/.netrc", "machine x password " + secret + "\n", 0644);
  WriteFile(home + "/notes.txt", "notes\n", 0644);
  caller_.Give(home);
  RunOptions options;
  options.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "LANG=C.UTF-8"};
  const std::string script =
      "cat ~/notes.txt; cat ~/.ssh/id_ed25519 ~/.netrc /opt/svc/.ssh/id_ed25519 2>&1; true";
  auto control = SandboxSh(ws_.path(), script, {"--policy", "danger-full-access"}, Opts(options));
  ASSERT_TRUE(Printed(control, secret)) << "control: " << control.out << control.err;
  for (const auto& flags : kConfining) {
    auto r = SandboxSh(ws_.path(), script, flags, Opts(options));
    EXPECT_EQ(r.out.rfind("notes\n", 0), 0u) << FlagsName(flags) << ": " << r.out << r.err;
    EXPECT_FALSE(Printed(r, secret)) << FlagsName(flags) << ": " << r.out;
  }
}

INSTANTIATE_TEST_SUITE_P(Callers, T1SandboxRuntimeRoots, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace anvil::testing
