// T1 for the command sandbox, root's files: a sandbox started by root cannot read what only root
// may read in the runtime roots (0600/0640 keys under /etc, a 0700 directory) nor anywhere else
// with full read access, while the world-readable files beside them stay readable and root's own
// workspace behaves as before: readable and writable, new files owned by root on disk. Root's
// command runs as an unprivileged host id (src/linux/root_remap.h); the unprivileged caller is
// tried too and must see the same.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace {

// "NAME RESULT" lines -> map.
std::map<std::string, std::string> Fields(const std::string& text) {
  std::map<std::string, std::string> out;
  for (const auto& line : Lines(text)) {
    auto sp = line.find(' ');
    if (sp != std::string::npos) out[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return out;
}

// Reads each path named on argv, printing "INDEX OK" or "INDEX <errno name>".
constexpr char kReadProbe[] = R"py(
import errno, os, sys
for i, path in enumerate(sys.argv[1:]):
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            open(path, "rb").read(1)
        print(i, "OK")
    except OSError as e:
        print(i, errno.errorcode.get(e.errno, e.errno))
)py";

// Root-owned files made under a runtime root for one test, removed with it.
class RootFilesUnder {
 public:
  explicit RootFilesUnder(const std::string& base) : dir_(base + "/" + UniqueToken("anvil-root")) {
    ::mkdir(dir_.c_str(), 0755);
    ::chmod(dir_.c_str(), 0755);
    WriteFile(dir_ + "/key-0600", "secret\n", 0600);
    WriteFile(dir_ + "/key-0640", "secret\n", 0640);  // group root: the caller's own group
    WriteFile(dir_ + "/key-0660", "secret\n", 0660);
    WriteFile(dir_ + "/public-0644", "public\n", 0644);
    ::mkdir((dir_ + "/private-0700").c_str(), 0700);
    ::chmod((dir_ + "/private-0700").c_str(), 0700);
    WriteFile(dir_ + "/private-0700/cert-0644", "secret\n", 0644);
    ::mkdir((dir_ + "/private-0710").c_str(), 0710);
    ::chmod((dir_ + "/private-0710").c_str(), 0710);
    WriteFile(dir_ + "/private-0710/cert-0644", "secret\n", 0644);
    Shell("chown -R 0:0 " + ShellQuote(dir_));
  }
  ~RootFilesUnder() { Shell("rm -rf " + ShellQuote(dir_)); }
  RootFilesUnder(const RootFilesUnder&) = delete;
  RootFilesUnder& operator=(const RootFilesUnder&) = delete;
  std::string operator/(const std::string& rel) const { return dir_ + "/" + rel; }

 private:
  std::string dir_;
};

class T1SandboxRootFiles : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    caller_.Give(ws_.path());
  }
  // What reading each of `paths` gives inside the sandbox run with `flags`.
  std::vector<std::string> Reads(const std::vector<std::string>& paths,
                                 const std::vector<std::string>& flags) {
    auto result = SandboxPython(ws_.path(), kReadProbe, flags, Opts(), paths);
    EXPECT_EQ(result.status, 0) << result.err;
    auto f = Fields(result.out);
    std::vector<std::string> out;
    for (size_t i = 0; i < paths.size(); ++i) out.push_back(f[std::to_string(i)]);
    return out;
  }
  TempDir ws_{"anvil-ws-rootfiles"};
};

