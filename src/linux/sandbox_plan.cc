#include "linux/sandbox_plan.h"

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>

#include "linux/landlock.h"

namespace anvil::launch {

Result<StartPlan> MakePlan(const StartRequest& request, const KernelFacts& kernel) {
  const SandboxPolicy& policy = request.policy;
  StartPlan plan;
  plan.confine_fs = policy.ConfinesFilesystem();
  plan.warm = request.warm;
  if (policy.network == NetworkMode::kProxy && (!request.has_proxy || !plan.confine_fs)) {
    return Fail("sandbox",
                "sandbox: --network proxy needs the proxy (anvil-proxy) and a read-only or "
                "workspace-write policy");
  }
  if (plan.warm) {
    // The call brings the program, argv and readable paths; everything else is set up first.
    if (request.has_program || request.has_argv || !policy.workspace_read_subpaths ||
        !policy.workspace_read_subpaths->empty()) {
      return Fail("sandbox",
                  "sandbox: a warm start takes the program, argv and readable paths from the "
                  "call only");
    }
  } else {
    if (!request.has_program) return Fail("sandbox", "sandbox: no program to run");
    if (!request.has_argv) return Fail("sandbox", "sandbox: empty argv");
  }
  if (plan.confine_fs) {
    if (kernel.landlock_abi < 1) {
      return Fail("sandbox", "sandbox: Landlock is required for policy " +
                                 std::string(ToString(policy.kind)) + " but " +
                                 kernel.landlock_reason + " (see `anvil doctor`)");
    }
    plan.landlock_abi = kernel.landlock_abi;
    plan.remap_root = kernel.caller_is_root;
    plan.clone_flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC;
    if (policy.network != NetworkMode::kFull) plan.clone_flags |= CLONE_NEWNET;
    // Root has no fallback: without a user namespace its command would be host uid 0, the
    // owner of every root-only file (root_remap.h). Workspace-write needs the mount view for
    // its read-only .git; the proxy needs the network namespace.
    if (!plan.remap_root && policy.kind == PolicyKind::kReadOnly &&
        policy.network != NetworkMode::kProxy) {
      plan.fallback_flags = 0;
    }
  }
  // Every policy but danger-full-access gets a filter: at least the set-id rules
  // (seccomp_setid.h) and, without the full network, the socket rules.
  if (policy.kind != PolicyKind::kDangerFullAccess) {
    plan.filter = FilterChoice{policy.network, /*deny_list=*/plan.confine_fs,
                               /*allow_tracing=*/request.allow_tracing && plan.confine_fs};
  }
  plan.observe_refusals = request.observe_refusals && plan.confine_fs && !plan.warm;
  return plan;
}

std::string CloneFailureMessage(const StartPlan& plan, int err) {
  const std::string why = std::strerror(err);
  if (plan.remap_root) {
    return "sandbox: cannot create the user namespace root's sandbox runs in (" + why +
           "): a command started by root runs as an unprivileged id inside one, so that it "
           "cannot read root's files (docs/policy.md, \"Root's sandbox\"). fix: allow user "
           "namespaces (sysctl user.max_user_namespaces > 0). See `anvil doctor`.";
  }
  return "sandbox: cannot create the user/mount/pid namespaces this policy needs (" + why +
         "). The writable view with read-only .git needs a mount namespace; as an "
         "unprivileged user that needs user namespaces (sysctl "
         "kernel.unprivileged_userns_clone=1, "
         "or on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0). See `anvil doctor`.";
}

int ReleasedTraceeSignal(int stop_signal) { return stop_signal == SIGTRAP ? 0 : stop_signal; }

KernelFacts ProbeKernel(bool need_landlock) {
  KernelFacts facts;
  facts.caller_is_root = ::geteuid() == 0;
  if (need_landlock) {
    auto probe = landlock::ProbeAbi();
    facts.landlock_abi = probe.abi;
    facts.landlock_reason = probe.reason;
  }
  return facts;
}

}  // namespace anvil::launch
