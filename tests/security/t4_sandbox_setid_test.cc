// T4 for the command sandbox, set-id bits: no command in any policy but danger-full-access can
// leave a set-user-ID or set-group-ID file behind on a file system it writes (a setuid-root
// binary planted in the workspace by a sandbox root ran is root for every user who can reach
// it; a setuid binary of an unprivileged caller is that caller for every other user). Every
// system call that takes a mode refuses S_ISUID/S_ISGID (EPERM), openat2 is ENOSYS, file
// capabilities need a capability the command does not have, and set-id files of the runtime
// roots cannot be moved or linked into a writable root (EXDEV). Each attack sits beside the
// ordinary mode change that must keep working (chmod +x, 644, 1777, install -m 755).
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace t4_sandbox_setid_test {
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

// Every file or directory beneath `dir` with S_ISUID or S_ISGID, as "path mode".
std::vector<std::string> SetIdFiles(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(
           dir, std::filesystem::directory_options::skip_permission_denied, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    if (st.st_mode & (S_ISUID | S_ISGID)) {
      char mode[16];
      std::snprintf(mode, sizeof(mode), "%o", st.st_mode & 07777);
      out.push_back(it->path().string() + " " + mode);
    }
  }
  return out;
}

// Tries every way to a set-id file through a system call, in the current directory, printing
// "NAME RESULT" (OK or the errno name); the benign neighbours print under "ok-*".
constexpr char kSetIdProbe[] = R"py(
import ctypes, errno, os, platform, shutil, stat, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {"x86_64": dict(open=2, creat=85, chmod=90, mkdir=83, mknod=133, fchmodat=268, openat=257,
                     mkdirat=258, mknodat=259, fchmodat2=452, openat2=437),
      "aarch64": dict(fchmodat=53, openat=56, mkdirat=34, mknodat=33, fchmodat2=452,
                      openat2=437)}[platform.machine()]
O_TMPFILE = 0o20200000
AT_FDCWD = -100
AT_SYMLINK_FOLLOW = 0x400

def link_tmpfile(fd, name):
    # An O_TMPFILE inode gets its name through its /proc/self/fd link (link(2) would link the
    # magic link itself).
    if libc.linkat(AT_FDCWD, b"/proc/self/fd/%d" % fd, AT_FDCWD, name.encode(),
                   AT_SYMLINK_FOLLOW) != 0:
        raise OSError(ctypes.get_errno(), "linkat")

def attempt(name, call):
    try:
        r = call()
        if r == "absent":  # no such system call on this architecture
            return
        if isinstance(r, int) and r < 0:
            print(name, errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno()))
        else:
            print(name, "OK")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))

def raw(name, *args):
    if name not in NR:
        return "absent"
    return libc.syscall(NR[name], *args)

shutil.copy("/bin/true", "plain")
os.chmod("plain", 0o755)
dfd = os.open(".", os.O_DIRECTORY)
for mode, tag in [(0o4755, "suid"), (0o2755, "sgid"), (0o6755, "both"), (0o4000, "bare")]:
    attempt("chmod-" + tag, lambda: os.chmod("plain", mode))
    attempt("rawchmod-" + tag, lambda: raw("chmod", b"plain", mode))
    fd = os.open("plain", os.O_RDONLY)
    attempt("fchmod-" + tag, lambda: os.fchmod(fd, mode))
    os.close(fd)
    attempt("fchmodat-" + tag, lambda: raw("fchmodat", dfd, b"plain", mode))
    attempt("fchmodat2-" + tag, lambda: raw("fchmodat2", dfd, b"plain", mode, 0))
    attempt("open-" + tag, lambda: os.close(os.open("o-" + tag, os.O_CREAT | os.O_WRONLY, mode)))
    attempt("rawopen-" + tag,
            lambda: raw("open", ("ro-" + tag).encode(), os.O_CREAT | os.O_WRONLY, mode))
    attempt("openat-" + tag,
            lambda: raw("openat", dfd, ("oa-" + tag).encode(), os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode))
    attempt("creat-" + tag, lambda: raw("creat", ("c-" + tag).encode(), mode))
    def tmpfile():
        fd = raw("openat", AT_FDCWD, b".", O_TMPFILE | os.O_WRONLY, mode)
        if fd < 0:
            return fd
        link_tmpfile(fd, "t-" + tag)
        os.close(fd)
    attempt("tmpfile-" + tag, tmpfile)
    attempt("mkdir-" + tag, lambda: os.mkdir("d-" + tag, mode))
    attempt("mkdirat-" + tag, lambda: raw("mkdirat", dfd, ("da-" + tag).encode(), mode))
    attempt("mknod-" + tag, lambda: os.mknod("n-" + tag, stat.S_IFREG | mode))
    attempt("rawmknod-" + tag, lambda: raw("mknod", ("rn-" + tag).encode(), stat.S_IFREG | mode, 0))
    attempt("mknodat-" + tag,
            lambda: raw("mknodat", dfd, ("na-" + tag).encode(), stat.S_IFREG | mode, 0))
