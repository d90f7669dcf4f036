// The user's permission grants (threat model T8), stored per user:
//   ${XDG_STATE_HOME:-$HOME/.local/state}/anvil/grants.json
// keyed by (canonical workspace path, plugin id, manifest SHA-256). A grant approved for one
// manifest hash is never found under another: a plugin update, or any edit to its manifest,
// needs consent again (consent.h decides whether the update only narrows the request, in which
// case the caller re-approves without asking).
//
// A grant is also pinned to the copy of the plugin it was approved for (PluginCopy): it applies
// only in that plugin directory, or elsewhere to byte-identical code. A copied directory with
// the same id and manifest but other code asks again; editing the plugin in place (its author's
// loop, an update) does not, as in VS Code or browser extensions, where consent is about
// permissions — anvil.lock is what pins the code itself. "That plugin directory" is the
// directory object, not its path: one removed and made again at the same path (an uninstall and
// a reinstall, or another plugin remaking it with the same manifest and its own code) is
// another copy, as an uninstalled browser extension's permissions do not pass to whatever is
// installed next under its name.
//
// The store keeps at most one entry per (workspace, plugin id): approving a new hash replaces the
// old entry, so the previous grant NeedsConsent compares against is always the latest one and
// stale approvals of old manifests do not pile up (or come back when a plugin is downgraded).
//
// File format (JSON, written with 2-space indentation):
//   {"version": 3,   (2: without plugin_dir_id; 1: also without plugin_dir/code_sha256; both
//                     still read)
//    "grants": [{"workspace": "/abs/path", "plugin": "example.todo-finder",
//                "manifest_sha256": "<64 hex>", "granted_at": <unix seconds>,
//                "plugin_dir": "/abs/plugin/dir", "code_sha256": "<64 hex>",
//                "plugin_dir_id": "ino:..,btime:..,gen:..",   (optional; with plugin_dir)
//                "grant": {"fs.read": [...], "fs.write": [...], "net.hosts": [...],
//                          "net.post": false, "exec": [...]}}]}
//
// The directory is created 0700 and the file written 0600, atomically (temporary file in the
// same directory, fsync, rename, fsync of the directory); read-modify-write cycles hold an
// exclusive flock on the directory so two Anvil processes approving at once do not lose an
// update. A file that does not parse (torn, edited by hand), is not a regular file (a symlink is
// refused), is owned by another user, or is writable by group/others is refused with an error
// saying so: another user who can write it could grant themselves anything.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "policy/grant.h"

namespace anvil {

// Which copy of a plugin a grant was approved for.
struct PluginCopy {
  std::string dir;          // canonical plugin directory
  std::string code_sha256;  // lockfile.h's CodeSha256 of the entry and lib/ files
  // Which directory `dir` was (fs/file_facts.h ObjectIdentity); "" when unknown (a grant stored
  // before Anvil recorded it, or a file system that keeps neither birth time nor generation).
  std::string dir_identity;

  // The same directory object: at the same path, and not removed and made again since. An
  // unknown identity is never the same.
  bool SameDirectory(const PluginCopy& other) const {
    return dir == other.dir && !dir_identity.empty() && dir_identity == other.dir_identity;
  }
  // The same copy: the same directory (edited in place), or identical code anywhere.
  bool Matches(const PluginCopy& other) const {
    return SameDirectory(other) || code_sha256 == other.code_sha256;
  }
  bool operator==(const PluginCopy&) const = default;
};

struct GrantEntry {
  std::string workspace;  // canonical absolute path
  std::string plugin_id;
  std::string manifest_sha256;  // 64 lower-case hex digits
  Grant grant;
  std::int64_t granted_at = 0;  // Unix time, seconds
  // The copy approved; absent in entries written before grants were pinned to a copy, which
  // FindForCopy never matches (the user is asked once more).
  std::optional<PluginCopy> copy;

  bool operator==(const GrantEntry&) const = default;
};

// Canonical form of a workspace path for use as a key: realpath(3) (absolute, symlinks
// resolved), so "/w", "/w/" and a symlink to /w share one grant. "not_found" when it does not
// exist.
Result<std::string> CanonicalWorkspacePath(const std::string& path);

class GrantStore {
 public:
  using Entry = GrantEntry;

  // Opens (creating the directory if needed) and loads the store. `path_override` names the
  // grants file itself; empty means the XDG default above. A relative XDG_STATE_HOME is ignored,
  // as the XDG spec requires.
  static Result<GrantStore> Open(const std::string& path_override = "");

  // The default file path, from XDG_STATE_HOME / HOME (or the passwd entry when HOME is unset).
  static Result<std::string> DefaultPath();

  GrantStore(GrantStore&&) noexcept = default;
  GrantStore& operator=(GrantStore&&) noexcept = default;

  const std::string& path() const { return path_; }

  // Find, FindLatest and List answer from the state read by Open (or by the last Approve or
  // Revoke, which re-read the file under the lock); open a new store to see other processes'
  // changes.
  //
  // The grant approved for exactly this (workspace, plugin id, manifest hash), if any.
  // `workspace` must already be canonical (CanonicalWorkspacePath); anything else finds nothing.
  std::optional<Grant> Find(std::string_view workspace, std::string_view plugin_id,
                            std::string_view manifest_sha256) const;

  // Find, and only when the entry was approved for `copy` (PluginCopy::Matches). What decides
  // whether a plugin may run without asking.
  std::optional<Grant> FindForCopy(std::string_view workspace, std::string_view plugin_id,
                                   std::string_view manifest_sha256, const PluginCopy& copy) const;

  // The latest entry for (workspace, plugin id) under any manifest hash: the `previous` that
  // NeedsConsent compares a new request against. Never use its grant for the new hash.
  std::optional<Entry> FindLatest(std::string_view workspace, std::string_view plugin_id) const;

  // Records `grant` for (workspace, plugin id, manifest hash), replacing any earlier entry for
  // (workspace, plugin id). "invalid" when the workspace is not an absolute canonical path, the
  // id is malformed or the hash is not 64 lower-case hex digits.
  Status Approve(std::string_view workspace, std::string_view plugin_id,
                 std::string_view manifest_sha256, const Grant& grant);
  // The same, for `copy` of the plugin ("invalid" unless its dir is canonical and absolute, its
  // hash 64 lower-case hex digits and its dir_identity short printable ASCII). Every approval
  // Anvil makes goes through this one.
  Status Approve(std::string_view workspace, std::string_view plugin_id,
                 std::string_view manifest_sha256, const Grant& grant, const PluginCopy& copy);

  // Removes every entry for (workspace, plugin id) and returns them (what was revoked, for the
  // user to see). "not_found" when there was none.
  Result<std::vector<Entry>> Revoke(std::string_view workspace, std::string_view plugin_id);

  // Entries for `workspace` (all entries when empty), sorted by workspace then plugin id.
  std::vector<Entry> List(std::string_view workspace) const;

 private:
  GrantStore(std::string path, std::string file_name, UniqueFd dir);

  // Re-reads the file (under the caller's lock) so an update never overwrites entries another
  // process added since Open.
  Status Reload();
  Status Save() const;
  Status Approve(std::string_view workspace, std::string_view plugin_id,
                 std::string_view manifest_sha256, const Grant& grant,
                 const std::optional<PluginCopy>& copy);

  std::string path_;       // the grants file, for messages
  std::string file_name_;  // its name inside dir_
  UniqueFd dir_;           // the directory, O_RDONLY: openat, renameat, fsync and flock target
  std::vector<Entry> entries_;
};

}  // namespace anvil
