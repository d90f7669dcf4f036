#include "policy/user_config.h"

#include <algorithm>
#include <cerrno>

#include "fs/file_facts.h"
#include "fs/file_io.h"
#include "policy/sandbox_config_internal.h"
#include "policy/toml_internal.h"

namespace anvil {

using policy_internal::InvalidAt;
using policy_internal::Quoted;
using policy_internal::RegionOf;
using policy_internal::TypeName;

const std::map<std::string, SandboxProfile>& BuiltinProfiles() {
  static const std::map<std::string, SandboxProfile> kProfiles = {
      {"node",
       {{"~/.npm", "~/.cache/yarn", "~/.local/share/pnpm"},
        {},
        {"registry.npmjs.org", "registry.yarnpkg.com"}}},
      {"python",
       {{"~/.cache/pip", "~/.cache/uv", "~/.cache/pypoetry"},
        {},
        {"pypi.org", "files.pythonhosted.org"}}},
      {"rust",
       {{"~/.cargo/registry", "~/.cargo/git"},
        {},
        {"crates.io", "index.crates.io", "static.crates.io"}}},
      {"go", {{"~/go/pkg/mod", "~/.cache/go-build"}, {}, {"proxy.golang.org", "sum.golang.org"}}},
  };
  return kProfiles;
}

int PolicyWidth(PolicyKind kind) {
  switch (kind) {
    case PolicyKind::kReadOnly:
      return 0;
    case PolicyKind::kWorkspaceWrite:
      return 1;
    case PolicyKind::kExternalSandbox:
      return 2;
    case PolicyKind::kDangerFullAccess:
      return 3;
  }
  return 3;
}

int NetworkWidth(NetworkMode mode) {
  switch (mode) {
    case NetworkMode::kNone:
      return 0;
    case NetworkMode::kProxy:
      return 1;
    case NetworkMode::kFull:
      return 2;
  }
  return 2;
}

namespace {

constexpr std::string_view kUserShapeFix =
    "config.toml holds [sandbox] (policy, network, read_access, home, writable_roots, "
    "readable_roots, allow_hosts, profiles) and [profiles.NAME] tables (writable_roots, "
    "readable_roots, allow_hosts); see docs/policy.md";

bool ValidProfileName(std::string_view name) {
  if (name.empty() || name.size() > 32) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (i > 0 && (c == '-' || c == '_'));
    if (!ok) return false;
  }
  return true;
}

// A host for --allow-host as far as a config file can check it; anvil-proxy validates the
// rest when it starts (and refuses to start on a bad one).
bool PlausibleHost(std::string_view host) {
  if (host.empty() || host.size() > 260) return false;
  for (char c : host) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == ':' || c == '[' || c == ']';
    if (!ok) return false;
  }
  return true;
}

class UserConfigParser {
 public:
  explicit UserConfigParser(std::string_view source) : source_(source) {}

  Result<UserSandboxConfig> Parse(const toml::table& doc) {
    UserSandboxConfig config;
    for (auto&& [key, node] : doc) {
      if (key.str() == "sandbox") {
        ANVIL_RETURN_IF_ERROR(ParseSandbox(key, node, config));
      } else if (key.str() == "profiles") {
        ANVIL_RETURN_IF_ERROR(ParseProfiles(key, node, config));
      } else {
        return InvalidAt(Where(key, node), "unknown key " + Quoted(key.str()), kUserShapeFix);
      }
    }
    for (size_t i = 0; i < config.profiles.size(); ++i) {
      const auto& name = config.profiles[i];
      if (!config.profile_defs.count(name) && !BuiltinProfiles().count(name)) {
        return InvalidAt(profiles_where_,
                         "sandbox.profiles names an unknown profile " + Quoted(name),
                         "define [profiles." + name + "] or use node, python, rust or go");
      }
    }
    return config;
  }

 private:
  std::string Where(const toml::key& key, const toml::node& node) const {
    return policy_internal::Where(source_, RegionOf(key, node));
  }

  Result<std::string> String(const toml::key& key, const toml::node& node) const {
    const auto* text = node.as_string();
    if (text == nullptr) {
      return InvalidAt(
          Where(key, node),
          std::string(key.str()) + " must be a string, not " + std::string(TypeName(node)),
          "write " + std::string(key.str()) + " = \"...\"");
    }
    return text->get();
  }

