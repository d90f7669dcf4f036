// Which plugins a session can load, and under which grant (threat model T8).
//
// Plugins are found on trusted paths only: directories named on the command line
// (`--plugin-dir`, enabled by that very act) and the subdirectories of the plugin search path
// (`--plugin-path`, default ${XDG_DATA_HOME:-~/.local/share}/anvil/plugins). The workspace's
// Anvil.toml is untrusted (a repository writes it): it may *enable* installed plugins by id and
// hand them settings, never add a plugin directory, widen a grant or skip consent. Plugin code
// in the repository itself is never picked up.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "policy/grant.h"
#include "policy/grant_store.h"
#include "policy/manifest.h"
#include "policy/workspace_config.h"

namespace anvil::session {

struct CatalogOptions {
  std::string workspace;                  // canonical
  std::vector<std::string> plugin_dirs;   // each a plugin directory; always enabled
  std::vector<std::string> search_paths;  // each subdirectory is a plugin
};

struct PluginEntry {
  std::string id;   // the manifest id (or the directory name when the manifest is broken)
  std::string dir;  // canonical
  std::optional<Manifest> manifest;
  std::optional<Error> error;  // the manifest did not load, or the id is a duplicate
  bool enabled = false;
  std::string enabled_by;  // "command line", "Anvil.toml" or empty
};

struct Catalog {
  std::vector<PluginEntry> plugins;
  std::vector<std::string> missing;  // ids Anvil.toml enables that no trusted path has
  std::optional<Error> workspace_config_error;
  WorkspaceConfig config;
};

Catalog DiscoverPlugins(const CatalogOptions& options);

// anvil.lock, when it names the plugin, must match its files exactly ("denied: ..." naming the
// file that changed).
Status CheckLock(const std::string& workspace, const std::string& plugin_dir,
                 const Manifest& manifest);

struct GrantLookup {
  std::optional<Grant> grant;     // set when the plugin may run without asking
  std::optional<Grant> previous;  // the grant of an earlier manifest, when there is one
};
// The grant stored for exactly this manifest hash. A changed manifest that only removes
// permissions is re-approved (narrowed) without asking (consent.h); anything else leaves
// `grant` empty: the user must be asked.
Result<GrantLookup> LookupGrant(GrantStore& store, const std::string& workspace,
                                const Manifest& manifest);

// The consent prompt in plain words: who asks, for what, where. Every plugin-supplied string
// is sanitized (consent.h).
std::string ConsentText(const std::string& workspace, const Manifest& manifest,
                        const std::optional<Grant>& previous);

}  // namespace anvil::session
