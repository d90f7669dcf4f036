// T4 for the command sandbox, privilege: nothing in the sandbox gains privilege (a setuid-root
// binary, capabilities of a root caller, another uid) or reaches a process outside it (ptrace,
// signals, the sandbox's own unconfined init), host-wide kernel knobs in /proc, or the host's
// System V IPC objects.
#include <signal.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace {

// "NAME value" lines -> map.
std::map<std::string, std::string> Fields(const std::string& text) {
  std::map<std::string, std::string> out;
  for (const auto& line : Lines(text)) {
    auto sp = line.find(' ');
    if (sp != std::string::npos) out[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return out;
}

char ProcState(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  auto paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? 0 : stat[paren + 2];
}

TEST(T4SandboxSetuid, SetuidRootCopyRunByUserDoesNotGrantRoot) {
  ANVIL_CALLER_OR_END_TEST(user, Caller::kUnprivileged);
  TempDir ws("anvil-ws-suid");
  user->Give(ws.path());
  const std::string suid = ws / "suid-id";
  ASSERT_EQ(Shell("cp /usr/bin/id " + ShellQuote(suid) + " && chown 0:0 " + ShellQuote(suid) +
                  " && chmod 4755 " + ShellQuote(suid)),
            0);
  auto control = ::anvil::testing::Run({suid, "-u"}, user->Options());
  if (control.out != "0\n") {
    GTEST_SKIP() << "SKIPPED: the setuid-root copy does not elevate even outside the sandbox "
                    "(is /tmp mounted nosuid?); output: "
                 << control.out << control.err;
  }

  const std::string expected = std::to_string(user->uid()) + "\n";
  for (const auto& flags : std::vector<std::vector<std::string>>{
           {}, {"--policy", "read-only"}, {"--read-access", "full"}, {"--network", "full"}}) {
    auto attack = Sandbox(ws.path(), flags, {suid, "-u"}, user->Options());
    EXPECT_EQ(attack.status, 0) << "the binary itself must still run: " << attack.err;
    EXPECT_EQ(attack.out, expected) << "setuid-root elevated inside the sandbox";
  }
}

class T4SandboxPrivilege : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    caller_.Give(ws_.path());
  }
  TempDir ws_{"anvil-ws-priv"};
};

TEST_P(T4SandboxPrivilege, NoNewPrivsIsSetAndCapabilitiesAreEmpty) {
  const std::string script =
      "grep -E '^(NoNewPrivs|Seccomp|CapInh|CapPrm|CapEff|CapBnd|CapAmb):' /proc/self/status "
      "| tr -d ':' | tr '\\t' ' '; echo uid $(id -u); echo map $(cat /proc/self/uid_map)";
  for (const auto& flags :
       std::vector<std::vector<std::string>>{{}, {"--policy", "read-only", "--network", "full"}}) {
    auto result = SandboxSh(ws_.path(), script, flags, Opts());
    ASSERT_EQ(result.status, 0) << result.err;
    auto f = Fields(result.out);
    EXPECT_EQ(f["NoNewPrivs"], "1");
    EXPECT_EQ(f["Seccomp"], "2");
    for (const char* cap : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}) {
      EXPECT_EQ(f[cap], "0000000000000000") << cap << (flags.empty() ? " (defaults)" : " (ro)");
    }
    // Benign: the command runs as the caller, and only the caller's own uid is mapped; root's
    // 0 is an unprivileged host id (root_remap.h).
    const std::string uid = std::to_string(caller_.uid());
    EXPECT_EQ(f["uid"], uid);
    EXPECT_EQ(f["map"], Unprivileged() ? uid + " " + uid + " 1" : "0 2147483646 1");
  }

  // No other identity can be taken: setuid/setgid to another id and setgroups all fail.
  auto change = SandboxPython(ws_.path(), R"py(
import os
for name, call in [("setuid", lambda: os.setuid(4242)), ("setgid", lambda: os.setgid(4242)),
                   ("setgroups", lambda: os.setgroups([0])),
                   ("setresuid", lambda: os.setresuid(0, 0, 0) if os.getuid() else os.setresuid(4242, 4242, 4242))]:
    try:
        call()
        print(name, "SUCCEEDED")
    except OSError as e:
        print(name, "failed")
)py",
                              {}, Opts());
  EXPECT_EQ(change.status, 0) << change.err;
  EXPECT_EQ(change.out.find("SUCCEEDED"), std::string::npos) << change.out;
}

// Probes every target named on argv with PTRACE_ATTACH and PTRACE_SEIZE, then prints what
// reading init's memory and environment gave; the benign side signals and reaps a sibling.
constexpr char kPtraceProbe[] = R"py(
import ctypes, errno, os, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
sibling = subprocess.Popen(["/bin/sleep", "100"])
targets = [("outside", int(sys.argv[1])), ("test", int(sys.argv[2])), ("init", 1),
           ("sibling", sibling.pid)]
