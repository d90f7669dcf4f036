// Step 2 of policy/git_metadata.h: PlanGitProtection, a scan turned into the paths kept
// read-only, the placeholders, and the directories pinned (pure but for the facts of GitFs).
#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "fs/protected_names.h"
#include "policy/git_metadata.h"
#include "policy/git_metadata_internal.h"
#include "policy/git_paths.h"
#include "policy/sandbox_policy.h"

namespace anvil {
namespace {

using namespace git_paths;
using namespace git_internal;

// A command word as the shell would see it once expanded: `~` and $HOME / ${HOME}; nullopt for
// a word with any other expansion (it cannot be resolved here).
std::optional<std::string> ExpandWord(const std::string& word, const GitEnv& env, const GitFs& fs) {
  std::string w = word;
  for (const char* var : {"${HOME}", "$HOME"}) {
    size_t pos;
    while (!env.home.empty() && (pos = w.find(var)) != std::string::npos) {
      w.replace(pos, std::strlen(var), StripTrailingSlashes(env.home));
    }
  }
  if (w.find('$') != std::string::npos || w.find('`') != std::string::npos) return std::nullopt;
  return ExpandUserPath(w, env, fs);
}

enum class NameKind { kDir, kFile, kWord, kProgramWord };

// Symlinks followed at one name, as the kernel's own bound (MAXSYMLINKS).
constexpr int kMaxLinkHops = 40;
// Entries of one hooks directory looked at (git knows about 30 hook names).
constexpr size_t kMaxHookEntries = 1000;

class Planner {
 public:
  Planner(const GitScan& scan, const GitEnv& env, const GitFs& fs, const GitScanLimits& limits,
          const std::set<int>& skip_configs)
      : scan_(scan),
        env_(env),
        fs_(fs),
        limits_(limits),
        skip_configs_(skip_configs),
        start_(fs.now()) {
    for (const auto& repo : scan.repos) {
      for (const auto& p : {repo.top, repo.gitdir}) {
        if (p.empty()) continue;
        if (auto r = fs.resolve(p)) tops_.push_back(*r);
      }
    }
  }

  GitProtectionPlan Run() {
    for (size_t i = 0; i < scan_.repos.size() && !OutOfTime(scan_.repos[i].marker); ++i) {
      PlanRepo(static_cast<int>(i));
    }
    for (const auto& f : scan_.user_configs) {
      if (OutOfTime(f.path)) break;
      if (!f.error.empty()) {
        plan_.problems.push_back(Error{
            "invalid", "git metadata: cannot read your git config " + f.path + ": " + f.error +
                           " (git refuses it too). fix: repair it, or pass --writable-git"});
      }
      if (f.exists) {
        Protect(f.path);
        LinkedConfig(f.path);
      } else {
        Name(f.path, ConfigReason(f), -1, NameKind::kFile);
      }
      PinWayTo(f.path);
      // Relative paths in the user's config apply to every repository.
      std::vector<std::string> bases{Dirname(f.path)};
      for (const auto& repo : scan_.repos) {
        bases.push_back(repo.top.empty() ? repo.gitdir : repo.top);
        if (!repo.core_worktree.empty()) bases.push_back(repo.core_worktree);
      }
      for (const auto& e : f.entries) NameFromEntry(e, f, -1, bases, bases);
    }
    // An agent's configuration (or another repository's metadata, or VS Code's tasks) that is a
    // symlink (`.claude -> shared-claude`): the program reads what it leads to, so that is kept
    // read-only here and refused to plugins' writes, as what a hook leads to is.
    for (const auto& n : scan_.protected_names) {
      if (OutOfTime(n)) break;
      const std::string base = n.substr(n.rfind('/') + 1);
      const auto kind = ProtectedKindOfPath(n);
      if (!kind || !FollowedThroughLinks(*kind) || fs_.lstat(n).type != GitFileType::kSymlink) {
        continue;
      }
      const char* what = *kind == ProtectedNameKind::kVcsMetadata ? "the repository metadata "
                         : *kind == ProtectedNameKind::kEditorAutorun
                             ? "VS Code's configuration "
                             : "the AI agent configuration ";
      auto to = FollowLinks(n);
      if (!to) {
        Unfollowable(what + n);
        continue;
      }
      const bool file = base.ends_with(".json") || base.ends_with(".yml");
      via_ = n;
      Name(*to, what + n + " (a symlink)", -1, file ? NameKind::kFile : NameKind::kDir);
      via_.clear();
      PinWayTo(*to);
    }
    Finish();
    return std::move(plan_);
  }

