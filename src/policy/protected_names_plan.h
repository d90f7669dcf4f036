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
#include <utility>
#include <vector>

#include "common/file_identity.h"
#include "common/result.h"
#include "fs/protected_names.h"

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
// change what was bound once the mount is gone. A mount follows its entry when that is renamed
// (a check moving it aside takes this run's mount along), but an unlink of the name, or a rename
// over it, outside this run's mount namespace detaches it: the user's, or a command's where the
// name is not bound (a run that found it missing). Then this run's command may change that same
// file and, once it is back under the name or moved aside by a check, put it back. What it
// cannot do while the mount holds: change an existing file or directory, link it or remove it.
//
// So the check compares what is at the name after the run with what was there at its start:
// kind, device and inode always, and the ctime (which nobody can set back) only when the run is
// `strict`. Not comparing the ctime keeps the user's in-place edit of an existing Anvil.toml,
// made on the host while a long-running sandbox (`anvil sandbox -- npm run dev`) is going; it is
// safe only when no command of another run can reach this run's entry while it runs. Which runs'
// commands could is published with OFD read locks on the workspace directory, one byte each
// (ConfigWatchLockOffset), each taken after the run's look and before its command starts, and
// released after its check:
//
//   - byte 0: a run that found the name missing (a "watcher": its command can make, unlink and
//     relink the name, and its check moves aside whatever is there) and a strict run (its mount
//     may have been detached by one, so its command may hold the file too);
//   - byte 1 + inode: a run that is not strict and found that inode there. Its command can reach
//     the name only if that entry was replaced (which detaches its mount), so it says which entry
//     it keeps: runs that found the same one do not make each other strict.
//
// A run that finds an entry looks for a lock at any byte but its entry's, before and after its
// look (ConfigWatchIsStrict): seeing one, it is strict; seeing none, no run going then could
// reach its entry, and a run started later finds that entry bound in its own view. The attack
// the ctime is for: run A starts with no Anvil.toml, A's command makes one; run B starts and
// records it; A's command unlinks it and links it back (detaching B's mount), B's command
// writes it, A's check moves it aside, B's command renames it back: the same inode. A file made
// by a command implies a watcher (A) that held its lock from before that command ran until
// after its check, so B, which saw the file, saw the lock unless A's whole run, from its lock to
// its check, fell between B's two probes (the residual window: two system calls apart). A run C
// that starts after that sees B's lock (B is strict) and is strict too. A run W that found
// another entry, replaced during W (an editor's save by rename), holds W's inode's byte, so a
// run that starts after the save and finds the new file is strict while W's command could reach
// that file.
//
// What the check cannot tell: who made or changed it. An Anvil.toml the user makes while a
// sandboxed command runs in the workspace, or saves by replacing it (another inode: the command
// could write the new one), or edits in place during a strict run, is moved aside as the
// command's would be (the conservative side); the line that says so tells how to put it back.
// One made while no run was going is kept by every later run (bound read-only). One that
// appeared after a run started is moved aside when that run ends, even when a later run found
// it there and kept it: that later run cannot know who made it either. A sandboxed command can
// take such locks itself (it can open the workspace directory): that only makes later runs
// strict. Where the workspace directory cannot be opened for reading, or the locks cannot be
// probed, a run is strict; where its own lock cannot be taken, it is not published (that file
// system's probes fail too). Inodes equal modulo 2^62 share a byte.

enum class ConfigEntryKind { kMissing, kFile, kDir, kSymlink, kOther };

// What a name is (lstat: a symbolic link itself): its kind, and its device, inode and ctime.
struct ConfigEntry : FileIdentity {
  ConfigEntryKind kind = ConfigEntryKind::kMissing;
};

// Whether a run checks the workspace's Anvil.toml: the workspace is inside a writable root (the
// command can make entries at its top).
bool WatchesWorkspaceConfig(const std::vector<std::string>& roots, const std::string& workspace);

// Why what is at the workspace's Anvil.toml after the run (`after`) must be moved aside, given
// what was there when the run started (`before`); nullopt when it stays: nothing there now, or
// the same entry (kind, device, inode), and when `strict` also unchanged (ctime). Any kind
// counts, a directory or a symbolic link too (neither configures anything, but a link makes
// Anvil refuse the workspace, and the rule stays one: the config is what was there).
std::optional<std::string> WorkspaceConfigChange(const ConfigEntry& before,
                                                 const ConfigEntry& after, bool strict);

