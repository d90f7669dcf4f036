// What a sandbox start decides before any syscall (MakePlan): the namespaces init is cloned
// with and the one fallback, whether root's ids are remapped, the command's seccomp filter and
// the Landlock ABI of its rules, or why it cannot start at all. Pure: the kernel's facts come in
// as data, so tests/unit/sandbox_plan_test.cc states the walls for every policy x caller x
// kernel without making a namespace. RunSandboxed (sandbox_launch.cc) carries the plan out.
#pragma once

#include <optional>
#include <string>

#include "common/result.h"
#include "policy/sandbox_policy.h"

namespace anvil::launch {

// What the running kernel and caller offer (ProbeKernel; a table in the tests).
struct KernelFacts {
  bool caller_is_root = false;  // effective uid 0
  int landlock_abi = 0;         // 0: Landlock unavailable
  std::string landlock_reason;  // why 0 ("not built into this kernel", ...)
};

// The part of a LaunchSpec the decisions read (StartRequestOf).
struct StartRequest {
  SandboxPolicy policy;
  bool has_program = false;  // LaunchSpec::program is open
  bool has_argv = false;     // LaunchSpec::argv is not empty
  bool warm = false;         // LaunchSpec::call_channel: the call comes later
  bool has_proxy = false;    // LaunchSpec::proxy_channel
  bool observe_refusals = false;
  bool allow_tracing = false;  // LaunchSpec::allow_tracing
};

// The seccomp filter of the command (seccomp::BuildCommandFilter's arguments).
struct FilterChoice {
  NetworkMode network = NetworkMode::kNone;
  bool deny_list = true;  // false: only the set-id and network rules (external-sandbox)
  // ptrace and process_vm_* left to the kernel and Landlock (LaunchSpec::allow_tracing), only
  // where Landlock confines the command: its domain is what keeps them to its own processes.
  bool allow_tracing = false;
  bool operator==(const FilterChoice&) const = default;
};

struct StartPlan {
  bool confine_fs = false;  // read-only / workspace-write: mount view + Landlock
  bool warm = false;
  // Root's sandbox: its 0 maps to an unprivileged host id (root_remap.h).
  bool remap_root = false;
  // CLONE_NEW* of init's clone.
  unsigned long clone_flags = 0;
  // Tried once when that clone fails; none where a weaker sandbox would not hold the policy.
  // Read-only needs no mount view (Landlock alone denies every write and every read outside
  // the roots; a subreaper replaces the pid namespace; /tmp is then not writable).
  std::optional<unsigned long> fallback_flags;
  std::optional<FilterChoice> filter;  // none: danger-full-access
  int landlock_abi = 0;                // 0 when the filesystem is not confined
  // The command's refusals are watched (refusal_observer.h): cold, confined starts only.
  bool observe_refusals = false;
};

Result<StartPlan> MakePlan(const StartRequest& request, const KernelFacts& kernel);

// The error when init's clone (and its fallback) failed with `err`: which namespaces, why they
// are needed, and what to change.
std::string CloneFailureMessage(const StartPlan& plan, int err);

// A process of the sandbox that made init its tracer (PTRACE_TRACEME with init as its parent,
// allowed with LaunchSpec::allow_tracing) stops at each signal for a tracer that never resumes
// it; init lets it go at once (PTRACE_DETACH), passing on the signal it stopped with -- but for
// SIGTRAP, which is the kernel's own mark of the tracee's exec (or a breakpoint that only a
// debugger would have wanted), and which delivered would kill it. Returns the signal to pass.
int ReleasedTraceeSignal(int stop_signal);

// The facts of this process and kernel. Probes Landlock only when `need_landlock`.
KernelFacts ProbeKernel(bool need_landlock);

}  // namespace anvil::launch