# File capabilities: a v2 security.capability granting CAP_SETUID, effective.
cap = (0x02000001).to_bytes(4, "little") + (1 << 7).to_bytes(4, "little") + bytes(12)
attempt("setxattr-capability", lambda: os.setxattr("plain", "security.capability", cap))
# Hard link or rename of a setuid-root file of a runtime root (the test's own, under /etc) into
# the workspace. Not under external-sandbox, which confines no file (docs/policy.md).
if os.environ.get("ANVIL_SANDBOX") != "external-sandbox":
    attempt("link-runtime", lambda: os.link(sys.argv[1], "linked"))
    attempt("rename-runtime", lambda: os.rename(sys.argv[1], "renamed"))
# openat2 carries its mode where the filter cannot see it: ENOSYS, even for a harmless call.
how = (ctypes.c_uint64 * 3)(os.O_RDONLY, 0, 0)
attempt("openat2", lambda: raw("openat2", AT_FDCWD, b"plain", how, 24))

# Benign neighbours.
attempt("ok-fchmodat2-700", lambda: raw("fchmodat2", dfd, b"plain", 0o700, 0))
attempt("ok-chmod-x", lambda: os.chmod("plain", 0o755))
attempt("ok-chmod-644", lambda: os.chmod("plain", 0o644))
os.mkdir("shared")
attempt("ok-chmod-1777", lambda: os.chmod("shared", 0o1777))
attempt("ok-open-644", lambda: os.close(os.open("new", os.O_CREAT | os.O_WRONLY, 0o644)))
attempt("ok-open-4755-existing",  # no O_CREAT: the mode argument means nothing
        lambda: os.close(raw("openat", dfd, b"new", os.O_RDONLY, 0o4755)))
attempt("ok-mkdir-755", lambda: os.mkdir("dir", 0o755))
attempt("ok-mknod-fifo", lambda: os.mknod("fifo", stat.S_IFIFO | 0o644))
def ok_tmpfile():
    fd = raw("openat", AT_FDCWD, b".", O_TMPFILE | os.O_WRONLY, 0o600)
    if fd < 0:
        return fd
    link_tmpfile(fd, "tmp-linked")
    os.close(fd)
attempt("ok-tmpfile", ok_tmpfile)
attempt("ok-setxattr-user", lambda: os.setxattr("new", "user.anvil", b"1"))
print("mode-plain %o" % stat.S_IMODE(os.stat("plain").st_mode))
print("mode-shared %o" % stat.S_IMODE(os.stat("shared").st_mode))
)py";

// The same through the tools people use: chmod, install, cp -p, tar -p, mv and ln of a set-id
// binary of the runtime roots; then the ordinary forms of each.
constexpr char kSetIdTools[] = R"sh(
try() { name=$1; shift; if "$@" 2>/dev/null; then echo "$name OK"; else echo "$name refused"; fi; }
cp /bin/true t
try chmod-u+s chmod u+s t
try chmod-g+s chmod g+s t
try chmod-4755 chmod 4755 t
try install-4755 install -m 4755 /bin/true i
try install-2755 install -m 2755 /bin/true i2
try mkdir-2775 mkdir -m 2775 sgid-dir
try tar-p tar -xpf suid.tar
try cp-p cp -p "$1" cp-copy
try cp-a cp -a "$1" cpa-copy
try mv-runtime mv "$1" moved
try ln-runtime ln "$1" linked
try python-chmod /usr/bin/python3 -c 'import os; os.chmod("t", 0o4755)'
try ok-chmod-x chmod +x t
try ok-chmod-644 chmod 644 t
try ok-install-755 install -m 755 /bin/true ok-installed
try ok-mkdir-755 mkdir -m 755 ok-dir
try ok-chmod-1777 chmod 1777 ok-dir
try ok-cp-p cp -p ok-installed ok-copy
try ok-tar-p tar -xpf ok.tar
echo "mode-ok-installed $(stat -c %a ok-installed)"
echo "mode-ok-dir $(stat -c %a ok-dir)"
echo "mode-ok-member $(stat -c %a member-ok)"
)sh";

