#include "policy/lockfile.h"

#include <cerrno>

#include "fs/file_facts.h"
#include "fs/file_io.h"
#include "fs/workspace_path.h"
#include "policy/digest.h"
#include "policy/toml_internal.h"

namespace anvil {
namespace {

using policy_internal::InvalidAt;
using policy_internal::Quoted;
using policy_internal::RegionOf;
using policy_internal::TypeName;

constexpr std::string_view kSource = "anvil.lock";
constexpr std::int64_t kLockVersion = 1;
constexpr std::string_view kLockFix = "regenerate it with `anvil plugin lock`";

// A TOML basic string. Ids and paths are validated before they get here; escaping anyway keeps
// the renderer correct for any input instead of relying on that.
std::string TomlString(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", byte);
      out += escaped;
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

bool HasCodeExtension(std::string_view name) {
  auto ends_with = [&](std::string_view ext) {
    return name.size() > ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0;
  };
  return ends_with(".lua") || ends_with(".js");
}

// The entry may sit in a subdirectory ("src/main.lua"); openat2 keeps every component beneath
// the plugin directory and refuses symlinks on the way, not just in the last component.
Result<std::string> ReadEntry(int dir_fd, const std::string& entry) {
  auto fd = OpenBeneathNoSymlinks(dir_fd, entry, /*path_only=*/false);
  const std::string shown = QuotePathForMessage(entry);
  if (!fd) {
    const int e = fd.error().sys_errno;
    if (e == ENOENT) return SysFail("not_found", "plugin entry " + shown, e);
    if (e == ELOOP) {
      return Fail("denied", "plugin entry " + shown + " is or passes through a symbolic link");
    }
    if (e == EXDEV) return Fail("denied", "plugin entry " + shown + " leaves the plugin dir");
    return SysFail("io", "open plugin entry " + shown, e);
  }
  return ReadRegularFileFromFd(fd->Get(), shown, kMaxPluginFileBytes);
}

// lib/*.lua and lib/*.js, each read without following links.
Status HashLib(int dir_fd, std::map<std::string, std::string>& files) {
  auto kind = KindAtNoFollow(dir_fd, "lib");
  if (!kind) return SysFail("io", "stat lib", kind.error().sys_errno);
  if (*kind == FileKind::kMissing) return Ok();
  if (*kind == FileKind::kSymlink) {
    return Fail("denied", "lib is a symbolic link; plugins must ship their modules as files");
  }
  if (*kind != FileKind::kDirectory)
    return Ok();  // not a directory: the host loads nothing from it
  auto lib = OpenDirectoryAtNoFollow(dir_fd, "lib");
  if (!lib) {
    const int e = lib.error().sys_errno;
    return SysFail(e == ELOOP || e == ENOTDIR ? Code::kDenied : Code::kIo, "open lib", e);
  }
  std::size_t count = 0;
  return ForEachName(lib->Get(), "read lib", [&](const std::string& name) -> Status {
    if (!HasCodeExtension(name)) return Ok();
    const std::string path = "lib/" + name;
    if (auto valid = ValidatePathComponent(name); !valid) {
      return Fail("invalid", "plugin module name is not allowed: " + valid.error().message);
    }
    if (++count > kMaxPluginLibFiles) {
      return Fail("limit",
                  "more than " + std::to_string(kMaxPluginLibFiles) + " modules under lib/");
    }
    auto module = KindAtNoFollow(lib->Get(), name);
    if (!module || *module == FileKind::kMissing) {
      return SysFail("io", "stat " + QuotePathForMessage(path),
                     module ? ENOENT : module.error().sys_errno);
    }
    if (*module == FileKind::kSymlink) {
      return Fail("denied", QuotePathForMessage(path) + " is a symbolic link; refusing it");
    }
    auto bytes = ReadRegularFileNoFollow(lib->Get(), name, kMaxPluginFileBytes);
    if (!bytes) {
      Error error = bytes.error();
      error.message = "lib/" + error.message;
      return tl::unexpected(std::move(error));
    }
    const std::string digest = Sha256Hex(*bytes);
    if (digest.empty()) return Fail("internal", "SHA-256 failed");
    files[path] = digest;
    return Ok();
  });
}

std::string ShortWhat(std::string_view file, std::string_view expected, std::string_view found) {
  return "anvil.lock: " + std::string(file) + " changed (expected " + std::string(expected) +
         ", found " + std::string(found) +
         "); review the plugin, then run `anvil plugin lock` to accept the change";
}

// The lockfile's grammar, with positions.
class LockParser {
 public:
  Result<Lockfile> Parse(const toml::table& doc) {
    Lockfile lock;
    bool have_version = false;
    for (auto&& [key, node] : doc) {
      const std::string where = Where(key, node);
      if (key.str() == "version") {
        const auto* version = node.as_integer();
        if (version == nullptr || version->get() != kLockVersion) {
          return InvalidAt(where, "unsupported lockfile version (this Anvil reads version 1)",
                           kLockFix);
        }
        have_version = true;
      } else if (key.str() == "plugins") {
        const auto* plugins = node.as_table();
        if (plugins == nullptr) {
          return InvalidAt(where, "plugins must be a table, not " + std::string(TypeName(node)),
                           kLockFix);
        }
        for (auto&& [id, entry] : *plugins) {
          ANVIL_TRY(hashes, ParsePlugin(id, entry));
          lock.plugins.emplace(std::string(id.str()), std::move(*hashes));
        }
      } else {
        return InvalidAt(where, "unknown key " + Quoted(key.str()), kLockFix);
      }
    }
    if (!have_version) {
      return InvalidAt(policy_internal::Where(kSource, toml::source_region{}), "missing 'version'",
                       kLockFix);
    }
    return lock;
  }

 private:
  static std::string Where(const toml::key& key, const toml::node& node) {
    return policy_internal::Where(kSource, RegionOf(key, node));
  }

  static Result<std::string> Hash(const toml::key& key, const toml::node& node) {
    const auto* text = node.as_string();
    if (text == nullptr || !IsSha256Hex(text->get())) {
      return InvalidAt(Where(key, node),
                       Quoted(key.str()) + " must be a SHA-256 (64 lower-case hex digits)",
                       kLockFix);
    }
    return text->get();
  }

  static Result<PluginHashes> ParsePlugin(const toml::key& id, const toml::node& node) {
    const std::string where = Where(id, node);
    if (auto valid = ValidatePluginId(id.str()); !valid) {
      return Fail("invalid", where + ": " + valid.error().message);
    }
    const auto* table = node.as_table();
    if (table == nullptr) {
      return InvalidAt(where, "plugin " + Quoted(id.str()) + " must be a table", kLockFix);
    }
    PluginHashes hashes;
    bool have_manifest = false, have_code = false, have_files = false;
    for (auto&& [key, value] : *table) {
      if (key.str() == "manifest_sha256") {
        ANVIL_TRY(hash, Hash(key, value));
        hashes.manifest_sha256 = std::move(*hash);
        have_manifest = true;
      } else if (key.str() == "code_sha256") {
        ANVIL_TRY(hash, Hash(key, value));
        hashes.code_sha256 = std::move(*hash);
        have_code = true;
      } else if (key.str() == "files") {
        const auto* files = value.as_table();
        if (files == nullptr) {
          return InvalidAt(Where(key, value), "files must be a table", kLockFix);
        }
        for (auto&& [path, digest] : *files) {
          auto normalized = NormalizeWorkspacePath(path.str(), RootPolicy::kReject);
          if (!normalized || *normalized != path.str()) {
            return InvalidAt(Where(path, digest),
                             "file path " + Quoted(path.str()) +
                                 " is not a plain relative path inside the plugin",
                             kLockFix);
          }
          ANVIL_TRY(hash, Hash(path, digest));
          hashes.files.emplace(std::string(path.str()), std::move(*hash));
        }
        have_files = true;
      } else {
        return InvalidAt(Where(key, value), "unknown key " + Quoted(key.str()), kLockFix);
      }
    }
    if (!have_manifest || !have_code || !have_files || hashes.files.empty()) {
      return InvalidAt(where,
                       "plugin " + Quoted(id.str()) +
                           " needs manifest_sha256, code_sha256 and a non-empty files table",
                       kLockFix);
    }
    // A code hash that disagrees with its own file list means the file was edited by hand;
    // which of the two to believe is a guess, so neither is.
    if (CodeSha256(hashes.files) != hashes.code_sha256) {
      return InvalidAt(where,
                       "code_sha256 of plugin " + Quoted(id.str()) + " does not match its files",
                       kLockFix);
    }
    return hashes;
  }
};

}  // namespace

std::string CodeSha256(const std::map<std::string, std::string>& files) {
  std::string list;
  for (const auto& [path, digest] : files) {  // std::map: sorted by path, byte order
    list += path;
    list += '\0';
    list += digest;
    list += '\n';
  }
  return Sha256Hex(list);
}

Result<Lockfile> ParseLockfile(std::string_view text) {
  ANVIL_TRY(doc, policy_internal::ParseToml(text, kSource, kMaxLockfileBytes));
  return LockParser().Parse(*doc);
}

std::string RenderLockfile(const Lockfile& lockfile) {
  std::string out =
      "# anvil.lock: pins each plugin's manifest and code. Written by `anvil plugin lock`;\n"
      "# a plugin whose files no longer match refuses to load.\n"
      "version = 1\n";
  for (const auto& [id, hashes] : lockfile.plugins) {
    const std::string table = "plugins." + TomlString(id);
    out += "\n[" + table + "]\n";
    out += "manifest_sha256 = " + TomlString(hashes.manifest_sha256) + "\n";
    out += "code_sha256 = " + TomlString(hashes.code_sha256) + "\n";
    out += "\n[" + table + ".files]\n";
    for (const auto& [path, digest] : hashes.files) {
      out += TomlString(path) + " = " + TomlString(digest) + "\n";
    }
  }
  return out;
}

Result<PluginHashes> HashPluginDir(const std::string& plugin_dir, const Manifest& manifest,
                                   std::string* dir_identity) {
  if (!IsSha256Hex(manifest.sha256)) {
    return Fail("invalid", "manifest has no hash (parse it with ParseManifest)");
  }
  ANVIL_TRY(dir, OpenDirectoryOr(plugin_dir, DirOpen::kRead,
                                 "plugin directory " + QuotePathForMessage(plugin_dir)));
  if (dir_identity) *dir_identity = ObjectIdentity(dir->Get());
  PluginHashes hashes;
  hashes.manifest_sha256 = manifest.sha256;
  ANVIL_TRY(entry, ReadEntry(dir->Get(), manifest.entry));
  hashes.files[manifest.entry] = Sha256Hex(*entry);
  ANVIL_RETURN_IF_ERROR(HashLib(dir->Get(), hashes.files));
  for (const auto& [path, digest] : hashes.files) {
    if (digest.empty()) return Fail("internal", "SHA-256 failed");
  }
  hashes.code_sha256 = CodeSha256(hashes.files);
  if (hashes.code_sha256.empty()) return Fail("internal", "SHA-256 failed");
  return hashes;
}

Status VerifyAgainstLock(const Lockfile& lockfile, std::string_view plugin_id,
                         const PluginHashes& found) {
  const auto it = lockfile.plugins.find(std::string(plugin_id));
  if (it == lockfile.plugins.end()) {
    return Fail("not_found", "anvil.lock does not pin plugin " + Quoted(plugin_id) +
                                 " (fix: review it, then run `anvil plugin lock`)");
  }
  const PluginHashes& expected = it->second;
  if (expected.manifest_sha256 != found.manifest_sha256) {
    return Fail("denied",
                ShortWhat(kManifestFileName, expected.manifest_sha256, found.manifest_sha256));
  }
  // Walk both sorted maps together so the first differing path (in byte order) is reported,
  // whether it changed, appeared or disappeared.
  auto e = expected.files.begin();
  auto f = found.files.begin();
  while (e != expected.files.end() || f != found.files.end()) {
    if (f == found.files.end() || (e != expected.files.end() && e->first < f->first)) {
      return Fail("denied", ShortWhat(QuotePathForMessage(e->first), e->second, "no file"));
    }
    if (e == expected.files.end() || f->first < e->first) {
      return Fail("denied", ShortWhat(QuotePathForMessage(f->first), "no file", f->second));
    }
    if (e->second != f->second) {
      return Fail("denied", ShortWhat(QuotePathForMessage(e->first), e->second, f->second));
    }
    ++e;
    ++f;
  }
  // Unreachable when both sides come from ParseLockfile/HashPluginDir (each code hash matches
  // its files); checked anyway so a hand-built PluginHashes cannot slip past.
  if (expected.code_sha256 != found.code_sha256 || CodeSha256(found.files) != found.code_sha256) {
    return Fail("denied", ShortWhat("code_sha256", expected.code_sha256, found.code_sha256));
  }
  return Ok();
}

Result<Lockfile> ReadLockfile(const std::string& workspace_dir) {
  ANVIL_TRY(dir, OpenDirectoryOr(workspace_dir, DirOpen::kPath,
                                 "workspace " + QuotePathForMessage(workspace_dir)));
  ANVIL_TRY(text,
            ReadRegularFileNoFollow(dir->Get(), std::string(kLockfileName), kMaxLockfileBytes));
  return ParseLockfile(*text);
}

Status WriteLockfile(const std::string& workspace_dir, const Lockfile& lockfile) {
  ANVIL_TRY(dir, OpenDirectoryOr(workspace_dir, DirOpen::kRead,
                                 "workspace " + QuotePathForMessage(workspace_dir)));
  return WriteFileAtomically(dir->Get(), std::string(kLockfileName), RenderLockfile(lockfile),
                             0644);
}

}  // namespace anvil
