// The decisions of a sandbox start, stated exactly (linux/sandbox_plan.h): for every policy,
// network mode, caller (root or not) and Landlock state, which namespaces init is cloned with,
// the one fallback, root's id remap, the command's seccomp filter and Landlock ABI, or the
// refusal. No namespace is made; the security tests prove each wall on a real kernel.
#include "linux/sandbox_plan.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>

#include <cerrno>
#include <string>

namespace anvil::launch {
namespace sandbox_plan_test {
namespace {

constexpr unsigned long kBase = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC;
constexpr unsigned long kNet = CLONE_NEWNET;

StartRequest Cold(PolicyKind kind, NetworkMode network) {
  StartRequest r;
  r.policy.kind = kind;
  r.policy.network = network;
  r.has_program = true;
  r.has_argv = true;
  r.has_proxy = network == NetworkMode::kProxy;
  return r;
}

KernelFacts Kernel(bool root, int abi = 7) {
  return KernelFacts{root, abi, abi ? "" : "not built into this kernel"};
}

struct Row {
  PolicyKind kind;
  NetworkMode network;
  bool root;
  unsigned long clone_flags;
  std::optional<unsigned long> fallback;
  bool remap_root;
  std::optional<FilterChoice> filter;
  int landlock_abi;
};

TEST(SandboxPlan, WallsForEveryPolicyNetworkAndCaller) {
  using K = PolicyKind;
  using N = NetworkMode;
  const FilterChoice deny_none{N::kNone, true}, deny_proxy{N::kProxy, true},
      deny_full{N::kFull, true};
  const Row rows[] = {
      // read-only: every namespace; a user's fallback is no namespace at all (Landlock alone).
      {K::kReadOnly, N::kNone, false, kBase | kNet, 0UL, false, deny_none, 7},
      {K::kReadOnly, N::kFull, false, kBase, 0UL, false, deny_full, 7},
      {K::kReadOnly, N::kProxy, false, kBase | kNet, std::nullopt, false, deny_proxy, 7},
      // root never falls back: outside a user namespace its command would be host uid 0.
      {K::kReadOnly, N::kNone, true, kBase | kNet, std::nullopt, true, deny_none, 7},
      {K::kReadOnly, N::kFull, true, kBase, std::nullopt, true, deny_full, 7},
      // workspace-write needs the mount view (read-only .git): no fallback.
      {K::kWorkspaceWrite, N::kNone, false, kBase | kNet, std::nullopt, false, deny_none, 7},
      {K::kWorkspaceWrite, N::kFull, false, kBase, std::nullopt, false, deny_full, 7},
      {K::kWorkspaceWrite, N::kProxy, false, kBase | kNet, std::nullopt, false, deny_proxy, 7},
      {K::kWorkspaceWrite, N::kNone, true, kBase | kNet, std::nullopt, true, deny_none, 7},
      {K::kWorkspaceWrite, N::kProxy, true, kBase | kNet, std::nullopt, true, deny_proxy, 7},
      // external-sandbox: no namespace, no Landlock, the set-id and network rules only.
      {K::kExternalSandbox, N::kNone, false, 0, std::nullopt, false, FilterChoice{N::kNone, false},
       0},
      {K::kExternalSandbox, N::kFull, true, 0, std::nullopt, false, FilterChoice{N::kFull, false},
       0},
      // danger-full-access: nothing at all.
      {K::kDangerFullAccess, N::kFull, false, 0, std::nullopt, false, std::nullopt, 0},
      {K::kDangerFullAccess, N::kNone, true, 0, std::nullopt, false, std::nullopt, 0},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(ToString(row.kind)) + " network " +
                 std::string(ToString(row.network)) + (row.root ? " root" : " user"));
    auto plan = MakePlan(Cold(row.kind, row.network), Kernel(row.root));
    ASSERT_TRUE(plan) << plan.error().ToString();
    EXPECT_EQ(plan->clone_flags, row.clone_flags);
    EXPECT_EQ(plan->fallback_flags, row.fallback);
    EXPECT_EQ(plan->remap_root, row.remap_root);
    EXPECT_EQ(plan->filter, row.filter);
    EXPECT_EQ(plan->landlock_abi, row.landlock_abi);
    EXPECT_EQ(plan->confine_fs, row.landlock_abi > 0);
  }
}

TEST(SandboxPlan, TracingIsLeftToLandlockOnlyWhereLandlockConfinesTheCommand) {
  // `anvil sandbox` asks for it: read-only and workspace-write get the filter without the
  // tracing rows, for every network mode and caller (Landlock keeps ptrace to the command's
  // own processes, with or without the pid namespace fallback).
  for (PolicyKind kind : {PolicyKind::kReadOnly, PolicyKind::kWorkspaceWrite}) {
    for (NetworkMode network : {NetworkMode::kNone, NetworkMode::kProxy, NetworkMode::kFull}) {
      for (bool root : {false, true}) {
        SCOPED_TRACE(std::string(ToString(kind)) + " " + std::string(ToString(network)) +
                     (root ? " root" : " user"));
        StartRequest r = Cold(kind, network);
        r.allow_tracing = true;
        auto plan = MakePlan(r, Kernel(root));
        ASSERT_TRUE(plan) << plan.error().ToString();
        EXPECT_EQ(plan->filter, (FilterChoice{network, true, true}));
        // anvil-exec-runner does not ask: the rows stay.
        auto runner = MakePlan(Cold(kind, network), Kernel(root));
        ASSERT_TRUE(runner);
        EXPECT_EQ(runner->filter, (FilterChoice{network, true, false}));
      }
    }
  }
  // Without Landlock there is no filter row to leave out and nothing to keep tracing in.
  StartRequest outside = Cold(PolicyKind::kExternalSandbox, NetworkMode::kNone);
  outside.allow_tracing = true;
  auto plan = MakePlan(outside, Kernel(false, 0));
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->filter, (FilterChoice{NetworkMode::kNone, false, false}));
}

TEST(SandboxPlan, InitReleasesATraceeWithItsSignalButTheExecsTrap) {
  EXPECT_EQ(ReleasedTraceeSignal(SIGCHLD), SIGCHLD);
  EXPECT_EQ(ReleasedTraceeSignal(SIGUSR1), SIGUSR1);
  EXPECT_EQ(ReleasedTraceeSignal(SIGTSTP), SIGTSTP);  // then a job-control stop of its own
  EXPECT_EQ(ReleasedTraceeSignal(SIGTERM), SIGTERM);
  EXPECT_EQ(ReleasedTraceeSignal(SIGTRAP), 0);  // delivered, it would kill the program
}

TEST(SandboxPlan, TheLandlockAbiIsTheKernels) {
  for (int abi : {1, 2, 4, 6, 7}) {
    auto plan = MakePlan(Cold(PolicyKind::kWorkspaceWrite, NetworkMode::kNone), Kernel(false, abi));
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->landlock_abi, abi);
  }
}

