#include "session/plugin_catalog.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>

#include "policy/consent.h"
#include "policy/lockfile.h"
#include "policy/trusted_keys.h"

namespace anvil::session {
namespace {

std::string Canonical(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

// Subdirectories holding a manifest, sorted so discovery does not depend on readdir order.
std::vector<std::string> PluginDirsUnder(const std::string& root) {
  std::vector<std::string> out;
  DIR* d = ::opendir(root.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.empty() || name[0] == '.') continue;
    std::string dir = root + "/" + name;
    struct stat st {};
    if (::stat((dir + "/" + std::string(kManifestFileName)).c_str(), &st) == 0) out.push_back(dir);
    if (out.size() >= 1024) break;  // a search path is the user's, but still bounded
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::string DefaultPluginSearchPath(const char* xdg_data_home, const char* home) {
  const std::string base = xdg_data_home && xdg_data_home[0] == '/' ? std::string(xdg_data_home)
                           : home && home[0] == '/' ? std::string(home) + "/.local/share"
                                                    : std::string();
  return base.empty() ? std::string() : Canonical(base + "/anvil/plugins");
}

Catalog DiscoverPlugins(const CatalogOptions& options) {
  Catalog catalog;
  auto config = LoadWorkspaceConfig(options.workspace);
  if (config) {
    catalog.config = std::move(*config);
  } else {
    catalog.workspace_config_error = config.error();  // fail closed: it enables nothing
  }
  std::map<std::string, size_t> by_id;
  auto add = [&](const std::string& raw_dir, bool explicit_dir) {
    PluginEntry entry;
    entry.dir = Canonical(raw_dir);
    if (entry.dir.empty()) {
      entry.dir = raw_dir;
      entry.id = raw_dir.substr(raw_dir.rfind('/') + 1);
      entry.error = Error{"not_found", "no such plugin directory " + raw_dir, 0};
    } else {
      auto manifest = LoadManifest(entry.dir);
      if (manifest) {
        entry.id = manifest->id;
        // An entry that is missing or a symlink makes the plugin invalid here (with the
        // manifest's line and column), not a host that fails to start.
        if (auto checked = CheckManifestEntry(entry.dir, *manifest); !checked) {
          entry.error = checked.error();
        } else {
          entry.manifest = std::move(*manifest);
        }
      } else {
        entry.id = entry.dir.substr(entry.dir.rfind('/') + 1);
        entry.error = manifest.error();
      }
    }
    if (entry.manifest && by_id.count(entry.id)) {
      const PluginEntry& first = catalog.plugins[by_id[entry.id]];
      entry.error = Error{"invalid",
                          "plugin id " + entry.id + " is also used by " + first.dir +
                              " (the first one found is used)",
                          0};
      entry.manifest.reset();
    }
    if (explicit_dir) {
      entry.enabled = true;
      entry.enabled_by = "command line";
    }
    if (entry.manifest) by_id[entry.id] = catalog.plugins.size();
    catalog.plugins.push_back(std::move(entry));
  };
  for (const auto& dir : options.plugin_dirs) add(dir, true);
  for (const auto& root : options.search_paths) {
    for (const auto& dir : PluginDirsUnder(root)) add(dir, false);
  }
  for (const auto& id : catalog.config.enable) {
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      catalog.missing.push_back(id);
      continue;
    }
    PluginEntry& entry = catalog.plugins[it->second];
    if (!entry.enabled) {
      entry.enabled = true;
      entry.enabled_by = "Anvil.toml";
    }
  }
  return catalog;
}

Result<std::map<std::string, std::string>> CheckLock(const std::string& workspace,
                                                     const std::string& plugin_dir,
                                                     const Manifest& manifest) {
  using Pins = std::map<std::string, std::string>;
  auto lock = ReadLockfile(workspace);
  if (!lock) {
    if (lock.error().code == "not_found") return Pins{};
    return tl::unexpected(lock.error());
  }
  if (!lock->plugins.count(manifest.id)) return Pins{};
  ANVIL_TRY(hashes, HashPluginDir(plugin_dir, manifest));
  ANVIL_RETURN_IF_ERROR(VerifyAgainstLock(*lock, manifest.id, *hashes));
  return std::move(hashes->files);
}

Result<SignatureCheck> CheckSignature(const std::string& plugin_dir, const Manifest& manifest,
                                      bool require_signed) {
  ANVIL_TRY(text, ReadSignatureFile(plugin_dir));
  // Unsigned and not required: the user's keys are not even read, so a damaged key directory
  // does not stop unsigned plugins.
  if (!*text && !require_signed) return SignatureCheck{};
  std::vector<TrustedKey> keys;
  if (*text) {
    ANVIL_TRY(loaded, LoadTrustedKeys());
    keys = std::move(*loaded);
  }
  auto check = VerifyManifestSignature(manifest.sha256, *text, keys, require_signed);
  if (!check) {
    Error e = check.error();
    e.message = "plugin " + manifest.id + " in " + plugin_dir + ": " + e.message;
    return tl::unexpected(e);
  }
  return check;
}

Result<GrantLookup> LookupGrant(GrantStore& store, const std::string& workspace,
                                const Manifest& manifest, const std::string& plugin_dir) {
  GrantLookup out;
  std::string identity;
  ANVIL_TRY(hashes, HashPluginDir(plugin_dir, manifest, &identity));
  out.copy = PluginCopy{plugin_dir, hashes->code_sha256, identity};
  out.files = std::move(hashes->files);
  auto latest = store.FindLatest(workspace, manifest.id);
  if (!latest) return out;
  if (!latest->copy || !latest->copy->Matches(out.copy)) {
    // Approved for another copy: other code in another directory, or in another directory made
    // at the approved one's path after it was removed, is another plugin as far as consent
    // goes, whatever its manifest says (nor is a narrower manifest re-approved for it).
    out.other_copy = latest->copy ? latest->copy->dir : std::string();
    return out;
  }
  if (latest->copy->dir == plugin_dir && !latest->copy->SameDirectory(out.copy)) {
    // The approved code, in a directory made again at the approved path (a reinstall, or a
    // grant stored before directories were recorded): the grant is for this directory from now
    // on, so that the user's later edits of it run as edits of the approved directory do.
    latest->copy->dir_identity = identity;
    if (!identity.empty()) {
      ANVIL_RETURN_IF_ERROR(store.Approve(workspace, manifest.id, latest->manifest_sha256,
                                          latest->grant, *latest->copy));
    }
  }
  if (latest->manifest_sha256 == manifest.sha256) {
    out.grant = latest->grant;
    return out;
  }
  if (!latest->copy->SameDirectory(out.copy) && latest->copy->dir != out.copy.dir) {
    out.copy_of = latest->copy->dir;
  }
  out.previous = latest->grant;
  if (!NeedsConsent(out.previous, manifest.requested)) {
    // The changed manifest only removes permissions (or changes nothing it asks for): granted
    // with no question. Stored only for the approved directory itself (its manifest edited in
    // place). A copy let in because its code is identical gets it for this run alone: storing
    // it would record that directory as the approved copy, and its later edits (a pull, a
    // sandboxed command writing the workspace) would then run unasked with the user's grant.
    if (latest->copy->SameDirectory(out.copy)) {
      ANVIL_RETURN_IF_ERROR(
          store.Approve(workspace, manifest.id, manifest.sha256, manifest.requested, out.copy));
    }
    out.grant = manifest.requested;
  }
  return out;
}

std::string ConsentText(const std::string& workspace, const Manifest& manifest,
                        const std::optional<Grant>& previous, const std::string& signer,
                        const std::optional<std::string>& other_copy, std::string_view plugin_dir,
                        const std::optional<std::string>& copy_of) {
  std::string text;
  if (previous) text = "The manifest changed and asks for more than before.\n";
  if (copy_of && !copy_of->empty()) {
    text += "This is a copy of the plugin you approved in " + SanitizeForDisplay(*copy_of, 400) +
            " (the same code, another directory, another manifest). Approving it makes this "
            "directory the approved copy: its later code changes run without asking, and the one "
            "in " +
            SanitizeForDisplay(*copy_of, 400) + " asks again when its code changes.\n";
  }
  if (other_copy && !other_copy->empty() && *other_copy == plugin_dir) {
    text += "This is not the directory you approved: the one at " +
            SanitizeForDisplay(*other_copy, 400) +
            " now was made after the approval (the plugin was removed and made again, or the "
            "approval predates Anvil recording directories), and the code here is different.\n";
  } else if (other_copy && !other_copy->empty()) {
    text += "This is not the copy you approved: that one is in " +
            SanitizeForDisplay(*other_copy, 400) +
            ", and the code here is different (without anvil.lock pinning it, an approval covers "
            "the approved directory, or identical code).\n";
  } else if (other_copy) {
    text +=
        "It was approved before Anvil recorded which copy of a plugin an approval is for: "
        "approve it once more.\n";
  }
  text += "Plugin " + SanitizeForDisplay(manifest.id) + " " + SanitizeForDisplay(manifest.version) +
          " asks for:\n" + DescribeGrant(manifest.requested) + "in workspace " +
          SanitizeForDisplay(workspace, 400) + "\n";
  // The signer's name is the user's own label for a key they trust, never plugin text.
  text += signer.empty()
              ? "Manifest: not signed.\n"
              : "Manifest: signed by " + SanitizeForDisplay(signer, 64) + " (a key you trust).\n";
  return text;
}

}  // namespace anvil::session
