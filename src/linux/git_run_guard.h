// "What git runs from the workspace" kept current for a plugin's writes (policy/git_run_paths.h):
// the paths a repository's git config names (hooks dir, fsmonitor and textconv programs, include
// targets, ...) that the command sandbox keeps read-only, refused to a plugin's fs.write,
// fs.mkdir, fs.remove and fs.rename in the gateway, and to its editor.buffer.edit in `anvil
// serve` (session/lsp/serve_documents.cc), unless a grant names the exact path, as the protected
// names are. One instance per process; both apply the one rule, GitRunWriteAllowed.
//
// Cost: the workspace's repositories and configs are scanned once, when the guard starts (in
// the gateway before it hardens itself: the user's git config lies outside the workspace, and
// what a scan read outside the workspace is replayed to later scans, never read again). A write op
// then only looks at the config files and repository markers inside the workspace (one lstat each)
// and scans again — the walk memo of the last scan keeps unchanged directories from being listed
// again — when one of them changed, or when the last scan is older than kRescanAfter (a new
// repository, made by the user or git meanwhile). Fails closed: a scan that fails (a bound, a
// config git cannot parse) refuses every write op until one succeeds.
// Thread-safe: one lock around the check and any scan.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_identity.h"
#include "common/result.h"
#include "linux/git_real_fs.h"
#include "policy/git_metadata.h"
#include "policy/git_run_paths.h"

namespace anvil {

class GitRunGuard {
 public:
  static constexpr std::chrono::seconds kRescanAfter{2};

  // Scans `workspace` (canonical) now.
  static std::unique_ptr<GitRunGuard> Start(const std::string& workspace, GitFs fs = RealGitFs(),
                                            const GitEnv& env = GitEnvFromProcess(),
                                            const GitScanLimits& limits = {});

  // "ok", or why op `op` may not change normalized workspace path `path` ("denied"): it is, or
  // lies beneath, a path git runs or follows, and no glob of `write_globs` names it exactly;
  // with `or_above` (a move or a removal, which takes what is beneath along) also when such a
  // path lies beneath it.
  Status Check(std::string_view op, std::string_view path, bool or_above,
               const std::vector<std::string>& write_globs);

  // For tests and the audit: the paths as of the last scan.
  std::vector<GitRunPath> Paths();

 private:
  struct Stamp : FileIdentity {
    GitFileType type = GitFileType::kMissing;
    bool operator==(const Stamp&) const = default;
  };

  GitRunGuard(std::string workspace, GitFs fs, GitEnv env, GitScanLimits limits);
  void ScanLocked();
  bool StaleLocked();
  Stamp StampOf(const std::string& path) const;

  std::mutex mu_;
  std::string workspace_;
  GitFs real_;    // the file system as it is
  GitFs replay_;  // the same, with reads outside the workspace answered from the first scan
  GitEnv env_;
  GitScanLimits limits_;
  bool first_scan_done_ = false;
  std::map<std::string, Result<std::optional<std::string>>> outside_reads_;
  std::map<std::string, Result<GitDirListing>> outside_lists_;
  std::vector<GitRunPath> paths_;
  std::optional<Error> failure_;
  std::map<std::string, Stamp> watched_;
  std::chrono::steady_clock::time_point scanned_at_{};
  GitWalkMemo memo_;
};

}  // namespace anvil