 private:
  // The plan's share of the walk's time bound (the walk after the run plans what the command
  // made: its work must stay bounded too).
  bool OutOfTime(const std::string& where) {
    if (out_of_time_) return true;
    if (std::chrono::duration<double>(fs_.now() - start_).count() <= limits_.seconds) return false;
    plan_.problems.push_back(LimitError("seconds", SecondsText(limits_.seconds),
                                        "planning what to protect took longer than allowed",
                                        where));
    out_of_time_ = true;
    plan_.incomplete = true;
    return true;
  }

  bool InRoots(const std::string& p) const { return WithinAny(p, scan_.roots); }
  // `p` is a writable root or a directory above one.
  std::optional<std::string> HoldsRoot(const std::string& p) const {
    for (const auto& r : scan_.roots) {
      if (PathIsWithin(r, p)) return r;
    }
    return std::nullopt;
  }
  bool HoldsTop(const std::string& p) const {
    return std::any_of(tops_.begin(), tops_.end(),
                       [&](const std::string& t) { return PathIsWithin(t, p); });
  }

  void Protect(const std::string& path) {
    auto r = fs_.resolve(path);
    if (!r || !InRoots(*r)) return;
    if (auto root = HoldsRoot(*r)) {
      plan_.problems.push_back(Error{
          "invalid", "git metadata: " + path +
                         " must stay read-only but it is (or holds) the "
                         "writable root " +
                         *root + ". fix: run in a directory inside it, or pass --writable-git"});
      return;
    }
    read_only_.push_back(*r);
  }

  void PlanRepo(int i) {
    const GitRepo& repo = scan_.repos[static_cast<size_t>(i)];
    if (repo.encloses_root && !repo.gitdir.empty()) {
      // A writable root inside a git dir (the sandbox run in .git/hooks, say): what git runs
      // from there would be the command's to write.
      if (auto g = fs_.resolve(repo.gitdir)) {
        for (const auto& r : scan_.roots) {
          if (PathIsWithin(r, *g)) {
            plan_.problems.push_back(
                Error{"invalid", "git metadata: the writable root " + r +
                                     " lies inside the git dir " + *g +
                                     ", whose hooks and config could not be kept read-only. fix: "
                                     "run in a working tree, or pass --writable-git"});
            return;
          }
        }
      }
    }
    if (repo.kind == GitMarkerKind::kBareDir && HoldsRoot(repo.marker)) {
      plan_.problems.push_back(
          Error{"invalid", "git metadata: the writable root " + *HoldsRoot(repo.marker) +
                               " is itself a git directory (HEAD, objects/, refs/): its hooks and "
                               "config could not be kept read-only. fix: run in a working tree, or "
                               "pass --writable-git"});
      return;
    }
    Protect(repo.marker);
    if (!repo.gitdir.empty()) {
      if (fs_.resolve(repo.gitdir)) {
        Protect(repo.gitdir);
      } else {
        // A .git file pointing at a directory that does not exist yet: made by the command,
        // it would become that repository's git dir.
        Name(repo.gitdir, "the gitdir " + repo.marker + " points at", i, NameKind::kDir);
      }
    }
    if (!repo.commondir.empty()) Protect(repo.commondir);
    for (const auto& dotgit : repo.worktree_dotgits) {
      if (fs_.resolve(dotgit)) {
        Protect(dotgit);
      } else {
        Name(dotgit, "a worktree of " + repo.commondir, i, NameKind::kFile);
      }
    }
    if (!skip_configs_.count(i)) {
      // What git runs as a hook, wherever the links on the way lead: a hook that is a symlink
      // into the working tree (`ln -s ../../scripts/pre-commit .git/hooks/`), a hooks directory
      // that is one, a hook hard-linked to a working-tree file. The git dir itself is read-only
      // already; what it leads to is made so too.
      if (!repo.gitdir.empty()) ProtectHooks(Join(repo.gitdir, "hooks"), i);
      if (!repo.commondir.empty()) ProtectHooks(Join(repo.commondir, "hooks"), i);
      for (const auto& m : repo.modules) {
        ProtectHooks(Join(m.gitdir, "hooks"), i);
        for (const auto& f : m.configs) {
          if (f.exists) LinkedConfig(f.path);
        }
      }
    }
    std::vector<std::string> bases;
    bases.push_back(repo.top.empty() ? repo.gitdir : repo.top);
    if (!repo.core_worktree.empty()) bases.push_back(repo.core_worktree);
    std::vector<std::string> hook_bases = bases;
    if (!repo.gitdir.empty()) hook_bases.push_back(repo.gitdir);
    for (const auto& f : repo.configs) {
      if (!f.error.empty()) {
        plan_.problems.push_back(
            Error{"invalid", "git metadata: cannot read the git config " + f.path + ": " + f.error +
                                 " (git refuses it too). fix: repair it (`git config -f " + f.path +
                                 " -l` shows what git reads), or pass --writable-git"});
      }
      if (f.exists) {
        Protect(f.path);
        LinkedConfig(f.path);
      } else if (!f.included_from.empty()) {
        Name(f.path, ConfigReason(f), i, NameKind::kFile);
      }
      if (!f.included_from.empty()) PinWayTo(f.path);
      // A repository that is moved aside anyway needs no list of what its config names.
      if (skip_configs_.count(i)) continue;
      std::vector<std::string> word_bases = bases;
      word_bases.push_back(Dirname(f.path));
      for (const auto& e : f.entries) NameFromEntry(e, f, i, hook_bases, word_bases);
    }
  }

