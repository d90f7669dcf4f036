// The command sandbox's side of the protected names (fs/protected_names.h, the table the
// plugin side uses too): what a workspace-write run keeps of them in its writable roots. Pure.
//
//   - At the top of every writable root, what exists is bound read-only (ComputeFileView,
//     policy/sandbox_policy.h). A missing .git gets a placeholder for the run
//     (linux/protected_placeholders.h), made before the walk: MissingNamePlaceholders.
//   - A missing Anvil.toml at the workspace's top gets none (an empty read-only directory by that
//     name was in every listing and every `*.toml` glob, and broke tools that open each one).
//     Instead the run records what is there before the command starts, and after it ends —
//     killed, timed out or failed too — moves aside whatever is there now that is not what was
//     there (WorkspaceConfigChange; linux/workspace_config_watch.h carries it out), so a file the
//     command made never enables a plugin or hands it settings.
//   - Deeper, the walk that looks for git repositories (policy/git_metadata.h, ScanGitMetadata)
//     also collects every directory or regular file with one of Anvil's protected names
//     (GitScan::protected_names); PlanProtectedNames turns them into read-only paths and the
//     directories to pin (bind onto themselves) between the root and each: rename(2) and
//     rmdir(2) refuse to move a mount point, so a directory holding an anvil.lock or an
//     Anvil.toml cannot be moved aside and made anew with files of the command's own (a nested
//     workspace whose lock is gone would run whatever plugin code is there).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace anvil {

struct NamePlaceholder {
  std::string parent;  // canonical
  std::string name;
  bool directory = true;  // else an empty read-only file
};

// For the missing names at the top of the roots: .git (an empty directory: git skips it and
// keeps looking upward) in every writable root unless `writable_git`. None for Anvil.toml (the
// check after the run instead: WorkspaceConfigChange), .anvil (what Anvil reads there, the
// workspace's command rules, can only narrow) nor anvil.lock (a lock the command makes only pins
// more, and an empty one would stop every plugin of the workspace while the command runs).
std::vector<NamePlaceholder> MissingNamePlaceholders(const std::vector<std::string>& roots,
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

// ---- The workspace's Anvil.toml: checked after the run -----------------------------------------
//
// What the command could do with the name: make it (write, rename into place, link, symlink,
// mkdir) where there was nothing; replace what was there when it was not bound read-only (a
// symbolic link is not: Anvil refuses to read one, so there was nothing to keep); and replace or
// change what was bound once the mount is gone: a rename outside this run's mount namespace (the
// check of another run that did not know the file, which moves it aside) detaches the mount
// here, and the command may then put that same file back under the name. Each leaves at the
// name an entry that is not the one that was there when the run started, or the same inode
// changed since (its ctime, which nobody can set back), which is all the check compares. What it
// cannot do while the mount holds: change an existing file or directory, link it or remove it.
//
// What the check cannot tell: who made or changed it. An Anvil.toml the user makes, saves or
// touches on the host while a sandboxed command runs in the workspace is moved aside as the
// command's would be (the conservative side); the line that says so tells how to put it back.
// One made while no run was going is kept by every later run (bound read-only). One that
// appeared after a run started is moved aside when that run ends, even when a later run found
// it there and kept it: that later run cannot know who made it either.

enum class ConfigEntryKind { kMissing, kFile, kDir, kSymlink, kOther };

// What a name is (lstat: a symbolic link itself): its kind, device, inode and ctime.
struct ConfigEntry {
  ConfigEntryKind kind = ConfigEntryKind::kMissing;
  uint64_t dev = 0;
  uint64_t ino = 0;
  int64_t ctime_sec = 0;
  int64_t ctime_nsec = 0;
};

// Whether a run checks the workspace's Anvil.toml: the workspace is inside a writable root (the
// command can make entries at its top).
bool WatchesWorkspaceConfig(const std::vector<std::string>& roots, const std::string& workspace);

// Why what is at the workspace's Anvil.toml after the run (`after`) must be moved aside, given
// what was there when the run started (`before`); nullopt when it stays: nothing there now, or
// the same entry unchanged. Any kind counts, a directory or a symbolic link too (neither
// configures anything, but a link makes Anvil refuse the workspace, and the rule stays one: the
// config is what was there).
std::optional<std::string> WorkspaceConfigChange(const ConfigEntry& before,
                                                 const ConfigEntry& after);

// The name a moved-aside entry gets: NAME.anvil-quarantine, then NAME.anvil-quarantine-2, ...
// (`attempt` from 1), the git quarantine's suffix. Never one Anvil reads as its config.
inline constexpr std::string_view kConfigQuarantineSuffix = ".anvil-quarantine";
inline constexpr int kConfigQuarantineAttempts = 100;
std::string ConfigQuarantineName(std::string_view name, int attempt);

// What the check after the run did: `moved_to` when it moved the entry aside, else `failure`.
struct ConfigQuarantine {
  std::string path;      // the workspace's Anvil.toml
  std::string moved_to;  // where it is now; empty when it could not be moved
  std::string reason;    // WorkspaceConfigChange
  std::string failure;   // why it could not be moved
};

// The one line the run's report prints (stderr, whatever --json says): which file, why, and what
// to do (review it; the command that puts it back, or what to do when it could not be moved).
std::string ConfigQuarantineMessage(const ConfigQuarantine& q);
// The shell command that puts it back (empty when nothing was moved).
std::string ConfigQuarantineRestore(const ConfigQuarantine& q);

}  // namespace anvil
