// The user's permission grants (threat model T8), stored per user:
//   ${XDG_STATE_HOME:-$HOME/.local/state}/anvil/grants.json
// keyed by (canonical workspace path, plugin id, manifest SHA-256). A grant approved for one
// manifest hash is never found under another: a plugin update, or any edit to its manifest,
// needs consent again (consent.h decides whether the update only narrows the request, in which
// case the caller re-approves without asking).
//
// The store keeps at most one entry per (workspace, plugin id): approving a new hash replaces the
// old entry, so the previous grant NeedsConsent compares against is always the latest one and
// stale approvals of old manifests do not pile up (or come back when a plugin is downgraded).
//
// File format (JSON, written with 2-space indentation):
//   {"version": 1,
//    "grants": [{"workspace": "/abs/path", "plugin": "example.todo-finder",
//                "manifest_sha256": "<64 hex>", "granted_at": <unix seconds>,
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

struct GrantEntry {
  std::string workspace;  // canonical absolute path
  std::string plugin_id;
  std::string manifest_sha256;  // 64 lower-case hex digits
  Grant grant;
  std::int64_t granted_at = 0;  // Unix time, seconds

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

  // The latest entry for (workspace, plugin id) under any manifest hash: the `previous` that
  // NeedsConsent compares a new request against. Never use its grant for the new hash.
  std::optional<Entry> FindLatest(std::string_view workspace, std::string_view plugin_id) const;

  // Records `grant` for (workspace, plugin id, manifest hash), replacing any earlier entry for
  // (workspace, plugin id). "invalid" when the workspace is not an absolute canonical path, the
  // id is malformed or the hash is not 64 lower-case hex digits.
  Status Approve(std::string_view workspace, std::string_view plugin_id,
                 std::string_view manifest_sha256, const Grant& grant);

  // Removes every entry for (workspace, plugin id). "not_found" when there was none.
  Status Revoke(std::string_view workspace, std::string_view plugin_id);

  // Entries for `workspace` (all entries when empty), sorted by workspace then plugin id.
  std::vector<Entry> List(std::string_view workspace) const;

 private:
  GrantStore(std::string path, std::string file_name, UniqueFd dir);

  // Re-reads the file (under the caller's lock) so an update never overwrites entries another
  // process added since Open.
  Status Reload();
  Status Save() const;

  std::string path_;       // the grants file, for messages
  std::string file_name_;  // its name inside dir_
  UniqueFd dir_;           // the directory, O_RDONLY: openat, renameat, fsync and flock target
  std::vector<Entry> entries_;
};

}  // namespace anvil