  // An array of strings, each checked by `check` (returns what is wrong, or empty).
  Status Strings(const toml::key& key, const toml::node& node, std::vector<std::string>& out,
                 const std::function<std::string(const std::string&)>& check,
                 std::string_view fix) const {
    const auto* list = node.as_array();
    if (list == nullptr) {
      return InvalidAt(Where(key, node),
                       std::string(key.str()) + " must be an array of strings, not " +
                           std::string(TypeName(node)),
                       fix);
    }
    if (list->size() > kMaxConfigListEntries) {
      return InvalidAt(Where(key, node),
                       std::string(key.str()) + " has more than " +
                           std::to_string(kMaxConfigListEntries) + " entries",
                       fix);
    }
    for (const toml::node& item : *list) {
      const std::string where = item.source().begin.line != 0
                                    ? policy_internal::Where(source_, item.source())
                                    : Where(key, node);
      const auto* text = item.as_string();
      if (text == nullptr) {
        return InvalidAt(
            where,
            std::string(key.str()) + " holds " + std::string(TypeName(item)) + ", not a string",
            fix);
      }
      if (auto wrong = check(text->get()); !wrong.empty()) return InvalidAt(where, wrong, fix);
      if (std::find(out.begin(), out.end(), text->get()) == out.end()) out.push_back(text->get());
    }
    return Ok();
  }

  static std::string CheckPath(const std::string& path) {
    if (path.empty() || path.size() > 4096 || path.find('\0') != std::string::npos) {
      return "a path must not be empty";
    }
    if (path[0] != '/' && path != "~" && path.rfind("~/", 0) != 0) {
      return "path " + Quoted(path) + " must be absolute or start with ~/";
    }
    return {};
  }
  static std::string CheckHost(const std::string& host) {
    return PlausibleHost(host) ? std::string() : "not a host name: " + Quoted(host);
  }

  Status ParseLists(const toml::key& key, const toml::node& node, std::string_view prefix,
                    std::vector<std::string>& writable, std::vector<std::string>& readable,
                    std::vector<std::string>& hosts) {
    const std::string name(key.str());
    if (name == "writable_roots") {
      return Strings(key, node, writable, CheckPath,
                     std::string(prefix) + "writable_roots = [\"~/scratch\"]");
    }
    if (name == "readable_roots") {
      return Strings(key, node, readable, CheckPath,
                     std::string(prefix) + "readable_roots = [\"~/.elan\"]");
    }
    if (name == "allow_hosts") {
      return Strings(key, node, hosts, CheckHost,
                     std::string(prefix) + "allow_hosts = [\"registry.npmjs.org\"]");
    }
    return InvalidAt(Where(key, node), "unknown key " + Quoted(name), kUserShapeFix);
  }

  Status ParseSandbox(const toml::key& key, const toml::node& node, UserSandboxConfig& config) {
    const auto* table = node.as_table();
    if (table == nullptr) {
      return InvalidAt(Where(key, node),
                       "sandbox must be a table, not " + std::string(TypeName(node)),
                       "write [sandbox] and the settings below it");
    }
    for (auto&& [key_binding, value_binding] : *table) {
      // Named references: lambdas may not capture structured bindings (C++20, clang 14).
      const toml::key& k = key_binding;
      const toml::node& v = value_binding;
      const std::string name(k.str());
      auto enum_value = [&](auto parse, auto& field) -> Status {
        ANVIL_TRY(text, String(k, v));
        auto parsed = parse(*text);
        if (!parsed) {
          return InvalidAt(Where(k, v), "sandbox." + name + ": " + parsed.error().message,
                           "use one of the values named");
        }
        field = *parsed;
        return Ok();
      };
      Status s = Ok();
      if (name == "policy") {
        s = enum_value(ParsePolicyKind, config.policy);
      } else if (name == "network") {
        s = enum_value(ParseNetworkMode, config.network);
      } else if (name == "read_access") {
        s = enum_value(ParseReadAccess, config.read_access);
      } else if (name == "home") {
        s = enum_value(ParseHomeMode, config.home);
      } else if (name == "profiles") {
        profiles_where_ = Where(k, v);
        s = Strings(
            k, v, config.profiles,
            [](const std::string& p) {
              return ValidProfileName(p) ? std::string() : "not a profile name: " + Quoted(p);
            },
            "profiles = [\"python\"]");
      } else {
        s = ParseLists(k, v, "", config.writable_roots, config.readable_roots, config.allow_hosts);
      }
      if (!s) return s;
    }
    return Ok();
  }

