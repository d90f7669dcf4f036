#include "linux/git_guard.h"

#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>
#include <sstream>

#include "linux/owner_write.h"
#include "policy/sandbox_policy.h"

namespace anvil {
namespace {

// A same-user command can take the owner's permissions off a directory (`chmod 0 sub`, or
// `chmod 111 sub`: git still works there) so that a walk cannot list it, and the user may have
// such a directory too. One the caller owns gets them back for the walk (owner_write.h), while
// no command runs (before it starts, after it ended), and its mode is set again when this goes.
class GivenAccess {
 public:
  GivenAccess() = default;
  GivenAccess(const GivenAccess&) = delete;
  GivenAccess& operator=(const GivenAccess&) = delete;
  // Deepest first: a parent's mode goes back after its children's.
  ~GivenAccess() {
    while (!given_.empty()) given_.pop_back();
  }
  // `fs` whose listing of a directory it may not list gives the owner's permissions back first.
  GitFs Wrap(const GitFs& fs) {
    GitFs out = fs;
    out.list_dir = [this, list = fs.list_dir](const std::string& dir) -> Result<GitDirListing> {
      auto listing = list(dir);
      if (listing || listing.error().code != "denied") return listing;
      UniqueFd fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!fd) return listing;
      auto access = std::make_unique<OwnerAccess>(fd.Get());
      given_.push_back({std::move(fd), std::move(access)});
      return list(dir);
    };
    return out;
  }

 private:
  struct Given {
    UniqueFd fd;
    std::unique_ptr<OwnerAccess> access;
  };
  std::vector<Given> given_;
};

}  // namespace

Result<GitGuard> GitGuard::Prepare(const std::vector<std::string>& roots,
                                   const GitScanLimits& limits, const GitEnv& env, GitFs fs,
                                   const GitWalkMemo* cached) {
  const auto start = std::chrono::steady_clock::now();
  GitGuard guard;
  guard.roots_ = roots;
  guard.limits_ = limits;
  guard.env_ = env;
  guard.fs_ = std::move(fs);
  GivenAccess access;
  const GitFs walk_fs = access.Wrap(guard.fs_);
  auto scan = ScanGitMetadata(roots, env, walk_fs, limits, cached);
  if (!scan) return tl::unexpected(scan.error());
  GitProtectionPlan plan = PlanGitProtection(*scan, env, walk_fs, limits);
  if (!plan.problems.empty()) return tl::unexpected(plan.problems.front());

  std::vector<PlaceholderSpec> specs;
  for (const auto& ph : plan.placeholders) specs.push_back({ph.parent, ph.name, ph.directory});
  // What exists is locked too: it may be another run's placeholder, which that run must not
  // remove (and so detach from this view) while this run binds it.
  for (const auto& path : plan.read_only) {
    auto slash = path.rfind('/');
    if (slash == std::string::npos || slash == 0) continue;
    specs.push_back({path.substr(0, slash), path.substr(slash + 1),
                     guard.fs_.lstat(path).type == GitFileType::kDir});
  }
  // Anvil's protected names: what the git plan keeps read-only needs no mount of its own.
  guard.names_ = PlanProtectedNames(
      scan->protected_names, roots, plan.read_only,
      plan.read_only.size() + plan.placeholders.size() + plan.pinned.size(), limits.paths);
  if (!guard.names_.problems.empty()) return tl::unexpected(guard.names_.problems.front());
  for (const auto& path : guard.names_.read_only) {
    auto slash = path.rfind('/');
    if (slash == std::string::npos || slash == 0) continue;
    specs.push_back({path.substr(0, slash), path.substr(slash + 1),
                     guard.fs_.lstat(path).type == GitFileType::kDir, /*create=*/false});
  }
  auto made = ProtectedPlaceholders::Create(specs);
  if (!made) return tl::unexpected(made.error());
  guard.placeholders_ = std::move(*made);

  guard.read_only_ = plan.read_only;
  size_t placeholders = 0;
  for (const auto& ph : plan.placeholders) {
    // Bound like any existing path once it is there (a directory on the way: pinned); a parent
    // the caller cannot write kept it from being made, and the command cannot make it either.
    const std::string path = ph.parent + "/" + ph.name;
    auto r = guard.fs_.resolve(path);
    if (!r || *r != path) continue;
    ++placeholders;
    if (!ph.on_the_way) guard.read_only_.push_back(path);
  }
  for (const auto& dir : plan.pinned) {
    if (auto r = guard.fs_.resolve(dir); r && *r == dir) guard.pinned_.push_back(dir);
  }
  for (const auto& dir : guard.names_.pinned) {
    if (std::find(guard.pinned_.begin(), guard.pinned_.end(), dir) == guard.pinned_.end()) {
      guard.pinned_.push_back(dir);
    }
  }
  guard.before_ = GitIdentities(*scan, plan, walk_fs);
  guard.configs_ = GitConfigIdentities(*scan, walk_fs);
  guard.memo_ = std::move(scan->memo);

  guard.report_.protected_repositories = true;
  guard.report_.repositories = scan->repos.size();
  guard.report_.read_only_paths = plan.read_only.size();
  guard.report_.placeholders = placeholders;
  guard.report_.entries = scan->entries;
  guard.report_.listed = scan->listed;
  guard.report_.cached_dirs = scan->memo_dirs;
  guard.report_.scan_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return guard;
}

void GitGuard::CheckAfterRun() {
  const auto start = std::chrono::steady_clock::now();
  report_.checked_after = true;
  // What the command hid by a directory's mode is listed all the same (GivenAccess), for the
  // check and its quarantine.
  GivenAccess access;
  CheckWith(access.Wrap(fs_), start);
}

void GitGuard::CheckWith(const GitFs& fs, std::chrono::steady_clock::time_point start) {
  // The same bounds, but none stops the check: a command that grew the roots past one leaves
  // subtrees that are named as not walked (the run exits 125, and the next sandbox there does
  // not start), while everything found elsewhere is judged and moved aside as ever.
  auto scan = ScanGitMetadata(roots_, env_, fs, limits_, &memo_, GitBoundMode::kSkipAndName);
  report_.check_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!scan) {
    report_.check_error = scan.error().message;
    return;
  }
  report_.check_listed = scan->listed;
  report_.unwalked = scan->unwalked;
  report_.unwalked_total = scan->unwalked_total;
  memo_ = std::move(scan->memo);
  std::set<int> moved;
  for (const auto& [i, why] : NewGitReposThatRunCode(before_, *scan, fs)) moved.insert(i);
  GitProtectionPlan plan = PlanGitProtection(*scan, env_, fs, limits_, moved);
  if (plan.incomplete) {
    // Out of time: what was planned is still acted on; the rest is reported as unchecked.
    report_.check_error = "the planning after the run took longer than the 'seconds' bound (" +
                          [&] {
                            std::ostringstream out;
                            out << limits_.seconds;
                            return out.str();
                          }() +
                          " s): what it decided was moved aside, the paths the rest of the "
                          "configs name were not checked";
  }
  auto actions = DecideGitQuarantine(before_, configs_, *scan, plan, fs);
  auto result = ApplyGitQuarantine(actions, roots_, fs);
  report_.quarantined = std::move(result.moved);
  report_.quarantine_failures = std::move(result.failures);
  report_.check_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace anvil