// Whether a run that found `before` compares the ctime: `other_lock_seen` when a lock at an
// offset other than its entry's was seen (or could not be looked for) before or after its look;
// `probe` is what a look just before the first probe found (another entry there: strict). A run
// that found the name missing moves aside whatever is there after it either way.
bool ConfigWatchIsStrict(const ConfigEntry& probe, const ConfigEntry& before, bool other_lock_seen);

// The byte of the workspace directory a run read-locks from before its command starts until
// after its check: 0 for one that found the name missing or is strict, else 1 + its entry's
// inode (modulo 2^62).
inline constexpr int64_t kConfigWatchAnyChangeOffset = 0;
int64_t ConfigWatchLockOffset(const ConfigEntry& before, bool strict);

// The name a moved-aside entry gets: NAME.anvil-quarantine, then NAME.anvil-quarantine-2, ...
// (`attempt` from 1), the git quarantine's suffix. Never one Anvil reads as its config. When a
// command took all of them, kConfigQuarantineGuesses more names with a random suffix
// (NAME.anvil-quarantine-<16 hex digits>) that it cannot take ahead.
inline constexpr std::string_view kConfigQuarantineSuffix = ".anvil-quarantine";
inline constexpr int kConfigQuarantineAttempts = 100;
inline constexpr int kConfigQuarantineGuesses = 8;
std::string ConfigQuarantineName(std::string_view name, int attempt);

// What the check after the run did: `moved_to` when it moved the entry aside, else `failure`.
struct ConfigQuarantine {
  std::string path;      // the workspace's Anvil.toml (or a protected name made below: below)
  std::string moved_to;  // where it is now; empty when it could not be moved
  std::string reason;    // WorkspaceConfigChange
  std::string failure;   // why it could not be moved
  ProtectedNameKind kind = ProtectedNameKind::kWorkspaceConfig;  // what the name is
};

// ---- Anvil's protected names made anywhere in the roots: moved aside after the run ----------
//
// The walk before the run finds every .anvil, anvil.lock and Anvil.toml (any spelling the table
// maps to them) that exists, and the view binds each read-only; one the command makes where
// there was none is bound by nothing (below the workspace's top: with $HOME as the workspace,
// an Anvil.toml in any project, read by the user's next `anvil run` there). The git check's walk
// after the run lists the tree again (git_guard.h): each of them it finds that the walk before
// did not is moved aside the way the workspace's Anvil.toml is (ConfigQuarantineName, the same
// line on stderr, exit 125 when one stays). Compared by path: one that was there is bound
// read-only (it cannot be replaced or changed during the run), and a new one inside another
// new one goes with it. What the check cannot tell here either: one the user made on the host
// while the run was going is moved aside too (the line says how to put it back).

// Why a protected name the walk before the run found is moved aside after it when another run
// over the same roots, going or killed, had not seen it (linux/git_guard.h Distrusts).
inline constexpr std::string_view kDistrustedNameReason =
    "it was there when this run started, but another sandbox run here (still going, or killed) "
    "had not seen it, so its command may have made it";

struct ProtectedNameMove {
  std::string path;  // canonical
  std::string root;  // the deepest writable root holding it
  ProtectedNameKind kind = ProtectedNameKind::kWorkspaceConfig;
  // Why it is moved aside when not simply "it did not exist when the command started".
  std::string reason = {};
};

// The entries of `after` (GitScan::protected_names after the run) that `before` (the walk
// before it) did not hold, sorted, none inside another one of them, none outside `roots`, and
// none of `skip` (the workspace's Anvil.toml, which its own check looks after).
std::vector<ProtectedNameMove> NewProtectedNames(const std::vector<std::string>& before,
                                                 const std::vector<std::string>& after,
                                                 const std::vector<std::string>& roots,
                                                 const std::vector<std::string>& skip);

// `moves` where they lie once the git quarantine renamed directories aside (`renamed`: each
// {from, to}, in the order it did them; a repository the walk entered may hold a new protected
// name, and an outer one is renamed after what it holds): one inside a renamed directory is
// moved aside where it lies now; one that is itself renamed is aside already, and dropped.
std::vector<ProtectedNameMove> ProtectedNamesAfterRenames(
    std::vector<ProtectedNameMove> moves,
    const std::vector<std::pair<std::string, std::string>>& renamed);

// The one line the run's report prints (stderr, whatever --json says): which file, why, and what
// to do (review it; the command that puts it back, or what to do when it could not be moved).
std::string ConfigQuarantineMessage(const ConfigQuarantine& q);
// The shell command that puts it back (empty when nothing was moved).
std::string ConfigQuarantineRestore(const ConfigQuarantine& q);

}  // namespace anvil
