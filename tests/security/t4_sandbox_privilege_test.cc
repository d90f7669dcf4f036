// T4 for the command sandbox, privilege: nothing in the sandbox gains privilege (a setuid-root
// binary, capabilities of a root caller, another uid) or reaches a process outside it (ptrace,
// process_vm_*, /proc/PID/mem, signals, the sandbox's own unconfined init), host-wide kernel
// knobs in /proc, or the host's System V IPC objects. The command may ptrace its own processes.
#include <signal.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace t4_sandbox_privilege_test {
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

// Probes every target named on argv ("NAME=PID"), the sandbox's init (the command's parent)
// and, where visible, init's parent, the sandbox's supervisor ("anvil"), with PTRACE_ATTACH,
// PTRACE_SEIZE, process_vm_readv and reads of /proc/PID/mem, environ and root; then the benign
// side: the command traces its own child (seize, interrupt, read its memory both ways), which must
// work, and tries to have seccomp suspended for it (PTRACE_O_SUSPEND_SECCOMP), which must not.
// Prints "OP-NAME RESULT" lines.
constexpr char kPtraceProbe[] = R"py(
import ctypes, errno, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.process_vm_readv.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p,
                                  ctypes.c_ulong, ctypes.c_ulong]
libc.process_vm_readv.restype = ctypes.c_ssize_t
class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
# Memory a fork of this process has at the same address: what reading the own child must find.
MARK = b"anvil-own-memory"
mark = ctypes.create_string_buffer(MARK)
ADDR = ctypes.addressof(mark)
def err():
    return errno.errorcode[ctypes.get_errno()]
def vm_read(pid):
    buf = ctypes.create_string_buffer(16)
    local = IoVec(ctypes.cast(buf, ctypes.c_void_p), 16)
    remote = IoVec(ADDR, 16)
    r = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    return ("OK" if buf.raw == MARK else "READ") if r == 16 else err()
def read(pid, what):
    path = f"/proc/{pid}/{what}"
    try:
        if what == "root":
            os.listdir(path + "/")
        elif what == "mem":
            with open(path, "rb") as f:
                f.seek(ADDR)
                return "OK" if f.read(16) == MARK else "READ"
        else:
            open(path, "rb").read(16)
        return "OK"
    except OSError as e:
        return errno.errorcode[e.errno]
# The command's parent is the sandbox's init; without a pid namespace init's parent, the
# sandbox's supervisor (anvil), is visible too.
init = os.getppid()
targets = [("init", init)]
try:
    supervisor = int(open(f"/proc/{init}/stat").read().rsplit(")", 1)[1].split()[1])
except OSError as e:
    supervisor = 0
    print("stat-init", errno.errorcode[e.errno])
if supervisor != 0:
    targets.append(("anvil", supervisor))
targets += [(a.split("=")[0], int(a.split("=")[1])) for a in sys.argv[1:]]
for name, pid in targets:
    for req, label in [(16, "attach"), (0x4206, "seize")]:
        r = libc.ptrace(req, pid, None, None)
        print(f"{label}-{name}", "OK" if r == 0 else err())
    print(f"vmread-{name}", vm_read(pid))
    for what in ["mem", "environ", "root"]:
        print(f"read-{what}-{name}", read(pid, what))
sys.stdout.flush()
# Benign: the command's own child.
child = os.fork()
if child == 0:
    time.sleep(100)
    os._exit(0)
r = libc.ptrace(0x4206, child, None, None)  # PTRACE_SEIZE
print("seize-own", "OK" if r == 0 else err())
r = libc.ptrace(0x4207, child, None, None)  # PTRACE_INTERRUPT
print("interrupt-own", "OK" if r == 0 else err())
if r == 0:
    os.waitpid(child, 0x40000000)  # __WALL: the interrupt's stop
