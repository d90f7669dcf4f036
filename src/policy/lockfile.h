// anvil.lock (threat model T8): pins, per plugin, the manifest and every file of code the host
// can load, so a plugin that changes after it was locked (an update, a tampered checkout, a
// swapped file) refuses to load and the error says which file changed.
//
// Format: TOML, rendered deterministically (sorted, fixed layout) so it diffs cleanly in git:
//
//   # anvil.lock: pins each plugin's manifest and code. Written by `anvil plugin lock`.
//   version = 1
//
//   [plugins."example.todo-finder"]
//   manifest_sha256 = "<64 hex>"   # SHA-256 of anvil-plugin.toml's exact bytes
//   code_sha256 = "<64 hex>"       # CodeSha256 of the files below
//
//   [plugins."example.todo-finder".files]
//   "lib/util.lua" = "<64 hex>"    # SHA-256 of each file's bytes
//   "main.lua" = "<64 hex>"
//
// The files are the manifest's entry plus every lib/*.lua and lib/*.js (both extensions,
// whatever the runtime: pinning a file the host would not load costs nothing, missing one it
// would load is a hole). code_sha256 = SHA-256 over, for each file sorted by path (byte order),
// "<path>\0<sha256 hex>\n"; the NUL cannot occur in a path, so the list has one encoding.
//
// The lockfile lives in the workspace, so it proves only that the plugin has not changed since
// it was locked, not that it is trustworthy: consent (grants keyed by the manifest hash) is what
// authorizes a plugin. A workspace whose anvil.lock does not pin a plugin gets "not_found", and
// the session decides (e.g. `anvil plugin lock` first).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "common/result.h"
#include "policy/manifest.h"

namespace anvil {

inline constexpr std::string_view kLockfileName = "anvil.lock";
inline constexpr std::size_t kMaxLockfileBytes = 1u << 20;
// The host's own limits on what it loads (src/host/plugin_host.cc); hashing refuses beyond them
// so a lock never pins a plugin that could not run anyway.
inline constexpr std::size_t kMaxPluginFileBytes = 1u << 20;
inline constexpr std::size_t kMaxPluginLibFiles = 64;

// The hashes of one plugin, as pinned in anvil.lock or as computed from its directory.
struct PluginHashes {
  std::string manifest_sha256;
  std::string code_sha256;
  std::map<std::string, std::string> files;  // relative path -> SHA-256 hex of its bytes

  bool operator==(const PluginHashes&) const = default;
};

struct Lockfile {
  std::map<std::string, PluginHashes> plugins;  // by plugin id

  bool operator==(const Lockfile&) const = default;
};

// Strict: unknown keys, a version other than 1, malformed ids, paths or hashes, and a
// code_sha256 that does not match its files are "invalid: anvil.lock:<line>:<col>: ...".
Result<Lockfile> ParseLockfile(std::string_view text);
std::string RenderLockfile(const Lockfile& lockfile);

// code_sha256 of a file list (see the format above).
std::string CodeSha256(const std::map<std::string, std::string>& files);

// Hashes the entry and lib/*.lua|js of `plugin_dir`. Every file is opened with O_NOFOLLOW
// beneath the directory (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS for the entry's path):
// a symlink anywhere — the entry, lib/ itself, a module — is "denied", not followed, so a lock
// never pins the target of a link that can be swapped later. manifest_sha256 is taken from
// `manifest` (the hash of the bytes actually parsed), not re-read.
// `dir_identity`, when given, is set to which directory was hashed (ObjectIdentity of the very
// directory opened: fs/file_facts.h), for a grant to tell that directory from one made later at
// the same path (grant_store.h PluginCopy).
Result<PluginHashes> HashPluginDir(const std::string& plugin_dir, const Manifest& manifest,
                                   std::string* dir_identity = nullptr);

// Compares `found` with the lock's entry for `plugin_id`. On mismatch:
//   denied: anvil.lock: <file> changed (expected <sha>, found <sha>); ...
// naming the manifest or the first differing file (an added file is "expected no file", a
// removed one "found no file"). "not_found" when the lock does not pin the plugin.
Status VerifyAgainstLock(const Lockfile& lockfile, std::string_view plugin_id,
                         const PluginHashes& found);

// Reads <workspace_dir>/anvil.lock (O_NOFOLLOW, at most kMaxLockfileBytes); "not_found" when
// absent.
Result<Lockfile> ReadLockfile(const std::string& workspace_dir);

// Writes <workspace_dir>/anvil.lock atomically (file_io.h; mode 0644: it is meant to be
// committed). A symlink planted as anvil.lock is replaced, never written through.
Status WriteLockfile(const std::string& workspace_dir, const Lockfile& lockfile);

}  // namespace anvil