  Status ParseProfiles(const toml::key& key, const toml::node& node, UserSandboxConfig& config) {
    const auto* table = node.as_table();
    if (table == nullptr) {
      return InvalidAt(Where(key, node), "profiles must be a table of profile tables",
                       "write [profiles.NAME]");
    }
    if (table->size() > kMaxProfiles) {
      return InvalidAt(Where(key, node), "more than " + std::to_string(kMaxProfiles) + " profiles",
                       kUserShapeFix);
    }
    for (auto&& [name, value] : *table) {
      if (!ValidProfileName(name.str())) {
        return InvalidAt(Where(name, value), "not a profile name: " + Quoted(name.str()),
                         "profile names are lower-case letters, digits, '-' and '_'");
      }
      const auto* body = value.as_table();
      if (body == nullptr) {
        return InvalidAt(Where(name, value),
                         "profile " + Quoted(name.str()) + " must be a table, not " +
                             std::string(TypeName(value)),
                         "write [profiles." + std::string(name.str()) + "]");
      }
      SandboxProfile profile;
      for (auto&& [k, v] : *body) {
        ANVIL_RETURN_IF_ERROR(ParseLists(k, v, "", profile.writable_roots, profile.readable_roots,
                                         profile.allow_hosts));
      }
      config.profile_defs[std::string(name.str())] = std::move(profile);
    }
    return Ok();
  }

  std::string_view source_;
  std::string profiles_where_;
};

// Why a workspace may not set `key` of its [sandbox] table.
std::string WorkspaceRefusal(std::string_view raw_key) {
  std::string key(raw_key);
  for (char& c : key) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c == '-') c = '_';
  }
  if (key == "writable_roots" || key == "writable_root" || key == "writable_git") {
    return "a workspace cannot make anything writable";
  }
  if (key == "readable_roots" || key == "readable_root" || key == "read_access") {
    return "a workspace cannot make anything readable";
  }
  if (key == "allow_hosts" || key == "allow_host" || key == "hosts") {
    return "a workspace cannot allow a host";
  }
  if (key == "profile" || key == "profiles") return "a workspace cannot turn a profile on";
  if (key == "home") return "a workspace cannot choose the home directory";
  return "a workspace can only narrow the sandbox (policy, network, read_only_subpaths)";
}

}  // namespace

Result<UserSandboxConfig> ParseUserConfig(std::string_view text, std::string_view source_name) {
  ANVIL_TRY(doc, policy_internal::ParseToml(text, source_name, kMaxUserConfigBytes));
  return UserConfigParser(source_name).Parse(*doc);
}

std::string UserConfigPath(const std::vector<std::string>& environ_entries) {
  std::string xdg, home;
  for (const auto& e : environ_entries) {
    if (e.rfind("XDG_CONFIG_HOME=", 0) == 0) xdg = e.substr(16);
    if (e.rfind("HOME=", 0) == 0) home = e.substr(5);
  }
  if (!xdg.empty() && xdg[0] == '/') return xdg + "/anvil/config.toml";
  if (!home.empty() && home[0] == '/') return home + "/.config/anvil/config.toml";
  return {};
}

Result<UserSandboxConfig> LoadUserConfig(const std::string& path) {
  if (path.empty()) return UserSandboxConfig{};
  auto fd = OpenFileForRead(path);
  if (!fd) {
    // EACCES: not the caller's file (a $HOME that belongs to someone else, as with `sudo -u`
    // keeping HOME): not their configuration either.
    const int e = fd.error().sys_errno;
    if (e == ENOENT || e == ENOTDIR || e == EACCES) return UserSandboxConfig{};
    return SysFail("io", "cannot read " + path, e);
  }
  ANVIL_TRY(text, ReadRegularFileFromFd(fd->Get(), path, kMaxUserConfigBytes));
  return ParseUserConfig(*text, path);
}

