// The seccomp policies themselves, compiled with libseccomp. Production code does not call
// these at run time: the build runs them once (src/cmd/anvil_seccomp_gen.cc) and compiles the
// resulting BPF into the binaries as constants (seccomp.cc); a unit test checks that the
// constants are byte-identical to what these functions produce, so the two cannot drift.
#include "linux/seccomp_compile.h"

#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "common/unique_fd.h"
#include "linux/seccomp.h"
#include "linux/seccomp_setid.h"

namespace anvil::seccomp {
namespace {

struct CtxDeleter {
  void operator()(scmp_filter_ctx ctx) const { seccomp_release(ctx); }
};
using Ctx = std::unique_ptr<void, CtxDeleter>;

constexpr unsigned long kTiocsti = 0x5412;
constexpr unsigned long kTioclinux = 0x541C;
// A line discipline other than the terminal's (n_hdlc, n_gsm, ...) is rarely exercised kernel
// code, loaded on demand where dev.tty.ldisc_autoload=1, reachable from any terminal the command
// holds -- every sandbox can make pseudo-terminals in its own devpts.
constexpr unsigned long kTiocsetd = 0x5423;

// Personality bits that weaken exploit mitigations. The query form personality(0xffffffff) has
// bit 31 set, which no real persona has, so each rule also requires bit 31 clear.
constexpr unsigned long kAddrNoRandomize = 0x0040000;
constexpr unsigned long kMmapPageZero = 0x0100000;
constexpr unsigned long kAddrCompatLayout = 0x0200000;
constexpr unsigned long kReadImpliesExec = 0x0400000;
constexpr unsigned long kPersonalityQueryBit = 0x80000000UL;

constexpr unsigned long kNamespaceCloneFlags = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC |
                                               CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET |
                                               CLONE_NEWCGROUP;

// libseccomp's SCMP_An() macros are C99 compound literals, which clang rejects in C++.
scmp_arg_cmp Cmp(unsigned arg, scmp_compare op, uint64_t a, uint64_t b) {
  return scmp_arg_cmp{arg, op, a, b};
}

Status Check(int rc, const char* what) {
  if (rc < 0) return SysFail("sandbox", std::string("seccomp: ") + what, -rc);
  return Ok();
}

Status DenyByName(scmp_filter_ctx ctx, const char* name, int err = EPERM) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return Ok();  // syscall unknown to this libseccomp/arch
  return Check(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), nr, 0), name);
}

Result<std::vector<sock_filter>> Export(scmp_filter_ctx ctx) {
  UniqueFd mem(memfd_create("anvil-seccomp", MFD_CLOEXEC));
  if (!mem) return SysFail("sandbox", "memfd_create");
  if (auto s = Check(seccomp_export_bpf(ctx, mem.Get()), "export"); !s)
    return tl::unexpected(s.error());
  struct stat st {};
  if (fstat(mem.Get(), &st) != 0) return SysFail("sandbox", "fstat seccomp memfd");
  if (st.st_size <= 0 || st.st_size % sizeof(sock_filter) != 0) {
    return Fail("sandbox", "seccomp: exported program has a bad size");
  }
  std::vector<sock_filter> insns(st.st_size / sizeof(sock_filter));
  if (pread(mem.Get(), insns.data(), st.st_size, 0) != st.st_size) {
    return SysFail("sandbox", "read seccomp program");
  }
  return insns;
}

// --network none in a network namespace of the sandbox's own (nothing but its loopback): Unix,
// IPv4 and IPv6 sockets, and netlink for route queries only (getaddrinfo's AI_ADDRCONFIG,
// getifaddrs); every other family — packet, raw netlink protocols, the rest — is refused.
Status AddOwnLoopbackSocketRules(scmp_filter_ctx c) {
  constexpr unsigned kNetlinkRoute = 0;
  for (int nr : {SCMP_SYS(socket), SCMP_SYS(socketpair)}) {
    if (auto s = Check(
            seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), nr, 1, Cmp(0, SCMP_CMP_GT, AF_NETLINK, 0)),
            "socket");
        !s)
      return s;
    for (int family = 0; family < AF_NETLINK; ++family) {
      if (family == AF_UNIX || family == AF_INET || family == AF_INET6) continue;
      if (auto s = Check(seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), nr, 1,
                                          Cmp(0, SCMP_CMP_EQ, static_cast<unsigned>(family), 0)),
                         "socket");
          !s)
        return s;
    }
    if (auto s = Check(
            seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), nr, 2, Cmp(0, SCMP_CMP_EQ, AF_NETLINK, 0),
                             Cmp(2, SCMP_CMP_NE, kNetlinkRoute, 0)),
            "socket");
        !s)
      return s;
  }
  return Ok();
}

}  // namespace

