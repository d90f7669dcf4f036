#include "linux/git_guard.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <sstream>

#include "linux/autorun_shield.h"
#include "linux/workspace_config_watch.h"
#include "policy/git_paths.h"
#include "policy/git_territory.h"
#include "policy/sandbox_policy.h"

namespace anvil {

Result<GitGuard> GitGuard::Prepare(const std::vector<std::string>& roots,
                                   const GitScanLimits& limits, const GitEnv& env, GitFs fs,
                                   const GitWalkMemo* cached,
                                   const std::vector<std::string>& suspect,
                                   const std::function<std::vector<LiveRun>()>& live_runs) {
  const auto start = std::chrono::steady_clock::now();
  GitGuard guard;
  guard.roots_ = roots;
  guard.limits_ = limits;
  guard.env_ = env;
  guard.fs_ = std::move(fs);
  guard.links_before_.walk_start = guard.fs_.wall_seconds ? guard.fs_.wall_seconds() : 0;
  ANVIL_TRY(scan, ScanGitMetadata(roots, env, guard.fs_, limits, cached));
  // The plan makes nothing: each path it asks about (the repository's marker, the user's
  // configs and their directories, many times over) is resolved once.
  GitProtectionPlan plan = PlanGitProtection(*scan, env, ResolvingOnce(guard.fs_), limits);
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
  // A protected name that is a symlink (an agent's `.claude -> ../shared`): what it leads to is
  // kept read-only where a writable root holds it; the link itself cannot be mounted over.
  for (auto it = guard.names_.read_only.begin(); it != guard.names_.read_only.end();) {
    if (guard.fs_.lstat(*it).type != GitFileType::kSymlink) {
      ++it;
      continue;
    }
    auto target = guard.fs_.resolve(*it);
    const bool keep = target && std::any_of(roots.begin(), roots.end(), [&](const std::string& r) {
                        return PathIsWithin(*target, r) && *target != r;
                      });
    if (keep) {
      *it++ = *target;
    } else {
      it = guard.names_.read_only.erase(it);
    }
  }
  for (const auto& path : guard.names_.read_only) {
    auto slash = path.rfind('/');
    if (slash == std::string::npos || slash == 0) continue;
    specs.push_back({path.substr(0, slash), path.substr(slash + 1),
                     guard.fs_.lstat(path).type == GitFileType::kDir, /*create=*/false});
  }
  ANVIL_TRY(made, ProtectedPlaceholders::Create(specs));
  guard.placeholders_ = std::move(*made);
  // A hook with other hard links is changed through any of them: each other name a writable
  // root shows is kept read-only too (a link cannot be made from a read-only bind, EXDEV, so
  // these are all the names it has while the run lasts).
  std::vector<std::string> linked_names;
  for (const auto& hook : plan.hard_linked) {
    ANVIL_TRY(names, OtherHardLinks(hook, roots, {}, AutorunShield::kLinkSearchEntries));
    for (auto& n : *names) {
      const bool covered = std::any_of(plan.read_only.begin(), plan.read_only.end(),
                                       [&](const std::string& r) { return PathIsWithin(n, r); });
      if (!covered) linked_names.push_back(std::move(n));
    }
  }

  // From here on this run makes nothing: each path is resolved once (the placeholders' and
  // pins' checks, then both identity sets name the user's config files and many of the same
  // directories), so the identities are of one resolution too.
  const GitFs settled = ResolvingOnce(guard.fs_);
  guard.read_only_ = plan.read_only;
  guard.read_only_.insert(guard.read_only_.end(), linked_names.begin(), linked_names.end());
  size_t placeholders = 0;
  for (const auto& ph : plan.placeholders) {
    // Bound like any existing path once it is there (a directory on the way: pinned); a parent
    // the caller cannot write kept it from being made, and the command cannot make it either.
    const std::string path = ph.parent + "/" + ph.name;
    auto r = settled.resolve(path);
    if (!r || *r != path) continue;
    ++placeholders;
    if (!ph.on_the_way) guard.read_only_.push_back(path);
  }
  for (const auto& dir : plan.pinned) {
    if (auto r = settled.resolve(dir); r && *r == dir) guard.pinned_.push_back(dir);
  }
  for (const auto& dir : guard.names_.pinned) {
    if (std::find(guard.pinned_.begin(), guard.pinned_.end(), dir) == guard.pinned_.end()) {
      guard.pinned_.push_back(dir);
    }
  }
  guard.names_before_ = scan->protected_names;
  guard.names_found_ = scan->protected_names;
  for (const auto& n : guard.names_before_) {
    const GitFileFacts f = guard.fs_.lstat(n);
    if (f.type != GitFileType::kMissing) guard.name_ids_.emplace_back(n, f);
  }
  guard.before_ = GitIdentities(*scan, plan, settled);
  guard.configs_ = GitConfigIdentities(*scan, settled);
  // Not the names at the top of a root: every run keeps them read-only, and its check lists the
  // top whatever else it skips.
  auto at_root_top = [&](const std::string& p) {
    const auto slash = p.rfind('/');
    const std::string parent = slash == 0 ? "/" : p.substr(0, slash);
    return std::find(roots.begin(), roots.end(), parent) != roots.end();
  };
  auto within_any = [](const std::string& p, const std::vector<std::string>& subtrees) {
    return std::any_of(subtrees.begin(), subtrees.end(),
                       [&](const std::string& s) { return PathIsWithin(p, s); });
  };
  if (!suspect.empty()) {
    // What an earlier run's check never saw counts as this run's command's work: judged after it.
    std::erase_if(guard.names_before_,
                  [&](const std::string& p) { return !at_root_top(p) && within_any(p, suspect); });
    for (const GitFileId& id : GitIdentitiesWithin(*scan, plan, settled, suspect)) {
      guard.before_.erase(id);
    }
  }
  if (live_runs) {
    // Another run still going over these roots: what its command made may be here already, and
    // its own check may never see it (this run's command can hide it from that check and put it
    // back afterwards). Only what that run takes as the user's is taken as the user's here; the
    // rest is judged after this run as new. Asked after the walk: a run that had not said what
    // it trusts by then had not started its command when the walk looked.
    const std::vector<LiveRun> others = live_runs();
    guard.others_going_ = !others.empty();
    for (const LiveRun& live : others) {
      if (!live.trusted || !RootsOverlap(live.roots, roots)) continue;
      const std::set<GitFileId> ids(live.trusted->ids.begin(), live.trusted->ids.end());
      for (const GitFileId& id : GitIdentitiesWithin(*scan, plan, settled, live.roots)) {
        if (!ids.count(id)) guard.before_.erase(id);
      }
      // At a root's top too: that run's command may have made one there, which its own check
      // then moves aside, carrying this run's read-only mount with it.
      const std::set<std::string> names(live.trusted->names.begin(), live.trusted->names.end());
      std::erase_if(guard.names_before_, [&](const std::string& p) {
        return within_any(p, live.roots) && !names.count(p);
      });
    }
  }
  guard.links_to_judge_.insert(scan->listed_symlinks.begin(), scan->listed_symlinks.end());
  guard.walk_all_after_ = guard.others_going_ || !suspect.empty();
  // Which links were there: each one listed, as it was; each directory taken unchanged from the
  // memo (a link made there later is younger than the walk).
  for (const auto& link : scan->listed_symlinks) {
    const GitFileFacts f = guard.fs_.lstat(link);
    if (f.type == GitFileType::kSymlink) guard.links_before_.listed.emplace(link, f);
  }
  if (cached) {
    for (const auto& [id, dir] : scan->memo.dirs) {
      auto it = cached->dirs.find(id);
      if (it == cached->dirs.end() || it->second.ctime_sec != dir.ctime_sec ||
          it->second.ctime_nsec != dir.ctime_nsec || it->second.mnt_id != dir.mnt_id ||
          it->second.path != dir.path) {
        continue;
      }
      guard.links_before_.remembered_dirs.emplace(id, dir.path);
    }
  }
  guard.links_before_.trust_none = guard.walk_all_after_;
  guard.protected_places_ = guard.read_only_;
  guard.protected_places_.insert(guard.protected_places_.end(), guard.names_.read_only.begin(),
                                 guard.names_.read_only.end());
  // The repository above a root (a workspace in a subdirectory of one): its metadata lies
  // outside the roots, read-only to the command, and a link into it is a way in all the same.
  for (const auto& repo : scan->repos) {
    if (!repo.encloses_root) continue;
    for (const std::string* p : {&repo.gitdir, &repo.commondir}) {
      if (!p->empty()) guard.protected_places_.push_back(guard.fs_.resolve(*p).value_or(*p));
    }
  }
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

RunTrust GitGuard::Trusted() const {
  RunTrust trust;
  trust.ids.assign(before_.begin(), before_.end());
  trust.names = names_before_;
  return BoundedRunTrust(std::move(trust));
}

void GitGuard::CheckAfterRun(const std::vector<std::string>& skip) {
  const auto start = std::chrono::steady_clock::now();
  report_.checked_after = true;
  // The directories the walk opened (the caller's, made unlistable) get their modes back once
  // what they hold is judged and moved aside, whatever the check decided.
  struct CloseUp {
    const GitFs& fs;
    ~CloseUp() {
      if (fs.close_up) fs.close_up();
    }
  } close_up{fs_};
  // The same bounds, but none stops the check: a command that grew the roots past one leaves
  // subtrees that are named as not walked (the run exits 125, and the next sandbox there does
  // not start), while everything found elsewhere is judged and moved aside as ever.
  auto scan = ScanGitMetadata(roots_, env_, fs_, limits_, walk_all_after_ ? nullptr : &memo_,
                              GitBoundMode::kSkipAndName);
  report_.check_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!scan) {
    report_.check_error = scan.error().message;
    return;
  }
  report_.check_listed = scan->listed;
  report_.opened_up = scan->opened_up;
  report_.unwalked = scan->unwalked;
  report_.unwalked_total = scan->unwalked_total;
  memo_ = std::move(scan->memo);
  // Deciding makes nothing, and the command and every process of its namespace are gone: each
  // path the three steps ask about is resolved once; what is moved aside goes by fs_.
  const GitFs judged = ResolvingOnce(fs_);
  // The sandbox homes and kept /tmp directories: what leads there from the roots is judged as
  // a pointer out of them (policy/git_territory.h).
  const GitTerritory territory = GitTerritoryOf(env_.sandbox_homes, judged);
  judged_territory_ = GitTerritoryKey(territory);
  const GitRefCheck refs = TerritoryRefCheck(territory, env_, judged, roots_);
  // Links are judged where they can be new: in directories either walk listed anew (a link is
  // replaced, never changed in place, and either changes its directory); everywhere (the walk
  // after the run took nothing from the memo) while another run over these roots was going or
  // a killed one left a subtree unchecked. A link the first walk listed and the second took
  // from the memo is in an unchanged directory: still there.
  links_to_judge_.insert(scan->symlinks.begin(), scan->symlinks.end());
  scan->symlinks.assign(links_to_judge_.begin(), links_to_judge_.end());
  // Of them, those the command could have made: judged against what the run kept read-only.
  GitLinkCheck link_check;
  link_check.places = protected_places_;
  for (const auto& link : links_to_judge_) {
    const GitFileFacts now = judged.lstat(link);
    if (now.type != GitFileType::kSymlink) continue;
    const auto dir = judged.resolve(git_paths::Dirname(link));
    const GitFileFacts dir_now = dir ? judged.lstat(*dir) : GitFileFacts{};
    if (GitLinkMayBeNew(link, now, dir_now, links_before_)) link_check.new_links.push_back(link);
  }
  std::set<int> moved;
  for (const auto& [i, why] : NewGitReposThatRunCode(before_, *scan, judged, refs)) {
    moved.insert(i);
  }
  GitProtectionPlan plan = PlanGitProtection(*scan, env_, judged, limits_, moved);
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
  auto actions =
      DecideGitQuarantine(before_, configs_, *scan, plan, judged, territory, env_, link_check);
  auto result = ApplyGitQuarantine(actions, roots_, fs_);
  std::vector<std::pair<std::string, std::string>> renamed;
  for (const auto& m : result.moved) renamed.emplace_back(m.path, m.moved_to);
  report_.quarantined = std::move(result.moved);
  report_.quarantine_failures = std::move(result.failures);
  // A memo vouches that its directories' links were judged and acted on: not after a plan that
  // ran out of time or a quarantine that failed (the next run lists those directories anew).
  if (plan.incomplete || !report_.quarantine_failures.empty()) judged_territory_.reset();
  // Before the directories the walk opened are closed up again (a command's `chmod 0 sub`);
  // where they lie now, inside a repository just moved aside too.
  // A name that is now another object than the walk before the run found there: judged as
  // new when the command could have made it so — a symlink (no mount can keep a link, so the
  // command may remove it and make its own), or any name while another run over these roots
  // was going or had been killed at the start (its check may move the name aside, carrying this
  // run's read-only mount with it, and this run's command then makes its own). Otherwise, unless
  // it was moved aside (below), only the host could have replaced it (your editor saving by
  // rename): it stays.
  // Also when what was there now lies at a quarantine name beside it, whenever this run
  // started: a check of a run started later moved it aside, with this run's mount.
  auto moved_aside_beside = [&](const std::string& path, const GitFileFacts& id) {
    const auto slash = path.rfind('/');
    const std::string dir = slash == 0 ? "/" : path.substr(0, slash);
    const std::string prefix = path.substr(slash + 1) + std::string(kConfigQuarantineSuffix);
    auto list = fs_.list_dir(dir);
    if (!list) return true;  // cannot tell: the command's, on the safe side
    for (const auto& e : list->entries) {
      if (e.name.starts_with(prefix) && fs_.lstat(dir + "/" + e.name).SameObject(id)) return true;
    }
    return false;
  };
  std::vector<std::string> before = names_before_;
  for (const auto& [path, id] : name_ids_) {
    const GitFileFacts now = fs_.lstat(path);
    if (now.type == GitFileType::kMissing) continue;
    const bool was_link = id.type == GitFileType::kSymlink;
    if (now.SameObject(id) && was_link == (now.type == GitFileType::kSymlink)) continue;
    if (was_link || others_going_ || moved_aside_beside(path, id)) std::erase(before, path);
  }
  auto moves = ProtectedNamesAfterRenames(
      NewProtectedNames(before, scan->protected_names, roots_, skip), renamed);
  for (ProtectedNameMove& m : moves) {
    if (std::find(names_found_.begin(), names_found_.end(), m.path) == names_found_.end()) continue;
    const bool trusted =
        std::find(names_before_.begin(), names_before_.end(), m.path) != names_before_.end();
    m.reason = trusted ? "it is not the one that was there when the sandboxed command started "
                         "(replaced)"
                       : std::string(kDistrustedNameReason);
  }
  report_.protected_names = QuarantineProtectedNames(moves);
  report_.check_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace anvil
