#include "policy/workspace_config.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "fs/file_facts.h"
#include "fs/file_io.h"
#include "fs/workspace_path.h"
#include "policy/manifest.h"
#include "policy/sandbox_config_internal.h"
#include "policy/toml_internal.h"

namespace anvil {
namespace {

using policy_internal::Quoted;
using policy_internal::RegionOf;
using policy_internal::TypeName;

constexpr std::string_view kShapeFix =
    "Anvil.toml holds only [plugins] enable = [...], [plugins.settings.\"<plugin id>\"] tables "
    "and a narrowing [sandbox] table";

// Keys a hostile Anvil.toml would use to reach authority it must not have. Any key outside the
// accepted shape is refused anyway; these get a message saying why, so a user reviewing a
// repository sees an attempt for what it is. Compared after lower-casing and mapping '-' to '_'.
std::optional<std::string_view> ForbiddenReason(std::string_view raw_key) {
  std::string key(raw_key);
  for (char& c : key) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c == '-') c = '_';
  }
  static constexpr std::string_view kGrantKeys[] = {
      "permissions", "permission", "grant",      "grants",         "fs",
      "net",         "network",    "hosts",      "allow_host",     "allow_hosts",
      "net_hosts",   "net_post",   "post",       "fs_read",        "fs_write",
      "read",        "write",      "approve",    "approved",       "consent",
      "trust",       "trusted",    "capability", "capabilities",   "token",
      "lock",        "lockfile",   "manifest",   "manifest_sha256"};
  static constexpr std::string_view kSandboxKeys[] = {
      "sandbox",      "policy",       "writable_roots", "writable_root", "read_only_subpaths",
      "read_access",  "writable_git", "landlock",       "seccomp",       "namespaces",
      "network_mode", "env",          "environment",    "keep_env",      "setenv",
      "clear_env",    "limits",       "timeout",        "resolver"};
  static constexpr std::string_view kExecKeys[] = {
      "exec",   "executable",  "executables", "program", "programs", "path",     "paths",
      "runner", "interpreter", "bin",         "binary",  "command",  "commands", "shell"};
  auto in = [&](const auto& list) {
    return std::find(std::begin(list), std::end(list), key) != std::end(list);
  };
  if (in(kGrantKeys)) return "a workspace cannot widen a grant";
  if (key.rfind("unsafe", 0) == 0 || in(kSandboxKeys)) {
    return "a workspace cannot change sandbox settings";
  }
  if (in(kExecKeys)) return "a workspace cannot point at executables";
  return std::nullopt;
}

class ConfigParser {
 public:
  explicit ConfigParser(std::string_view source) : source_(source) {}

  Result<WorkspaceConfig> Parse(const toml::table& doc) {
    WorkspaceConfig config;
    for (auto&& [key, node] : doc) {
      if (key.str() == "plugins") {
        ANVIL_RETURN_IF_ERROR(ParsePlugins(key, node, config));
      } else if (key.str() == "sandbox") {
        ANVIL_RETURN_IF_ERROR(
            policy_internal::ParseWorkspaceSandbox(key, node, source_, config.sandbox));
      } else {
        return Refuse(key, node);
      }
    }
    return config;
  }

 private:
  std::string Where(const toml::key& key, const toml::node& node) const {
    return policy_internal::WhereLine(source_, RegionOf(key, node));
  }
  std::string WhereNode(const toml::node& node) const {
    return policy_internal::WhereLine(source_, node.source());
  }

  tl::unexpected<Error> Invalid(const std::string& where, std::string_view what,
                                std::string_view fix = {}) const {
    return policy_internal::InvalidAt(where, what, fix);
  }

  tl::unexpected<Error> Refuse(const toml::key& key, const toml::node& node) const {
    if (auto reason = ForbiddenReason(key.str())) {
      return Fail("invalid", Where(key, node) + ": " + Quoted(key.str()) +
                                 " is not allowed here: " + std::string(*reason));
    }
    return Invalid(Where(key, node), "unknown key " + Quoted(key.str()), kShapeFix);
  }

  Status ParsePlugins(const toml::key& key, const toml::node& node, WorkspaceConfig& config) {
    const auto* plugins = node.as_table();
    if (plugins == nullptr) {
      return Invalid(Where(key, node),
                     "plugins must be a table, not " + std::string(TypeName(node)), kShapeFix);
    }
    for (auto&& [sub_key, sub_node] : *plugins) {
      if (sub_key.str() == "enable") {
        ANVIL_RETURN_IF_ERROR(ParseEnable(sub_key, sub_node, config));
      } else if (sub_key.str() == "settings") {
        ANVIL_RETURN_IF_ERROR(ParseSettings(sub_key, sub_node, config));
      } else {
        return Refuse(sub_key, sub_node);
      }
    }
    return Ok();
  }

  Status ParseEnable(const toml::key& key, const toml::node& node, WorkspaceConfig& config) {
    const auto* list = node.as_array();
    if (list == nullptr) {
      return Invalid(
          Where(key, node),
          "plugins.enable must be an array of plugin ids, not " + std::string(TypeName(node)),
          "write enable = [\"example.todo-finder\"]");
    }
    if (list->size() > kMaxEnabledPlugins) {
      return Invalid(Where(key, node), "plugins.enable lists more than " +
                                           std::to_string(kMaxEnabledPlugins) + " plugins");
    }
    for (const toml::node& item : *list) {
      const std::string where = item.source().begin.line != 0 ? WhereNode(item) : Where(key, node);
      const auto* id = item.as_string();
      if (id == nullptr) {
        return Invalid(where, "plugins.enable holds " + std::string(TypeName(item)) +
                                  ", not a plugin id string");
      }
      if (auto valid = ValidatePluginId(id->get()); !valid) {
        return Fail("invalid", where + ": plugins.enable: " + valid.error().message);
      }
      if (std::find(config.enable.begin(), config.enable.end(), id->get()) == config.enable.end()) {
        config.enable.push_back(id->get());
      }
    }
    return Ok();
  }