print("vmread-own", vm_read(child))
print("read-mem-own", read(child, "mem"))
r = libc.ptrace(0x4200, child, None, ctypes.c_void_p(1 << 21))  # PTRACE_O_SUSPEND_SECCOMP
print("suspend-seccomp-own", "OK" if r == 0 else err())
r = libc.ptrace(17, child, None, None)  # PTRACE_DETACH
print("detach-own", "OK" if r == 0 else err())
os.kill(child, 15)
status = os.waitpid(child, 0)[1]
print("own-exit", -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))
)py";

// Each attack line of the probe: every operation on `name` must fail.
void ExpectUnreachable(std::map<std::string, std::string>& f, const std::string& name) {
  for (const char* op : {"attach", "seize", "vmread", "read-mem", "read-environ", "read-root"}) {
    const std::string key = std::string(op) + "-" + name;
    // Refused by a permission check, or not even there to name: never reached (OK, READ,
    // EFAULT would mean the check passed).
    EXPECT_TRUE(f[key] == "EPERM" || f[key] == "EACCES" || f[key] == "ESRCH" || f[key] == "ENOENT")
        << key << " " << f[key];
  }
}

// `proc_readable`: the view's own /proc (no mount namespace: the host's, where Landlock lets
// the command read only its own /proc/self).
void ExpectOwnChildTraceable(std::map<std::string, std::string>& f, bool proc_readable = true) {
  EXPECT_EQ(f["seize-own"], "OK");
  EXPECT_EQ(f["interrupt-own"], "OK");
  EXPECT_EQ(f["vmread-own"], "OK");
  if (proc_readable) {
    EXPECT_EQ(f["read-mem-own"], "OK");
  }
  // Only CAP_SYS_ADMIN of the host may suspend a tracee's seccomp filter.
  EXPECT_EQ(f["suspend-seccomp-own"], "EPERM");
  EXPECT_EQ(f["detach-own"], "OK");
  EXPECT_EQ(f["own-exit"], "-15");
}

// The command may trace its own processes (debuggers, strace, LeakSanitizer), and nothing
// else: not the sandbox's init (unconfined, holding the sandbox's namespaces and Anvil's
// descriptors; non-dumpable and outside the command's Landlock domain), not a process of the
// caller outside, not the test itself (outside the pid namespace: not even visible).
TEST_P(T4SandboxPrivilege, PtraceReachesOnlyTheCommandsOwnProcesses) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  Spawned outside({"/bin/sleep", "1000"}, Opts());  // same uid as the caller: only the sandbox
  ASSERT_TRUE(WaitUntil([&] { return ProcState(outside.pid()) == 'S'; }));
  auto result = SandboxPython(
      ws_.path(), kPtraceProbe, {}, Opts(),
      {"outside=" + std::to_string(outside.pid()), "test=" + std::to_string(getpid())});
  ASSERT_EQ(result.status, 0) << result.err;
  auto f = Fields(result.out);
  for (const char* target : {"init", "outside", "test"}) ExpectUnreachable(f, target);
  // Init is there to name: the permission check itself refuses.
  EXPECT_EQ(f["attach-init"], "EPERM");
  EXPECT_EQ(f["vmread-init"], "EPERM");
  EXPECT_EQ(f.count("attach-anvil"), 0u) << "the supervisor is outside the pid namespace";
  ExpectOwnChildTraceable(f);
  EXPECT_TRUE(ProcessAlive(outside.pid()));
  EXPECT_EQ(ProcState(outside.pid()), 'S') << "the outside process was stopped or traced";
}

// The parent of `pid`, from /proc/PID/stat (0 when gone).
pid_t ParentOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  auto paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream rest(stat.substr(paren + 2));
  char state = 0;
  pid_t parent = 0;
  rest >> state >> parent;
  return parent;
}

