// Builds the file view of a FileView inside a fresh mount namespace, bubblewrap-style: a tmpfs
// root, the runtime roots bound read-only, the writable roots bound read-write, then every
// read-only subpath (.git, .anvil, ...) bound read-only on top, a minimal /dev, a new /proc and
// a private /tmp; then pivot_root into it and detach the host's tree. Runs in the sandbox's
// init process, after it entered its user/mount/pid namespaces.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "linux/mount_plan.h"
#include "policy/sandbox_policy.h"

namespace anvil {

// The plan's options (mount_plan.h), and what the loop needs besides.
struct MountViewOptions : MountPlanOptions {
  uint64_t tmp_size = 1ULL << 30;
  uint64_t shm_size = 64ULL << 20;  // /dev/shm's (DevShmSize, linux/memory_cgroup.h)
  // Root's sandbox: detached idmapped trees (made outside) of idmapped_roots, in the same
  // order. Each root, and every part of the view beneath it, is bound from its tree. The
  // descriptors stay the caller's.
  std::vector<int> idmapped_trees;
  // The command's pseudo-terminal comes from the view's devpts (/dev/pts, /dev/ptmx), which is
  // then required; without it the view has one if the kernel can make it.
  bool terminal = false;
};

// The mount options of a tmpfs of the view: its mode, its size in bytes (never 0, which a tmpfs
// takes as no bound at all: at least one page), and a bound on its inodes, so that a command
// cannot fill kernel memory with empty files, directories or links its size never counts (left
// alone a tmpfs allows half of the machine's pages as inodes). One inode per page of the size,
// at least kMinTmpfsInodes: a file holding data takes a page anyway, so only what holds none is
// bounded.
inline constexpr uint64_t kMinTmpfsInodes = 4096;
std::string TmpfsOptions(const std::string& mode, uint64_t size_bytes);

// Makes the view: a private staging root with the host's tree beneath it, then each mount of
// PlanMounts(view, options) in order (the first that fails fails the view), then, unless
// options.defer_workspace_paths (a warm start: the host's tree stays attached and
// FinishMountView completes the view), detaches the host's tree and enters the view.
Status BuildMountView(const FileView& view, const MountViewOptions& options);

// After BuildMountView with defer_workspace_paths: shows the call's runtime files
// (view.runtime_files: each at its own path, with the symlinks on the way) and builds the
// workspace from the call's read plan (view.workspace_plan, fs/read_plan.h: directories of the
// view's own, binds opened beneath the workspace never through a symlink, recreated links, then
// masks); then detaches the host's tree and enters the view. `idmapped_roots` are
// BuildMountView's options.idmapped_roots (the trees are still staged): the workspace is taken
// from its idmapped tree for root's sandbox.
Status FinishMountView(const FileView& view, const std::vector<std::string>& idmapped_roots);

// In init, once the command has ended: removes the workspace's logical path (FileView::
// workspace_link) where BuildMountView made or found it at the top of the sandbox home or the
// kept /tmp, both kept between runs, unless another run of the workspace still holds it there.
// Best effort: a link left (init killed) is replaced or reused by the next run.
void RemoveWorkspaceLink();

// After BuildMountView: checks that the walls are really there (root is our tmpfs, every
// read-only path is on a read-only mount). A view that fails this never runs a command.
Status VerifyMountView(const FileView& view);

}  // namespace anvil
