// The git metadata of a workspace-write sandbox's writable roots, for one run
// (policy/git_metadata.h has the what and why): before the run, scan, plan, make the
// placeholders and record what exists; the view binds ReadOnlyPaths() read-only and
// PinnedDirs() onto themselves. After the
// run — once every process of the command is gone — scan again and quarantine what the command
// made that git would execute or follow. The placeholders are removed when the guard dies.
// The same walk finds Anvil's own protected names anywhere in the roots (anvil.lock, Anvil.toml,
// .anvil; policy/protected_names_plan.h): the view binds ProtectedNamePaths() read-only too (the
// way down to each is in PinnedDirs()), and the guard holds a shared lock on each while the run
// lasts (one may be another run's placeholder).
#pragma once

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "linux/git_quarantine.h"
#include "linux/git_real_fs.h"
#include "linux/protected_placeholders.h"
#include "policy/git_metadata.h"
#include "policy/git_territory.h"
#include "policy/protected_names_plan.h"
#include "policy/unchecked_subtrees.h"

namespace anvil {

// What `anvil sandbox` reports (stderr, --json) about the repositories of the writable roots.
struct GitReport {
  bool protected_repositories = false;  // false: --writable-git, or nothing writable
  size_t repositories = 0;              // found at the start
  size_t read_only_paths = 0;           // bound read-only (one mount each)
  size_t placeholders = 0;              // made for config-named paths that did not exist
                                        // (and the missing directories on the way to them)
  size_t entries = 0;                   // directory entries walked at the start
  size_t listed = 0;                    // of them, listed (the rest came from the walk cache)
  size_t cached_dirs = 0;               // directories taken from the walk cache, unchanged
  double scan_ms = 0;                   // the start's scan and plan
  bool checked_after = false;           // the check after the run ran
  double check_ms = 0;                  // its walk, plan and quarantine
  size_t check_listed = 0;              // directory entries it listed (the rest were unchanged)
  size_t opened_up = 0;                 // the caller's unlistable directories it opened to look
  // What the check could not vouch for (nothing means it checked everything): the subtrees it
  // did not walk (past a bound the command's files can push it past; what it found elsewhere
  // was still judged and moved aside), or the planning that ran out of time. The run then exits
  // 125.
  std::string check_error;
  std::vector<GitScan::Unwalked> unwalked;  // the first 100
  size_t unwalked_total = 0;
  std::vector<GitQuarantined> quarantined;
  std::vector<std::string> quarantine_failures;
  // Anvil's protected names the command made where there were none (protected_names_plan.h,
  // NewProtectedNames): each moved aside, or why it could not be (the run then exits 125).
  std::vector<ConfigQuarantine> protected_names;
  // The check after the run could not vouch for the writable roots: not everything was walked
  // or planned, or something could not be moved aside.
  bool Incomplete() const {
    return !check_error.empty() || unwalked_total > 0 || !quarantine_failures.empty();
  }
};

class GitGuard {
 public:
  // Scans `roots` (canonical writable roots), plans, makes and locks the placeholders and
  // records the identities. Fails (the sandbox must not start) past a scan bound or on a plan
  // problem, with a message naming it and the way out. `cached`: the walk of an earlier run
  // (linux/git_walk_cache.h), whose directories are taken as they were where provably
  // unchanged. `suspect`: subtrees an earlier run's check did not walk
  // (policy/unchecked_subtrees.h), whose repositories, config files and protected names this run
  // records as not there, so that the check after it judges and moves them aside as new.
  // `live_runs`: the other runs still going over overlapping roots (linux/unchecked_run.h),
  // asked once the walk is done; of what lies in their roots, only what each of them took as
  // the user's is (policy/unchecked_subtrees.h RunTrust), the rest is judged after this run
  // as new.
  static Result<GitGuard> Prepare(const std::vector<std::string>& roots,
                                  const GitScanLimits& limits, const GitEnv& env,
                                  GitFs fs = RealGitFs(), const GitWalkMemo* cached = nullptr,
                                  const std::vector<std::string>& suspect = {},
                                  const std::function<std::vector<LiveRun>()>& live_runs = {});

