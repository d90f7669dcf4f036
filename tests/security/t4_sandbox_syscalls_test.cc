// T4 for the command sandbox, syscalls: every syscall family the seccomp filter denies
// (src/linux/seccomp.cc) answers EPERM inside the sandbox (ptrace and process_vm_* only in
// anvil-exec-runner's), a foreign syscall ABI (32-bit
// `int 0x80`, x32) kills the process with SIGSYS, and TIOCSTI cannot push input into a terminal;
// the ordinary calls next to them (personality query, fork, ioctl on a tty) still work.
//
// Each probe is chosen so that the kernel itself would answer something else than EPERM for
// most of them (ENOENT, EINVAL, EBADF, EFAULT, ENOTTY or success) — EPERM then means the filter
// stopped the call — and so that it is harmless even if it ever ran unfiltered: paths that do
// not exist, bad descriptors, NULL buffers, invalid flags.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace t4_sandbox_syscalls_test {
namespace {

bool IsX86_64() {
  utsname u{};
  return uname(&u) == 0 && std::string(u.machine) == "x86_64";
}

// argv names the probes; prints "<name> OK <ret>" or "<name> <errno name>" for each.
// x86_64 syscall numbers.
constexpr char kSyscallProbe[] = R"py(
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def sc(nr, *args):
    ctypes.set_errno(0)
    conv = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    return libc.syscall(ctypes.c_long(nr), *conv), ctypes.get_errno()

class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

dst, src = ctypes.create_string_buffer(8), ctypes.create_string_buffer(b"secret!")
local = IoVec(ctypes.cast(dst, ctypes.c_void_p), 8)
remote = IoVec(ctypes.cast(src, ctypes.c_void_p), 8)
ch = ctypes.c_char(b"x")
CLONE_NEWUSER, CLONE_NEWNS, SIGCHLD = 0x10000000, 0x00020000, 17
CASES = {
    "mount": lambda: sc(165, b"none", b"/nonexistent-anvil-probe", b"tmpfs", 0, 0),
    "umount2": lambda: sc(166, b"/nonexistent-anvil-probe", 0),
    "pivot_root": lambda: sc(155, b"/nonexistent-anvil-a", b"/nonexistent-anvil-b"),
    "chroot": lambda: sc(161, b"/nonexistent-anvil-probe"),
    "unshare_newuser": lambda: sc(272, CLONE_NEWUSER),
    "unshare_newns": lambda: sc(272, CLONE_NEWNS),
    "setns": lambda: sc(308, -1, 0),
    "bpf": lambda: sc(321, 0, 0, 0),
    "perf_event_open": lambda: sc(298, 0, 0, -1, -1, 0),
    "keyctl": lambda: sc(250, 0, -3, 0),
    "add_key": lambda: sc(248, b"user", b"anvil-probe", b"x", 1, -2),
    "request_key": lambda: sc(249, b"user", b"anvil-probe", 0, 0),
    "userfaultfd": lambda: sc(323, 1),
    "io_uring_setup": lambda: sc(425, 1, 0),
    "init_module": lambda: sc(175, 0, 0, b""),
    "finit_module": lambda: sc(313, -1, b"", 0),
    "kexec_load": lambda: sc(246, 0, 1000, 0, 0),
    "personality_addr_no_randomize": lambda: sc(135, 0x0040000),
    "personality_read_implies_exec": lambda: sc(135, 0x0400000),
    "ioctl_tiocsti_devnull": lambda: sc(16, os.open("/dev/null", os.O_RDWR), 0x5412, ctypes.byref(ch)),
    "open_by_handle_at": lambda: sc(304, -1, 0, 0),
    "process_vm_readv": lambda: sc(310, os.getpid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0),
    "process_vm_writev": lambda: sc(311, os.getpid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0),
    "ptrace_traceme": lambda: sc(101, 0, 0, 0, 0),
    "kcmp": lambda: sc(312, os.getpid(), os.getpid(), 0, 0, 0),
    "pidfd_getfd": lambda: sc(438, -1, 0, 0),
    "open_tree": lambda: sc(428, -100, b"/nonexistent-anvil-probe", 1),
    "fsopen": lambda: sc(430, b"tmpfs", 0),
    "mount_setattr": lambda: sc(442, -1, b"", 0x1000, 0, 0),
    "syslog": lambda: sc(103, 10, 0, 0),
    "clone_newuser": lambda: sc(56, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0),
    "clone3": lambda: sc(435, 0, 0),
    "clock_settime": lambda: sc(227, 0, 0),
    "clock_adjtime": lambda: sc(305, 0, 0),
    "iopl": lambda: sc(172, 4),
    "io_uring_enter": lambda: sc(426, -1, 0, 0, 0, 0, 0),
    "io_uring_register": lambda: sc(427, -1, 0, 0, 0),
    "uselib": lambda: sc(134, 0),
    "quotactl": lambda: sc(179, 0, 0, 0, 0),
}
# Each probe in its own child, so that one that succeeds (a new namespace, a changed
# personality) cannot change what the next one sees.
for name in sys.argv[1:]:
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        r, e = CASES[name]()
        if r == 0 and name.startswith("clone"):
            os._exit(0)  # the clone's child: leave at once
        print(name, "OK %d" % r if r >= 0 else errno.errorcode.get(e, str(e)))
        sys.stdout.flush()
        os._exit(0)
    os.waitpid(pid, 0)
)py";

