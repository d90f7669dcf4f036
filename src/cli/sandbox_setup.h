// `anvil sandbox`'s defaults from configuration and the command's home, outside the sandbox:
// reads the user's config.toml and the workspace's Anvil.toml (policy/user_config.h), applies
// them under the command line's explicit flags, turns on the profiles, and prepares the
// per-workspace sandbox home (policy/sandbox_home.h) with its sanitized ~/.gitconfig.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "policy/sandbox_home.h"
#include "policy/sandbox_policy.h"

namespace anvil::cli {

// What the command line said (flags win over every file).
struct SandboxFlags {
  bool policy_explicit = false;
  bool network_explicit = false;
  bool read_access_explicit = false;
  std::optional<HomeMode> home;
  std::vector<std::string> profiles;        // --profile, in order
  std::vector<std::string> readable_roots;  // --readable-root, absolute, existing
  // --tmp private, or --limit tmp: a throw-away /tmp instead of the workspace's kept one.
  bool private_tmp = false;
};

// What the settings came to, for the --json report.
struct SandboxSettings {
  HomeMode home_mode = HomeMode::kPersistent;
  std::string home;          // the command's $HOME ("" without one)
  std::string sandbox_home;  // the host directory behind it (persistent), "" otherwise
  // The directory that keys the persistent home and the kept /tmp (SandboxHomeKey): the
  // repository's top for a workspace below it, else the workspace; "" without one.
  std::string home_key;
  // The host directory behind /tmp when it is the workspace's kept one (a persistent home's
  // neighbour), "" when /tmp is a throw-away tmpfs. Shown only where no named root shows the
  // host's /tmp (ApplyHomeView).
  std::string kept_tmp;
  std::string home_note;  // why the home is a tmpfs instead of persistent, when it is
  // What of the real home was not shown for a link on the way, and where it leads
  // (HomeView::not_shown).
  std::vector<std::pair<std::string, std::string>> home_not_shown;
  bool home_created = false;  // this run made the persistent home (RunSandboxCommand sweeps)
  // The repository above the workspace it sees read-only (EnclosingRepositoryTop), "" when none.
  std::string repository_top;
  // The activated environments ($VIRTUAL_ENV, $CONDA_PREFIX) shown read-only
  // (ActivatedEnvironmentShown), canonical.
  std::vector<std::string> environments;
  std::string state_dir;  // $XDG_STATE_HOME/anvil
  std::vector<std::string> profiles;
  std::string user_config;  // the file read, "" when there was none
};

// Applies config.toml, Anvil.toml and the profiles to `policy` (whose workspace is set and
// whose explicit fields came from the flags) and `allow_hosts` (the --allow-host list: the
// configuration's hosts are added when the network is `proxy`), and plans the home.
// `environ_entries` is the caller's environment. Errors name the file and line.
Result<SandboxSettings> ApplySandboxSettings(const std::vector<std::string>& environ_entries,
                                             const SandboxFlags& flags, SandboxPolicy& policy,
                                             std::vector<std::string>& allow_hosts);

// After a run that made a new persistent home: removes the homes whose workspace no longer
// exists (never following a symlink). Best effort; returns how many it removed.
size_t SweepDeadSandboxHomes(const std::string& state_dir);

}  // namespace anvil::cli
