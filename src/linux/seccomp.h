// seccomp-bpf filters. The policies are tables of rules (seccomp_rules.h), compiled once at build
// time with libseccomp (seccomp_compile.cc) into constant BPF programs: at run time nothing is
// compiled, the sandboxed child only loads a ready program. Unit tests check the constants
// against a fresh compile, and every row of the tables against the constants.
#pragma once

#include <linux/filter.h>

#include <vector>

#include "common/result.h"
#include "policy/sandbox_policy.h"

namespace anvil::seccomp {

class Program {
 public:
  Program() = default;
  explicit Program(std::vector<sock_filter> insns) : insns_(std::move(insns)) {}
  bool Empty() const { return insns_.empty(); }
  size_t size() const { return insns_.size(); }
  const std::vector<sock_filter>& insns() const { return insns_; }
  // Loads the filter on the calling thread. Requires no_new_privs (checked). Async-signal-safe
  // apart from the error value, so it can run between fork and exec.
  Status Install() const;

 private:
  std::vector<sock_filter> insns_;
};

// The deny-list filter for untrusted commands (anvil sandbox, anvil-exec-runner): everything a
// normal program needs is allowed, while the kernel attack surface and the escape hatches are
// refused with EPERM — ptrace and process_vm_* (unless `allow_tracing`: `anvil sandbox`, where
// the kernel's checks and Landlock keep them to the command's own processes), pidfd_getfd,
// kcmp, mount/namespace syscalls, bpf, perf_event_open,
// the key-ring, userfaultfd, io_uring, module/kexec loading, dangerous personality bits,
// TIOCSTI/TIOCLINUX/TIOCSETD, open_by_handle_at. Non-native ABIs (i386 int 0x80, x32) kill the
// process.
// Every mode argument with S_ISUID/S_ISGID is refused and openat2 is ENOSYS (seccomp_setid.h).
// NetworkMode::kNone additionally refuses every socket family but AF_UNIX, or, with
// `own_network_namespace` (the command is in a network namespace of its own that has only
// loopback), every family but Unix, IPv4, IPv6 and route netlink. With `deny_list` false only
// the set-id and network rules are built (policy external-sandbox, which never has a namespace
// of its own).
Result<Program> BuildCommandFilter(NetworkMode network, bool deny_list = true,
                                   bool own_network_namespace = false, bool allow_tracing = false);

// The command filter's deny-list with the full network and without the set-id rules, for
// Anvil's own services confining themselves (the gateway, anvil-proxy): the gateway serves
// workspace files through openat2, which the command filter answers ENOSYS.
Result<Program> BuildServiceFilter();

// The allowlist for anvil-plugin-host after lockdown: only what the VM and its two already
// connected sockets need (read/write/sendmsg/recvmsg/poll, memory without PROT_EXEC, futex,
// clocks, getrandom, exit). Everything else — open*, socket, connect, execve*, fork/clone,
// ptrace, stat of paths — fails with EPERM; a foreign ABI kills the process.
Result<Program> BuildPluginHostFilter();

// True only in sanitizer builds (CMake ANVIL_SANITIZER_RUNTIME, set by the asan/fuzz/tsan
// presets, refused without -fsanitize): there the plugin-host allowlist adds pipe/pipe2, because
// the sanitizer runtime probes whether memory is readable by writing it into a pipe
// (IsAccessibleMemoryRange), and UBSan's vptr check does that for every new dynamic type; denied,
// each check after lockdown reports "invalid vptr". It adds sigaltstack too: ASan queries it
// before every noreturn call (__asan_handle_no_return: longjmp, throw, _exit) and aborts with
// "CHECK failed: asan_posix.cpp" when refused. The host then also keeps no RLIMIT_AS (ASan's
// shadow reservation). Release and dev builds never have any of these.
#ifdef ANVIL_SANITIZER_RUNTIME
inline constexpr bool kSanitizerRuntimeAllowances = true;
#else
inline constexpr bool kSanitizerRuntimeAllowances = false;
#endif

}  // namespace anvil::seccomp
