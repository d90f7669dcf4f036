// The workspace's Anvil.toml. It comes from the repository, so it is UNTRUSTED input (threat
// model adversary 3, "malicious project"): it may say which plugins to enable and hand them
// settings, and nothing else. Permissions come only from a manifest the user approved (grants),
// sandbox settings and executable paths only from the trusted side; a key that tries to reach any
// of those is refused by name rather than ignored, so a hostile file is noticed:
//
//   invalid: Anvil.toml:3: 'permissions' is not allowed here: a workspace cannot widen a grant
//
// Accepted shape:
//
//   [plugins]
//   enable = ["example.todo-finder", "example.fmt"]
//
//   [plugins.settings."example.todo-finder"]   # any scalar/array/table values
//   pattern = "TODO|FIXME"
//   max_results = 200
//
//   [sandbox]              # `anvil sandbox` in this workspace: may only NARROW the user's
//   policy = "read-only"   # settings (policy/user_config.h); anything that would widen them
//   network = "none"       # is refused by name
//   read_only_subpaths = ["vendor"]
//
// Settings are data handed to the plugin (as JSON); they carry no authority. They are bounded:
// kMaxSettingsDepth levels of nesting, kMaxSettingsValues values in the whole file, strings up to
// kMaxSettingsStringBytes; dates and times become ISO 8601 strings; NaN and infinities (which
// JSON cannot carry) are refused.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "policy/user_config.h"

namespace anvil {

inline constexpr std::string_view kWorkspaceConfigName = "Anvil.toml";
inline constexpr std::size_t kMaxWorkspaceConfigBytes = 256 * 1024;
inline constexpr std::size_t kMaxSettingsDepth = 8;
inline constexpr std::size_t kMaxSettingsValues = 4096;
inline constexpr std::size_t kMaxSettingsStringBytes = 16 * 1024;
inline constexpr std::size_t kMaxEnabledPlugins = 256;

struct WorkspaceConfig {
  std::vector<std::string> enable;                 // plugin ids, in file order, no duplicates
  std::map<std::string, nlohmann::json> settings;  // plugin id -> JSON object
  // [sandbox]: what `anvil sandbox` may narrow for this workspace (policy/user_config.h).
  WorkspaceSandboxConfig sandbox;

  // The settings for one plugin: its JSON object, or {} when the file has none.
  nlohmann::json SettingsFor(std::string_view plugin_id) const;
};

// Errors: "invalid: <source>:<line>: <what>" (line only, as in the example above).
Result<WorkspaceConfig> ParseWorkspaceConfig(std::string_view toml_text,
                                             std::string_view source_name = kWorkspaceConfigName);

// Reads <workspace_dir>/Anvil.toml (O_NOFOLLOW, at most kMaxWorkspaceConfigBytes) and parses it.
// A workspace without the file has an empty configuration, and so has one where Anvil.toml is a
// directory (the placeholder of a sandbox running there, linux/protected_placeholders.h).
Result<WorkspaceConfig> LoadWorkspaceConfig(const std::string& workspace_dir);

}  // namespace anvil