// Without a pid namespace (read-only's fallback where user namespaces are refused), everything
// of the caller is visible by its pid, and the caller's uid owns it: Landlock alone (a tracer
// may only trace processes of its own domain or one nested in it) and init's non-dumpable
// state keep the command from the sandbox's init and supervisor (anvil), from a process of the
// caller outside, and from another sandbox of the same workspace, whose processes are in a
// sibling domain. The control: the same probe outside any sandbox seizes the outside process.
TEST(T4SandboxPtraceFallback, WithoutAPidNamespaceLandlockKeepsPtraceToTheCommandsOwn) {
  ANVIL_CALLER_OR_END_TEST(caller, Caller::kUnprivileged);
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  TempDir ws("anvil-ws-ptrace-fallback");
  caller->Give(ws.path());
  RunOptions options;
  options.env = {"PATH=/usr/bin:/bin", "HOME=/tmp", "ANVIL_ALLOW_TEST_FAULTS=1"};
  const std::vector<std::string> fallback = {"--policy", "read-only", "--unsafe-test-fail-layer",
                                             "clone"};
  auto layers = JsonReport(
      Sandbox(ws.path(), {"--policy", "read-only", "--unsafe-test-fail-layer", "clone", "--json"},
              {"/bin/true"}, caller->Options(options)));
  ASSERT_FALSE(layers["layers"].value("pid_namespace", true))
      << "the fault did not take the namespaces away: " << layers.dump();
  ASSERT_GE(layers["layers"].value("landlock_abi", 0), 1) << layers.dump();

  Spawned outside({"/bin/sleep", "1000"}, caller->Options(options));
  // Another sandbox of the same workspace and caller, with its namespaces: its supervisor
  // (anvil), its init and its command, all of the caller's uid.
  const std::string marker = UniqueToken("anvil-ptrace-other");
  RunOptions other_options = options;
  other_options.cwd = ws.path();
  Spawned other({AnvilBin(), "sandbox", "--cwd", ws.path(), "--quiet", "--", "/bin/sh", "-c",
                 "sleep 1000; : " + marker},
                caller->Options(other_options));
  pid_t other_init = 0, other_command = 0;
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (pid_t p : ProcessesWithMarker(marker)) {
          if (ParentOf(p) == other.pid()) other_init = p;
        }
        for (pid_t p : ProcessesWithMarker(marker)) {
          if (other_init != 0 && ParentOf(p) == other_init) other_command = p;
        }
        return other_command != 0 && ProcState(outside.pid()) == 'S';
      },
      std::chrono::seconds(30)))
      << "the other sandbox's command did not start";

  auto result = SandboxPython(
      ws.path(), kPtraceProbe, fallback, caller->Options(options),
      {"outside=" + std::to_string(outside.pid()), "other-anvil=" + std::to_string(other.pid()),
       "other-init=" + std::to_string(other_init),
       "other-command=" + std::to_string(other_command)});
  ASSERT_EQ(result.status, 0) << result.err;
  auto f = Fields(result.out);
  for (const char* target : {"init", "outside", "other-anvil", "other-init", "other-command"}) {
    ExpectUnreachable(f, target);
    // Each is visible here: the permission check itself refuses.
    EXPECT_EQ(f[std::string("attach-") + target], "EPERM") << target;
    EXPECT_EQ(f[std::string("seize-") + target], "EPERM") << target;
    EXPECT_EQ(f[std::string("vmread-") + target], "EPERM") << target;
  }
  // Its own supervisor where the view's /proc shows init's parent (another anvil is above).
  if (f.count("stat-init") == 0) ExpectUnreachable(f, "anvil");
  ExpectOwnChildTraceable(f, /*proc_readable=*/false);
  EXPECT_EQ(ProcState(outside.pid()), 'S') << "the outside process was stopped or traced";
  EXPECT_TRUE(ProcessAlive(other_command));

  // The control: unsandboxed, the caller attaches to and reads its own outside process.
  auto control = ::anvil::testing::Run(
      {kPython, "-c", kPtraceProbe, "outside=" + std::to_string(outside.pid())},
      caller->Options(options));
  auto c = Fields(control.out);
  EXPECT_EQ(c["attach-outside"], "OK") << control.out << control.err;
  // Past the permission check: another program's memory, or none at that address.
  EXPECT_TRUE(c["vmread-outside"] == "READ" || c["vmread-outside"] == "EFAULT")
      << c["vmread-outside"];
}

