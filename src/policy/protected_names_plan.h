// The command sandbox's side of the protected names (fs/protected_names.h, the table the
// plugin side uses too): what a workspace-write run keeps of them in its writable roots. Pure.
//
//   - At the top of every writable root, what exists is bound read-only (ComputeFileView,
//     policy/sandbox_policy.h). What is missing there and must not be made by the command gets
//     a placeholder for the run (linux/protected_placeholders.h), made before the walk:
//     MissingNamePlaceholders.
//   - Deeper, the walk that looks for git repositories (policy/git_metadata.h, ScanGitMetadata)
//     also collects every directory or regular file with one of Anvil's protected names
//     (GitScan::protected_names); PlanProtectedNames turns them into read-only paths and the
//     directories to pin (bind onto themselves) between the root and each: rename(2) and
//     rmdir(2) refuse to move a mount point, so a directory holding an anvil.lock or an
//     Anvil.toml cannot be moved aside and made anew with files of the command's own (a nested
//     workspace whose lock is gone would run whatever plugin code is there).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/result.h"

namespace anvil {

struct NamePlaceholder {
  std::string parent;  // canonical
  std::string name;
  bool directory = true;  // else an empty read-only file
};

// For the missing names at the top of the roots: .git (an empty directory: git skips it and
// keeps looking upward) in every writable root unless `writable_git`; Anvil.toml in the
// workspace, the root Anvil reads it from: an empty directory too, which git does not show (an
// empty file would be an untracked file to commit) and LoadWorkspaceConfig takes for no
// configuration, as it takes a missing file (policy/workspace_config.h). None for
// .anvil (what Anvil reads there, the workspace's command rules, can only narrow) nor for
// anvil.lock (a lock the command makes only pins more, and an empty one would stop every plugin
// of the workspace while the command runs).
std::vector<NamePlaceholder> MissingNamePlaceholders(const std::vector<std::string>& roots,
                                                     const std::string& workspace,
                                                     bool writable_git);

struct ProtectedNamesPlan {
  // Canonical, each strictly inside a writable root and inside no other read-only path.
  std::vector<std::string> read_only;
  // The directories strictly between the deepest writable root holding each read-only path and
  // it (none of them a writable root), each once.
  std::vector<std::string> pinned;
  // Past the 'paths' bound (fail closed: the sandbox does not start).
  std::vector<Error> problems;
};

// `found`: GitScan::protected_names (canonical: the walk follows no symbolic link). `elsewhere`:
// what the view keeps read-only already (the git plan's paths), whose insides need no mount of
// their own. `mounts_before`: the mounts the git plan makes, counted with these against
// `max_paths` (GitScanLimits::paths).
ProtectedNamesPlan PlanProtectedNames(const std::vector<std::string>& found,
                                      const std::vector<std::string>& roots,
                                      const std::vector<std::string>& elsewhere,
                                      std::size_t mounts_before, std::size_t max_paths);

}  // namespace anvil