  void NameFromEntry(const GitConfigEntry& e, const GitConfigFile& f, int repo,
                     const std::vector<std::string>& dir_bases,
                     const std::vector<std::string>& word_bases) {
    GitKeyUse use = ClassifyGitConfigKey(e);
    if (use == GitKeyUse::kNone || use == GitKeyUse::kInclude || !GitEntryIsActive(e)) return;
    const std::string reason = KeyName(e) + " in " + f.path + ":" + std::to_string(e.line);
    if (use == GitKeyUse::kHooksDir || use == GitKeyUse::kTemplateDir) {
      auto p = ExpandUserPath(*e.value, env_, fs_);
      if (!p || p->empty()) return;
      std::vector<std::string> dirs;
      if ((*p)[0] == '/') {
        dirs.push_back(*p);
      } else {
        std::vector<std::string> bases = dir_bases;
        if (use == GitKeyUse::kTemplateDir) bases.push_back(Dirname(f.path));
        for (const auto& b : bases) dirs.push_back(Join(b, *p));
      }
      for (const auto& d : dirs) {
        Name(d, reason, repo, NameKind::kDir);
        // A template's hooks are copied into each new repository: run there, as these are.
        ProtectHooks(use == GitKeyUse::kHooksDir ? d : Join(d, "hooks"), repo);
      }
      return;
    }
    std::string command = *e.value;
    if (use == GitKeyUse::kBangCommand) command.erase(0, 1);
    for (const auto& word : GitCommandWords(command)) {
      if (word.text.empty() || word.text[0] == '-') continue;
      auto w = ExpandWord(word.text, env_, fs_);
      if (!w || w->empty()) continue;
      const bool slash = w->find('/') != std::string::npos;
      // A program without '/' is looked up on PATH; an argument without one is taken for a
      // file only when it looks like a file name (`fsm.py`, `.hooks`), not a subcommand or
      // a number (`git-lfs clean -- %f`, `--timeout=3600`).
      if (!slash && (word.program || w->find('.') == std::string::npos)) continue;
      NameKind kind = slash ? NameKind::kProgramWord : NameKind::kWord;
      if ((*w)[0] == '/') {
        Name(*w, reason, repo, kind);
        continue;
      }
      for (const auto& b : word_bases) Name(Join(b, *w), reason, repo, kind);
    }
  }

