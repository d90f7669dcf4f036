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
#include "policy/sandbox_policy.h"

namespace anvil {

struct MountViewOptions {
  bool mount_proc = true;  // needs a pid namespace owned by our user namespace
  uint64_t tmp_size = 1ULL << 30;
  // Warm start (a pre-started anvil-exec-runner): stage everything but the workspace's readable
  // paths, which only the call names, and stay in the staging root with the host's tree still
  // attached (only this init process is in the namespace); FinishMountView completes the view.
  // The view must have an empty workspace directory (workspace_base set, no subpaths).
  bool defer_workspace_paths = false;
  // Root's sandbox (root_remap.h): detached idmapped trees (made outside) of these roots, in the
  // same order. Each root, and every part of the view beneath it, is bound from its tree; host
  // directories above one that the command could not search are covered (UnsearchableAncestors).
  // The descriptors stay the caller's.
  std::vector<std::string> idmapped_roots;
  std::vector<int> idmapped_trees;
  // The command's pseudo-terminal comes from the view's devpts (/dev/pts, /dev/ptmx), which is
  // then required; without it the view has one if the kernel can make it.
  bool terminal = false;
};

Status BuildMountView(const FileView& view, const MountViewOptions& options);

// After BuildMountView with defer_workspace_paths: shows the call's runtime files
// (view.runtime_files: each at its own path, with the symlinks on the way) and builds the
// workspace from the call's read plan (view.workspace_plan, fs/read_plan.h: directories of the
// view's own, binds opened beneath the workspace never through a symlink, recreated links, then
// masks); then detaches the host's tree and enters the view. `idmapped_roots` are
// BuildMountView's options.idmapped_roots (the trees are still staged): the workspace is taken
// from its idmapped tree for root's sandbox.
Status FinishMountView(const FileView& view, const std::vector<std::string>& idmapped_roots);

// After BuildMountView: checks that the walls are really there (root is our tmpfs, every
// read-only path is on a read-only mount). A view that fails this never runs a command.
Status VerifyMountView(const FileView& view);

}  // namespace anvil
