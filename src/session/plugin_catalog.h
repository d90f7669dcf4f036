// Which plugins a session can load, and under which grant (threat model T8).
//
// Plugins are found on trusted paths only: directories named on the command line
// (`--plugin-dir`, enabled by that very act) and the subdirectories of the plugin search path
// (`--plugin-path`, default ${XDG_DATA_HOME:-~/.local/share}/anvil/plugins). The workspace's
// Anvil.toml is untrusted (a repository writes it): it may *enable* installed plugins by id and
// hand them settings, never add a plugin directory, widen a grant or skip consent. Plugin code
// in the repository itself is never picked up.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "policy/grant.h"
#include "policy/grant_store.h"
#include "policy/manifest.h"
#include "policy/manifest_signature.h"
#include "policy/workspace_config.h"

namespace anvil::session {

struct CatalogOptions {
  std::string workspace;                  // canonical
  std::vector<std::string> plugin_dirs;   // each a plugin directory; always enabled
  std::vector<std::string> search_paths;  // each subdirectory is a plugin
};

// The user's own plugin directory, ${XDG_DATA_HOME:-~/.local/share}/anvil/plugins, canonical;
// "" when neither variable gives an absolute path or the directory does not exist.
std::string DefaultPluginSearchPath(const char* xdg_data_home, const char* home);

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
// file that changed). Returns the files it pinned (relative path -> SHA-256), empty when the
// lock does not name the plugin: hand them to the host (HostConfig::pinned_files), which
// refuses to run bytes other than these, so a swap between this check and the host's own
// read of the files runs nothing.
Result<std::map<std::string, std::string>> CheckLock(const std::string& workspace,
                                                     const std::string& plugin_dir,
                                                     const Manifest& manifest);

// The manifest's optional ed25519 signature (anvil-plugin.toml.sig), verified against the keys
// the user trusts (trusted_keys.h: the user's config dir, never the workspace or the plugin).
// A signature that is present but malformed, by an untrusted key, or not matching the manifest
// that was parsed refuses the plugin ("denied"/"invalid: anvil-plugin.toml.sig: ..."); no
// signature is fine unless `require_signed`. Checks the hash of the bytes that were parsed
// (Manifest::sha256), so the manifest is never read a second time.
Result<SignatureCheck> CheckSignature(const std::string& plugin_dir, const Manifest& manifest,
                                      bool require_signed);

struct GrantLookup {
  std::optional<Grant> grant;     // set when the plugin may run without asking
  std::optional<Grant> previous;  // the grant of an earlier manifest, when there is one
  // Set when the stored grant was approved for another copy of this plugin: that copy's
  // directory (this very path when the approved directory was removed and another made here
  // since), or "" when the grant predates pinning grants to a copy. For the consent text.
  std::optional<std::string> other_copy;
  // Set when this copy is let in only because its code is identical to the approved one's, which
  // is in another directory (that directory's path): a manifest asking for more is then asked
  // about as a copy, and approving it moves the approval here.
  std::optional<std::string> copy_of;
  // The copy looked up: approve with it (GrantStore::Approve), and hand its files to the host
  // (HostConfig::pinned_files) when anvil.lock does not pin the plugin, so that the host runs
  // exactly the code the grant was found for.
  PluginCopy copy;
  std::map<std::string, std::string> files;  // relative path -> SHA-256, as HashPluginDir
};
// The grant stored for exactly this manifest hash and this copy of the plugin (`plugin_dir`,
// canonical, whose code is hashed here; PluginCopy::Matches). A changed manifest of the same
// copy that only removes permissions is re-approved (narrowed) without asking (consent.h);
// anything else leaves `grant` empty: the user must be asked.
Result<GrantLookup> LookupGrant(GrantStore& store, const std::string& workspace,
                                const Manifest& manifest, const std::string& plugin_dir);

// The consent prompt in plain words: who asks, for what, where, and who signed it (`signer`:
// the trusted key's name, empty when unsigned). Every plugin-supplied string is sanitized
// (consent.h).
// `other_copy`: GrantLookup::other_copy (says why a plugin approved before is asked about);
// `plugin_dir`: the directory asked about (when it is other_copy, it was made again there).
// `copy_of`: GrantLookup::copy_of.
std::string ConsentText(const std::string& workspace, const Manifest& manifest,
                        const std::optional<Grant>& previous, const std::string& signer = "",
                        const std::optional<std::string>& other_copy = std::nullopt,
                        std::string_view plugin_dir = {},
                        const std::optional<std::string>& copy_of = std::nullopt);

}  // namespace anvil::session
