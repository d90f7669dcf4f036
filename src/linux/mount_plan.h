// The mount wall of a sandboxed command as data: the ordered list of mounts that builds its file
// view, a pure function of the view, a few options and the host's directory modes (injected).
// BuildMountView (mount_view.h) is a loop over this plan that fails closed on any step; the unit
// test (tests/unit/mount_plan_test.cc) states the exact plan for each policy without a kernel.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "policy/sandbox_policy.h"

namespace anvil {

enum class MountOpKind {
  kReadOnly,      // the host's path bound read-only (a symlink there is copied as a symlink)
  kWritable,      // the host's path bound read-write (a symlink there is an error)
  kPinLink,       // a symbolic link of a writable root bound onto itself, read-only: it cannot
                  // be removed or replaced (FileView::pinned_links)
  kMask,          // an existing host file or socket covered by an empty read-only file
  kMaskDir,       // an existing credential directory covered by an empty read-only directory
  kTmp,           // the private /tmp: a tmpfs (1777, the --limit tmp size)
  kRun,           // an empty tmpfs over /run (full read: hides the host's sockets)
  kDev,           // a fresh /dev: tmpfs with the harmless device nodes, a private devpts, shm
  kProc,          // a new procfs (the sandbox's pid namespace)
  kWorkspaceDir,  // an empty directory of the view's own, for the readable workspace paths
  kBeneath,       // a readable workspace path, opened beneath the workspace, bound read-only
  kCover,         // an empty tmpfs over a host directory the command cannot search
                  // (root_remap.h, UnsearchableAncestors); read-only once the view is built
  kMapped,        // FileView::mapped_binds[index]: a host path shown at another path
  kHomeTmpfs,     // the command's home as an empty tmpfs (0700, the --limit tmp size)
  kWay,           // an empty tmpfs on the way down to the workspace inside the sandbox home or
                  // the view's /tmp (WorkspaceWays); read-only once the view is built
  // An empty tmpfs of its own at a shell's start-up directory of the sandbox home
  // (FileView::home_startup_dirs: fish's), where the sandbox home itself holds the place
  // (HomePlaceIsTheHomes).
  kHomeStartupDir,
};

struct MountOp {
  MountOpKind kind = MountOpKind::kReadOnly;
  std::string path;  // the path in the view (the same on the host, but for kMapped)
  size_t index = 0;  // kMapped: which of FileView::mapped_binds
  bool operator==(const MountOp&) const = default;
};

struct MountPlanOptions {
  bool mount_proc = true;  // needs a pid namespace owned by our user namespace
  // Warm start (a pre-started anvil-exec-runner): stage everything but the workspace's readable
  // paths, which only the call names (FinishMountView). The view must have an empty workspace
  // directory (workspace_base set, no subpaths) and nothing else beneath it.
  bool defer_workspace_paths = false;
  // Root's sandbox (root_remap.h): the roots attached from idmapped trees. Host directories
  // above one that the command could not search are covered (kCover).
  std::vector<std::string> idmapped_roots;
};

// Whether the place `path` (beneath view.home_base) lies in the sandbox home itself, as the
// mounts `ops` (PlanMounts' order) leave it: what an earlier sandboxed run could have written
// there. True when no mount strictly beneath the home lies at or above `path`, or when the
// deepest one (the last of that depth) is still the sandbox home's: a directory of the view's
// own made in it (kWorkspaceDir) or a writable mapped bind (Anvil's state: the persistent home,
// a cache's shadow). False when another mount shows the host's own file or directory there: a
// read-only root or bind (`--readable-root ~/.config`, `--readable-root ~/.bashrc`, a
// toolchain), a readable workspace path, a writable root the user named (`--writable-root
// ~/.config`), a mask or a cover. The one rule for the shells' start-up directories (a
// kHomeStartupDir op) and files (HomeFilesToWrite).
bool HomePlaceIsTheHomes(const FileView& view, const std::vector<MountOp>& ops,
                         const std::string& path);

// The files of view.home_files that Anvil writes at this start: those whose place the sandbox
// home itself holds (HomePlaceIsTheHomes), so nothing an earlier run planted there stays. Where
// another mount shows the host's own file or a directory above it (`--readable-root ~/.bashrc`),
// the file is left as that mount shows it: the user's own, not planted (and not replaceable).
std::vector<HomeFile> HomeFilesToWrite(const FileView& view, const std::vector<MountOp>& ops);

// lstat's mode of a host path; nullopt when it is missing.
using HostModeFn = std::function<std::optional<mode_t>(const std::string&)>;

// The mounts that build `view`, in the order they are made: parents before children, and for
// the same depth a later (stronger) mount after an earlier one — /dev, /proc and /tmp first
// (a workspace in /tmp is bound on top), then read roots, writable roots, pinned directories,
// pinned links, read-only subpaths, the home, mapped binds, the ways down to the workspace,
// masks, the workspace's paths, covers, the shells' start-up directories of the sandbox home
// (those HomePlaceIsTheHomes).
// An error when the options cannot hold for this view (a deferred workspace with paths beneath it).
Result<std::vector<MountOp>> PlanMounts(const FileView& view, const MountPlanOptions& options,
                                        const HostModeFn& host_mode);

}  // namespace anvil
