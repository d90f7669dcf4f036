// The workspace's Anvil.toml parser (src/policy/workspace_config: untrusted, comes with the
// repository). Invariants for an accepted file: enabled ids are valid and unique and bounded,
// settings are JSON objects keyed by valid plugin ids, within the depth/size bounds, and
// serialize to JSON (no NaN/inf, valid UTF-8 strings).
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "fuzz_util.h"
#include "policy/manifest.h"
#include "policy/workspace_config.h"

using anvil::fuzz::Require;

namespace {
size_t Depth(const nlohmann::json& value) {
  size_t deepest = 0;
  if (value.is_object() || value.is_array()) {
    for (const auto& child : value) deepest = std::max(deepest, Depth(child));
    return deepest + 1;
  }
  return 0;
}
size_t Count(const nlohmann::json& value) {
  size_t n = 1;
  if (value.is_object() || value.is_array()) {
    for (const auto& child : value) n += Count(child);
  }
  return n;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto config = anvil::ParseWorkspaceConfig(anvil::fuzz::AsView(data, size));
  if (!config) return 0;
  Require(config->enable.size() <= anvil::kMaxEnabledPlugins, "too many enabled plugins");
  std::set<std::string> seen;
  for (const auto& id : config->enable) {
    Require(anvil::ValidatePluginId(id).has_value(), "enabled id", id);
    Require(seen.insert(id).second, "duplicate enabled id", id);
  }
  size_t values = 0;
  for (const auto& [id, settings] : config->settings) {
    Require(anvil::ValidatePluginId(id).has_value(), "settings id", id);
    Require(settings.is_object(), "settings not an object", id);
    Require(Depth(settings) <= anvil::kMaxSettingsDepth + 1, "settings too deep", id);
    values += Count(settings);
    // Throws on invalid UTF-8; NaN/inf would print as null and lose data.
    std::string dumped = settings.dump();
    Require(nlohmann::json::parse(dumped) == settings, "settings JSON round trip", id);
    Require(config->SettingsFor(id) == settings, "SettingsFor", id);
  }
  Require(values <= anvil::kMaxSettingsValues + config->settings.size() * 2 + 16,
          "too many settings values");
  return 0;
}