  // The deepest existing directory above `path`: as named (lexical) and resolved.
  std::optional<std::pair<std::string, std::string>> ExistingAncestorOf(
      const std::string& path) const {
    std::string p = Dirname(path);
    for (int i = 0; i < 256; ++i) {
      if (auto r = fs_.resolve(p)) return std::make_pair(p, *r);
      if (p == "/" || p == ".") break;
      p = Dirname(p);
    }
    return std::nullopt;
  }
  std::optional<std::string> ExistingAncestor(const std::string& path) const {
    auto a = ExistingAncestorOf(path);
    if (!a) return std::nullopt;
    return a->second;
  }

  // The existing directories strictly inside a writable root on the way down to the config
  // file (or hook) `path` (existing or not): pinned, so that none can be renamed away and remade
  // with another config in it while the command runs. A symlink on the way cannot be pinned: the
  // check after the run covers it.
  void PinWayTo(const std::string& path) {
    auto dir = fs_.resolve(Dirname(path));
    if (!dir) dir = ExistingAncestor(path);
    if (!dir) return;
    for (std::string d = *dir;; d = Dirname(d)) {
      if (!InRoots(d) || HoldsRoot(d)) break;
      pinned_.push_back(d);
      if (d == "/" || d == ".") break;
    }
  }

  void Name(const std::string& raw, const std::string& reason, int repo, NameKind kind) {
    const std::string path = StripTrailingSlashes(raw);
    auto r = fs_.resolve(path);
    if (r) {
      // Named and existing: the object is kept read-only when it lies in a writable root; the
      // name itself is watched (its parent may be renamed and remade during the run).
      bool name_in_roots = InRoots(LexicalNormal(path));
      if (!InRoots(*r)) {
        if (name_in_roots) AddNamed(path, reason, repo);
        return;
      }
      bool is_dir = fs_.lstat(*r).type == GitFileType::kDir;
      if ((kind == NameKind::kWord || kind == NameKind::kProgramWord) && is_dir &&
          (HoldsRoot(*r) || HoldsTop(*r))) {
        return;  // `.`, `..`, a working tree: a directory word that names no program
      }
      if (kind == NameKind::kDir && HoldsRoot(*r)) {
        plan_.problems.push_back(Error{
            "invalid", "git metadata: " + reason + " names " + path +
                           ", which is (or holds) "
                           "the writable root " +
                           *HoldsRoot(*r) +
                           "; its hooks could not be kept read-only. fix: point it elsewhere, "
                           "or pass --writable-git"});
        return;
      }
      read_only_.push_back(*r);
      AddNamed(path, reason, repo);
      return;
    }
    auto ancestor = ExistingAncestorOf(path);
    if (!ancestor || !InRoots(ancestor->second)) return;
    AddNamed(path, reason, repo);
    if (kind == NameKind::kWord) return;  // an argument that may be no path at all
    // The names below the deepest existing directory: each missing directory on the way is
    // made and pinned, the named path itself is the placeholder. A name git could not create
    // either ("..", "." on the way through a missing directory) gets none: the check after the
    // run covers it.
    const std::string& lexical = ancestor->first;
    std::vector<std::string> names;
    const std::string rest = path.substr(lexical == "/" ? 1 : lexical.size() + 1);
    for (size_t s = 0; s <= rest.size();) {
      size_t e = rest.find('/', s);
      if (e == std::string::npos) e = rest.size();
      names.push_back(rest.substr(s, e - s));
      s = e + 1;
    }
    for (const auto& n : names) {
      if (n.empty() || n == "." || n == "..") return;
    }
    std::string parent = ancestor->second;
    for (size_t k = 0; k < names.size(); ++k) {
      const bool last = k + 1 == names.size();
      placeholders_.push_back(
          {parent, names[k], !last || kind == NameKind::kDir, !last, last ? reason : ""});
      parent = Join(parent, names[k]);
    }
  }

