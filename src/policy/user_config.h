// Sandbox settings from configuration files, for `anvil sandbox`:
//
//  * the user's ~/.config/anvil/config.toml ($XDG_CONFIG_HOME/anvil/config.toml): trusted, the
//    user's own defaults;
//  * the [sandbox] table of the workspace's Anvil.toml: UNTRUSTED (a cloned repository wrote
//    it), so it may only NARROW what the user's settings and the command line allow.
//
// Precedence: built-in defaults < config.toml < Anvil.toml (narrowing only) < command line.
//
//   # ~/.config/anvil/config.toml
//   [sandbox]
//   policy = "workspace-write"       # read-only | workspace-write | danger-full-access |
//                                    # external-sandbox
//   network = "none"                 # none | proxy | full
//   read_access = "restricted"       # restricted | full
//   home = "persistent"              # persistent | tmp | none
//   writable_roots = ["~/scratch"]   # must exist; '~' is your home
//   readable_roots = ["~/.elan", "/opt/tools"]  # toolchains beyond the built-in table
//   allow_hosts = ["github.com"]     # with --network proxy
//   profiles = ["python"]            # always on, as if --profile python were given
//
//   [profiles.java]                  # a profile of your own (or one replacing a built-in)
//   writable_roots = ["~/.m2/repository", "~/.gradle/caches"]
//   readable_roots = []
//   allow_hosts = ["repo.maven.apache.org", "plugins.gradle.org"]
//
//   # <workspace>/Anvil.toml: only these keys, and only narrowing values
//   [sandbox]
//   policy = "read-only"             # read-only, or workspace-write under a wider user policy
//   network = "none"                 # none, or proxy under --network full
//   read_only_subpaths = ["vendor"]  # workspace paths to keep read-only
//
// Errors name the file, line and column and say how to fix it ("invalid: <file>:<l>:<c>: ...
// (fix: ...)"); the workspace file's refusals say why ("a workspace can only narrow the
// sandbox").
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "policy/sandbox_home.h"
#include "policy/sandbox_policy.h"

namespace anvil {

inline constexpr std::size_t kMaxUserConfigBytes = 256 * 1024;
inline constexpr std::size_t kMaxConfigListEntries = 256;
inline constexpr std::size_t kMaxProfiles = 64;

// A named set of extra access for one ecosystem: its caches (writable, in the real home, so
// they are shared by every workspace — see docs/policy.md on what that trusts) and registries
// (hosts the proxy lets through; a profile with hosts turns --network proxy on unless
// --network is given).
struct SandboxProfile {
  std::vector<std::string> writable_roots;  // '~' unexpanded; created when missing
  std::vector<std::string> readable_roots;
  std::vector<std::string> allow_hosts;
};

// The built-in profiles (node, python, rust, go) — a user profile of the same name replaces it.
const std::map<std::string, SandboxProfile>& BuiltinProfiles();

struct UserSandboxConfig {
  std::optional<PolicyKind> policy;
  std::optional<NetworkMode> network;
  std::optional<ReadAccess> read_access;
  std::optional<HomeMode> home;
  std::vector<std::string> writable_roots;
  std::vector<std::string> readable_roots;
  std::vector<std::string> allow_hosts;
  std::vector<std::string> profiles;                   // always on
  std::map<std::string, SandboxProfile> profile_defs;  // user-defined
};

// Parses config.toml text; `source_name` appears in messages.
Result<UserSandboxConfig> ParseUserConfig(std::string_view text, std::string_view source_name);

// The path of the user's config file from the caller's environment (NAME=VALUE entries):
// $XDG_CONFIG_HOME/anvil/config.toml when XDG_CONFIG_HOME is absolute, else
// $HOME/.config/anvil/config.toml; empty when neither is known.
std::string UserConfigPath(const std::vector<std::string>& environ_entries);

// Reads and parses `path` (a missing file, or one the caller may not read, is an empty
// configuration; a symlink is followed — the file is the user's own).
Result<UserSandboxConfig> LoadUserConfig(const std::string& path);

// The [sandbox] table of Anvil.toml.
struct WorkspaceSandboxConfig {
  std::optional<PolicyKind> policy;             // read-only or workspace-write
  std::optional<NetworkMode> network;           // none or proxy
  std::vector<std::string> read_only_subpaths;  // workspace-relative, validated
  std::string policy_where, network_where;      // "Anvil.toml:3:1", for messages
};

// How wide a policy / network mode is, for "may only narrow": read-only < workspace-write <
// external-sandbox < danger-full-access; none < proxy < full.
int PolicyWidth(PolicyKind kind);
int NetworkWidth(NetworkMode mode);

// Applies the workspace's narrowing to the user's effective defaults. A value wider than the
// user's is an error naming the file and line ("a workspace can only narrow the sandbox").
Status NarrowByWorkspace(const WorkspaceSandboxConfig& workspace, PolicyKind& policy,
                         NetworkMode& network);

}  // namespace anvil
