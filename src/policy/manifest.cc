#include "policy/manifest.h"

#include <algorithm>
#include <cerrno>
#include <optional>
#include <vector>

#include "fs/file_facts.h"
#include "fs/file_io.h"
#include "fs/path_glob.h"
#include "fs/utf8.h"
#include "fs/workspace_path.h"
#include "netpolicy/host_name.h"
#include "policy/digest.h"
#include "policy/exec_rules.h"
#include "policy/toml_internal.h"

namespace anvil {
namespace {

using policy_internal::InvalidAt;
using policy_internal::Quoted;
using policy_internal::RegionOf;
using policy_internal::TypeName;

constexpr std::size_t kMaxVersionBytes = 64;
constexpr std::size_t kMaxNameBytes = 100;
constexpr std::size_t kMaxDescriptionBytes = 2000;
constexpr std::size_t kMaxEntryBytes = 256;
constexpr std::size_t kMaxExecNameBytes = 64;

bool IsLower(char c) { return c >= 'a' && c <= 'z'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }

tl::unexpected<Error> Invalid(std::string what, std::string_view fix) {
  return Fail("invalid", std::move(what) + " (fix: " + std::string(fix) + ")");
}

// An exec entry names a tool of Anvil's executable table. Refused here, where the manifest is
// read (inspect, approve, run, serve), rather than by the gateway at the plugin's first
// sys.exec: the user must never be asked to approve a program that can never run.
Status ValidateTableExec(std::string_view name) {
  ANVIL_RETURN_IF_ERROR(ValidateExecName(name));
  if (FindExecRule(name) != nullptr) return Ok();
  std::string known;
  for (const auto& rule : ExecPolicyTable()) known += (known.empty() ? "" : ", ") + rule.name;
  return Invalid("executable " + Quoted(name) + " is not in Anvil's executable table",
                 "remove it, or use one of " + known + "; docs/exec-policy.md describes them");
}

// The manifest's [permissions] subtree, walked with the position of every key so errors name
// the line.
class PermissionsParser {
 public:
  explicit PermissionsParser(std::string_view source) : source_(source) {}

  Status Parse(const toml::table& permissions, Grant& grant) {
    for (auto&& [key, node] : permissions) {
      const std::string where = Where(key, node);
      const std::string_view k = key.str();
      if (k == "fs") {
        ANVIL_RETURN_IF_ERROR(ParseSubtable(key, node, "fs", grant));
      } else if (k == "net") {
        ANVIL_RETURN_IF_ERROR(ParseSubtable(key, node, "net", grant));
      } else if (k == "exec") {
        ANVIL_RETURN_IF_ERROR(ParseList(key, node, "exec", grant.exec, &ValidateTableExec));
      } else {
        return UnknownKey(where, "permissions", k,
                          "[permissions] holds only fs.read, fs.write, net.hosts, net.post and "
                          "exec");
      }
    }
    return Ok();
  }

 private:
  std::string Where(const toml::key& key, const toml::node& node) const {
    return policy_internal::Where(source_, RegionOf(key, node));
  }

  Status UnknownKey(const std::string& where, std::string_view table, std::string_view key,
                    std::string_view fix) const {
    std::string hint(fix);
    // `"fs.read" = [...]` is one key named "fs.read", not fs → read; say so.
    if (key.find('.') != std::string_view::npos) {
      hint = "write the key without quotes, e.g. fs.read = [...]; " + hint;
    }
    return InvalidAt(where, "unknown key " + Quoted(key) + " in " + std::string(table), hint);
  }

  Status ParseSubtable(const toml::key& key, const toml::node& node, std::string_view group,
                       Grant& grant) {
    const auto* table = node.as_table();
    if (table == nullptr) {
      return InvalidAt(Where(key, node),
                       "permissions." + std::string(group) + " must be a table, not " +
                           std::string(TypeName(node)),
                       group == "fs" ? "write fs.read = [...] and fs.write = [...]"
                                     : "write net.hosts = [...] and net.post = true|false");
    }
    for (auto&& [sub_key, sub_node] : *table) {
      const std::string_view k = sub_key.str();
      const std::string name = std::string(group) + "." + std::string(k);
      if (group == "fs" && k == "read") {
        ANVIL_RETURN_IF_ERROR(ParseList(sub_key, sub_node, name, grant.fs_read, &ValidateGlob));
      } else if (group == "fs" && k == "write") {
        ANVIL_RETURN_IF_ERROR(ParseList(sub_key, sub_node, name, grant.fs_write, &ValidateGlob));
      } else if (group == "net" && k == "hosts") {
        ANVIL_RETURN_IF_ERROR(
            ParseList(sub_key, sub_node, name, grant.net_hosts, &ValidateGrantHost));
      } else if (group == "net" && k == "post") {
        const auto* value = sub_node.as_boolean();
        if (value == nullptr) {
          return InvalidAt(Where(sub_key, sub_node),
                           "net.post must be a boolean, not " + std::string(TypeName(sub_node)),
                           "write net.post = true or net.post = false");
        }
        grant.net_post = value->get();
      } else {
        return UnknownKey(
            Where(sub_key, sub_node), "permissions." + std::string(group), k,
            group == "fs" ? "fs holds only read and write" : "net holds only hosts and post");
      }
    }
    return Ok();
  }

