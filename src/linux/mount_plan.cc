#include "linux/mount_plan.h"

#include <sys/stat.h>

#include <algorithm>

#include "linux/root_remap.h"

namespace anvil {
namespace {

size_t Depth(const std::string& path) {
  return path == "/" ? 0 : static_cast<size_t>(std::count(path.begin(), path.end(), '/'));
}

}  // namespace

bool HomePlaceIsTheHomes(const FileView& view, const std::vector<MountOp>& ops,
                         const std::string& path) {
  const MountOp* top = nullptr;
  for (const MountOp& op : ops) {
    if (op.path == view.home_base || !PathIsWithin(op.path, view.home_base) ||
        !PathIsWithin(path, op.path)) {
      continue;
    }
    if (top == nullptr || Depth(op.path) >= Depth(top->path)) top = &op;
  }
  if (top == nullptr || top->kind == MountOpKind::kWorkspaceDir) return true;
  return top->kind == MountOpKind::kMapped && top->index < view.mapped_binds.size() &&
         view.mapped_binds[top->index].writable;
}

std::vector<HomeFile> HomeFilesToWrite(const FileView& view, const std::vector<MountOp>& ops) {
  std::vector<HomeFile> files;
  if (view.home_base.empty()) return files;
  for (const HomeFile& file : view.home_files) {
    if (HomePlaceIsTheHomes(view, ops, view.home_base + "/" + file.path)) files.push_back(file);
  }
  return files;
}

Result<std::vector<MountOp>> PlanMounts(const FileView& view, const MountPlanOptions& options,
                                        const HostModeFn& host_mode) {
  using K = MountOpKind;
  std::vector<MountOp> ops;
  if (view.full_read) ops.push_back({K::kReadOnly, "/"});
  // Fresh /dev, /proc and /tmp first: anything beneath them (a workspace in /tmp) or a
  // root the user named explicitly at the same place is bound on top.
  ops.push_back({K::kDev, "/dev"});
  if (options.mount_proc) ops.push_back({K::kProc, "/proc"});
  if (view.tmp_bind) {
    ops.push_back({K::kMapped, "/tmp", *view.tmp_bind});  // the workspace's own, kept
  } else {
    ops.push_back({K::kTmp, "/tmp"});
  }
  if (view.full_read) {
    // Full read still hides the host's sockets (docker.sock, the user's D-Bus): a read-only
    // mount does not stop connect(2) on a Unix socket.
    auto run = host_mode("/run");
    if (run && S_ISDIR(*run)) ops.push_back({K::kRun, "/run"});
  }
  for (const auto& root : view.read_roots) ops.push_back({K::kReadOnly, root});
  for (const auto& wr : view.writable_roots) ops.push_back({K::kWritable, wr.root});
  for (const auto& dir : view.pinned_dirs) ops.push_back({K::kWritable, dir});
  for (const auto& link : view.pinned_links) ops.push_back({K::kPinLink, link});
  for (const auto& wr : view.writable_roots) {
    for (const auto& sub : wr.read_only_subpaths) ops.push_back({K::kReadOnly, sub});
  }
  if (!view.home_tmpfs.empty()) ops.push_back({K::kHomeTmpfs, view.home_tmpfs});
  for (size_t i = 0; i < view.mapped_binds.size(); ++i) {
    if (view.tmp_bind && *view.tmp_bind == i) continue;  // bound above, before what lies in it
    ops.push_back({K::kMapped, view.mapped_binds[i].target, i});
  }
  for (const auto& way : WorkspaceWays(view)) ops.push_back({K::kWay, way});
  // The same kind of directory of the view's own: the sandbox home's ~/.local/lib beside the
  // host's ~/.local/bin (FileView::sealed_home_dirs).
  for (const auto& dir : view.sealed_home_dirs) ops.push_back({K::kWay, dir});
  for (const auto& masked : view.masked_files) ops.push_back({K::kMask, masked});
  for (const auto& masked : view.masked_dirs) ops.push_back({K::kMaskDir, masked});
  if (!view.workspace_base.empty()) {
    ops.push_back({K::kWorkspaceDir, view.workspace_base});
    for (const auto& sub : view.workspace_read_subpaths) {
      ops.push_back({K::kBeneath, view.workspace_base + "/" + sub});
    }
  }
  // Root's sandbox looks at the host as a stranger: a directory above its own tree that it
  // cannot search is covered, with only the way down to the tree made inside the cover.
  if (!options.idmapped_roots.empty()) {
    for (const auto& dir : UnsearchableAncestors(view, options.idmapped_roots, host_mode)) {
      ops.push_back({K::kCover, dir});
    }
  }
  // A shell's start-up directory of the sandbox home (fish's) is an empty tmpfs of its own in
  // every run, so nothing an earlier run wrote there loads. Only where the sandbox home itself
  // holds the place: where another mount shows the host's own directory there (a readable root
  // of ~/.config, a writable root the user named), those are the user's own files, shown as
  // that mount shows them (a read-only one has no room for a mount point either).
  if (!view.home_base.empty()) {
    for (const auto& rel : view.home_startup_dirs) {
      const std::string path = view.home_base + "/" + rel;
      if (HomePlaceIsTheHomes(view, ops, path)) ops.push_back({K::kHomeStartupDir, path});
    }
  }
  if (options.defer_workspace_paths) {
    // The readable workspace paths come with the call (FinishMountView binds them last, as the
    // deepest binds of the view): nothing else of the view may lie beneath the workspace.
    if (view.workspace_base.empty() || !view.workspace_read_subpaths.empty()) {
      return Fail("sandbox", "a deferred workspace needs a view with an empty workspace directory");
    }
    for (const auto& op : ops) {
      // A start-up directory's tmpfs in a workspace directory of the home: the workspace's
      // paths are bound on top of it.
      if (op.kind != K::kWorkspaceDir && op.kind != K::kHomeStartupDir &&
          op.path != view.workspace_base && PathIsWithin(op.path, view.workspace_base)) {
        return Fail("sandbox", "cannot defer the workspace's paths: " + op.path +
                                   " is part of the view beneath the workspace");
      }
    }
  }
  // Parents before children; for the same depth the later (stronger) op stays later.
  std::stable_sort(ops.begin(), ops.end(), [](const MountOp& a, const MountOp& b) {
    return Depth(a.path) < Depth(b.path);
  });
  return ops;
}

}  // namespace anvil