// A tracer may rewrite its tracee's system calls; seccomp judges the call the tracee then
// makes (the kernel runs the filter after the tracer's syscall-entry stop), so a refused
// call cannot be smuggled in as an allowed one. The tracee's getpriority(0x4242, 0x4242) is
// rewritten into kcmp (refused: EPERM; the kernel itself would answer 0) and, as the control
// that the rewrite works, into getpid.
constexpr char kSyscallRewrite[] = R"py(
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.syscall.restype = ctypes.c_long
class Regs(ctypes.Structure):
    _fields_ = [(n, ctypes.c_ulonglong) for n in (
        "r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp "
        "ss fs_base gs_base ds es fs gs").split()]
MARK = 0x4242
def run(into):
    pid = os.fork()
    if pid == 0:
        if libc.ptrace(0, 0, None, None) != 0:  # PTRACE_TRACEME
            os.write(1, ("traceme " + errno.errorcode[ctypes.get_errno()] + "\n").encode())
            os._exit(0)
        os.kill(os.getpid(), 19)
        ctypes.set_errno(0)
        r = libc.syscall(ctypes.c_long(140), ctypes.c_long(MARK), ctypes.c_long(MARK))
        e = ctypes.get_errno()
        os.write(1, (f"{into} " + ("OK" if r >= 0 else errno.errorcode[e]) + "\n").encode())
        os._exit(0)
    _, status = os.waitpid(pid, 2)  # WUNTRACED
    if not os.WIFSTOPPED(status):
        return
    libc.ptrace(0x4200, pid, None, ctypes.c_void_p(0x1 | 0x100000))  # TRACESYSGOOD, EXITKILL
    entering = True
    while True:
        if libc.ptrace(24, pid, None, None) != 0:  # PTRACE_SYSCALL
            print("trace", errno.errorcode[ctypes.get_errno()])
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            return
        if not (os.WIFSTOPPED(status) and os.WSTOPSIG(status) == (5 | 0x80)):
            continue
        if entering:
            regs = Regs()
            libc.ptrace(12, pid, None, ctypes.byref(regs))  # PTRACE_GETREGS
            if regs.orig_rax == 140 and regs.rdi == MARK and regs.rsi == MARK and into != "getpriority":
                if into == "kcmp":
                    regs.orig_rax, regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8 = 312, pid, pid, 0, 0, 0
                else:
                    regs.orig_rax = 39
                r = libc.ptrace(13, pid, None, ctypes.byref(regs))  # PTRACE_SETREGS
                print("setregs", "OK" if r == 0 else errno.errorcode[ctypes.get_errno()])
                sys.stdout.flush()
        entering = not entering
for into in ["getpriority", "getpid", "kcmp"]:
    run(into)
)py";

TEST_P(T4SandboxPrivilege, ATracerCannotRewriteACallIntoOneTheFilterRefuses) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  utsname u{};
  if (uname(&u) != 0 || std::string(u.machine) != "x86_64") {
    GTEST_SKIP() << "SKIPPED: the probe rewrites x86_64 registers";
  }
  auto result = SandboxPython(ws_.path(), kSyscallRewrite, {}, Opts());
  ASSERT_EQ(result.status, 0) << result.err;
  // Untouched, the marker call is the kernel's (EINVAL: no such `which`); rewritten into
  // getpid it succeeds; rewritten into kcmp the filter refuses it.
  EXPECT_EQ(result.out,
            "getpriority EINVAL\n"
            "setregs OK\ngetpid OK\n"
            "setregs OK\nkcmp EPERM\n");
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
}  // namespace t4_sandbox_privilege_test
}  // namespace anvil::testing