  Status ParseList(const toml::key& key, const toml::node& node, const std::string& name,
                   std::vector<std::string>& out, Status (*validate)(std::string_view)) {
    const auto* array = node.as_array();
    if (array == nullptr) {
      return InvalidAt(Where(key, node),
                       name + " must be an array of strings, not " + std::string(TypeName(node)),
                       "write " + name + " = [\"...\"]");
    }
    if (array->size() > kMaxPermissionEntries) {
      return InvalidAt(Where(key, node),
                       name + " has " + std::to_string(array->size()) + " entries, more than " +
                           std::to_string(kMaxPermissionEntries),
                       "use broader globs or fewer entries");
    }
    std::size_t index = 0;
    for (const toml::node& element : *array) {
      const std::string where = policy_internal::Where(
          source_, element.source().begin.line != 0 ? element.source() : RegionOf(key, node));
      const auto* text = element.as_string();
      if (text == nullptr) {
        return InvalidAt(where,
                         name + "[" + std::to_string(index) + "] must be a string, not " +
                             std::string(TypeName(element)),
                         "quote it");
      }
      const std::string& value = text->get();
      if (auto s = validate(value); !s) {
        return InvalidAt(where, name + "[" + std::to_string(index) + "]: " + s.error().message, "");
      }
      if (std::find(out.begin(), out.end(), value) == out.end()) out.push_back(value);
      ++index;
    }
    return Ok();
  }