  GitGuard(GitGuard&&) = default;
  GitGuard& operator=(GitGuard&&) = default;

  // Canonical paths to bind read-only on top of the writable roots (placeholders included).
  const std::vector<std::string>& ReadOnlyPaths() const { return read_only_; }
  // Anvil's protected names below the roots, to bind read-only too.
  const std::vector<std::string>& ProtectedNamePaths() const { return names_.read_only; }
  // Directories to bind onto themselves (still writable) so that none can be renamed or
  // removed: the way down to a config file git reads, the directories made on the way to a
  // placeholder whose parent was missing, and the way down to each of Anvil's protected names.
  const std::vector<std::string>& PinnedDirs() const { return pinned_; }
  const GitReport& Report() const { return report_; }
  const std::vector<std::string>& Roots() const { return roots_; }
  // What this run takes as the user's (bounded): for the runs that start while it lasts.
  RunTrust Trusted() const;
  // Whether the walk before the run found the protected name `path` but does not take it as
  // the user's (another run over these roots, going or killed, had not seen it).
  bool Distrusts(const std::string& path) const {
    return std::find(names_found_.begin(), names_found_.end(), path) != names_found_.end() &&
           std::find(names_before_.begin(), names_before_.end(), path) == names_before_.end();
  }

  // After the run: the second scan and the quarantine, and Anvil's protected names that are new
  // since the first scan moved aside (but `skip`: the workspace's Anvil.toml, which
  // workspace_config_watch.h looks after). Call once every process of the command has ended;
  // fills Report().
  void CheckAfterRun(const std::vector<std::string>& skip = {});

  // The latest complete walk of the roots (after the run once it was checked, else before it):
  // what the walk cache keeps for the next run.
  const GitWalkMemo& Memo() const { return memo_; }
  // The territory the check after the run judged the links against (GitTerritoryKey); nullopt
  // until it did (no check, one whose walk failed, whose plan ran out of time or whose
  // quarantine failed): a memo is kept only with it
  // (linux/git_walk_cache.h, GitWalkMemoMayBeSaved).
  const std::optional<std::string>& JudgedTerritory() const { return judged_territory_; }

 private:
  GitGuard() = default;

  std::vector<std::string> roots_;
  GitScanLimits limits_;
  GitEnv env_;
  GitFs fs_;
  GitIdentitySet before_;
  GitWatchedConfigs configs_;  // what each config file git reads led to at the start
  GitWalkMemo memo_;           // the walk before the run: the one after it lists only what changed
  std::vector<std::string> read_only_;
  std::vector<std::string> pinned_;
  ProtectedNamesPlan names_;
  std::vector<std::string> names_before_;  // the first scan's protected_names, those trusted
  std::vector<std::string> names_found_;   // all of them, for the reason of a move
  // Each of them with what it was (an agent's `.claude -> shared` a link): one that is another
  // object after the run (the command replaced it, or it was moved aside and made anew) counts
  // as new.
  std::vector<std::pair<std::string, GitFileFacts>> name_ids_;
  // Another run over overlapping roots was going (or had been killed) when this one started.
  bool others_going_ = false;
  // The symlinks the check after the run judges besides those in directories it lists anew: the
  // ones the walk before the run listed anew (not from the memo of an earlier run, whose check
  // judged them), and every one in a subtree a killed run left unchecked.
  std::set<std::string> links_to_judge_;
  // What the walk before the run saw of the links (GitLinkMayBeNew), and what the run kept
  // read-only, which a link the command made must not lead into (GitLinkIntoProtected).
  GitLinksBefore links_before_;
  std::vector<std::string> protected_places_;
  // The check after the run walks every directory anew (no memo), so that it judges every link:
  // another run over these roots was going, or a killed one left a subtree unchecked.
  bool walk_all_after_ = false;
  std::optional<std::string> judged_territory_;
  GitReport report_;
  ProtectedPlaceholders placeholders_;  // last: removed after everything else is done
};

}  // namespace anvil
