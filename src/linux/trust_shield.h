// Anvil's own trust state on the host — the user's command rules, trusted signing keys and
// config ($XDG_CONFIG_HOME/anvil), the grant store and audit logs ($XDG_STATE_HOME/anvil), and
// the admin layer (/etc/anvil) — decides what later runs may do. A sandboxed command must never
// write it, even when a writable root holds it (a workspace of $HOME): it could approve its own
// next command or grant a plugin more. So the view keeps each such directory read-only and
// pins (binds onto itself) every directory between the writable root and it, so that none can
// be renamed or removed and made anew; a directory missing on the host is made first (0700,
// the caller's), since the command could otherwise make it; a path to it that goes through a
// symbolic link inside a writable root refuses the run (the link itself could be replaced).
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "linux/git_walk_cache.h"

namespace anvil {

// The trust directories for this environment, as absolute lexical paths (pure). Relative
// XDG values are ignored, as the XDG Base Directory spec says (the same rule as the grant
// store's and the command rules' lookups).
struct TrustEnv {
  std::string home, xdg_config_home, xdg_state_home;
};
std::vector<std::string> AnvilTrustDirs(const TrustEnv& env);
TrustEnv TrustEnvFromProcess();

// For one run: what the view keeps read-only and pins. `covered`: what the view mounts afresh
// (its private /tmp). Makes missing directories that a writable root holds; refuses ("sandbox")
// a symlinked path inside a writable root, and ("invalid") a writable root inside a trust
// directory.
Result<GitWalkCacheShield> ShieldAnvilTrustDirs(const std::vector<std::string>& trust_dirs,
                                                const std::vector<std::string>& writable_roots,
                                                const std::vector<std::string>& covered);

}  // namespace anvil