class T4SandboxSetid : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    // A setuid-root file of a runtime root, the target of the link, rename and copy attempts.
    ASSERT_EQ(
        Shell("cp /bin/true " + ShellQuote(victim_) + " && chmod 4755 " + ShellQuote(victim_)), 0);
    caller_.Give(ws_.path());
  }
  void TearDown() override { ::unlink(victim_.c_str()); }
  // Archives made outside, put in the workspace: one whose member is setuid, one ordinary.
  void PutArchives() {
    ASSERT_EQ(Shell("cd " + ShellQuote(archives_.path()) +
                    " && cp /bin/true member-suid && chmod 4755 member-suid && tar -cf suid.tar "
                    "member-suid && cp /bin/true member-ok && chmod 755 member-ok && tar -cf "
                    "ok.tar member-ok && cp suid.tar ok.tar " +
                    ShellQuote(ws_.path())),
              0);
    caller_.Give(ws_.path());
  }
  // The probe, run in `dir` (inside the sandbox).
  RunResult Probe(const std::vector<std::string>& flags, const std::string& dir) {
    return SandboxPython(ws_.path(), "import os; os.chdir('" + dir + "')\n" + kSetIdProbe, flags,
                         Opts(), {victim_});
  }
  void EmptyWorkspace() { ASSERT_EQ(Shell("rm -rf " + ShellQuote(ws_.path()) + "/*"), 0); }
  TempDir ws_{"anvil-ws-setid"};
  TempDir archives_{"anvil-setid-tar"};
  const std::string victim_ = "/etc/" + UniqueToken("anvil-setid-victim");
};

void ExpectEverySetIdAttemptRefused(const std::map<std::string, std::string>& f,
                                    const std::string& where) {
  size_t attacks = 0;
  for (const auto& [name, result] : f) {
    if (name.rfind("ok-", 0) == 0 || name.rfind("mode-", 0) == 0) continue;
    ++attacks;
    if (name == "openat2") {
      EXPECT_EQ(result, "ENOSYS") << where << ": openat2 must look absent";
    } else if (name == "link-runtime" || name == "rename-runtime") {
      EXPECT_EQ(result, "EXDEV") << where << ": " << name;
    } else {
      EXPECT_EQ(result, "EPERM") << where << ": " << name << " was not refused";
    }
  }
  EXPECT_GT(attacks, 40u) << where << ": the probe did not run";
  for (const char* benign :
       {"ok-chmod-x", "ok-chmod-644", "ok-chmod-1777", "ok-open-644", "ok-open-4755-existing",
        "ok-mkdir-755", "ok-mknod-fifo", "ok-tmpfile", "ok-setxattr-user"}) {
    EXPECT_EQ(f.count(benign) ? f.at(benign) : "missing", "OK") << where << ": " << benign;
  }
  // fchmodat2 is Linux 6.6+: an older kernel answers ENOSYS, never EPERM.
  const std::string fchmodat2 = f.count("ok-fchmodat2-700") ? f.at("ok-fchmodat2-700") : "";
  EXPECT_TRUE(fchmodat2 == "OK" || fchmodat2 == "ENOSYS") << where << ": " << fchmodat2;
  EXPECT_EQ(f.count("mode-plain") ? f.at("mode-plain") : "", "644") << where;
  EXPECT_EQ(f.count("mode-shared") ? f.at("mode-shared") : "", "1777") << where;
}

TEST_P(T4SandboxSetid, NoSystemCallMakesASetIdFileInTheWorkspace) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  for (const auto& flags : std::vector<std::vector<std::string>>{
           {}, {"--read-access", "full"}, {"--network", "full"}}) {
    const std::string where = flags.empty() ? "workspace-write" : flags[0] + " " + flags[1];
    auto result = Probe(flags, ws_.path());
    ASSERT_EQ(result.status, 0) << where << ": " << result.err;
    ExpectEverySetIdAttemptRefused(Fields(result.out), where);
    EXPECT_EQ(SetIdFiles(ws_.path()), std::vector<std::string>{})
        << where << ": a set-id file was left in the workspace";
    EmptyWorkspace();
  }
}

TEST_P(T4SandboxSetid, AnotherWritableRootAndTheReadOnlyPolicysTmpRefuseToo) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  TempDir extra("anvil-setid-extra");
  caller_.Give(extra.path());
  auto result = Probe({"--writable-root", extra.path()}, extra.path());
  ASSERT_EQ(result.status, 0) << result.err;
  ExpectEverySetIdAttemptRefused(Fields(result.out), "--writable-root");
  EXPECT_EQ(SetIdFiles(extra.path()), std::vector<std::string>{});

  // read-only writes nowhere but its private /tmp; the rules hold there as well.
  result = Probe({"--policy", "read-only"}, "/tmp");
  ASSERT_EQ(result.status, 0) << result.err;
  ExpectEverySetIdAttemptRefused(Fields(result.out), "read-only /tmp");
}

