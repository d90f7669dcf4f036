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
namespace t1_sandbox_root_files_test {
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

// Root in a workspace another user owns (`sudo anvil sandbox` in ~user/project): root's sandbox
// writes only root's files there (its idmapped workspace maps no other owner), so every write
// fails "Permission denied", whatever the mode. Said before the command starts and again after it
// fails, naming the owner and the fix. Beside it: root's own workspace says nothing.
TEST_P(T1SandboxRootFiles, RootInAnotherUsersWorkspaceIsToldWhyWritesFail) {
  if (Unprivileged()) GTEST_SKIP() << "SKIPPED: only root's sandbox runs as another id";
  auto user = UnprivilegedUser();
  if (!user) GTEST_SKIP() << "SKIPPED: no unprivileged test user to own the workspace";
  ChownTree(ws_.path(), *user);
  for (mode_t mode : {0755, 0777}) {
    ASSERT_EQ(::chmod(ws_.path().c_str(), mode), 0);
    auto r = SandboxSh(ws_.path(), "echo x > made", {}, Opts());
    EXPECT_NE(r.status, 0);
    EXPECT_FALSE(Exists(ws_ / "made"));
    const std::string warning = "the workspace " + ws_.path() + " belongs to " + user->name;
    const size_t first = r.err.find(warning);
    ASSERT_NE(first, std::string::npos) << r.err;
    EXPECT_NE(r.err.find(warning, first + 1), std::string::npos) << "not said again: " << r.err;
    EXPECT_NE(r.err.find("fix: run it as its owner, `sudo -u " + user->name + " anvil sandbox"),
              std::string::npos)
        << r.err;
    // --quiet: not said.
    r = SandboxSh(ws_.path(), "echo x > made", {"--quiet"}, Opts());
    EXPECT_EQ(r.err.find("belongs to"), std::string::npos) << r.err;
  }
  // Root's own: nothing said, and the write works.
  ASSERT_EQ(
      Shell("chown -R 0:0 " + ShellQuote(ws_.path()) + " && chmod 755 " + ShellQuote(ws_.path())),
      0);
  auto r = SandboxSh(ws_.path(), "echo x > made", {}, Opts());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find("belongs to"), std::string::npos) << r.err;
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

TEST_P(T1SandboxRootFiles, AWorkspaceOfTheWholeHostDoesNotStartForRootAndSaysWhy) {
  if (Unprivileged()) GTEST_SKIP() << "SKIPPED: only root's sandbox idmaps its workspace";
  // Only each tree's own mount is idmapped now, so / is no longer refused for /proc beneath it:
  // it is refused for what it is, before anything is built.
  RunOptions at_root;
  at_root.cwd = "/";
  auto r = ::anvil::testing::Run(
      {AnvilBin(), "sandbox", "--policy", "read-only", "--", "/bin/sh", "-c", "echo ran"}, at_root);
  EXPECT_EQ(r.status, 125) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("/ cannot be one"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fix:"), std::string::npos) << r.err;
}

// Runs `setup` (as root) and then `anvil sandbox FLAGS -- sh -c SCRIPT` in `ws` as the test's
// caller, both inside a private mount namespace of this test only, so that the mounts `setup`
// makes beneath the workspace vanish with it.
RunResult SandboxAfterMounts(const CallerIdentity& caller, const std::string& ws,
                             const std::string& setup, const std::vector<std::string>& flags,
                             const std::string& script) {
  std::string run = "cd " + ShellQuote(ws) + " && ";
  if (caller.caller == Caller::kUnprivileged) {
    run += "/usr/bin/setpriv --reuid=" + std::to_string(caller.uid()) +
           " --regid=" + std::to_string(caller.gid()) + " --clear-groups ";
  }
  run += ShellQuote(AnvilBin()) + " sandbox";
  for (const auto& f : flags) run += " " + ShellQuote(f);
  run += " -- /bin/sh -c " + ShellQuote(script);
  return ::anvil::testing::Run({"/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh",
                                "-c", "set -e; " + setup + "; " + run});
}

TEST_P(T1SandboxRootFiles, FileSystemsMountedBeneathTheWorkspaceKeepTheHostsOwners) {
  // Root's workspace is attached through an idmapped mount so that root's files there are the
  // command's. A file system mounted beneath the workspace — a bind of a root-only directory of
  // the host, a tmpfs holding root's 0600 file — must not become the command's as well: it
  // keeps the host's owners, and root's sandbox is a stranger to it, like any user's sandbox.
  if (!Exists("/usr/bin/unshare") || !Exists("/usr/bin/setpriv")) {
    GTEST_SKIP() << "SKIPPED: unshare(1) or setpriv(1) is missing";
  }
  TempDir secret("anvil-rt-secret", "/var/tmp");
  WriteFile(secret / "secret", "secret\n", 0600);
  ASSERT_EQ(::chmod(secret.path().c_str(), 0700), 0);
  for (const char* dir : {"mnt", "tmpfs", "own"}) ASSERT_EQ(::mkdir((ws_ / dir).c_str(), 0755), 0);
  caller_.Give(ws_.path());
  const std::string owner =
      std::to_string(caller_.uid()) + "," + "gid=" + std::to_string(caller_.gid());
  const std::string setup =
      "mount --bind " + ShellQuote(secret.path()) + " " + ShellQuote(ws_ / "mnt") +
      "; mount -t tmpfs -o mode=0755 tmpfs " + ShellQuote(ws_ / "tmpfs") + "; echo secret > " +
      ShellQuote(ws_ / "tmpfs/root-0600") + "; chmod 600 " + ShellQuote(ws_ / "tmpfs/root-0600") +
      "; echo public > " + ShellQuote(ws_ / "tmpfs/public-0644") + "; chmod 644 " +
      ShellQuote(ws_ / "tmpfs/public-0644") +
      // The caller's own file system, named as a writable root of its own.
      "; mount -t tmpfs -o mode=0755,uid=" + owner + " tmpfs " + ShellQuote(ws_ / "own");
  const std::string attack =
      "cat mnt/secret 2>/dev/null && echo READ-BIND; chmod 644 mnt/secret 2>/dev/null && "
      "echo CHMOD-BIND; ls mnt >/dev/null 2>&1 && echo LIST-BIND; "
      "cat tmpfs/root-0600 2>/dev/null && echo READ-TMPFS; "
      "chmod 666 tmpfs/root-0600 2>/dev/null && echo CHMOD-TMPFS; "
      "touch tmpfs/made 2>/dev/null && echo WROTE-TMPFS; "
      // Benign: the world-readable file beneath, the workspace itself, the named tmpfs.
      "cat tmpfs/public-0644 >/dev/null && echo READ-PUBLIC; "
      "touch ws-made && echo WROTE-WS; touch own/made && echo WROTE-OWN; echo done";
  for (const auto& flags : std::vector<std::vector<std::string>>{
           {"--writable-root", ws_ / "own"},
           {"--writable-root", ws_ / "own", "--read-access", "full"},
           {"--policy", "read-only"}}) {
    const std::string where = flags[0] + " " + flags.back();
    auto result = SandboxAfterMounts(caller_, ws_.path(), setup, flags, attack);
    ASSERT_EQ(result.status, 0) << where << ": " << result.out << result.err;
    for (const char* leak : {"secret", "READ-BIND", "CHMOD-BIND", "LIST-BIND", "READ-TMPFS",
                             "CHMOD-TMPFS", "WROTE-TMPFS"}) {
      EXPECT_EQ(result.out.find(leak), std::string::npos) << where << ": " << leak << "\n"
                                                          << result.out;
    }
    EXPECT_NE(result.out.find("READ-PUBLIC"), std::string::npos) << where << result.out;
    const bool writable = flags[0] != "--policy";
    EXPECT_EQ(result.out.find("WROTE-WS") != std::string::npos, writable) << where << result.out;
    EXPECT_EQ(result.out.find("WROTE-OWN") != std::string::npos, writable) << where << result.out;
    EXPECT_NE(result.out.find("done"), std::string::npos) << where << result.out;
    struct stat st {};
    ASSERT_EQ(::stat((secret / "secret").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u) << where << ": the host's file changed mode";
    ::unlink((ws_ / "ws-made").c_str());
  }
}

TEST_P(T1SandboxRootFiles, AReadOnlyWorkspaceInsideARuntimeRootShowsOnlyWhatOthersMayRead) {
  // cd /etc/ssl && anvil sandbox --policy read-only: the workspace is a system tree, shown as
  // its runtime root shows it, so root-only entries (private/) stay root's. Beside them the
  // world-readable files are read as before.
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  RootFilesUnder etc("/etc");
  const std::string ws = etc / "";
  for (const auto& flags : std::vector<std::vector<std::string>>{
           {"--policy", "read-only"}, {"--policy", "read-only", "--read-access", "full"}}) {
    auto result = SandboxPython(
        ws.substr(0, ws.size() - 1), kReadProbe, flags, Opts(),
        {"key-0600", "key-0640", "private-0700", "private-0700/cert-0644", "public-0644", "."});
    ASSERT_EQ(result.status, 0) << result.err;
    auto f = Fields(result.out);
    const std::string where = flags.back();
    EXPECT_EQ(f["0"], "EACCES") << where;
    EXPECT_EQ(f["1"], "EACCES") << where;
    EXPECT_EQ(f["2"], "EACCES") << where;
    EXPECT_EQ(f["3"], "EACCES") << where;
    EXPECT_EQ(f["4"], "OK") << where;
    EXPECT_EQ(f["5"], "OK") << where;
  }
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
}  // namespace t1_sandbox_root_files_test
}  // namespace anvil::testing