const std::vector<const char*>& CommandDeniedSyscalls() {
  static const std::vector<const char*> kDenied = {"ptrace",
                                                   "process_vm_readv",
                                                   "process_vm_writev",
                                                   "pidfd_getfd",
                                                   "kcmp",
                                                   "mount",
                                                   "umount2",
                                                   "pivot_root",
                                                   "chroot",
                                                   "unshare",
                                                   "setns",
                                                   "move_mount",
                                                   "open_tree",
                                                   "fsopen",
                                                   "fsmount",
                                                   "fspick",
                                                   "fsconfig",
                                                   "mount_setattr",
                                                   "bpf",
                                                   "perf_event_open",
                                                   "keyctl",
                                                   "add_key",
                                                   "request_key",
                                                   "userfaultfd",
                                                   "io_uring_setup",
                                                   "io_uring_enter",
                                                   "io_uring_register",
                                                   "kexec_load",
                                                   "kexec_file_load",
                                                   "init_module",
                                                   "finit_module",
                                                   "delete_module",
                                                   "open_by_handle_at",
                                                   "acct",
                                                   "swapon",
                                                   "swapoff",
                                                   "reboot",
                                                   "syslog",
                                                   "vhangup",
                                                   "iopl",
                                                   "ioperm",
                                                   "quotactl",
                                                   "lookup_dcookie",
                                                   "uselib",
                                                   "settimeofday",
                                                   "clock_settime",
                                                   "clock_adjtime",
                                                   "fanotify_init"};
  return kDenied;
}

Result<std::vector<sock_filter>> CompileCommandFilter(NetworkMode network, bool deny_list,
                                                      bool set_id_rules,
                                                      bool own_network_namespace) {
  Ctx ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return Fail("sandbox", "seccomp_init failed");
  scmp_filter_ctx c = ctx.get();
  // A foreign ABI (32-bit int 0x80, x32) would dodge every syscall-number rule: kill outright.
  if (auto s =
          Check(seccomp_attr_set(c, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS), "badarch");
      !s)
    return tl::unexpected(s.error());
  if (deny_list) {
    for (const char* name : CommandDeniedSyscalls()) {
      if (auto s = DenyByName(c, name); !s) return tl::unexpected(s.error());
    }
    // clone3 passes its flags in memory where BPF cannot see them; ENOSYS makes libc fall back
    // to clone(2), whose namespace flags are checked below.
    if (auto s = DenyByName(c, "clone3", ENOSYS); !s) return tl::unexpected(s.error());
    for (unsigned long flag = 1; flag != 0 && flag <= kNamespaceCloneFlags; flag <<= 1) {
      if ((kNamespaceCloneFlags & flag) == 0) continue;
      if (auto s = Check(seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                                          Cmp(0, SCMP_CMP_MASKED_EQ, flag, flag)),
                         "clone");
          !s)
        return tl::unexpected(s.error());
    }
    for (unsigned long request : {kTiocsti, kTioclinux, kTiocsetd}) {
      if (auto s = Check(seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                                          Cmp(1, SCMP_CMP_MASKED_EQ, 0xffffffffUL, request)),
                         "ioctl");
          !s)
        return tl::unexpected(s.error());
    }
    for (unsigned long bit :
         {kAddrNoRandomize, kMmapPageZero, kAddrCompatLayout, kReadImpliesExec}) {
      if (auto s =
              Check(seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1,
                                     Cmp(0, SCMP_CMP_MASKED_EQ, bit | kPersonalityQueryBit, bit)),
                    "personality");
          !s)
        return tl::unexpected(s.error());
    }
  }
  // Every policy that gets this filter, external-sandbox too, keeps set-id bits off files.
  if (set_id_rules) {
    if (auto s = AddSetIdRules(c); !s) return tl::unexpected(s.error());
  }
  if (network == NetworkMode::kNone && own_network_namespace) {
    if (auto s = AddOwnLoopbackSocketRules(c); !s) return tl::unexpected(s.error());
  } else if (network == NetworkMode::kNone) {
    for (int nr : {SCMP_SYS(socket), SCMP_SYS(socketpair)}) {
      if (auto s = Check(
              seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), nr, 1, Cmp(0, SCMP_CMP_NE, AF_UNIX, 0)),
              "socket");
          !s)
        return tl::unexpected(s.error());
    }
  }
  if (network == NetworkMode::kProxy) {
    // Unix and IP sockets only (the namespace has nothing but loopback, where the proxy
    // listens): no netlink, packet or other families.
    for (int nr : {SCMP_SYS(socket), SCMP_SYS(socketpair)}) {
      if (auto s = Check(seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), nr, 1,
                                          Cmp(0, SCMP_CMP_GE, AF_INET6 + 1, 0)),
                         "socket");
          !s)
        return tl::unexpected(s.error());
      for (int family = 0; family < AF_INET6; ++family) {
        if (family == AF_UNIX || family == AF_INET) continue;
        if (auto s = Check(seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), nr, 1,
                                            Cmp(0, SCMP_CMP_EQ, static_cast<unsigned>(family), 0)),
                           "socket");
            !s)
          return tl::unexpected(s.error());
      }
    }
  }
  return Export(c);
}

