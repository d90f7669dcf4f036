#include "linux/landlock_rules.h"

#include <algorithm>

#include "linux/landlock.h"

namespace anvil::landlock {
namespace {

bool HasMaskBeneath(const FileView& view, const std::string& root) {
  return std::any_of(view.credential_masks.begin(), view.credential_masks.end(),
                     [&](const std::string& m) { return PathIsWithin(m, root); });
}

}  // namespace

RulesetPlan LandlockRulesFor(const FileView& view, NetworkMode network, int abi,
                             const Namespaces& ns, int own_pid, uint16_t proxy_port) {
  RulesetPlan plan;
  plan.abi = abi;
  plan.handled_fs = FsRightsForAbi(abi);
  plan.handle_net =
      abi >= 4 && (network == NetworkMode::kProxy || (network == NetworkMode::kNone && !ns.net));
  plan.scopes = ScopesForAbi(abi);
  if (plan.handle_net && network == NetworkMode::kProxy) plan.tcp_connect_ports = {proxy_port};

  const uint64_t all = plan.handled_fs;
  auto path = [&](const std::string& p, uint64_t rights, bool optional = false) {
    plan.rules.push_back({RuleKind::kPath, p, rights & all, optional, ""});
  };
  if (view.full_read) path("/", kFsRead);
  for (const auto& root : view.read_roots) {
    // Without a mount view nothing covers a credential inside a read root: leave it out.
    if (!ns.mount && HasMaskBeneath(view, root)) continue;
    path(root, kFsRead, /*optional=*/true);
  }
  for (const auto& wr : view.writable_roots) path(wr.root, all);
  if (ns.mount) {
    // The command's home and what is bound into it exist only in the mount view; without one
    // these paths would be the host's own.
    if (!view.home_tmpfs.empty()) path(view.home_tmpfs, all);
    for (const auto& m : view.mapped_binds) path(m.target, m.writable ? all : kFsRead, true);
  }
  for (const auto& sub : view.workspace_read_subpaths) {
    plan.rules.push_back({RuleKind::kBeneath, sub, kFsRead & all, false, view.workspace_base});
  }
  // The same plan the mount view was built from: the bound files and trees (the directories of
  // the view's own hold nothing else), and the tool's own files.
  for (const ReadOp& op : view.workspace_plan) {
    RuleKind kind;
    switch (op.kind) {
      case ReadOpKind::kBindDir:
        kind = RuleKind::kPlanDir;
        break;
      case ReadOpKind::kBindFile:
        kind = RuleKind::kPlanFile;
        break;
      case ReadOpKind::kBindLinkedFile:
        kind = RuleKind::kPlanLinkedFile;
        break;
      default:
        continue;
    }
    plan.rules.push_back({kind, op.path, kFsRead & all, false, view.workspace_base});
  }
  for (const auto& file : view.runtime_files) path(file, kFsReadFile | kFsExecute);
  if (ns.mount && !view.workspace_base.empty()) {
    // The workspace directory of the view holds only the mount points of the readable paths.
    path(view.workspace_base, kFsReadDir);
  }
  if (ns.mount) {
    // Listing the view's root shows only the mount points we made.
    path("/", kFsReadDir);
    // Our own tmpfs mounts: private to this sandbox, discarded at exit.
    path("/tmp", all);
    path("/dev/shm", all, true);
  }
  path("/dev", kFsReadDir, true);
  for (const char* dev : {"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}) {
    path(dev, kFsReadFile | kFsWriteFile | kFsIoctlDev | kFsTruncate, true);
  }
  for (const char* dev : {"/dev/random", "/dev/urandom"}) path(dev, kFsReadFile, true);
  if (ns.mount) {
    // The view's own devpts instance (/dev/ptmx links into it): the sandbox's pseudo-terminals
    // only. Without a mount namespace /dev/pts is the host's, with the user's other terminals.
    path("/dev/pts", kFsReadFile | kFsWriteFile | kFsIoctlDev | kFsReadDir, true);
  }
  if (view.runtime_from_call) {
    // No /proc in this view (the tool needs none): nothing to allow.
  } else if (ns.pid && ns.mount) {
    // The sandbox's own procfs shows only its own processes. Read-only: a caller that is host
    // root stays uid 0 in the sandbox, and root-owned proc files such as /proc/sysrq-trigger
    // check no capability.
    path("/proc", kFsRead);
  } else {
    // The host's procfs: only this process's own entry (no other process's environ/cmdline).
    path("/proc/" + std::to_string(own_pid), kFsRead);
  }
  return plan;
}

}  // namespace anvil::landlock