TEST(SandboxPlan, AConfinedPolicyWithoutLandlockDoesNotStart) {
  for (PolicyKind kind : {PolicyKind::kReadOnly, PolicyKind::kWorkspaceWrite}) {
    auto plan = MakePlan(Cold(kind, NetworkMode::kNone), Kernel(false, 0));
    ASSERT_FALSE(plan);
    EXPECT_NE(
        plan.error().message.find("Landlock is required for policy " + std::string(ToString(kind)) +
                                  " but not built into this kernel"),
        std::string::npos)
        << plan.error().message;
    EXPECT_NE(plan.error().message.find("anvil doctor"), std::string::npos);
  }
  // Its neighbours need no Landlock.
  EXPECT_TRUE(MakePlan(Cold(PolicyKind::kExternalSandbox, NetworkMode::kNone), Kernel(false, 0)));
  EXPECT_TRUE(MakePlan(Cold(PolicyKind::kDangerFullAccess, NetworkMode::kFull), Kernel(false, 0)));
}

TEST(SandboxPlan, TheProxyNeedsItsChannelAndAConfinedPolicy) {
  StartRequest r = Cold(PolicyKind::kWorkspaceWrite, NetworkMode::kProxy);
  r.has_proxy = false;
  auto plan = MakePlan(r, Kernel(false));
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.error().message.find("--network proxy needs the proxy"), std::string::npos);
  StartRequest outside = Cold(PolicyKind::kExternalSandbox, NetworkMode::kProxy);
  EXPECT_FALSE(MakePlan(outside, Kernel(false)));
  EXPECT_TRUE(MakePlan(Cold(PolicyKind::kReadOnly, NetworkMode::kProxy), Kernel(false)));
}