struct DeniedCall {
  const char* name;
  const char* expected;  // errno name the filter answers
};

constexpr DeniedCall kDeniedCalls[] = {
    {"mount", "EPERM"},
    {"umount2", "EPERM"},
    {"pivot_root", "EPERM"},
    {"chroot", "EPERM"},
    {"unshare_newuser", "EPERM"},
    {"unshare_newns", "EPERM"},
    {"setns", "EPERM"},
    {"bpf", "EPERM"},
    {"perf_event_open", "EPERM"},
    {"keyctl", "EPERM"},
    {"add_key", "EPERM"},
    {"request_key", "EPERM"},
    {"userfaultfd", "EPERM"},
    {"io_uring_setup", "EPERM"},
    {"init_module", "EPERM"},
    {"finit_module", "EPERM"},
    {"kexec_load", "EPERM"},
    {"personality_addr_no_randomize", "EPERM"},
    {"personality_read_implies_exec", "EPERM"},
    {"ioctl_tiocsti_devnull", "EPERM"},  // the kernel would say ENOTTY: this is the filter
    {"open_by_handle_at", "EPERM"},
    // ptrace and process_vm_*: below (TracingIsTheKernelsInAnvilSandboxAndRefusedInTheRunner).
    {"kcmp", "EPERM"},
    {"pidfd_getfd", "EPERM"},
    {"open_tree", "EPERM"},
    {"fsopen", "EPERM"},
    {"mount_setattr", "EPERM"},
    {"syslog", "EPERM"},
    {"clone_newuser", "EPERM"},
    {"clone3", "ENOSYS"},  // flags in memory: ENOSYS makes libc fall back to filtered clone(2)
    // Unfiltered, the kernel answers these with EFAULT (a NULL time), EINVAL or ENOSYS (iopl,
    // uselib), EBADF or EINVAL (no ring), ENODEV (no device). Calls the kernel itself refuses a
    // command without capabilities with EPERM before looking at their arguments (acct, swapon,
    // reboot, kexec_file_load, ...) cannot be told apart here: tests/unit/seccomp_table_test.cc
    // reads their rows in the baked program.
    {"clock_settime", "EPERM"},
    {"clock_adjtime", "EPERM"},
    {"iopl", "EPERM"},
    {"io_uring_enter", "EPERM"},
    {"io_uring_register", "EPERM"},
    {"uselib", "EPERM"},
    {"quotactl", "EPERM"},
};

class T4SandboxSyscalls : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    if (!IsX86_64()) GTEST_SKIP() << "SKIPPED: the probes use x86_64 syscall numbers";
    if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
    caller_.Give(ws_.path());
  }
  TempDir ws_{"anvil-ws-sys"};
};

TEST_P(T4SandboxSyscalls, EachDeniedSyscallFamilyReturnsErrno) {
  std::vector<std::string> names;
  for (const DeniedCall& call : kDeniedCalls) names.push_back(call.name);
  auto result = SandboxPython(ws_.path(), kSyscallProbe, {}, Opts(), names);
  EXPECT_EQ(result.status, 0) << result.err;
  std::map<std::string, std::string> got;
  for (const auto& line : Lines(result.out)) {
    auto sp = line.find(' ');
    if (sp != std::string::npos) got[line.substr(0, sp)] = line.substr(sp + 1);
  }
  for (const DeniedCall& call : kDeniedCalls) {
    EXPECT_EQ(got[call.name], call.expected) << "syscall family " << call.name;
  }
}