TEST_P(T4SandboxSetid, ExternalSandboxRefusesSetIdBitsToo) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  for (const auto& flags : std::vector<std::vector<std::string>>{
           {"--policy", "external-sandbox"},
           {"--policy", "external-sandbox", "--network", "full"}}) {
    auto result = Probe(flags, ws_.path());
    ASSERT_EQ(result.status, 0) << result.err;
    ExpectEverySetIdAttemptRefused(Fields(result.out), "external-sandbox");
    EXPECT_EQ(SetIdFiles(ws_.path()), std::vector<std::string>{});
    EmptyWorkspace();
  }
}

TEST_P(T4SandboxSetid, ToolsCannotMakeSetIdFilesButKeepOrdinaryModes) {
  PutArchives();
  auto result = Sandbox(ws_.path(), {}, {"/bin/sh", "-c", kSetIdTools, "sh", victim_}, Opts());
  ASSERT_EQ(result.status, 0) << result.err;
  auto f = Fields(result.out);
  for (const char* attack : {"chmod-u+s", "chmod-g+s", "chmod-4755", "install-4755", "install-2755",
                             "mkdir-2775", "tar-p", "python-chmod", "mv-runtime", "ln-runtime"}) {
    EXPECT_EQ(f[attack], "refused") << attack << "\n" << result.out;
  }
  // cp -p/-a of a setuid-root file: root's cp is refused the mode; a user's cp drops the bit
  // itself when it cannot keep the owner. Either way no set-id copy (checked below).
  EXPECT_TRUE(f.count("cp-p") && f.count("cp-a")) << result.out;
  struct stat st {};
  EXPECT_EQ(::lstat(victim_.c_str(), &st), 0) << "the runtime root's file was moved";
  for (const char* benign : {"ok-chmod-x", "ok-chmod-644", "ok-install-755", "ok-mkdir-755",
                             "ok-chmod-1777", "ok-cp-p", "ok-tar-p"}) {
    EXPECT_EQ(f[benign], "OK") << benign << "\n" << result.out << result.err;
  }
  EXPECT_EQ(f["mode-ok-installed"], "755");
  EXPECT_EQ(f["mode-ok-dir"], "1777");
  EXPECT_EQ(f["mode-ok-member"], "755");
  EXPECT_EQ(SetIdFiles(ws_.path()), std::vector<std::string>{})
      << "a set-id file was left in the workspace after the sandbox exited";
}

// A program that opens with openat2 first, as systemd's tools do, and falls back to openat when
// the kernel says it has none.
constexpr char kOpenat2Fallback[] = R"c(
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char** argv) {
  struct open_how how = {.flags = O_RDONLY, .resolve = RESOLVE_BENEATH};
  int fd = (int)syscall(SYS_openat2, AT_FDCWD, argv[1], &how, sizeof(how));
  const char* via = "openat2";
  if (fd < 0 && errno == ENOSYS) {
    fd = openat(AT_FDCWD, argv[1], O_RDONLY);
    via = "openat";
  }
  if (fd < 0) { perror("open"); return 1; }
  char buf[64] = {0};
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  printf("%s %s", via, n > 0 ? buf : "");
  return 0;
}
)c";

TEST_P(T4SandboxSetid, Openat2LooksAbsentAndProgramsFallBackToOpenat) {
  const std::string program = ws_ / "openat2-fallback";
  if (!CompileC(kOpenat2Fallback, program)) GTEST_SKIP() << "SKIPPED: gcc cannot build the probe";
  WriteFile(ws_ / "data.txt", "content\n");
  caller_.Give(ws_.path());
  for (const auto& flags : std::vector<std::vector<std::string>>{
           {}, {"--policy", "read-only"}, {"--policy", "external-sandbox"}}) {
    auto result = Sandbox(ws_.path(), flags, {program, "data.txt"}, Opts());
    EXPECT_EQ(result.status, 0) << result.err;
    EXPECT_EQ(result.out, "openat content\n") << flags.size();
  }
  // Control: unconfined, the kernel's openat2 answers.
  auto control =
      Sandbox(ws_.path(), {"--policy", "danger-full-access"}, {program, "data.txt"}, Opts());
  EXPECT_EQ(control.out, "openat2 content\n") << control.err;
}

TEST_P(T4SandboxSetid, DangerFullAccessIsNotFiltered) {
  // The documented exception: no walls at all, so a set-id bit can be set there.
  const std::string file = ws_ / "danger";
  auto result = Sandbox(ws_.path(), {"--policy", "danger-full-access"},
                        {"/bin/sh", "-c", "cp /bin/true danger && chmod 4755 danger"}, Opts());
  EXPECT_EQ(result.status, 0) << result.err;
  struct stat st {};
  ASSERT_EQ(::lstat(file.c_str(), &st), 0);
  EXPECT_TRUE(st.st_mode & S_ISUID);
  ::unlink(file.c_str());
}

INSTANTIATE_TEST_SUITE_P(Callers, T4SandboxSetid, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t4_sandbox_setid_test
}  // namespace anvil::testing