  // Where `path` leads through the symlinks at its last component, each target taken relative
  // to its link's directory as the kernel takes it: the first path that is no symlink, existing
  // or not; nullopt for a loop or a link that cannot be read.
  std::optional<std::string> FollowLinks(std::string path) const {
    for (int hop = 0; hop < kMaxLinkHops; ++hop) {
      if (fs_.lstat(path).type != GitFileType::kSymlink) return path;
      auto target = fs_.readlink ? fs_.readlink(path) : std::nullopt;
      if (!target || target->empty()) return std::nullopt;
      std::string dir = Dirname(path);
      if (auto r = fs_.resolve(dir)) dir = *r;
      const std::string next = (*target)[0] == '/' ? *target : Join(dir, *target);
      // `..` after a symlinked directory is the kernel's to take, not a lexical step back.
      if (auto r = fs_.resolve(next)) return *r;
      const std::string leaf = next.substr(next.rfind('/') + 1);
      auto parent = fs_.resolve(Dirname(next));
      path = parent && leaf != ".." && leaf != "." && !leaf.empty() ? Join(*parent, leaf)
                                                                    : LexicalNormal(next);
    }
    return std::nullopt;
  }

  // A hooks directory git would look in (`dir`, as git spells it) and each hook in it: kept
  // read-only where the links on the way lead into a writable root, a missing target made as a
  // placeholder (so that the command cannot make it), a hook with other hard links recorded for
  // the search of its other names. The names are watched by the check after the run too (a
  // link on the way that the command swaps leads to an object it does not know).
  void ProtectHooks(const std::string& dir, int repo) {
    const GitFileFacts facts = fs_.lstat(dir);
    if (facts.type == GitFileType::kMissing) return;
    std::string real = dir;
    if (facts.type == GitFileType::kSymlink) {
      auto to = FollowLinks(dir);
      if (!to) return Unfollowable("the hooks directory " + dir);
      Name(*to, "the hooks directory " + dir + " (a symlink)", repo, NameKind::kDir);
      AddNamed(dir, "the hooks directory " + dir + " (a symlink)", repo);
      PinWayTo(*to);
      auto r = fs_.resolve(*to);
      if (!r) return;  // nothing there yet: the placeholder keeps it empty
      real = *r;
    } else if (facts.type != GitFileType::kDir) {
      return;  // git finds no hooks in a file
    }
    auto list = fs_.list_dir(real);
    if (!list) return;  // what the caller cannot list, neither can the command write
    if (list->entries.size() > kMaxHookEntries) {
      plan_.problems.push_back(
          Error{"limit", "git metadata: the hooks directory " + dir + " holds more than " +
                             std::to_string(kMaxHookEntries) +
                             " entries, more than the check follows. fix: remove what git does not "
                             "run there, or pass --writable-git"});
      return;
    }
    for (const auto& e : list->entries) {
      if (e.name.size() > 7 && e.name.ends_with(".sample")) continue;  // never run
      const std::string hook = Join(real, e.name);
      const std::string reason = "the hook " + Join(dir, e.name);
      std::string file = hook;
      if (e.type == GitFileType::kSymlink) {
        auto to = FollowLinks(hook);
        if (!to) {
          Unfollowable(reason);
          continue;
        }
        Name(*to, reason + " (a symlink)", repo, NameKind::kProgramWord);
        AddNamed(hook, reason + " (a symlink)", repo);
        // Its directories cannot be renamed away and made anew with another hook in them.
        PinWayTo(*to);
        auto r = fs_.resolve(*to);
        if (!r) continue;
        file = *r;
      } else if (e.type != GitFileType::kFile) {
        continue;
      }
      const GitFileFacts f = fs_.lstat(file);
      if (f.type == GitFileType::kFile && f.nlink > 1) plan_.hard_linked.push_back(file);
    }
  }

  // A config file git reads that has other hard links: git's config is written through any of
  // them (`ln .git/config notes.txt`), so each other name a writable root shows is kept
  // read-only too, as for a hook.
  void LinkedConfig(const std::string& path) {
    auto r = fs_.resolve(path);
    if (!r) return;
    const GitFileFacts f = fs_.lstat(*r);
    if (f.type == GitFileType::kFile && f.nlink > 1) plan_.hard_linked.push_back(*r);
  }

