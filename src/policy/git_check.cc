// Step 3 of policy/git_metadata.h: the identities recorded before the run, and after it which
// repositories and config files the command made or swapped in (DecideGitQuarantine: pure but
// for the facts of GitFs). The moves themselves: linux/git_quarantine.h.
#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "fs/protected_names.h"
#include "policy/git_dir_closed.h"
#include "policy/git_inert_keys.h"
#include "policy/git_metadata.h"
#include "policy/git_metadata_internal.h"
#include "policy/git_paths.h"
#include "policy/git_territory.h"
#include "policy/sandbox_policy.h"

namespace anvil {
namespace {

using namespace git_paths;
using namespace git_internal;

void AddId(GitIdentitySet& ids, const GitFileFacts& f) {
  if (f.exists()) ids.insert({f.dev, f.ino});
}

void AddResolvedId(GitIdentitySet& ids, const GitFs& fs, const std::string& path) {
  if (path.empty()) return;
  if (auto r = fs.resolve(path)) AddId(ids, fs.lstat(*r));
}

// Whether every symbolic link on the way from `link` (itself one of the roots') lies in `roots`,
// followed as the kernel does: then the walk judges each of them, and where it ends. False at
// the first one outside them (a link of a sandbox home leading back into the workspace, which a
// later run there re-points), or when the way cannot be followed.
bool EveryLinkOnTheWayWithin(const std::string& link, const std::vector<std::string>& roots,
                             const GitFs& fs) {
  if (!fs.readlink || !fs.resolve) return false;
  const auto dir = fs.resolve(Dirname(link));
  if (!dir) return false;
  return FollowGitWay(*dir, Basename(link), fs, [&](const std::string& at, const std::string&) {
           return WithinAny(at, roots);
         }).end == GitWayEnd::kReached;
}

}  // namespace

GitFs ResolvingOnce(GitFs fs) {
  fs.resolve = [inner = std::move(fs.resolve),
                seen = std::make_shared<std::map<std::string, std::optional<std::string>>>()](
                   const std::string& path) {
    auto it = seen->find(path);
    if (it == seen->end()) it = seen->emplace(path, inner(path)).first;
    return it->second;
  };
  return fs;
}

GitIdentitySet GitIdentities(const GitScan& scan, const GitProtectionPlan& plan, const GitFs& fs) {
  GitIdentitySet ids;
  for (const auto& repo : scan.repos) {
    AddId(ids, fs.lstat(repo.marker));
    AddResolvedId(ids, fs, repo.marker);
    AddResolvedId(ids, fs, repo.gitdir);
    AddResolvedId(ids, fs, repo.commondir);
    for (const auto& f : repo.configs) AddResolvedId(ids, fs, f.path);
  }
  for (const auto& f : scan.user_configs) AddResolvedId(ids, fs, f.path);
  for (const auto& n : plan.named) {
    AddId(ids, fs.lstat(n.path));
    AddResolvedId(ids, fs, n.path);
    if (!n.via.empty()) AddId(ids, fs.lstat(n.via));
  }
  for (const auto& p : plan.read_only) AddId(ids, fs.lstat(p));
  for (const auto& ph : plan.placeholders) AddId(ids, fs.lstat(Join(ph.parent, ph.name)));
  return ids;
}

GitIdentitySet GitIdentitiesWithin(const GitScan& scan, const GitProtectionPlan& plan,
                                   const GitFs& fs, const std::vector<std::string>& subtrees) {
  GitIdentitySet ids;
  if (subtrees.empty()) return ids;
  auto within = [&](const std::string& p) {
    const bool top_git = std::any_of(scan.roots.begin(), scan.roots.end(), [&](const auto& r) {
      return PathIsWithin(p, Join(r, ".git"));
    });
    return !top_git && std::any_of(subtrees.begin(), subtrees.end(),
                                   [&](const std::string& s) { return PathIsWithin(p, s); });
  };
  auto add = [&](const std::string& path) {
    if (path.empty()) return;
    if (within(path)) AddId(ids, fs.lstat(path));
    if (auto r = fs.resolve(path); r && within(*r)) AddId(ids, fs.lstat(*r));
  };
  for (const auto& repo : scan.repos) {
    add(repo.marker);
    add(repo.gitdir);
    add(repo.commondir);
    for (const auto& f : repo.configs) add(f.path);
  }
  for (const auto& f : scan.user_configs) add(f.path);
  for (const auto& n : plan.named) {
    add(n.path);
    if (!n.via.empty() && within(n.via)) AddId(ids, fs.lstat(n.via));
  }
  for (const auto& p : plan.read_only) add(p);
  for (const auto& ph : plan.placeholders) add(Join(ph.parent, ph.name));
  return ids;
}

namespace {

// The config files of `scan` whose identity the check after the run compares: the user's own
// (and what they include), and what each repository's config includes (its own config and
// config.worktree lie in its git dir). `skip`: repositories not looked at.
template <typename Fn>
void ForEachWatchedConfig(const GitScan& scan, const std::set<int>& skip, Fn fn) {
  for (const auto& f : scan.user_configs) fn(f);
  for (size_t i = 0; i < scan.repos.size(); ++i) {
    if (skip.count(static_cast<int>(i))) continue;
    for (const auto& f : scan.repos[i].configs) {
      if (!f.included_from.empty()) fn(f);
    }
  }
}

}  // namespace

GitWatchedConfigs GitConfigIdentities(const GitScan& scan, const GitFs& fs) {
  GitWatchedConfigs out;
  ForEachWatchedConfig(scan, {}, [&](const GitConfigFile& f) {
    GitWatchedConfig w{ConfigReason(f), std::nullopt};
    if (auto r = fs.resolve(f.path)) {
      GitFileFacts facts = fs.lstat(*r);
      if (facts.exists()) w.id = GitFileId{facts.dev, facts.ino};
    }
    out.emplace(f.path, std::move(w));
  });
  return out;
}

namespace {

// The first entry of `configs` beyond what git init, clone and friends write, named.
// `refs`: a value naming a local repository is judged from `bases` (the git dir, the working
// tree) and from every local remote of these configs (a relative submodule URL is taken from
// the superproject's remote).
template <typename WorktreeOk>
std::optional<std::string> ConfigsRunCode(const std::vector<GitConfigFile>& configs,
                                          WorktreeOk worktree_ok, const GitRefCheck& refs,
                                          std::vector<std::string> bases) {
  GitLocalRefJudge local_ref;
  if (refs) {
    for (const auto& f : configs) {
      for (const auto& e : f.entries) {
        if (e.section != "remote" || e.key != "url" || !e.value) continue;
        // Where git takes it from the working tree's top (or the git dir): the first path.
        auto paths = GitLocalRepoPaths(*e.value, {bases.empty() ? "/" : bases.front()});
        if (!paths.empty() && bases.size() < 64) bases.push_back(LexicalNormal(paths.front()));
      }
    }
    local_ref = [&](std::string_view value) { return refs(value, bases); };
  }
  for (const auto& f : configs) {
    if (!f.error.empty()) return "config " + f.path + " git cannot read: " + f.error;
    for (const auto& e : f.entries) {
      const std::string where = KeyName(e) + " in " + f.path + ":" + std::to_string(e.line);
      if (ClassifyGitConfigKey(e) != GitKeyUse::kNone && GitEntryIsActive(e)) return where;
      // Only the keys git init, clone and friends write (policy/git_inert_keys.h).
      if (auto why = GitKeyNotInert(e, worktree_ok(e), local_ref)) return where + " (" + *why + ")";
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> GitRepoRunsCode(const GitRepo& repo, const GitRefCheck& refs) {
  if (!repo.unread.empty()) return "its metadata could not be read in full: " + repo.unread;
  if (repo.hooks_unknown) return "its hooks directory is a symlink or cannot be listed";
  if (!repo.hooks.empty()) {
    std::string why = "hook " + repo.hooks.front();
    if (repo.hooks.size() > 1) why += " (and " + std::to_string(repo.hooks.size() - 1) + " more)";
    return why;
  }
  // core.worktree naming the directory whose .git leads here (a submodule's git dir).
  auto worktree_is_top = [&](const GitConfigEntry& e) {
    if (repo.top.empty() || !e.value || e.value->empty()) return false;
    const std::string abs = (*e.value)[0] == '/' ? *e.value : Join(repo.gitdir, *e.value);
    return LexicalNormal(abs) == LexicalNormal(repo.top);
  };
  std::vector<std::string> bases;
  for (const std::string* b : {&repo.top, &repo.gitdir, &repo.commondir}) {
    if (!b->empty()) bases.push_back(*b);
  }
  if (auto why = ConfigsRunCode(repo.configs, worktree_is_top, refs, bases)) return why;
  // The submodules' git dirs in it, which `git submodule update` takes as they are: the same
  // rules, and core.worktree may name a directory of the superproject's working tree.
  if (!repo.modules_unread.empty()) {
    return "its submodules' git dirs could not be read in full: " + repo.modules_unread;
  }
  for (const auto& m : repo.modules) {
    if (m.hooks_unknown)
      return "the hooks directory of " + m.gitdir + " is a symlink or unlistable";
    if (!m.hooks.empty()) return "hook " + m.hooks.front() + " in " + m.gitdir;
    // Within the superproject's working tree: this one's, or (a linked worktree shares its
    // submodules' git dirs) the main one's, whose .git is the common dir.
    const std::string common = LexicalNormal(repo.commondir);
    const std::string main_top = Basename(common) == ".git" ? Dirname(common) : "";
    auto worktree_within_top = [&](const GitConfigEntry& e) {
      if (!e.value || e.value->empty()) return false;
      const std::string abs =
          LexicalNormal((*e.value)[0] == '/' ? *e.value : Join(m.gitdir, *e.value));
      return (!repo.top.empty() && PathIsWithin(abs, LexicalNormal(repo.top))) ||
             (!main_top.empty() && PathIsWithin(abs, main_top));
    };
    std::vector<std::string> module_bases = {m.gitdir};
    module_bases.insert(module_bases.end(), bases.begin(), bases.end());
    if (auto why = ConfigsRunCode(m.configs, worktree_within_top, refs, module_bases)) return why;
  }
  return std::nullopt;
}

GitRefCheck TerritoryRefCheck(const GitTerritory& territory, const GitEnv& env, const GitFs& fs,
                              const std::vector<std::string>& roots) {
  if (territory.empty()) return {};
  auto judge = std::make_shared<GitTerritoryJudge>(territory, fs);
  return [judge, &env, &fs, roots](
             std::string_view value,
             const std::vector<std::string>& bases) -> std::optional<std::string> {
    std::string v(value);
    if (!v.empty() && v[0] == '~') {
      // git expands `~/` and `~user/` in a local repository path.
      auto expanded = ExpandUserPath(v, env, fs);
      if (!expanded) return std::nullopt;  // git finds no repository there either
      v = *expanded;
    }
    for (const auto& p : GitLocalRepoPaths(v, bases)) {
      auto into = judge->Path(p);
      if (into && GitMagicLinkPath(*into)) {
        return "a local repository path through " + *into +
               ", a magic link that leads wherever the git following it runs (the check's own "
               "resolution says nothing of git's): it leads anywhere";
      }
      // What lies in a writable root is walked and judged itself.
      auto r = fs.resolve(p);
      if (r && WithinAny(*r, roots)) continue;
      if (into) {
        return "a local repository path that leads into " + *into +
               ", a sandbox home or kept /tmp the command writes and no check walks: git runs "
               "the hooks and config of the repository there";
      }
    }
    return std::nullopt;
  };
}

std::map<int, std::string> NewGitReposThatRunCode(const GitIdentitySet& before,
                                                  const GitScan& after, const GitFs& fs,
                                                  const GitRefCheck& refs) {
  auto known = [&](const GitFileFacts& f) { return before.count({f.dev, f.ino}) > 0; };
  auto known_path = [&](const std::string& path) {
    if (path.empty()) return true;
    auto r = fs.resolve(path);
    return !r || known(fs.lstat(*r));
  };
  // A git dir a new pointer leads to that lies outside the writable roots and was not there
  // (and protected) before: what is made or changed there later — another workspace's sandbox
  // home, a path in /tmp someone makes, a directory that does not exist yet — no check walks,
  // and git follows the pointer whenever it runs.
  auto out_of_reach = [&](const std::string& path) {
    if (path.empty()) return false;
    // Through a magic link: wherever the git that follows it is (policy/git_territory.h).
    if (GitMagicLinkPath(path)) return true;
    auto r = fs.resolve(path);
    if (WithinAny(r ? *r : LexicalNormal(path), after.roots)) return false;
    return !(r && known(fs.lstat(*r)));
  };
  std::map<int, std::string> out;
  for (size_t i = 0; i < after.repos.size(); ++i) {
    const GitRepo& repo = after.repos[i];
    // The same .git as before and leading to the same git dir: protected all along.
    if (known(fs.lstat(repo.marker)) && known_path(repo.gitdir) && known_path(repo.commondir)) {
      continue;
    }
    if (repo.kind == GitMarkerKind::kGitLink && !fs.resolve(repo.marker)) {
      out[static_cast<int>(i)] =
          "its .git is a symlink that leads nowhere now: git would take "
          "whatever is made there later";
      continue;
    }
    // Every pointer git follows from a new repository, whatever its marker: a `.git` file's or
    // link's gitdir, and any git dir's `commondir` (a `.git` directory or a bare one of the
    // command's may hold one too), where git reads the config and hooks.
    for (const std::string* target : {&repo.gitdir, &repo.commondir}) {
      if (out_of_reach(*target)) {
        out[static_cast<int>(i)] = "it leads to " + *target +
                                   ", outside the writable roots, where no check sees what is "
                                   "made or changed later";
        break;
      }
    }
    if (out.count(static_cast<int>(i))) continue;
    // Its git dirs hold only what git writes there (policy/git_dir_closed.h): no other file git
    // reads (a legacy remote, a rebase todo), and no symlink or FIFO where git opens a file. A
    // linked worktree's own git dir, and the common dir it shares, each as what it is.
    {
      const auto gitdir = repo.gitdir.empty() ? std::nullopt : fs.resolve(repo.gitdir);
      const auto common = repo.commondir.empty() ? std::nullopt : fs.resolve(repo.commondir);
      std::optional<std::string> why;
      if (gitdir && !known(fs.lstat(*gitdir))) {
        // A git dir by shape only, or a `.git` spelled otherwise (`.GIT`: an ordinary directory
        // where names do not fold, walked as one): judged by what git reads there.
        const bool shaped =
            repo.kind == GitMarkerKind::kBareDir ||
            (repo.kind == GitMarkerKind::kGitDir && Basename(repo.marker) != ".git");
        why = GitDirNotClosed(*gitdir,
                              common && *common != *gitdir ? GitDirPart::kWorktree
                              : shaped                     ? GitDirPart::kShapedDir
                                                           : GitDirPart::kGitDir,
                              fs, 1000000, common ? *common : std::string(), after.roots);
      }
      if (!why && common && gitdir && *common != *gitdir && !known(fs.lstat(*common))) {
        why = GitDirNotClosed(*common, GitDirPart::kGitDir, fs, 1000000, "", after.roots);
      }
      if (why) {
        out[static_cast<int>(i)] = *why;
        continue;
      }
    }
    if (auto why = GitRepoRunsCode(repo, refs)) {
      out[static_cast<int>(i)] = *why;
      continue;
    }
    // A config git reads with a second name (`ln .git/config notes.txt`): any later command
    // writes git's config through that name, where no read-only bind of the git dir reaches.
    auto linked = [&](const std::vector<GitConfigFile>& configs) -> const GitConfigFile* {
      for (const auto& f : configs) {
        if (!f.exists) continue;
        auto r = fs.resolve(f.path);
        const GitFileFacts facts = fs.lstat(r ? *r : f.path);
        if (facts.type == GitFileType::kFile && facts.nlink > 1) return &f;
      }
      return nullptr;
    };
    const GitConfigFile* f = linked(repo.configs);
    for (size_t m = 0; f == nullptr && m < repo.modules.size(); ++m) {
      f = linked(repo.modules[m].configs);
    }
    if (f != nullptr) {
      out[static_cast<int>(i)] =
          "its config " + f->path + " has another hard link, through which it could be rewritten";
    }
    // else: a plain init
  }
  return out;
}

std::vector<GitQuarantineAction> DecideGitQuarantine(const GitIdentitySet& before,
                                                     const GitWatchedConfigs& configs,
                                                     const GitScan& after,
                                                     const GitProtectionPlan& after_plan,
                                                     const GitFs& fs, const GitTerritory& territory,
                                                     const GitEnv& env, const GitLinkCheck& links) {
  auto known = [&](const GitFileFacts& f) { return before.count({f.dev, f.ino}) > 0; };
  std::vector<GitQuarantineAction> actions;
  std::set<int> moved;
  const GitRefCheck refs = TerritoryRefCheck(territory, env, fs, after.roots);
  for (const auto& [i, why] : NewGitReposThatRunCode(before, after, fs, refs)) {
    const GitRepo& repo = after.repos[static_cast<size_t>(i)];
    const std::string reason = "a git repository the command made or swapped in runs code: " + why;
    moved.insert(i);
    auto real = fs.resolve(repo.marker);
    if (repo.kind == GitMarkerKind::kBareDir && real &&
        std::find(after.roots.begin(), after.roots.end(), *real) != after.roots.end()) {
      // A writable root made into a git dir cannot be renamed away: its HEAD is, and git no
      // longer takes it for one.
      actions.push_back({Join(*real, "HEAD"), false, reason});
      continue;
    }
    // Never skipped: a parent outside the roots is reported as a failure to move it aside.
    auto parent = fs.resolve(Dirname(repo.marker));
    actions.push_back({Join(parent.value_or(Dirname(repo.marker)), Basename(repo.marker)),
                       repo.kind == GitMarkerKind::kGitDir || repo.kind == GitMarkerKind::kBareDir,
                       reason});
  }
  std::set<std::string> repo_paths;
  for (const auto& a : actions) repo_paths.insert(a.path);
  // A symlink of the roots into the sandbox homes: git started through it on the host (a prompt
  // on `cd`) uses what the command left there, as through a `.git` link out of the roots.
  if (!territory.empty()) {
    GitTerritoryJudge judge(territory, fs);
    for (const auto& link : after.symlinks) {
      auto into = judge.Symlink(link);
      if (!into) continue;
      const bool magic = GitMagicLinkPath(*into).has_value();
      // One that leads into the roots leads to what this walk judges (a workspace that itself
      // lies in a sandbox home keeps its own links). Not one through a magic link: where it
      // leads the check cannot say.
      // Not one whose way goes through a link outside them (a link of a sandbox home leading
      // back into the workspace: a later run there re-points it).
      if (auto r = fs.resolve(link); !magic && r && WithinAny(*r, after.roots) &&
                                     EveryLinkOnTheWayWithin(link, after.roots, fs)) {
        continue;
      }
      auto parent = fs.resolve(Dirname(link));
      actions.push_back({Join(parent.value_or(Dirname(link)), Basename(link)), false,
                         magic ? "a symlink in the writable roots whose way goes through " + *into +
                                     ", a magic link that leads wherever the process following "
                                     "it is: git started through it on the host may land in a "
                                     "sandbox home or anywhere else"
                               : "a symlink in the writable roots that leads into " + *into +
                                     ", a sandbox home or kept /tmp it writes and no check "
                                     "walks: git started through it on the host would use what "
                                     "is there",
                         true});
    }
  }
  // A link the command may have made into what the run kept read-only: a host tool writing
  // through it writes the repository's config or hooks, or a protected file.
  for (const auto& link : links.new_links) {
    if (ProtectedKindOfPath(link)) continue;  // a protected name itself: NewProtectedNames's
    auto into = GitLinkIntoProtected(link, links.places, after.roots, fs);
    if (!into) continue;
    auto parent = fs.resolve(Dirname(link));
    actions.push_back(
        {Join(parent.value_or(Dirname(link)), Basename(link)), false,
         GitMagicLinkPath(*into)
             ? "a symlink the command could have made whose way goes through " + *into +
                   ", a magic link that leads wherever the process following it is: a host tool "
                   "writing through it may write a repository's metadata or a protected file"
             : "a symlink the command could have made that leads into " + *into +
                   ", which the run kept read-only: a host tool writing through it (an editor "
                   "saving it, a build writing there) would change what git, an editor or an "
                   "agent runs on the host",
         true});
  }
  // A symlink the command made on the way along `path`, in the writable roots: moved aside,
  // true; false when there is none.
  auto move_link_on_the_way = [&](const std::string& path, const std::string& reason) {
    std::string prefix;
    std::vector<std::string> parts;
    for (size_t s = 0; s < path.size();) {
      auto e = path.find('/', s);
      if (e == std::string::npos) e = path.size();
      if (e > s) parts.push_back(path.substr(s, e - s));
      s = e + 1;
    }
    for (const auto& part : parts) {
      std::string dir = prefix.empty() ? "/" : prefix;
      prefix = Join(dir, part);
      GitFileFacts f = fs.lstat(prefix);
      if (f.type != GitFileType::kSymlink || known(f)) continue;
      auto real_dir = fs.resolve(dir);
      if (real_dir && WithinAny(*real_dir, after.roots)) {
        actions.push_back({Join(*real_dir, part), false, reason});
        return true;
      }
    }
    return false;
  };
  // `path` now leads to `real`, which is not what it led to at the start.
  auto move_aside = [&](const std::string& path, const std::string& real,
                        const std::string& reason) {
    // A symlink the command made on the way leads there: the link goes, what it leads to stays.
    // What a link leads to may be anything that was there (the user's `.claude`, a read-only
    // subpath, a directory holding a repository), which the before-run identities do not list:
    // taken for new, a `p/.vscode -> ../.claude` made the check move the user's directory aside
    // (review). Else the object git would now use is the command's: moved aside where it really
    // is, when it is new.
    if (move_link_on_the_way(path, reason)) return;
    auto parent = fs.resolve(Dirname(real));
    if (!known(fs.lstat(real)) && parent && WithinAny(*parent, after.roots) && real != *parent) {
      actions.push_back({real, false, reason});
    }
  };
  for (const auto& n : after_plan.named) {
    if (n.repo >= 0 && moved.count(n.repo)) continue;
    // Behind a protected-name symlink the command made: that link goes (a new protected name,
    // QuarantineProtectedNames), and what it leads to, which may be the user's (their `.claude`,
    // a read-only subpath) and is no protected name itself, stays (review).
    if (!n.via.empty() && !known(fs.lstat(n.via))) continue;
    auto r = fs.resolve(n.path);
    if (!r || known(fs.lstat(*r))) continue;
    move_aside(n.path, *r, "named by " + n.reason + ", made or swapped in by the command");
  }
  // Every config file git reads, existing at the start or not: one that now leads to another
  // object than it did (made where nothing was, its directory renamed away and made anew, a
  // symlink put in its place) is the command's.
  for (const auto& [path, was] : configs) {
    auto r = fs.resolve(path);
    if (!r) continue;  // nothing there: git skips a missing config
    GitFileFacts now = fs.lstat(*r);
    if (was.id && *was.id == GitFileId{now.dev, now.ino}) continue;
    move_aside(path, *r,
               "a config file git reads (" + was.reason + "), made or swapped in by the command");
  }
  // One the scan before the run did not know, included by a config that stayed.
  ForEachWatchedConfig(after, moved, [&](const GitConfigFile& f) {
    if (configs.count(f.path)) return;
    auto r = fs.resolve(f.path);
    if (!r || known(fs.lstat(*r))) return;
    move_aside(f.path, *r,
               "a config file git reads (" + ConfigReason(f) + "), made by the command");
  });
  std::sort(
      actions.begin(), actions.end(),
      [](const GitQuarantineAction& a, const GitQuarantineAction& b) { return a.path < b.path; });
  // Moving a directory aside moves what lies in it: only the outermost of nested actions,
  // but for a repository inside another one moved aside (below a git dir by shape, which the
  // walk enters): git started where it lies still finds it under the outer one's new name, so
  // it is moved aside (and disarmed) too, before the one it lies in.
  std::set<std::string> paths;
  for (const auto& a : actions) paths.insert(a.path);
  std::vector<GitQuarantineAction> out;
  std::set<std::string> taken;  // a path moved once (a nested one is not out.back())
  for (auto& a : actions) {
    if (!taken.insert(a.path).second) continue;
    if (a.path != "/" && UnderAny(Dirname(a.path), paths)) {
      if (repo_paths.count(a.path) == 0) continue;
      // Sorted by path: the outermost action holding it is already in `out`.
      auto outer = std::find_if(out.begin(), out.end(), [&](const GitQuarantineAction& o) {
        return PathIsWithin(a.path, o.path);
      });
      out.insert(outer, std::move(a));
      continue;
    }
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace anvil