TEST(SandboxPlan, AColdStartNeedsAProgramAndArgv) {
  StartRequest r = Cold(PolicyKind::kReadOnly, NetworkMode::kNone);
  r.has_program = false;
  auto plan = MakePlan(r, Kernel(false));
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().message, "sandbox: no program to run");
  r = Cold(PolicyKind::kReadOnly, NetworkMode::kNone);
  r.has_argv = false;
  plan = MakePlan(r, Kernel(false));
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().message, "sandbox: empty argv");
}

TEST(SandboxPlan, AWarmStartTakesProgramArgvAndPathsFromTheCallOnly) {
  // Each request made afresh, not copied: GCC's -O3 sees a copied optional<vector> as maybe
  // uninitialized.
  auto warm_request = [] {
    StartRequest warm;
    warm.policy.kind = PolicyKind::kReadOnly;
    warm.policy.workspace_read_subpaths.emplace();
    warm.warm = true;
    warm.observe_refusals = true;
    return warm;
  };
  auto plan = MakePlan(warm_request(), Kernel(false));
  ASSERT_TRUE(plan) << plan.error().ToString();
  EXPECT_TRUE(plan->warm);
  EXPECT_FALSE(plan->observe_refusals);  // cold starts only
  for (int breach = 0; breach < 4; ++breach) {
    StartRequest r = warm_request();
    if (breach == 0) r.has_program = true;
    if (breach == 1) r.has_argv = true;
    if (breach == 2) r.policy.workspace_read_subpaths.reset();
    if (breach == 3) r.policy.workspace_read_subpaths = std::vector<std::string>{"src"};
    auto refused = MakePlan(r, Kernel(false));
    ASSERT_FALSE(refused) << breach;
    EXPECT_NE(refused.error().message.find("warm start takes the program"), std::string::npos);
  }
}

TEST(SandboxPlan, RefusalsAreObservedInConfinedColdStartsOnly) {
  for (PolicyKind kind : {PolicyKind::kReadOnly, PolicyKind::kWorkspaceWrite,
                          PolicyKind::kExternalSandbox, PolicyKind::kDangerFullAccess}) {
    StartRequest r = Cold(kind, NetworkMode::kNone);
    r.observe_refusals = true;
    auto plan = MakePlan(r, Kernel(false));
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->observe_refusals, plan->confine_fs) << ToString(kind);
  }
  auto quiet = MakePlan(Cold(PolicyKind::kReadOnly, NetworkMode::kNone), Kernel(false));
  ASSERT_TRUE(quiet);
  EXPECT_FALSE(quiet->observe_refusals);
}

TEST(SandboxPlan, CloneFailureNamesTheCauseAndTheFix) {
  auto user = MakePlan(Cold(PolicyKind::kWorkspaceWrite, NetworkMode::kNone), Kernel(false));
  ASSERT_TRUE(user);
  std::string m = CloneFailureMessage(*user, EPERM);
  EXPECT_NE(m.find("cannot create the user/mount/pid namespaces"), std::string::npos);
  EXPECT_NE(m.find("Operation not permitted"), std::string::npos);
  EXPECT_NE(m.find("unprivileged_userns_clone"), std::string::npos);
  auto root = MakePlan(Cold(PolicyKind::kReadOnly, NetworkMode::kNone), Kernel(true));
  ASSERT_TRUE(root);
  m = CloneFailureMessage(*root, ENOSPC);
  EXPECT_NE(m.find("root's sandbox"), std::string::npos);
  EXPECT_NE(m.find("user.max_user_namespaces"), std::string::npos);
}

}  // namespace
}  // namespace sandbox_plan_test
}  // namespace anvil::launch
