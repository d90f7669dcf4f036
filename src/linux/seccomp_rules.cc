#include "linux/seccomp_rules.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <cerrno>

#include "linux/seccomp.h"
#include "linux/seccomp_setid.h"

namespace anvil::seccomp {
namespace {

constexpr uint64_t kTiocsti = 0x5412;
constexpr uint64_t kTioclinux = 0x541C;
// A line discipline other than the terminal's (n_hdlc, n_gsm, ...) is rarely exercised kernel
// code, loaded on demand where dev.tty.ldisc_autoload=1, reachable from any terminal the command
// holds -- every sandbox can make pseudo-terminals in its own devpts.
constexpr uint64_t kTiocsetd = 0x5423;

// Personality bits that weaken exploit mitigations. The query form personality(0xffffffff) has
// bit 31 set, which no real persona has, so each rule also requires bit 31 clear.
constexpr uint64_t kAddrNoRandomize = 0x0040000;
constexpr uint64_t kMmapPageZero = 0x0100000;
constexpr uint64_t kAddrCompatLayout = 0x0200000;
constexpr uint64_t kReadImpliesExec = 0x0400000;
constexpr uint64_t kPersonalityQueryBit = 0x80000000UL;

constexpr uint64_t kNamespaceCloneFlags = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC |
                                          CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET |
                                          CLONE_NEWCGROUP;

ArgCond Masked(unsigned arg, uint64_t mask, uint64_t datum) {
  return {ArgCond::kMaskedEq, arg, mask, datum};
}
ArgCond Cmp(ArgCond::Op op, unsigned arg, uint64_t value) { return {op, arg, value, 0}; }

void Refuse(RuleTable& t, const std::string& name, std::vector<ArgCond> when,
            bool required = true) {
  t.rules.push_back({name, Errno(EPERM), std::move(when), required});
}

// --network none in a network namespace of the sandbox's own (nothing but its loopback): Unix,
// IPv4 and IPv6 sockets, and netlink for route queries only (getaddrinfo's AI_ADDRCONFIG,
// getifaddrs); every other family — packet, raw netlink protocols, the rest — is refused.
void AddOwnLoopbackSocketRules(RuleTable& t) {
  constexpr uint64_t kNetlinkRoute = 0;
  for (const char* call : {"socket", "socketpair"}) {
    Refuse(t, call, {Cmp(ArgCond::kGt, 0, AF_NETLINK)});
    for (int family = 0; family < AF_NETLINK; ++family) {
      if (family == AF_UNIX || family == AF_INET || family == AF_INET6) continue;
      Refuse(t, call, {Cmp(ArgCond::kEq, 0, static_cast<uint64_t>(family))});
    }
    Refuse(t, call, {Cmp(ArgCond::kEq, 0, AF_NETLINK), Cmp(ArgCond::kNe, 2, kNetlinkRoute)});
  }
}

}  // namespace

bool ArgCond::Holds(uint64_t argument) const {
  switch (op) {
    case kEq:
      return argument == value;
    case kNe:
      return argument != value;
    case kGt:
      return argument > value;
    case kGe:
      return argument >= value;
    case kMaskedEq:
      return (argument & value) == datum;
  }
  return false;
}

const std::vector<const char*>& CommandDeniedSyscalls() {
  static const std::vector<const char*> kDenied = {"pidfd_getfd",
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

const std::vector<const char*>& TracingSyscalls() {
  static const std::vector<const char*> kTracing = {"ptrace", "process_vm_readv",
                                                    "process_vm_writev"};
  return kTracing;
}

RuleTable CommandRules(NetworkMode network, bool deny_list, bool set_id_rules,
                       bool own_network_namespace, bool allow_tracing) {
  RuleTable t;
  t.default_action = kAllowAction;
  if (deny_list) {
    if (!allow_tracing) {
      for (const char* name : TracingSyscalls()) Refuse(t, name, {});
    }
    // A syscall this libseccomp does not know is one this kernel's programs cannot make.
    for (const char* name : CommandDeniedSyscalls()) Refuse(t, name, {}, /*required=*/false);
    // clone3 passes its flags in memory where BPF cannot see them; ENOSYS makes libc fall back
    // to clone(2), whose namespace flags are checked below.
    t.rules.push_back({"clone3", Errno(ENOSYS), {}, false});
    for (uint64_t flag = 1; flag != 0 && flag <= kNamespaceCloneFlags; flag <<= 1) {
      if ((kNamespaceCloneFlags & flag) == 0) continue;
      Refuse(t, "clone", {Masked(0, flag, flag)});
    }
    for (uint64_t request : {kTiocsti, kTioclinux, kTiocsetd}) {
      Refuse(t, "ioctl", {Masked(1, 0xffffffffUL, request)});
    }
    for (uint64_t bit : {kAddrNoRandomize, kMmapPageZero, kAddrCompatLayout, kReadImpliesExec}) {
      Refuse(t, "personality", {Masked(0, bit | kPersonalityQueryBit, bit)});
    }
  }
  // Every policy that gets this filter, external-sandbox too, keeps set-id bits off files.
  if (set_id_rules) AppendSetIdRules(t.rules);
  if (network == NetworkMode::kNone && own_network_namespace) {
    AddOwnLoopbackSocketRules(t);
  } else if (network == NetworkMode::kNone) {
    for (const char* call : {"socket", "socketpair"}) {
      Refuse(t, call, {Cmp(ArgCond::kNe, 0, AF_UNIX)});
    }
  }
  if (network == NetworkMode::kProxy) {
    // Unix and IP sockets only (the namespace has nothing but loopback, where the proxy
    // listens): no netlink, packet or other families.
    for (const char* call : {"socket", "socketpair"}) {
      Refuse(t, call, {Cmp(ArgCond::kGe, 0, AF_INET6 + 1)});
      for (int family = 0; family < AF_INET6; ++family) {
        if (family == AF_UNIX || family == AF_INET) continue;
        Refuse(t, call, {Cmp(ArgCond::kEq, 0, static_cast<uint64_t>(family))});
      }
    }
  }
  return t;
}

const std::vector<const char*>& PluginHostAllowedSyscalls() {
  static const std::vector<const char*> kAllowed = {"read",
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
  return kAllowed;
}

const std::vector<const char*>& PluginHostSanitizerSyscalls() {
  // Sanitizer builds only (seccomp.h, kSanitizerRuntimeAllowances): the runtime's
  // memory-accessibility probe writes the range into a fresh pipe, and ASan asks for the
  // thread's alternate signal stack before every noreturn call (longjmp, throw, _exit). A pipe
  // reaches nothing outside the process (RLIMIT_NOFILE still bounds the descriptors);
  // sigaltstack only names memory of the process itself.
  static const std::vector<const char*> kSanitizerRuntime = {"pipe", "pipe2", "sigaltstack"};
  return kSanitizerRuntime;
}

RuleTable RefusalObserverRules(bool watch_connect) {
  RuleTable t;
  t.default_action = kAllowAction;
  t.foreign_arch = kAllowAction;
  // open(path, flags) and openat(dirfd, path, flags): one row per write-intent bit, so reads
  // never stop.
  for (auto [name, arg] : {std::pair<const char*, unsigned>{"open", 1}, {"openat", 2}}) {
    for (uint64_t bit :
         {uint64_t{O_WRONLY}, uint64_t{O_RDWR}, uint64_t{O_CREAT}, uint64_t{O_TRUNC}}) {
      t.rules.push_back({name, kNotifyAction, {{ArgCond::kMaskedEq, arg, bit, bit}}, false});
    }
  }
  for (const char* name :
       {"creat", "openat2", "mkdir", "mkdirat", "mknod", "mknodat", "unlink", "unlinkat", "rmdir",
        "rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat", "truncate"}) {
    t.rules.push_back({name, kNotifyAction, {}, false});
  }
  if (watch_connect) t.rules.push_back({"connect", kNotifyAction, {}, false});
  return t;
}

RuleTable PluginHostRules() {
  RuleTable t;
  t.default_action = Errno(EPERM);
  for (const char* name : PluginHostAllowedSyscalls()) {
    t.rules.push_back({name, kAllowAction, {}, false});
  }
  if constexpr (kSanitizerRuntimeAllowances) {
    for (const char* name : PluginHostSanitizerSyscalls()) {
      t.rules.push_back({name, kAllowAction, {}, false});
    }
  }
  // Memory, but never executable memory: a VM bug must not become injected machine code.
  for (const char* call : {"mmap", "mprotect"}) {
    t.rules.push_back({call, kAllowAction, {Masked(2, PROT_EXEC, 0)}, true});
  }
  return t;
}

}  // namespace anvil::seccomp
