#include "policy/plugin_code_paths.h"

#include <utility>

#include "fs/protected_names.h"
#include "fs/workspace_path.h"
#include "policy/manifest.h"
#include "policy/protected_subtrees.h"

namespace anvil {

namespace {

std::string ManifestPathIn(std::string_view dir) {
  return dir == "." ? std::string(kPluginManifestName)
                    : std::string(dir) + "/" + std::string(kPluginManifestName);
}

}  // namespace

bool IsPluginManifestName(std::string_view name) {
  return FoldNameForLookup(name) == kPluginManifestName;
}

std::vector<std::string> PluginDirCandidates(std::string_view path) {
  std::vector<std::string> out;
  std::string_view at = path.empty() ? std::string_view(".") : path;
  while (true) {
    out.emplace_back(at);
    if (at == ".") break;
    at = SplitParent(at).first;
  }
  return out;
}

Error PluginCodeRefusal(std::string_view op, std::string_view path, std::string_view plugin_dir,
                        std::string_view plugin_id) {
  const ProtectedRoot root{ProtectedKind::kPluginCode, std::string(plugin_dir),
                           std::string(plugin_id)};
  return ProtectedWriteRefusal({&root, ProtectedReach::kBeneath}, op, path);
}

std::string PluginIdOfManifest(std::string_view manifest_text) {
  auto manifest = ParseManifest(manifest_text, kPluginManifestName);
  return manifest ? manifest->id : std::string();
}

Error PluginCodeError(const WorkspaceRoot& root, std::string_view op, std::string_view path,
                      std::string_view plugin_dir) {
  auto text = root.Read(ManifestPathIn(plugin_dir));
  return PluginCodeRefusal(op, path, plugin_dir, text ? PluginIdOfManifest(*text) : "");
}

Status CheckPluginCodeWrite(const WorkspaceRoot& root, std::string_view op, std::string_view path) {
  for (const std::string& dir : PluginDirCandidates(path)) {
    // Not followed, nor any symlink on the way (the op itself refuses a path through one, in
    // its own words): a missing directory, a file, or a symlinked one holds no manifest here.
    auto kind = root.GitEntryKind(ManifestPathIn(dir));
    if (!kind) {
      Error e = kind.error();
      e.message = std::string(op) + ": cannot check whether " + QuotePathForMessage(path) +
                  " is plugin code: " + e.message;
      return tl::unexpected(std::move(e));
    }
    if (*kind != GitDirEntryKind::kMissing) {
      return tl::unexpected(PluginCodeError(root, op, path, dir));
    }
  }
  return Ok();
}

}  // namespace anvil
