// The seccomp policies as tables: one row per rule, {syscall, action, argument conditions}. Pure
// data, no libseccomp: the build compiles each table (seccomp_compile.cc, at build time only)
// into the BPF the binaries carry (seccomp.h); the unit test runs every row through a BPF
// interpreter over the baked programs (tests/unit/seccomp_table_test.cc) and checks the lists
// in docs/policy.md ("The seccomp tables") against the rows, so prose, table and program
// cannot drift apart.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "policy/sandbox_policy.h"

namespace anvil::seccomp {

struct Action {
  // kNotify: the call waits for the filter's listener (the refusal observer's), which only
  // watches and always lets it continue.
  enum Kind { kAllow, kErrno, kKillProcess, kNotify } kind = kAllow;
  int err = 0;  // kErrno
  bool operator==(const Action&) const = default;
};
inline constexpr Action kAllowAction{Action::kAllow, 0};
inline constexpr Action kKillAction{Action::kKillProcess, 0};
inline constexpr Action kNotifyAction{Action::kNotify, 0};
constexpr Action Errno(int err) { return {Action::kErrno, err}; }

// One comparison of a 64-bit syscall argument, as libseccomp makes it.
struct ArgCond {
  enum Op { kEq, kNe, kGt, kGe, kMaskedEq } op = kEq;
  unsigned arg = 0;
  uint64_t value = 0;  // kMaskedEq: the mask
  uint64_t datum = 0;  // kMaskedEq: what the masked argument must equal; unused otherwise
  bool operator==(const ArgCond&) const = default;
  // Whether `argument` satisfies the comparison.
  bool Holds(uint64_t argument) const;
};

struct SyscallRule {
  std::string syscall;
  Action action;
  std::vector<ArgCond> when;  // every one must hold; empty: always
  // A syscall this libseccomp cannot name fails the build of the program rather than being
  // left out (rules whose absence would leave a call unfiltered).
  bool required = false;
  bool operator==(const SyscallRule&) const = default;
};

struct RuleTable {
  Action default_action;
  Action foreign_arch = kKillAction;  // a foreign syscall ABI (i386 int 0x80, x32)
  std::vector<SyscallRule> rules;
};

// The rules behind BuildCommandFilter and BuildServiceFilter (seccomp.h documents them).
// `set_id_rules` false: the service filter (no set-id rules, openat2 allowed).
// `own_network_namespace` (NetworkMode::kNone only): the command runs in a network namespace of
// its own with nothing but loopback, so IP sockets and route queries are allowed there.
// `allow_tracing` (`anvil sandbox`'s commands only; docs/policy.md "Debuggers and sanitizers"):
// ptrace and process_vm_readv/writev are left to the kernel's own checks and Landlock, which
// keep them to the command's own processes; otherwise (anvil-exec-runner, Anvil's services)
// they are refused.
RuleTable CommandRules(NetworkMode network, bool deny_list, bool set_id_rules = true,
                       bool own_network_namespace = false, bool allow_tracing = false);

// The rules behind BuildPluginHostFilter: an allowlist, everything else EPERM.
RuleTable PluginHostRules();

// The refusal observer's rules (linux/refusal_observer.h): the write-intent syscalls, and
// `connect` when `watch_connect`, go to its listener; everything else, a foreign ABI included
// (the command filter kills that), is allowed. It decides nothing.
RuleTable RefusalObserverRules(bool watch_connect);

// Names of the syscalls the command filter always refuses, whatever their arguments.
const std::vector<const char*>& CommandDeniedSyscalls();
// ptrace, process_vm_readv and process_vm_writev: refused unless `allow_tracing`.
const std::vector<const char*>& TracingSyscalls();

// The plugin host's unconditional allowlist, and what sanitizer builds add to it
// (seccomp.h, kSanitizerRuntimeAllowances).
const std::vector<const char*>& PluginHostAllowedSyscalls();
const std::vector<const char*>& PluginHostSanitizerSyscalls();

}  // namespace anvil::seccomp