  std::string_view source_;
};

// Name and description are shown to the user next to the consent prompt: no control
// characters (a description may hold line breaks) and no bidi overrides, so the text cannot
// act on a terminal or reorder itself. Display sanitizes again; refusing here tells the author.
Status CheckText(std::string_view text, std::string_view what, bool allow_newlines,
                 std::size_t max_bytes) {
  if (text.size() > max_bytes) {
    return Invalid(std::string(what) + " is longer than " + std::to_string(max_bytes) + " bytes",
                   "shorten it");
  }
  for (std::size_t i = 0; i < text.size();) {
    char32_t c = 0;
    const std::size_t length = fs_internal::DecodeUtf8(text, i, &c);
    if (length == 0) return Invalid(std::string(what) + " is not valid UTF-8", "re-save as UTF-8");
    i += length;
    if (c == '\n' && allow_newlines) continue;
    if (fs_internal::IsControl(c) || fs_internal::IsBidiControl(c)) {
      return Invalid(std::string(what) +
                         " contains a control or bidirectional formatting "
                         "character",
                     "remove it");
    }
  }
  return Ok();
}

Status CheckVersion(std::string_view version) {
  if (version.empty()) return Invalid("version is empty", "write a version such as \"0.1.0\"");
  if (version.size() > kMaxVersionBytes) {
    return Invalid("version is longer than 64 bytes", "shorten it");
  }
  for (char c : version) {
    if (c < 0x20 || c > 0x7e) {
      return Invalid("version " + Quoted(version) + " holds a character outside printable ASCII",
                     "use a version such as \"0.1.0\"");
    }
  }
  if (version.front() == ' ' || version.back() == ' ') {
    return Invalid("version " + Quoted(version) + " has leading or trailing spaces", "remove them");
  }
  return Ok();
}

Result<PluginRuntime> CheckRuntime(std::string_view runtime) {
  if (runtime == "lua") return PluginRuntime::kLua;
  if (runtime == "js") return PluginRuntime::kJs;
  return Invalid("runtime " + Quoted(runtime) + " is not supported",
                 "write runtime = \"lua\" or runtime = \"js\"");
}

Status CheckEntry(std::string_view entry) {
  if (entry.size() > kMaxEntryBytes) return Invalid("entry is longer than 256 bytes", "shorten it");
  if (!entry.empty() && entry.front() == '/') {
    return Invalid("entry " + Quoted(entry) + " is an absolute path",
                   "name a file inside the plugin directory, e.g. \"main.lua\"");
  }
  auto normalized = NormalizeWorkspacePath(entry, RootPolicy::kReject);
  if (!normalized) {
    return Invalid(
        "entry " + Quoted(entry) + " is not a plain relative path: " + normalized.error().message,
        "name a file inside the plugin directory, without '..', e.g. \"main.lua\"");
  }
  return Ok();
}

bool HasSuffix(std::string_view text, std::string_view suffix) {
  return text.size() > suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The bytes after the final '/' (the file name), to check the extension has a stem.
std::string_view BaseName(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string_view ToString(PluginRuntime runtime) {
  return runtime == PluginRuntime::kJs ? "js" : "lua";
}

std::string_view EntryExtension(PluginRuntime runtime) {
  return runtime == PluginRuntime::kJs ? ".js" : ".lua";
}

std::string ManifestSha256(std::string_view bytes) { return Sha256Hex(bytes); }

Status ValidatePluginId(std::string_view id) {
  if (id.empty()) {
    return Invalid("plugin id is empty", "write an id such as \"example.todo-finder\"");
  }
  if (id.size() > kMaxPluginIdBytes) {
    return Invalid("plugin id is longer than 64 bytes", "shorten it");
  }
  if (!IsLower(id.front()) && !IsDigit(id.front())) {
    return Invalid("plugin id " + Quoted(id) + " must start with a-z or 0-9",
                   "use an id such as \"example.todo-finder\"");
  }
  for (char c : id) {
    if (!IsLower(c) && !IsDigit(c) && c != '.' && c != '_' && c != '-') {
      return Invalid("plugin id " + Quoted(id) + " holds " + Quoted(std::string_view(&c, 1)) +
                         "; ids use only a-z, 0-9, '.', '_' and '-'",
                     IsUpper(c) ? "write the id in lower case" : "remove the character");
    }
  }
  return Ok();
}

Status ValidateExecName(std::string_view name) {
  if (name.empty()) return Invalid("executable name is empty", "write a name such as \"rg\"");
  if (name.size() > kMaxExecNameBytes) {
    return Invalid("executable name is longer than 64 bytes", "check the name");
  }
  if (name.front() == '-') {
    return Invalid("executable name " + Quoted(name) + " starts with '-'", "check the name");
  }
  for (char c : name) {
    if (!IsLower(c) && !IsDigit(c) && c != '-') {
      return Invalid("executable " + Quoted(name) +
                         " is not a name from Anvil's executable table (a-z, 0-9, '-')",
                     c == '/' ? "write the program name, not a path, e.g. \"rg\""
                              : "write a name such as \"rg\" or \"fd\"");
    }
  }
  return Ok();
}

Result<Manifest> ParseManifest(std::string_view toml_text, std::string_view source_name) {
  ANVIL_TRY(parsed, policy_internal::ParseToml(toml_text, source_name, kMaxManifestBytes));
  const toml::table& doc = *parsed;

  Manifest manifest;
  manifest.sha256 = ManifestSha256(toml_text);
  if (manifest.sha256.empty()) return Fail("internal", "SHA-256 failed");

  auto where = [&](const toml::key& key, const toml::node& node) {
    return policy_internal::Where(source_name, RegionOf(key, node));
  };
  // Error at a value: its own position (the column of the value, not of the key).
  auto where_value = [&](const toml::key& key, const toml::node& node) {
    return policy_internal::Where(source_name,
                                  node.source().begin.line != 0 ? node.source() : key.source());
  };
  auto need_string = [&](const toml::key& key, const toml::node& node,
                         std::string_view example) -> Result<std::string> {
    const auto* value = node.as_string();
    if (value == nullptr) {
      return InvalidAt(where(key, node),
                       Quoted(key.str()) + " must be a string, not " + std::string(TypeName(node)),
                       "write " + std::string(key.str()) + " = " + std::string(example));
    }
    return value->get();
  };

  bool have_id = false, have_version = false, have_runtime = false, have_entry = false;
  std::string entry_where;
  for (auto&& [key, node] : doc) {
    const std::string_view k = key.str();
    Status checked = Ok();
    if (k == "id") {
      ANVIL_TRY(value, need_string(key, node, "\"example.todo-finder\""));
      checked = ValidatePluginId(*value);
      manifest.id = std::move(*value);
      have_id = true;
    } else if (k == "version") {
      ANVIL_TRY(value, need_string(key, node, "\"0.1.0\""));
      checked = CheckVersion(*value);
      manifest.version = std::move(*value);
      have_version = true;
    } else if (k == "runtime") {
      ANVIL_TRY(value, need_string(key, node, "\"lua\""));
      auto runtime = CheckRuntime(*value);
      if (runtime) manifest.runtime = *runtime;
      checked = runtime ? Ok() : Status(tl::unexpected(runtime.error()));
      have_runtime = true;
    } else if (k == "entry") {
      ANVIL_TRY(value, need_string(key, node, "\"main.lua\""));
      checked = CheckEntry(*value);
      manifest.entry = std::move(*value);
      entry_where = where_value(key, node);
      have_entry = true;
    } else if (k == "name") {
      ANVIL_TRY(value, need_string(key, node, "\"TODO finder\""));
      checked = CheckText(*value, "name", /*allow_newlines=*/false, kMaxNameBytes);
      manifest.name = std::move(*value);
    } else if (k == "description") {
      ANVIL_TRY(value, need_string(key, node, "\"what the plugin does\""));
      checked = CheckText(*value, "description", /*allow_newlines=*/true, kMaxDescriptionBytes);
      manifest.description = std::move(*value);
    } else if (k == "permissions") {
      const auto* table = node.as_table();
      if (table == nullptr) {
        return InvalidAt(where(key, node),
                         "permissions must be a table, not " + std::string(TypeName(node)),
                         "write a [permissions] section");
      }
      PermissionsParser permissions(source_name);
      ANVIL_RETURN_IF_ERROR(permissions.Parse(*table, manifest.requested));
    } else {
      return InvalidAt(where(key, node), "unknown key " + Quoted(k),
                       "a manifest holds only id, version, runtime, entry, name, description and "
                       "[permissions]");
    }
    if (!checked) {
      return Fail("invalid", where_value(key, node) + ": " + checked.error().message);
    }
  }

  const std::string top = policy_internal::Where(source_name, toml::source_region{});
  if (!have_id) return InvalidAt(top, "missing 'id'", "add id = \"example.todo-finder\"");
  if (!have_version) return InvalidAt(top, "missing 'version'", "add version = \"0.1.0\"");
  if (!have_runtime) return InvalidAt(top, "missing 'runtime'", "add runtime = \"lua\" or \"js\"");
  if (!have_entry) return InvalidAt(top, "missing 'entry'", "add entry = \"main.lua\"");

  const std::string_view extension = EntryExtension(manifest.runtime);
  if (!HasSuffix(manifest.entry, extension) ||
      BaseName(manifest.entry).size() <= extension.size()) {
    return InvalidAt(entry_where,
                     "entry " + Quoted(manifest.entry) + " does not end in " +
                         std::string(extension) + " as runtime \"" +
                         std::string(ToString(manifest.runtime)) + "\" requires",
                     "name a " + std::string(extension) + " file, or change runtime");
  }
  manifest.entry_where = entry_where;
  return manifest;
}

namespace {

// The entry file as the plugin host opens it: beneath the plugin directory, no symlink at any
// component. What is wrong with it, at the entry's position in the manifest, or Ok.
Status CheckEntryFile(int dir_fd, const Manifest& manifest) {
  const std::string shown = Quoted(manifest.entry);
  auto file = OpenBeneathNoSymlinks(dir_fd, manifest.entry, /*path_only=*/true);
  if (!file) {
    const int e = file.error().sys_errno;
    switch (e) {
      case ENOENT:
      case ENOTDIR:
        return InvalidAt(manifest.entry_where,
                         "entry " + shown + " does not exist in the plugin directory",
                         "create it, or point entry at the plugin's main " +
                             std::string(EntryExtension(manifest.runtime)) + " file");
      case ELOOP:
        return InvalidAt(manifest.entry_where,
                         "entry " + shown + " is a symbolic link or goes through one",
                         "put the file itself in the plugin directory: plugin files are read "
                         "without following links");
      case EXDEV:
        return InvalidAt(manifest.entry_where,
                         "entry " + shown + " is outside the plugin directory",
                         "name a file inside the plugin directory");
      default:
        return SysFail("io", "entry " + shown, e);
    }
  }
  auto regular = IsRegularFd(file->Get());
  if (!regular) return SysFail("io", "entry " + shown, regular.error().sys_errno);
  if (!*regular) {
    return InvalidAt(manifest.entry_where, "entry " + shown + " is not a regular file",
                     "point entry at the plugin's main " +
                         std::string(EntryExtension(manifest.runtime)) + " file");
  }
  return Ok();
}

}  // namespace

Status CheckManifestEntry(const std::string& plugin_dir, const Manifest& manifest) {
  ANVIL_TRY(dir, OpenDirectoryOr(plugin_dir, DirOpen::kPath,
                                 "plugin directory " + QuotePathForMessage(plugin_dir)));
  return CheckEntryFile(dir->Get(), manifest);
}

Result<Manifest> LoadManifest(const std::string& plugin_dir) {
  ANVIL_TRY(dir, OpenDirectoryOr(plugin_dir, DirOpen::kPath,
                                 "plugin directory " + QuotePathForMessage(plugin_dir)));
  const std::string name(kManifestFileName);
  auto text = ReadRegularFileNoFollow(dir->Get(), name, kMaxManifestBytes);
  if (!text) {
    Error error = text.error();
    error.message = QuotePathForMessage(plugin_dir) + "/" + error.message;
    return tl::unexpected(std::move(error));
  }
  return ParseManifest(*text, QuotePathForMessage(plugin_dir + "/" + name));
}

}  // namespace anvil
