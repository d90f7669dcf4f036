#include "linux/git_run_guard.h"

#include <algorithm>
#include <utility>

#include "fs/workspace_path.h"

namespace anvil {
namespace {

bool Inside(const std::string& workspace, const std::string& path) {
  return path == workspace ||
         (path.size() > workspace.size() && path.compare(0, workspace.size(), workspace) == 0 &&
          (workspace == "/" || path[workspace.size()] == '/'));
}

}  // namespace

GitRunGuard::GitRunGuard(std::string workspace, GitFs fs, GitEnv env, GitScanLimits limits)
    : workspace_(std::move(workspace)),
      real_(std::move(fs)),
      replay_(real_),
      env_(std::move(env)),
      limits_(limits) {
  // Called with mu_ held (ScanLocked), so the maps need no lock of their own.
  replay_.read_file = [this](const std::string& path,
                             size_t max_bytes) -> Result<std::optional<std::string>> {
    if (Inside(workspace_, path)) return real_.read_file(path, max_bytes);
    if (auto it = outside_reads_.find(path); it != outside_reads_.end()) return it->second;
    if (first_scan_done_) {
      return Fail("denied", "not read when the guard started: " + QuotePathForMessage(path));
    }
    return outside_reads_.emplace(path, real_.read_file(path, max_bytes)).first->second;
  };
  replay_.list_dir = [this](const std::string& dir) -> Result<GitDirListing> {
    if (Inside(workspace_, dir)) return real_.list_dir(dir);
    if (auto it = outside_lists_.find(dir); it != outside_lists_.end()) return it->second;
    if (first_scan_done_) {
      return Fail("denied", "not listed when the guard started: " + QuotePathForMessage(dir));
    }
    return outside_lists_.emplace(dir, real_.list_dir(dir)).first->second;
  };
}

std::unique_ptr<GitRunGuard> GitRunGuard::Start(const std::string& workspace, GitFs fs,
                                                const GitEnv& env, const GitScanLimits& limits) {
  std::unique_ptr<GitRunGuard> guard(new GitRunGuard(workspace, std::move(fs), env, limits));
  std::lock_guard<std::mutex> lock(guard->mu_);
  guard->ScanLocked();
  guard->first_scan_done_ = true;
  return guard;
}

GitRunGuard::Stamp GitRunGuard::StampOf(const std::string& path) const {
  const GitFileFacts f = real_.lstat(path);
  return Stamp{static_cast<const FileIdentity&>(f), f.type};
}

void GitRunGuard::ScanLocked() {
  scanned_at_ = real_.now();
  watched_.clear();
  auto scan =
      ScanGitMetadata({workspace_}, env_, replay_, limits_, memo_.dirs.empty() ? nullptr : &memo_);
  if (!scan) {
    failure_ = scan.error();
    paths_.clear();
    return;
  }
  GitProtectionPlan plan = PlanGitProtection(*scan, env_, replay_, limits_);
  // What a later write op compares: each config file and repository marker in the workspace.
  auto watch = [&](const std::string& path) {
    if (!path.empty() && Inside(workspace_, path)) watched_.emplace(path, StampOf(path));
  };
  for (const GitRepo& repo : scan->repos) {
    watch(repo.marker);
    watch(repo.gitdir);
    for (const GitConfigFile& f : repo.configs) watch(f.path);
  }
  for (const GitConfigFile& f : scan->user_configs) watch(f.path);
  paths_ = GitRunPathsIn(workspace_, *scan, plan, replay_.resolve);
  memo_ = std::move(scan->memo);
  if (!plan.problems.empty()) {
    failure_ = plan.problems.front();
  } else {
    failure_.reset();
  }
}

bool GitRunGuard::StaleLocked() {
  if (real_.now() - scanned_at_ >= kRescanAfter) return true;
  return std::any_of(watched_.begin(), watched_.end(),
                     [&](const auto& w) { return !(StampOf(w.first) == w.second); });
}

Status GitRunGuard::Check(std::string_view op, std::string_view path, bool or_above,
                          const std::vector<std::string>& write_globs) {
  std::lock_guard<std::mutex> lock(mu_);
  if (StaleLocked()) ScanLocked();
  if (failure_) {
    return Fail("denied", std::string(op) +
                              ": cannot tell which paths git runs from this workspace, so no "
                              "write is made: " +
                              failure_->message);
  }
  return GitRunWriteAllowed(paths_, op, path, or_above, write_globs);
}

std::vector<GitRunPath> GitRunGuard::Paths() {
  std::lock_guard<std::mutex> lock(mu_);
  return paths_;
}

}  // namespace anvil