for name, pid in targets:
    for req, label in [(16, "attach"), (0x4206, "seize")]:
        r = libc.ptrace(req, pid, None, None)
        print(f"{label}-{name}", "OK" if r == 0 else errno.errorcode[ctypes.get_errno()])
for path in ["/proc/1/mem", "/proc/1/environ", "/proc/1/root/"]:
    try:
        if path.endswith("/"):
            os.listdir(path)
        else:
            open(path, "rb").read(16)
        print("read" + path.replace("/", "-"), "OK")
    except OSError as e:
        print("read" + path.replace("/", "-"), errno.errorcode[e.errno])
os.kill(sibling.pid, 0)
open(f"/proc/{sibling.pid}/status").read()
sibling.terminate()
print("sibling-exit", sibling.wait())
)py";

TEST_P(T4SandboxPrivilege, PtraceOfOutsideProcessInitAndSiblingFails) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  Spawned outside({"/bin/sleep", "1000"}, Opts());  // same uid as the caller: only the sandbox
  ASSERT_TRUE(WaitUntil([&] { return ProcState(outside.pid()) == 'S'; }));
  auto result = SandboxPython(ws_.path(), kPtraceProbe, {}, Opts(),
                              {std::to_string(outside.pid()), std::to_string(getpid())});
  ASSERT_EQ(result.status, 0) << result.err;
  auto f = Fields(result.out);
  for (const char* target : {"outside", "test", "init", "sibling"}) {
    for (const char* op : {"attach", "seize"}) {
      std::string key = std::string(op) + "-" + target;
      EXPECT_EQ(f[key], "EPERM") << key;
    }
  }
  // The sandbox's init is outside Landlock and seccomp: nothing may read or attach to it.
  EXPECT_NE(f["read-proc-1-mem"], "OK");
  EXPECT_NE(f["read-proc-1-environ"], "OK");
  EXPECT_NE(f["read-proc-1-root-"], "OK");
  // Benign: the sibling could be signalled, inspected and reaped.
  EXPECT_EQ(f["sibling-exit"], "-15");
  EXPECT_TRUE(ProcessAlive(outside.pid()));
  EXPECT_EQ(ProcState(outside.pid()), 'S') << "the outside process was stopped or traced";
}

TEST_P(T4SandboxPrivilege, KillOfOutsideProcessFailsAndItSurvives) {
  Spawned outside({"/bin/sleep", "1000"}, Opts());  // same uid: kill(2) would work unsandboxed
  ASSERT_TRUE(WaitUntil([&] { return ProcState(outside.pid()) == 'S'; }));
  const std::string pid = std::to_string(outside.pid());
  auto attack = SandboxSh(ws_.path(),
                          "kill -9 " + pid + "; echo kill=$?; kill -STOP " + pid + "; kill -9 -" +
                              pid + "; kill -9 " + std::to_string(getpid()) +
                              "; kill -9 -1; kill -9 1; echo init=$?; true",
                          {}, Opts());
  EXPECT_NE(attack.out.find("kill=1"), std::string::npos) << attack.out << attack.err;
  EXPECT_NE(attack.out.find("init=1"), std::string::npos) << "signalling the sandbox's init";
  EXPECT_TRUE(ProcessAlive(outside.pid())) << "the outside process was killed";
  EXPECT_EQ(ProcState(outside.pid()), 'S') << "the outside process was stopped";

  auto benign = SandboxSh(ws_.path(), "sleep 100 & kill $!; wait $!; echo status=$?", {}, Opts());
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(benign.out, "status=143\n");
}

TEST_P(T4SandboxPrivilege, HostKernelKnobsInProcAndSysCannotBeOpenedForWriting) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  // Opened for writing and closed without writing a byte: the test never changes a knob.
  // A caller that is host root stays uid 0 inside, and root-owned files like sysrq-trigger or
  // core_pattern check no capability on write.
  auto result = SandboxPython(ws_.path(), R"py(
import errno, os
for path in ["/proc/sysrq-trigger", "/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe",
             "/proc/sys/kernel/hostname", "/proc/sys/vm/drop_caches",
             "/proc/sys/fs/protected_hardlinks", "/proc/sys/kernel/randomize_va_space",
             "/sys/kernel/uevent_helper",
             "/sys/fs/cgroup/cgroup.procs", "/dev/kmsg", "/dev/mem", "/dev/sda"]:
    try:
        fd = os.open(path, os.O_WRONLY)
        os.close(fd)
        print(path, "OPENED-FOR-WRITE")
    except OSError as e:
        print(path, errno.errorcode.get(e.errno, e.errno))
print("hostname", open("/proc/sys/kernel/hostname").read().strip())
)py",
                              {}, Opts());
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(result.out.find("OPENED-FOR-WRITE"), std::string::npos) << result.out;
  // Benign: the same knobs stay readable.
  std::string host = ReadFile("/proc/sys/kernel/hostname");
  while (!host.empty() && host.back() == '\n') host.pop_back();
  EXPECT_EQ(Fields(result.out)["hostname"], host);
}