Result<std::vector<sock_filter>> CompilePluginHostFilter() {
  Ctx ctx(seccomp_init(SCMP_ACT_ERRNO(EPERM)));
  if (!ctx) return Fail("sandbox", "seccomp_init failed");
  scmp_filter_ctx c = ctx.get();
  if (auto s =
          Check(seccomp_attr_set(c, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS), "badarch");
      !s)
    return tl::unexpected(s.error());
  static constexpr const char* kAllowed[] = {"read",
                                             "write",
                                             "readv",
                                             "writev",
                                             "recvmsg",
                                             "sendmsg",
                                             "recvfrom",
                                             "sendto",
                                             "close",
                                             "poll",
                                             "ppoll",
                                             "munmap",
                                             "mremap",
                                             "brk",
                                             "madvise",
                                             "futex",
                                             "exit",
                                             "exit_group",
                                             "rt_sigreturn",
                                             "rt_sigprocmask",
                                             "clock_gettime",
                                             "clock_getres",
                                             "gettimeofday",
                                             "time",
                                             "getrandom",
                                             "getpid",
                                             "gettid",
                                             "sched_yield",
                                             "restart_syscall",
                                             "nanosleep",
                                             "clock_nanosleep",
                                             "shutdown"};
  // Sanitizer builds only (seccomp.h, kSanitizerRuntimeAllowances): the runtime's
  // memory-accessibility probe writes the range into a fresh pipe, and ASan asks for the
  // thread's alternate signal stack before every noreturn call (longjmp, throw, _exit). A pipe
  // reaches nothing outside the process (RLIMIT_NOFILE still bounds the descriptors);
  // sigaltstack only names memory of the process itself.
  static constexpr const char* kSanitizerRuntime[] = {"pipe", "pipe2", "sigaltstack"};
  auto allow = [&](const char* name) -> Status {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) return Ok();
    return Check(seccomp_rule_add(c, SCMP_ACT_ALLOW, nr, 0), name);
  };
  for (const char* name : kAllowed) {
    if (auto s = allow(name); !s) return tl::unexpected(s.error());
  }
  if constexpr (kSanitizerRuntimeAllowances) {
    for (const char* name : kSanitizerRuntime) {
      if (auto s = allow(name); !s) return tl::unexpected(s.error());
    }
  }
  // Memory, but never executable memory: a VM bug must not become injected machine code.
  for (int nr : {SCMP_SYS(mmap), SCMP_SYS(mprotect)}) {
    if (auto s = Check(
            seccomp_rule_add(c, SCMP_ACT_ALLOW, nr, 1, Cmp(2, SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)),
            "mmap");
        !s)
      return tl::unexpected(s.error());
  }
  return Export(c);
}

}  // namespace anvil::seccomp