  Status ParseSettings(const toml::key& key, const toml::node& node, WorkspaceConfig& config) {
    const auto* settings = node.as_table();
    if (settings == nullptr) {
      return Invalid(Where(key, node), "plugins.settings must be a table of plugin tables",
                     "write [plugins.settings.\"<plugin id>\"]");
    }
    for (auto&& [id, value] : *settings) {
      if (auto valid = ValidatePluginId(id.str()); !valid) {
        return Fail("invalid", Where(id, value) + ": plugins.settings: " + valid.error().message);
      }
      if (!value.is_table()) {
        return Invalid(Where(id, value),
                       "settings for " + Quoted(id.str()) + " must be a table, not " +
                           std::string(TypeName(value)),
                       "write [plugins.settings.\"" + std::string(id.str()) + "\"] and keys below");
      }
      ANVIL_TRY(json, ToJson(value, 1, Where(id, value)));
      config.settings.emplace(std::string(id.str()), std::move(*json));
    }
    return Ok();
  }

  // Plugin data, converted with bounds: a settings table is handed to a plugin over IPC, and a
  // hostile repository must not be able to make that message (or this recursion) unbounded.
  Result<nlohmann::json> ToJson(const toml::node& node, std::size_t depth,
                                const std::string& fallback_where) {
    const std::string where = node.source().begin.line != 0 ? WhereNode(node) : fallback_where;
    if (++values_ > kMaxSettingsValues) {
      return Invalid(where, "plugin settings hold more than " + std::to_string(kMaxSettingsValues) +
                                " values");
    }
    if (depth > kMaxSettingsDepth) {
      return Invalid(where, "plugin settings nest deeper than " +
                                std::to_string(kMaxSettingsDepth) + " levels");
    }
    if (const auto* table = node.as_table()) {
      nlohmann::json out = nlohmann::json::object();
      for (auto&& [key, value] : *table) {
        if (key.str().size() > kMaxSettingsStringBytes) {
          return Invalid(Where(key, value), "a settings key is too long");
        }
        ANVIL_TRY(converted, ToJson(value, depth + 1, Where(key, value)));
        out[std::string(key.str())] = std::move(*converted);
      }
      return out;
    }
    if (const auto* array = node.as_array()) {
      nlohmann::json out = nlohmann::json::array();
      for (const toml::node& item : *array) {
        ANVIL_TRY(converted, ToJson(item, depth + 1, where));
        out.push_back(std::move(*converted));
      }
      return out;
    }
    if (const auto* text = node.as_string()) {
      if (text->get().size() > kMaxSettingsStringBytes) {
        return Invalid(where, "a settings string is longer than " +
                                  std::to_string(kMaxSettingsStringBytes) + " bytes");
      }
      return nlohmann::json(text->get());
    }
    if (const auto* integer = node.as_integer()) return nlohmann::json(integer->get());
    if (const auto* boolean = node.as_boolean()) return nlohmann::json(boolean->get());
    if (const auto* number = node.as_floating_point()) {
      if (!std::isfinite(number->get())) {
        return Invalid(where, "settings cannot hold nan or inf (JSON has no such numbers)");
      }
      return nlohmann::json(number->get());
    }
    // Dates and times: ISO 8601 text, the usual JSON spelling.
    std::ostringstream text;
    if (const auto* date = node.as_date()) {
      text << date->get();
    } else if (const auto* time = node.as_time()) {
      text << time->get();
    } else if (const auto* date_time = node.as_date_time()) {
      text << date_time->get();
    } else {
      return Invalid(where, "unsupported settings value");
    }
    return nlohmann::json(text.str());
  }

  std::string_view source_;
  std::size_t values_ = 0;
};

}  // namespace

nlohmann::json WorkspaceConfig::SettingsFor(std::string_view plugin_id) const {
  const auto it = settings.find(std::string(plugin_id));
  return it == settings.end() ? nlohmann::json::object() : it->second;
}

Result<WorkspaceConfig> ParseWorkspaceConfig(std::string_view toml_text,
                                             std::string_view source_name) {
  ANVIL_TRY(doc, policy_internal::ParseToml(toml_text, source_name, kMaxWorkspaceConfigBytes));
  return ConfigParser(source_name).Parse(*doc);
}

Result<WorkspaceConfig> LoadWorkspaceConfig(const std::string& workspace_dir) {
  ANVIL_TRY(dir, OpenDirectoryOr(workspace_dir, DirOpen::kPath,
                                 "workspace " + QuotePathForMessage(workspace_dir)));
  auto text = ReadRegularFileNoFollow(dir->Get(), std::string(kWorkspaceConfigName),
                                      kMaxWorkspaceConfigBytes);
  if (!text) {
    if (text.error().code == "not_found") return WorkspaceConfig{};
    // A directory of that name is no configuration either (older sandboxes held an empty one
    // there while their command ran). The file can only narrow and enable, so none is never
    // wider than any file.
    const std::string name(kWorkspaceConfigName);
    const auto kind = text.error().code == "invalid" ? KindAtNoFollow(dir->Get(), name)
                                                     : Result<FileKind>(FileKind::kMissing);
    const bool directory = kind && *kind == FileKind::kDirectory;
    if (directory) return WorkspaceConfig{};
    return tl::unexpected(text.error());
  }
  return ParseWorkspaceConfig(*text, kWorkspaceConfigName);
}

}  // namespace anvil
