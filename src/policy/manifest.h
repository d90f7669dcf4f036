// The plugin manifest, anvil-plugin.toml (threat model T8). A manifest is written by the plugin
// author, so it is untrusted input: its permissions are only a *request* (a Grant the user may
// approve), and it is parsed strictly so that nothing a user approves is ambiguous. Unknown keys
// anywhere, wrong types and bad values are errors of the form
//
//   invalid: <source>:<line>:<col>: <what is wrong> (fix: <what to do>)
//
// Accepted shape (INTERFACES.md):
//
//   id = "example.todo-finder"   # [a-z0-9][a-z0-9._-]*, at most 64 bytes
//   version = "0.1.0"            # non-empty printable ASCII, at most 64 bytes
//   runtime = "lua"              # "lua" or "js"
//   entry = "main.lua"           # relative path beneath the plugin dir; .lua for lua, .js for js
//   name = "TODO finder"         # optional, one line, at most 100 bytes
//   description = "..."          # optional, at most 2000 bytes
//
//   [permissions]                # optional; absent means nothing is requested
//   fs.read   = ["**"]           # globs (path_glob.h), validated with ValidateGlob
//   fs.write  = ["notes/**"]
//   net.hosts = ["api.example.com"]  # exact lower-case host names or IP literals
//   net.post  = false
//   exec      = ["rg", "fd"]     # names of Anvil's executable policy table (FindExecRule)
//
// `fs.read = [...]` inside [permissions] is a TOML dotted key, i.e. permissions.fs.read; the
// equivalent [permissions.fs] table spelling is accepted too. Each list holds at most
// kMaxPermissionEntries items; duplicates are dropped (first occurrence kept).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/result.h"
#include "netpolicy/host_name.h"
#include "policy/grant.h"

namespace anvil {

inline constexpr std::string_view kManifestFileName = "anvil-plugin.toml";
inline constexpr std::size_t kMaxManifestBytes = 64 * 1024;
inline constexpr std::size_t kMaxPluginIdBytes = 64;
// Bounds the consent prompt: a request long enough to scroll the first lines off the screen
// would hide them from the user approving it.
inline constexpr std::size_t kMaxPermissionEntries = 100;

enum class PluginRuntime { kLua, kJs };
std::string_view ToString(PluginRuntime runtime);        // "lua", "js"
std::string_view EntryExtension(PluginRuntime runtime);  // ".lua", ".js"

struct Manifest {
  std::string id;
  std::string version;
  PluginRuntime runtime = PluginRuntime::kLua;
  std::string entry;        // normalized relative path (workspace_path.h rules)
  std::string name;         // empty when absent
  std::string description;  // empty when absent
  Grant requested;          // what the manifest asks for; never a grant by itself
  std::string sha256;       // ManifestSha256 of the exact bytes parsed: the grant-store key
  std::string entry_where;  // "<source>:<line>:<col>" of the entry's value, for errors about it
};

// Parses manifest text. `source_name` is used only in error messages.
Result<Manifest> ParseManifest(std::string_view toml_text, std::string_view source_name);

// Reads <plugin_dir>/anvil-plugin.toml (O_NOFOLLOW: a symlinked manifest is refused; at most
// kMaxManifestBytes) and parses it, so Manifest::sha256 is the hash of exactly the bytes that
// were parsed.
Result<Manifest> LoadManifest(const std::string& plugin_dir);

// Whether the manifest's `entry` is a regular file beneath `plugin_dir` reached without a
// symbolic link at any component, the way the plugin host opens it. A missing entry, a symlink,
// one outside the directory or something other than a regular file is an "invalid" error at
// the entry's line and column, with a fix. `anvil plugin inspect` and `approve` call it after
// LoadManifest, so such a plugin is refused before anyone is asked to approve it; `anvil run`
// and `anvil serve` call it too, so it is a manifest error there, never a plugin host that
// could not start (exit 125).
Status CheckManifestEntry(const std::string& plugin_dir, const Manifest& manifest);

// Lower-case hex SHA-256 over the exact file bytes (no normalization: any change, even in a
// comment, is a new manifest and needs its own grant).
std::string ManifestSha256(std::string_view bytes);

// The value grammars, exposed for other parsers (anvil.lock, Anvil.toml, the CLI). Each
// returns an "invalid" error whose message is "<what> (fix: <what to do>)".
Status ValidatePluginId(std::string_view id);
// net.hosts: ValidateGrantHost (netpolicy/host_name.h), the URL policy's own host grammar.
// exec: [a-z0-9][a-z0-9-]*, at most 64 bytes. A leading '-' is refused so a name can never be
// mistaken for an option.
Status ValidateExecName(std::string_view name);

}  // namespace anvil