TEST_P(T4SandboxPrivilege, HostSysvIpcObjectsAreInvisible) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  key_t key = static_cast<key_t>(0x41000000 | (getpid() & 0xffffff));
  int id = shmget(key, 4096, IPC_CREAT | IPC_EXCL | 0666);
  ASSERT_GE(id, 0) << "cannot create the host shm segment";
  auto result = SandboxPython(ws_.path(), R"py(
import ctypes, errno, sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.shmget(int(sys.argv[1]), 0, 0)
print("host", "FOUND" if r >= 0 else errno.errorcode[ctypes.get_errno()])
r = libc.shmget(0, 4096, 0o1600)  # IPC_PRIVATE | IPC_CREAT
print("own", "OK" if r >= 0 else errno.errorcode[ctypes.get_errno()])
)py",
                              {}, Opts(), {std::to_string(key)});
  shmctl(id, IPC_RMID, nullptr);
  EXPECT_EQ(result.status, 0) << result.err;
  auto f = Fields(result.out);
  EXPECT_EQ(f["host"], "ENOENT") << "the host's shared memory segment is reachable";
  EXPECT_EQ(f["own"], "OK") << "benign: the sandbox's own IPC namespace works";
}

// Tries a no-op metadata change on each host object named on argv (chmod to its own mode, chown
// to its own owner, times to now, a user xattr): any that succeeds could as well have changed the
// host's node. Then the ordinary uses of the devices.
constexpr char kMetadataProbe[] = R"py(
import errno, os, stat, sys
def attempt(name, call):
    try:
        call()
        print(name, "OK")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
for path in sys.argv[1:]:
    if not os.path.exists(path):
        continue
    st = os.stat(path)
    attempt("chmod" + path, lambda: os.chmod(path, stat.S_IMODE(st.st_mode)))
    attempt("chown" + path, lambda: os.chown(path, st.st_uid, st.st_gid))
    attempt("utime" + path, lambda: os.utime(path))
    attempt("setxattr" + path, lambda: os.setxattr(path, "user.anvil", b"1"))
with open("/dev/null", "wb") as f:
    print("write-null", f.write(b"x" * 100))
with open("/dev/urandom", "rb") as f:
    print("read-urandom", len(f.read(16)))
with open("/dev/zero", "rb") as f:
    print("read-zero", f.read(4) == bytes(4))
try:
    with open("/dev/full", "wb") as f:
        f.write(b"x")
        f.flush()
except OSError as e:
    print("write-full", errno.errorcode[e.errno])
)py";

TEST_P(T4SandboxPrivilege, HostDeviceNodesAndProcEntriesKeepTheirMetadata) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  // /proc entries: the mode of a generic one is kept in its proc_dir_entry, shared by every
  // procfs of the host; root's command does not own them (root_remap.h).
  const std::vector<std::string> targets = {
      "/dev/null",     "/dev/zero",    "/dev/full",
      "/dev/random",   "/dev/urandom", "/dev/tty",
      "/proc/version", "/proc/kmsg",   "/proc/sys/kernel/hostname"};
  std::map<std::string, struct stat> before;
  for (const auto& t : targets) ::stat(t.c_str(), &before[t]);
  for (const auto& flags : std::vector<std::vector<std::string>>{
           {}, {"--read-access", "full"}, {"--policy", "read-only", "--network", "full"}}) {
    auto result = SandboxPython(ws_.path(), kMetadataProbe, flags, Opts(), targets);
    ASSERT_EQ(result.status, 0) << result.err;
    auto f = Fields(result.out);
    size_t tried = 0;
    for (const auto& [name, value] : f) {
      if (name.find('/') == std::string::npos) continue;
      ++tried;
      EXPECT_NE(value, "OK") << name << " changed a host object's metadata";
    }
    EXPECT_GE(tried, 20u) << result.out;
    // Benign: the devices themselves work.
    EXPECT_EQ(f["write-null"], "100");
    EXPECT_EQ(f["read-urandom"], "16");
    EXPECT_EQ(f["read-zero"], "True");
    EXPECT_EQ(f["write-full"], "ENOSPC");
  }
  for (const auto& t : targets) {
    struct stat now {};
    ::stat(t.c_str(), &now);
    EXPECT_EQ(now.st_mode, before[t].st_mode) << t;
    EXPECT_EQ(now.st_uid, before[t].st_uid) << t;
  }
}

INSTANTIATE_TEST_SUITE_P(Callers, T4SandboxPrivilege, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace anvil::testing