TEST_P(T1SandboxRootFiles, RootOnlyFilesInARuntimeRootAreUnreadableBesideReadableOnes) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  RootFilesUnder etc("/etc");
  const std::vector<std::string> secrets = {etc / "key-0600",
                                            etc / "key-0640",
                                            etc / "key-0660",
                                            etc / "private-0700",
                                            etc / "private-0700/cert-0644",
                                            etc / "private-0710/cert-0644"};
  const std::vector<std::string> benign = {etc / "public-0644", etc / "", "/etc/hostname",
                                           "/usr/bin/env"};
  // Control: the caller itself, unconfined, reads root's files when it is root.
  if (!Unprivileged()) {
    auto control = Reads(secrets, {"--policy", "danger-full-access"});
    for (size_t i = 0; i < secrets.size(); ++i) {
      EXPECT_EQ(control[i], "OK") << "control: " << secrets[i];
    }
  }
  for (const auto& flags : std::vector<std::vector<std::string>>{
           {}, {"--policy", "read-only"}, {"--read-access", "full"}, {"--network", "full"}}) {
    const std::string where = flags.empty() ? "workspace-write" : flags[0] + " " + flags[1];
    auto got = Reads(secrets, flags);
    for (size_t i = 0; i < secrets.size(); ++i) {
      EXPECT_EQ(got[i], "EACCES") << where << ": " << secrets[i] << " was readable";
    }
    got = Reads(benign, flags);
    for (size_t i = 0; i < benign.size(); ++i) {
      EXPECT_EQ(got[i], "OK") << where << ": " << benign[i];
    }
  }
  // The host's own root-only directories too (where this host has them).
  for (const char* dir : {"/etc/ssl/private", "/etc/sudoers.d"}) {
    struct stat st {};
    if (::stat(dir, &st) != 0 || (st.st_mode & S_IROTH) != 0) continue;
    EXPECT_EQ(Reads({dir}, {})[0], "EACCES") << dir;
  }
}

TEST_P(T1SandboxRootFiles, RootOnlyFilesOutsideTheRuntimeRootsAreUnreadableWithFullRead) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  RootFilesUnder var("/var/tmp");
  auto got = Reads(
      {var / "key-0600", var / "key-0640", var / "private-0700/cert-0644", var / "public-0644"},
      {"--read-access", "full"});
  EXPECT_EQ(got, (std::vector<std::string>{"EACCES", "EACCES", "EACCES", "OK"}));
}

TEST_P(T1SandboxRootFiles, TheCallersOwnWorkspaceStaysItsOwn) {
  // A 0600 file of the caller in the workspace: readable and writable; what the command makes
  // belongs to the caller on disk; the command is uid 0 inside for root.
  WriteFile(ws_ / "own-0600", "mine\n", 0600);
  ASSERT_EQ(::mkdir((ws_ / "own-dir-0700").c_str(), 0700), 0);
  caller_.Give(ws_.path());
  for (const auto& flags : std::vector<std::vector<std::string>>{{}, {"--read-access", "full"}}) {
    auto result = SandboxSh(ws_.path(),
                            "cat own-0600 && echo more >> own-0600 && touch own-dir-0700/new && "
                            "echo made > made && chmod +x made && echo uid $(id -u) && "
                            "echo owner $(stat -c %u own-0600)",
                            flags, Opts());
    ASSERT_EQ(result.status, 0) << result.err;
    EXPECT_NE(result.out.find("mine\n"), std::string::npos);
    auto f = Fields(result.out);
    const std::string inside = Unprivileged() ? std::to_string(caller_.uid()) : "0";
    EXPECT_EQ(f["uid"], inside);
    EXPECT_EQ(f["owner"], inside);
    for (const char* made : {"made", "own-dir-0700/new"}) {
      struct stat st {};
      ASSERT_EQ(::stat((ws_ / made).c_str(), &st), 0) << made;
      EXPECT_EQ(st.st_uid, caller_.uid()) << made << " is not the caller's on disk";
      EXPECT_EQ(st.st_gid, caller_.gid()) << made;
    }
    ASSERT_EQ(
        Shell("rm -f " + ShellQuote(ws_ / "made") + " " + ShellQuote(ws_ / "own-dir-0700/new")), 0);
  }
  // read-only: the caller's 0600 file is readable, nothing writable.
  auto ro = SandboxSh(ws_.path(), "cat own-0600; echo x > own-0600 || echo refused",
                      {"--policy", "read-only"}, Opts());
  EXPECT_EQ(ro.status, 0) << ro.err;
  EXPECT_EQ(ro.out.rfind("mine\nmore\n", 0), 0u) << ro.out << ro.err;
  EXPECT_NE(ro.out.find("refused"), std::string::npos) << ro.out << ro.err;
}