// `anvil sandbox` leaves ptrace and process_vm_readv/writev to the kernel and Landlock (which
// keep them to the command's own processes: t4_sandbox_privilege_test.cc); the probes, on the
// probe's own process and its parent, then get the kernel's answers. anvil-exec-runner, which
// runs sys.exec's tools, refuses them with EPERM. Their neighbours stay refused in both.
TEST_P(T4SandboxSyscalls, TracingIsTheKernelsInAnvilSandboxAndRefusedInTheRunner) {
  const std::vector<std::string> names = {"process_vm_readv", "process_vm_writev", "ptrace_traceme",
                                          "kcmp", "pidfd_getfd"};
  auto parse = [](const RunResult& r) {
    std::map<std::string, std::string> got;
    for (const auto& line : Lines(r.out)) {
      auto sp = line.find(' ');
      if (sp != std::string::npos) got[line.substr(0, sp)] = line.substr(sp + 1);
    }
    return got;
  };
  auto sandbox = SandboxPython(ws_.path(), kSyscallProbe, {}, Opts(), names);
  EXPECT_EQ(sandbox.status, 0) << sandbox.err;
  auto in_sandbox = parse(sandbox);
  EXPECT_EQ(in_sandbox["process_vm_readv"], "OK 8") << sandbox.out;
  EXPECT_EQ(in_sandbox["process_vm_writev"], "OK 8");
  EXPECT_EQ(in_sandbox["ptrace_traceme"], "OK 0");
  EXPECT_EQ(in_sandbox["kcmp"], "EPERM");
  EXPECT_EQ(in_sandbox["pidfd_getfd"], "EPERM");

  std::vector<std::string> argv = {BinDir() + "/anvil-exec-runner",
                                   "--cwd",
                                   ws_.path(),
                                   "--policy",
                                   "read-only",
                                   "--",
                                   kPython,
                                   "-c",
                                   kSyscallProbe};
  argv.insert(argv.end(), names.begin(), names.end());
  auto runner = ::anvil::testing::Run(argv, Opts());
  EXPECT_EQ(runner.status, 0) << runner.err;
  auto in_runner = parse(runner);
  for (const auto& name : names) EXPECT_EQ(in_runner[name], "EPERM") << name << runner.out;
}

INSTANTIATE_TEST_SUITE_P(Callers, T4SandboxSyscalls, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

class T4SandboxAbi : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    if (!IsX86_64()) GTEST_SKIP() << "SKIPPED: the foreign-ABI probes are x86_64 code";
    caller_.Give(ws_.path());
  }
  TempDir ws_{"anvil-ws-abi"};
};

TEST_P(T4SandboxAbi, BenignCallsNextToTheDeniedOnesStillWork) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  auto result = SandboxPython(ws_.path(), R"py(
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
print("personality_query", libc.syscall(ctypes.c_long(135), ctypes.c_long(0xffffffff)) >= 0)
print("personality_linux", libc.syscall(ctypes.c_long(135), ctypes.c_long(0)) >= 0)
pid = os.fork()
if pid == 0:
    os._exit(7)
print("fork", os.waitpid(pid, 0)[1] >> 8)
fd = os.open("/dev/null", os.O_RDWR)
buf = ctypes.create_string_buffer(64)
r = libc.ioctl(fd, 0x5401, buf)  # TCGETS: not a tty, but the call reaches the kernel
print("ioctl_tcgets", errno.errorcode[ctypes.get_errno()] if r < 0 else "OK")
)py",
                              {}, Opts());
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(result.out,
            "personality_query True\npersonality_linux True\nfork 7\nioctl_tcgets ENOTTY\n");
}

// argv[1]: "int80" (i386 getpid through int 0x80), "x32" (x32 getpid), anything else: 7.
// Exits 3 when the foreign call returned a pid, 4 when it returned an error.
constexpr char kForeignAbi[] = R"c(
#include <string.h>
int main(int argc, char** argv) {
  long ret = 0;
  if (argc > 1 && strcmp(argv[1], "int80") == 0) {
    __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
    return ret > 0 ? 3 : 4;
  }
  if (argc > 1 && strcmp(argv[1], "x32") == 0) {
    __asm__ volatile("syscall" : "=a"(ret) : "a"(0x40000000L | 39) : "rcx", "r11", "memory");
    return ret > 0 ? 3 : 4;
  }
  return 7;
}
)c";