  // A hook link that cannot be followed to its end is one the command may be able to finish
  // (a loop through a link in a writable root): refused rather than guessed at.
  void Unfollowable(const std::string& what) {
    plan_.problems.push_back(
        Error{"invalid", "git metadata: " + what +
                             " is a symlink git cannot follow to its end (a loop, or one that "
                             "cannot be read); the command could make it lead to a file of its "
                             "own. fix: remove or repair the link, or pass --writable-git"});
  }

  void AddNamed(const std::string& path, const std::string& reason, int repo) {
    if (named_seen_.insert({path, repo}).second) plan_.named.push_back({path, reason, repo, via_});
  }

  void Finish() {
    std::sort(plan_.hard_linked.begin(), plan_.hard_linked.end());
    plan_.hard_linked.erase(std::unique(plan_.hard_linked.begin(), plan_.hard_linked.end()),
                            plan_.hard_linked.end());
    std::sort(read_only_.begin(), read_only_.end());
    read_only_.erase(std::unique(read_only_.begin(), read_only_.end()), read_only_.end());
    // One bind mount per path: what lies inside another read-only path is covered by it.
    const std::set<std::string> all(read_only_.begin(), read_only_.end());
    for (const auto& p : read_only_) {
      if (!UnderAny(Dirname(p), all)) plan_.read_only.push_back(p);
    }
    std::set<std::string> kept(plan_.read_only.begin(), plan_.read_only.end());
    std::map<std::string, GitPlaceholder> unique;
    for (auto& ph : placeholders_) {
      const std::string full = Join(ph.parent, ph.name);
      if (UnderAny(full, kept)) continue;
      auto [it, inserted] = unique.emplace(full, ph);
      if (inserted) continue;
      // A named path wins over a directory on the way to another (it is read-only: what lies
      // below it cannot be made anyway); of two named paths, a hooks dir wins.
      GitPlaceholder& had = it->second;
      if (ph.on_the_way) continue;
      if (had.on_the_way) {
        had = ph;
      } else if (ph.directory) {
        had.directory = true;
      }
    }
    // Parents come before children (map order): nothing is made below a read-only one.
    for (auto& [full, ph] : unique) {
      if (UnderAny(ph.parent, kept)) continue;
      if (!ph.on_the_way) kept.insert(full);
      plan_.placeholders.push_back(std::move(ph));
    }
    std::sort(pinned_.begin(), pinned_.end());
    pinned_.erase(std::unique(pinned_.begin(), pinned_.end()), pinned_.end());
    for (const auto& d : pinned_) {
      // A pin inside a read-only path would make it writable again.
      if (!UnderAny(d, kept)) plan_.pinned.push_back(d);
    }
    // One mount each: read-only paths, placeholders (a directory on the way is its pin).
    const size_t total = plan_.read_only.size() + plan_.placeholders.size() + plan_.pinned.size();
    for (const auto& ph : plan_.placeholders) {
      if (ph.on_the_way) plan_.pinned.push_back(Join(ph.parent, ph.name));
    }
    if (total > limits_.paths) {
      plan_.problems.push_back(LimitError(
          "paths", std::to_string(limits_.paths),
          std::to_string(total) + " git metadata paths to keep read-only (one mount each)",
          scan_.roots.empty() ? "" : scan_.roots.front()));
    }
  }

  const GitScan& scan_;
  const GitEnv& env_;
  const GitFs& fs_;
  const GitScanLimits& limits_;
  const std::set<int>& skip_configs_;
  std::chrono::steady_clock::time_point start_;
  bool out_of_time_ = false;
  std::vector<std::string> tops_;  // working trees and git dirs, resolved
  std::vector<std::string> read_only_;
  std::vector<GitPlaceholder> placeholders_;
  std::vector<std::string> pinned_;
  std::set<std::pair<std::string, int>> named_seen_;
  std::string via_;  // while naming what a protected-name symlink leads to: that symlink
  GitProtectionPlan plan_;
};

}  // namespace

GitProtectionPlan PlanGitProtection(const GitScan& scan, const GitEnv& env, const GitFs& fs,
                                    const GitScanLimits& limits,
                                    const std::set<int>& skip_configs) {
  return Planner(scan, env, fs, limits, skip_configs).Run();
}

}  // namespace anvil
