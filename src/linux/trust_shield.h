// Anvil's own trust state on the host — the user's command rules, trusted signing keys and
// config ($XDG_CONFIG_HOME/anvil), the grant store and audit logs ($XDG_STATE_HOME/anvil), and
// the admin layer (/etc/anvil) — decides what later runs may do. A sandboxed command must never
// write it, even when a writable root holds it (a workspace of $HOME): it could approve its own
// next command or grant a plugin more. So the view keeps each such directory read-only and
// pins (binds onto itself) every directory between the writable root and it, so that none can
// be renamed or removed and made anew; a user's directory missing on the host is made first
// (0700, the caller's), by its own name, since the command could otherwise make it; the admin
// layer is never made (a missing one a writable root would hold refuses the run); a path to it
// that goes through a symbolic link inside a writable root refuses the run (the link itself
// could be replaced).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "linux/git_walk_cache.h"
#include "policy/tree_alias.h"

namespace anvil {

// The admin layer: the system's, not the user's. A run never makes it, by any name.
inline constexpr std::string_view kSystemTrustDir = "/etc/anvil";

// Every place a run of this user may read Anvil's trust state from, as absolute lexical paths
// (pure): not only this environment's, because a later run may be started with other XDG
// values or without HOME (an IDE, an agent, cron) and read another one. So: the anvil
// directory under each absolute XDG_CONFIG_HOME/XDG_STATE_HOME given, under $HOME's
// .config/.local/state, under the user database's home's, and /etc/anvil. Relative values are
// ignored, as the XDG Base Directory spec says.
struct TrustEnv {
  std::string home, xdg_config_home, xdg_state_home;
  std::string passwd_home;  // the user database's home (fs/file_io.h PasswdHome)
};
std::vector<std::string> AnvilTrustDirs(const TrustEnv& env);
TrustEnv TrustEnvFromProcess();
// The same with the user database's home already looked up (PasswdHome): one lookup per start.
TrustEnv TrustEnvFromProcess(std::string passwd_home);

// Where trust directory `dir` (absolute, lexical) is or would be made: its deepest existing
// ancestor resolved (realpath), the rest appended; "" when not even "/" resolves. `exists`: the
// whole of it exists (the answer is then its realpath).
std::string WhereTrustDirLies(const std::string& dir, bool* exists = nullptr);

// Where this environment's trust directories (AnvilTrustDirs of TrustEnvFromProcess, each as
// named and as WhereTrustDirLies finds it) lie in canonical `workspace`, as normalized workspace
// paths (policy/trust_state_paths.h TrustStateInWorkspace): what no plugin writes.
std::vector<std::string> AnvilTrustStateInWorkspace(const std::string& workspace);

// One name of a trust directory in a run: `path`, as a writable root may show it, beside `host`,
// the directory's own name on the host (the same for its own name; another for the name a bind
// alias gives it). `system`: it is the admin layer (kSystemTrustDir), never made.
struct TrustDirName {
  std::string path;
  std::string host;
  bool system = false;
  bool operator==(const TrustDirName&) const = default;
};

// Each of `dirs` (AnvilTrustDirs) by its own name, then each name `aliases` give it or its
// canonical form (`canonical`, one per dir, "" when unknown), with the name it came from as the
// host name (pure). Once each path, own names first.
std::vector<TrustDirName> TrustDirNames(const std::vector<std::string>& dirs,
                                        const std::vector<std::string>& canonical,
                                        const std::vector<TreeAlias>& aliases);

// What a run does about a trust directory a writable root holds and that does not exist (pure):
// a user's directory is made by its own name (kMakeHere), or, seen through an alias, by its
// host name, which the alias then shows (kMakeHostName); the admin layer is never made, by any
// name (kRefuse): the command could make it, so the run is refused.
enum class MissingTrustDir { kMakeHere, kMakeHostName, kRefuse };
MissingTrustDir WhenTrustDirMissing(const TrustDirName& name);

// For one run: what the view keeps read-only and pins. `covered`: what the view mounts afresh
// (its private /tmp). Makes missing directories that a writable root holds
// (WhenTrustDirMissing), after every name was checked; refuses ("sandbox") a symlinked path
// inside a writable root or a missing admin layer one holds, and ("invalid") a writable root
// inside a trust directory.
Result<GitWalkCacheShield> ShieldAnvilTrustDirs(const std::vector<TrustDirName>& trust_dirs,
                                                const std::vector<std::string>& writable_roots,
                                                const std::vector<std::string>& covered);

}  // namespace anvil