class T4SandboxForeignAbi : public T4SandboxAbi {
 protected:
  void SetUp() override {
    T4SandboxAbi::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(CompileC(kForeignAbi, prog_)) << "gcc could not build the probe";
    caller_.Give(ws_.path());
  }
  // The foreign call must kill the process with SIGSYS (exit 159) and never reach the kernel.
  void ExpectKilledBySigsys(const std::string& mode) {
    auto benign = Sandbox(ws_.path(), {}, {prog_, "native"}, Opts());
    EXPECT_EQ(benign.status, 7) << "the probe binary itself must run: " << benign.err;
    auto attack = Sandbox(ws_.path(), {"--json"}, {prog_, mode}, Opts());
    EXPECT_EQ(attack.status, 128 + 31) << mode << ": expected death by SIGSYS; " << attack.err;
    auto report = JsonReport(attack);
    ASSERT_FALSE(report.is_discarded()) << attack.err;
    EXPECT_EQ(report.value("outcome", ""), "signaled");
    EXPECT_EQ(report.value("signal", 0), 31);
  }
  std::string prog_ = ws_ / "foreign-abi";
};

TEST_P(T4SandboxForeignAbi, Int80SyscallKillsTheProcess) {
  // Control outside the sandbox: some kernels/hypervisors fault on int 0x80 (no IA32
  // emulation), which would make SIGSEGV look like a pass or a failure for the wrong reason.
  auto control = ::anvil::testing::Run({prog_, "int80"}, Opts());
  if (control.status != 3) {
    GTEST_SKIP() << "SKIPPED: int 0x80 does not work even outside the sandbox on this machine "
                    "(status "
                 << control.status
                 << ", IA32 emulation off?); the 32-bit ABI "
                    "filter could NOT be exercised here";
  }
  ExpectKilledBySigsys("int80");
}

TEST_P(T4SandboxForeignAbi, X32SyscallKillsTheProcess) {
  // Outside, a kernel without the x32 ABI answers ENOSYS (4); with it, a pid (3). Either way
  // the sandbox must not let the call through.
  auto control = ::anvil::testing::Run({prog_, "x32"}, Opts());
  ASSERT_TRUE(control.status == 3 || control.status == 4) << control.status;
  ExpectKilledBySigsys("x32");
}

INSTANTIATE_TEST_SUITE_P(Callers, T4SandboxForeignAbi, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

TEST_P(T4SandboxAbi, TiocstiCannotInjectIntoTheTerminal) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) {
    if (master >= 0) close(master);
    GTEST_SKIP() << "SKIPPED: no pseudo-terminal could be opened; TIOCSTI on a real tty was NOT "
                    "tried (the /dev/null probe in T4SandboxSyscalls still covers the filter)";
  }
  int slave = open(ptsname(master), O_RDWR | O_NOCTTY | O_NONBLOCK);
  ASSERT_GE(slave, 0);
  RunOptions options;
  options.stdin_fd = slave;  // the command's stdin is a terminal
  auto result = SandboxPython(ws_.path(), R"py(
import ctypes, errno, os, termios
libc = ctypes.CDLL(None, use_errno=True)
print("isatty", os.isatty(0))
termios.tcgetattr(0)
print("tcgetattr OK")
for name, req in [("TIOCSTI", 0x5412), ("TIOCLINUX", 0x541C)]:
    for ch in b"id\n":
        c = ctypes.c_char(ch)
        r = libc.ioctl(0, req, ctypes.byref(c))
    print(name, "OK" if r == 0 else errno.errorcode[ctypes.get_errno()])
)py",
                              {}, Opts(options));
  char buf[64];
  ssize_t injected = read(slave, buf, sizeof(buf));  // what TIOCSTI would have queued
  close(slave);
  close(master);
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(result.out, "isatty True\ntcgetattr OK\nTIOCSTI EPERM\nTIOCLINUX EPERM\n");
  EXPECT_LE(injected, 0) << "bytes were pushed into the terminal's input queue";
}

INSTANTIATE_TEST_SUITE_P(Callers, T4SandboxAbi, ::testing::ValuesIn(kAllCallers), CallerParamName);

}  // namespace
}  // namespace t4_sandbox_syscalls_test
}  // namespace anvil::testing