Status NarrowByWorkspace(const WorkspaceSandboxConfig& workspace, PolicyKind& policy,
                         NetworkMode& network) {
  if (workspace.policy) {
    if (PolicyWidth(*workspace.policy) > PolicyWidth(policy)) {
      return InvalidAt(workspace.policy_where,
                       "sandbox.policy '" + std::string(ToString(*workspace.policy)) +
                           "' would widen the policy '" + std::string(ToString(policy)) +
                           "' you run with: a workspace can only narrow the sandbox",
                       "remove it from Anvil.toml, or pass --policy " +
                           std::string(ToString(*workspace.policy)) +
                           " yourself if you trust this repository");
    }
  }
  if (workspace.network) {
    if (NetworkWidth(*workspace.network) > NetworkWidth(network)) {
      return InvalidAt(workspace.network_where,
                       "sandbox.network '" + std::string(ToString(*workspace.network)) +
                           "' would widen the network '" + std::string(ToString(network)) +
                           "' you run with: a workspace can only narrow the sandbox",
                       "remove it from Anvil.toml, or pass --network " +
                           std::string(ToString(*workspace.network)) +
                           " yourself if you trust this repository");
    }
  }
  // Both checked before either is applied: a refused narrowing changes nothing.
  if (workspace.policy) policy = *workspace.policy;
  if (workspace.network) network = *workspace.network;
  return Ok();
}

namespace policy_internal {

Status ParseWorkspaceSandbox(const toml::key& key, const toml::node& node, std::string_view source,
                             WorkspaceSandboxConfig& out) {
  auto where = [&](const toml::key& k, const toml::node& n) {
    return WhereLine(source, RegionOf(k, n));
  };
  const auto* table = node.as_table();
  if (table == nullptr) {
    return InvalidAt(where(key, node),
                     "sandbox must be a table, not " + std::string(TypeName(node)),
                     "write [sandbox] with policy, network or read_only_subpaths below it");
  }
  for (auto&& [k, v] : *table) {
    const std::string name(k.str());
    if (name == "policy" || name == "network") {
      const auto* text = v.as_string();
      if (text == nullptr) {
        return InvalidAt(where(k, v), "sandbox." + name + " must be a string",
                         "write " + name + " = \"...\"");
      }
      if (name == "policy") {
        auto kind = ParsePolicyKind(text->get());
        if (!kind || (*kind != PolicyKind::kReadOnly && *kind != PolicyKind::kWorkspaceWrite)) {
          return Fail("invalid", where(k, v) + ": sandbox.policy " + Quoted(text->get()) +
                                     " is not allowed here: a workspace can only narrow the "
                                     "sandbox (read-only or workspace-write)");
        }
        out.policy = *kind;
        out.policy_where = where(k, v);
      } else {
        auto mode = ParseNetworkMode(text->get());
        if (!mode || *mode == NetworkMode::kFull) {
          return Fail("invalid", where(k, v) + ": sandbox.network " + Quoted(text->get()) +
                                     " is not allowed here: a workspace can only narrow the "
                                     "sandbox (none or proxy)");
        }
        out.network = *mode;
        out.network_where = where(k, v);
      }
    } else if (name == "read_only_subpaths") {
      const auto* list = v.as_array();
      if (list == nullptr || list->size() > kMaxConfigListEntries) {
        return InvalidAt(where(k, v),
                         "sandbox.read_only_subpaths must be an array of at most " +
                             std::to_string(kMaxConfigListEntries) + " workspace paths",
                         "write read_only_subpaths = [\"vendor\"]");
      }
      for (const toml::node& item : *list) {
        const auto* text = item.as_string();
        if (text == nullptr) {
          return InvalidAt(
              where(k, v),
              "sandbox.read_only_subpaths holds " + std::string(TypeName(item)) + ", not a path",
              "write read_only_subpaths = [\"vendor\"]");
        }
        if (auto valid = ValidateWorkspaceSubpath(text->get()); !valid) {
          return InvalidAt(where(k, v),
                           "sandbox.read_only_subpaths: " + Quoted(text->get()) +
                               " must be a path inside the workspace",
                           "use a relative path without '..'");
        }
        out.read_only_subpaths.push_back(text->get());
      }
    } else {
      return Fail("invalid", where(k, v) + ": " + Quoted(name) +
                                 " is not allowed here: " + WorkspaceRefusal(name));
    }
  }
  return Ok();
}

}  // namespace policy_internal

}  // namespace anvil