TEST_P(T1SandboxRootFiles, WorkspaceBelowADirectoryOnlyRootCanSearch) {
  // /root is 0700: root's sandbox, a stranger to the host's directories, still reaches a
  // workspace beneath such a directory, with full read access too, and sees nothing else in it.
  if (Unprivileged()) GTEST_SKIP() << "SKIPPED: root's view only (a user cannot use such a dir)";
  TempDir locked("anvil-locked", "/var/tmp");
  ASSERT_EQ(::chmod(locked.path().c_str(), 0700), 0);
  WriteFile(locked / "beside-0644", "secret\n", 0644);
  const std::string ws = locked / "ws";
  ASSERT_EQ(::mkdir(ws.c_str(), 0755), 0);
  for (const auto& flags : std::vector<std::vector<std::string>>{
           {}, {"--read-access", "full"}, {"--policy", "read-only", "--read-access", "full"}}) {
    auto result =
        SandboxSh(ws, "pwd; ls; cat ../beside-0644 2>/dev/null || echo hidden; touch x 2>/dev/null",
                  flags, Opts());
    EXPECT_EQ(result.out.find("secret"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find(ws + "\n"), std::string::npos) << result.out << result.err;
    EXPECT_NE(result.out.find("hidden"), std::string::npos) << result.out;
    const bool writable = flags.size() < 4;
    EXPECT_EQ(Exists(ws + "/x"), writable) << result.err;
    ::unlink((ws + "/x").c_str());
  }
}

TEST_P(T1SandboxRootFiles, AWorkspaceThatCannotBeIdmappedFailsClosedForRoot) {
  if (Unprivileged()) GTEST_SKIP() << "SKIPPED: only root's sandbox needs an idmapped workspace";
  if (!Exists("/usr/bin/unshare")) GTEST_SKIP() << "SKIPPED: unshare(1) is missing";
  // ramfs cannot be idmapped: mounted in a private mount namespace of this test only.
  TempDir mnt("anvil-ramfs");
  const std::string script = "mount -t ramfs ramfs " + ShellQuote(mnt.path()) + " && cd " +
                             ShellQuote(mnt.path()) + " && " + ShellQuote(AnvilBin()) +
                             " sandbox -- sh -c 'echo ran > ran'; echo status=$?; ls " +
                             ShellQuote(mnt.path());
  auto result = ::anvil::testing::Run(
      {"/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c", script});
  EXPECT_NE(result.out.find("status=125"), std::string::npos) << result.out << result.err;
  EXPECT_EQ(result.out.find("ran"), std::string::npos) << "the command ran: " << result.out;
  EXPECT_NE(result.err.find("ramfs"), std::string::npos)
      << "must name the file system: " << result.err;
  EXPECT_NE(result.err.find("fix:"), std::string::npos) << result.err;

  // Benign: the same on a tmpfs, which can be idmapped, runs.
  const std::string benign = "mount -t tmpfs tmpfs " + ShellQuote(mnt.path()) + " && cd " +
                             ShellQuote(mnt.path()) + " && " + ShellQuote(AnvilBin()) +
                             " sandbox -- sh -c 'echo ran > ran' && cat ran";
  auto ok = ::anvil::testing::Run(
      {"/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c", benign});
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(ok.out, "ran\n");
}

TEST_P(T1SandboxRootFiles, RootOfAContainersUserNamespaceFailsClosedWithTheWayOut) {
  // Root of a user namespace that does not map the sandbox's host id (a rootless container's
  // root) cannot run root's sandbox as that id: it stops and says what to do instead.
  if (Unprivileged()) GTEST_SKIP() << "SKIPPED: only a root caller is remapped";
  if (!Exists("/usr/bin/unshare")) GTEST_SKIP() << "SKIPPED: unshare(1) is missing";
  RunOptions options;
  options.cwd = ws_.path();
  auto attack = ::anvil::testing::Run({"/usr/bin/unshare", "--user", "--map-root-user", AnvilBin(),
                                       "sandbox", "--", "/bin/sh", "-c", "echo ran > ran"},
                                      options);
  EXPECT_EQ(attack.status, 125) << attack.err;
  EXPECT_FALSE(Exists(ws_ / "ran"));
  EXPECT_NE(attack.err.find("container"), std::string::npos) << attack.err;
  EXPECT_NE(attack.err.find("fix:"), std::string::npos) << attack.err;
  // The way out it names: external-sandbox, when the container is the sandbox.
  auto benign = ::anvil::testing::Run(
      {"/usr/bin/unshare", "--user", "--map-root-user", AnvilBin(), "sandbox", "--policy",
       "external-sandbox", "--", "/bin/sh", "-c", "echo ran > ran"},
      options);
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_TRUE(Exists(ws_ / "ran"));
}

INSTANTIATE_TEST_SUITE_P(Callers, T1SandboxRootFiles, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace anvil::testing
