// Step 1 of policy/git_metadata.h: the walk of the writable roots (bounded; a memo of an earlier
// walk taken where provably unchanged), each repository read (pointers, config chain, hooks) and
// the user's config chain; every look through the injected GitFs.
#include <algorithm>

#include "common/ascii.h"
#include "fs/git_dir_guard.h"
#include "policy/git_metadata.h"
#include "policy/git_metadata_internal.h"
#include "policy/git_paths.h"
#include "policy/git_walk_step.h"
#include "policy/sandbox_policy.h"

namespace anvil {
namespace {

using namespace git_paths;
using namespace git_internal;

// A walked entry as the git-dir predicate takes it. d_type says nothing of execute bits: a file
// counts as HEAD or commondir, never as objects/ or refs/.
GitDirEntryKind KindOf(GitFileType type) {
  switch (type) {
    case GitFileType::kMissing:
      return GitDirEntryKind::kMissing;
    case GitFileType::kDir:
      return GitDirEntryKind::kDir;
    case GitFileType::kFile:
      return GitDirEntryKind::kFile;
    case GitFileType::kSymlink:
      return GitDirEntryKind::kSymlink;
    case GitFileType::kOther:
      return GitDirEntryKind::kOther;
  }
  return GitDirEntryKind::kOther;
}

// An entry lstat'ed: with its execute bits.
GitDirEntryKind KindOf(const GitFileFacts& facts) {
  if (facts.type == GitFileType::kFile && facts.executable) return GitDirEntryKind::kExecFile;
  return KindOf(facts.type);
}

// What git's is_git_directory finds in `dir` under its four names, from the directory's entries:
// every entry that folds to one of them counts (the walk does not know which directories fold
// case; over-matching only looks at more repositories), and a regular file named `objects` or
// `refs` is lstat'ed for its execute bits (access(X_OK) takes an executable file), afresh on
// every walk: a chmod changes the file's ctime, never its directory's, so a listing taken from
// the memo cannot tell. Only where a HEAD could make the shape: one lstat per such name.
GitDirNames GitDirNamesOf(const std::string& dir, const std::vector<GitDirEntry>& entries,
                          const GitFs& fs) {
  GitDirNames names;
  for (const auto& e : entries) names = WithListedEntry(names, e.name, KindOf(e.type), true);
  const GitDirEntryKind head = names.head;
  if (IsGitDirShape(names) ||
      (head != GitDirEntryKind::kFile && head != GitDirEntryKind::kExecFile &&
       head != GitDirEntryKind::kSymlink)) {
    return names;
  }
  for (const auto& e : entries) {
    if (e.type != GitFileType::kFile) continue;
    const GitDirName which = ClassifyGitDirName(e.name, true);
    if (which != GitDirName::kObjects && which != GitDirName::kRefs) continue;
    const std::string path = dir == "/" ? "/" + e.name : dir + "/" + e.name;
    names = WithListedEntry(names, e.name, KindOf(fs.lstat(path)), true);
  }
  return names;
}

constexpr size_t kMaxConfigBytes = 1 << 20;
constexpr size_t kMaxPointerBytes = 64 * 1024;
constexpr size_t kMaxHookCompareBytes = 1 << 20;
constexpr int kMaxIncludeDepth = 10;       // git's own MAX_INCLUDE_DEPTH
constexpr size_t kMaxConfigFiles = 256;    // files in one config chain (includes fan out)
constexpr size_t kMaxUnwalkedNamed = 100;  // subtrees named in GitScan::unwalked
constexpr char kDefaultTemplateDir[] = "/usr/share/git-core/templates";
constexpr size_t kMaxModuleDepth = 64;        // directories below a git dir's `modules`
constexpr size_t kMaxModuleEntries = 100000;  // entries listed there, per repository

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class Scanner {
 public:
  Scanner(const GitEnv& env, const GitFs& fs, const GitScanLimits& limits,
          const GitWalkMemo* previous, GitBoundMode mode)
      : env_(env),
        fs_(fs),
        limits_(limits),
        previous_(previous),
        mode_(mode),
        start_(fs.now()),
        wall_start_(fs.wall_seconds()) {}

  Result<GitScan> Run(const std::vector<std::string>& roots) {
    scan_.roots = roots;
    ReadUserConfigs();
    FindTemplates();
    std::vector<std::string> walk;
    for (const auto& r : roots) {
      bool nested = std::any_of(roots.begin(), roots.end(),
                                [&](const std::string& o) { return o != r && PathIsWithin(r, o); });
      if (!nested && std::find(walk.begin(), walk.end(), r) == walk.end()) walk.push_back(r);
    }
    for (const auto& r : walk) {
      ANVIL_RETURN_IF_ERROR(Walk(r));
    }
    for (const auto& r : walk) FindEnclosing(r);
    for (auto& repo : scan_.repos) {
      if (auto s = ReadRepo(repo); !s) {
        if (mode_ == GitBoundMode::kFail) return tl::unexpected(s.error());
        // Not read in full: judged as one that runs code (GitRepoRunsCode).
        repo.unread = s.error().message;
        Unwalked(repo.marker, "a repository whose metadata could not be read in full");
      }
    }
    scan_.seconds = std::chrono::duration<double>(fs_.now() - start_).count();
    return std::move(scan_);
  }

 private:
  Status CheckTime(const std::string& where) {
    double elapsed = std::chrono::duration<double>(fs_.now() - start_).count();
    if (elapsed > limits_.seconds) {
      return tl::unexpected(LimitError("seconds", SecondsText(limits_.seconds),
                                       "looking for git repositories took longer than allowed",
                                       where));
    }
    return Ok();
  }

  std::string EntriesBoundText() const {
    return "past the 'entries' bound (" + std::to_string(limits_.entries) + ")";
  }

  Status CountEntries(size_t n, const std::string& where) {
    scan_.entries += n;
    if (scan_.entries > limits_.entries) {
      return tl::unexpected(LimitError("entries", std::to_string(limits_.entries),
                                       "more directory entries in the writable roots than allowed",
                                       where));
    }
    return Ok();
  }

  // After the run, a bound stops nothing but the part of the walk past it: `path` is named as
  // not walked, and the walk goes on with the rest.
  void Unwalked(const std::string& path, const std::string& why) {
    if (scan_.unwalked.size() < kMaxUnwalkedNamed) scan_.unwalked.push_back({path, why});
    ++scan_.unwalked_total;
  }

  Status Walk(const std::string& root) {
    std::vector<std::pair<std::string, size_t>> stack{{root, 0}};
    while (!stack.empty()) {
      auto [dir, depth] = std::move(stack.back());
      stack.pop_back();
      if (!exhausted_.empty()) {
        Unwalked(dir, exhausted_);
        continue;
      }
      if (auto s = CheckTime(dir); !s) {
        if (mode_ == GitBoundMode::kFail) return s;
        exhausted_ = "past the 'seconds' bound (" + SecondsText(limits_.seconds) + ")";
        Unwalked(dir, exhausted_);
        continue;
      }
      std::vector<GitDirEntry> entries;
      if (auto s = Remembered(dir, entries); !s) {
        if (mode_ == GitBoundMode::kFail) return tl::unexpected(s.error());
        exhausted_ = EntriesBoundText();
        Unwalked(dir, exhausted_);
        continue;
      }
      if (!remembered_) {
        auto listing = fs_.list_dir(dir);
        if (!listing && listing.error().code == "denied" && mode_ == GitBoundMode::kSkipAndName &&
            fs_.open_up) {
          bool opened = static_cast<bool>(fs_.open_up(dir));
          // The way to it may be what the command closed: its parent, listed (readable) but not
          // searchable (chmod 600), bars the way to every directory in it, which could then
          // be taken for one the caller cannot write. The parent was listed, so it is in the
          // roots: opened too, then this one.
          if (!opened && dir != root && fs_.open_up(Dirname(dir))) {
            ++scan_.opened_up;
            opened = static_cast<bool>(fs_.open_up(dir));
          }
          if (opened) {
            ++scan_.opened_up;
            listing = fs_.list_dir(dir);
          }
        }
        if (!listing) {
          // What the caller cannot list but could write, the command could fill unseen.
          if (listing.error().code == "denied" && dir != root && !fs_.writable(dir)) continue;
          if (mode_ == GitBoundMode::kSkipAndName) {
            Unwalked(dir, "cannot be listed (" + listing.error().message + ")");
            continue;
          }
          return Fail("sandbox", "git metadata: cannot look for git repositories in " + dir + " (" +
                                     listing.error().message +
                                     "), which the command could write. fix: make it readable, "
                                     "or pass --writable-git to run without protecting git "
                                     "metadata");
        }
        scan_.listed += listing->entries.size();
        if (auto s = CountEntries(listing->entries.size(), dir); !s) {
          if (mode_ == GitBoundMode::kFail) return s;
          // This directory is listed and looked through; the rest of the walk is not.
          exhausted_ = EntriesBoundText();
        }
        Remember(*listing, dir);
        entries = std::move(listing->entries);
      }
      // Names folded: the walk does not know which directories fold case, and over-matching
      // only looks at more repositories.
      if (IsGitDirShape(GitDirNamesOf(dir, entries, fs_))) {
        // git takes a directory holding HEAD, objects/ and refs/ (or HEAD and commondir) for a
        // git dir (a bare repository, or a git dir under another name) when it starts inside
        // it (fs/git_dir_guard.h: the predicate the gateway's plugin guard uses too). Its
        // entries are then walked as any directory's (policy/git_walk_step.h).
        GitRepo repo;
        repo.marker = dir;
        repo.kind = GitMarkerKind::kBareDir;
        scan_.repos.push_back(std::move(repo));
      }
      for (const auto& e : entries) {
        const std::string path = Join(dir, e.name);
        const GitWalkStep step = DecideGitWalkEntry(
            e, std::string_view(dir).substr(dir.rfind('/') + 1), depth, limits_.depth);
        if (step.protected_name) scan_.protected_names.push_back(path);
        if (e.type == GitFileType::kSymlink && !step.marker) {
          scan_.symlinks.push_back(path);
          if (!remembered_) scan_.listed_symlinks.push_back(path);
        }
        if (step.marker) {
          GitRepo repo;
          repo.marker = path;
          repo.top = dir;
          repo.kind = *step.marker;
          scan_.repos.push_back(std::move(repo));
        }
        if (step.descent == GitWalkDescent::kPastDepth) {
          if (mode_ == GitBoundMode::kSkipAndName) {
            Unwalked(path, "past the 'depth' bound (" + std::to_string(limits_.depth) + ")");
            continue;
          }
          return tl::unexpected(LimitError("depth", std::to_string(limits_.depth),
                                           "directories nested deeper than allowed", path));
        }
        if (step.descent == GitWalkDescent::kWalk) stack.emplace_back(path, depth + 1);
      }
    }
    return Ok();
  }

  // The repositories above `root`: git started in the root without a .git of its own goes up
  // until it finds one (or a directory that is a git dir), and that repository's config may
  // name paths in the root (a monorepo's core.hooksPath = tools/hooks, with the sandbox run
  // in tools/). All the way up, not only to the first, and across filesystems: conservative.
  void FindEnclosing(const std::string& root) {
    auto seen = [&](const std::string& marker) {
      return std::any_of(scan_.repos.begin(), scan_.repos.end(),
                         [&](const GitRepo& r) { return r.marker == marker; });
    };
    for (std::string dir = Dirname(root);; dir = Dirname(dir)) {
      const std::string dotgit = Join(dir, ".git");
      GitFileFacts f = fs_.lstat(dotgit);
      GitRepo repo;
      repo.encloses_root = true;
      repo.top = dir;
      repo.marker = dotgit;
      if (f.type == GitFileType::kDir || f.type == GitFileType::kFile ||
          f.type == GitFileType::kSymlink) {
        repo.kind = f.type == GitFileType::kDir    ? GitMarkerKind::kGitDir
                    : f.type == GitFileType::kFile ? GitMarkerKind::kGitFile
                                                   : GitMarkerKind::kGitLink;
        if (!seen(dotgit)) scan_.repos.push_back(repo);
      }
      auto kind = [&](const char* name) { return KindOf(fs_.lstat(Join(dir, name))); };
      const GitDirNames names{kind("HEAD"), kind("objects"), kind("refs"), kind("commondir")};
      if (IsGitDirShape(names) && !seen(dir)) {
        repo.marker = dir;
        repo.top.clear();
        repo.kind = GitMarkerKind::kBareDir;
        scan_.repos.push_back(repo);
      }
      if (dir == "/" || dir == ".") break;
    }
  }

  // Whether `name` is one the walk acts on: a directory, `.git`, part of a git dir's shape, or
  // one of Anvil's protected names. Not other symlinks: those of a directory taken from the memo
  // are as an earlier check judged them (GitScan::listed_symlinks).
  static bool Kept(const GitDirEntry& e) {
    if (e.type == GitFileType::kDir) return true;
    // `.git` in any spelling the protected names fold (any type), Anvil's own names, and a file
    // of kProtectedFilesIn in whatever directory (its directory's name decides, when walked).
    if (IsProtectedName(e.name) || IsProtectedFileInName(e.name)) return true;
    if (e.type == GitFileType::kSymlink && IsProtectedFilesDirName(e.name)) return true;
    return ClassifyGitDirName(e.name, true) != GitDirName::kNone;
  }

  // The entries of `dir` as the earlier walk listed them, when it is provably unchanged since
  // (sets remembered_). Its entries count toward the bound as if it had been listed.
  Status Remembered(const std::string& dir, std::vector<GitDirEntry>& entries) {
    remembered_ = false;
    if (!previous_) return Ok();
    GitFileFacts f = fs_.lstat(dir);
    if (f.type != GitFileType::kDir) return Ok();
    auto it = previous_->dirs.find({f.dev, f.ino});
    if (it == previous_->dirs.end() || it->second.ctime_sec != f.ctime_sec ||
        it->second.ctime_nsec != f.ctime_nsec || it->second.mnt_id != f.mnt_id ||
        it->second.path != dir) {
      return Ok();
    }
    ANVIL_RETURN_IF_ERROR(CountEntries(it->second.entries, dir));
    entries = it->second.kept;
    scan_.memo.dirs[it->first] = it->second;
    ++scan_.memo_dirs;
    remembered_ = true;
    return Ok();
  }

  void Remember(const GitDirListing& listing, const std::string& dir) {
    const GitFileFacts& f = listing.dir;
    // Changed within the last second before the walk: a later change in the same timestamp
    // tick would leave the ctime as it is.
    if (!f.ctime_tracks_entries || f.ctime_sec >= wall_start_ - 1) return;
    GitWalkMemo::Dir d{f.ctime_sec, f.ctime_nsec, f.mnt_id, listing.entries.size(), {}, dir};
    for (const auto& e : listing.entries) {
      if (Kept(e)) d.kept.push_back(e);
    }
    scan_.memo.dirs[{f.dev, f.ino}] = std::move(d);
  }

  // `gitdir: PATH` (relative to `base`), as in a .git file or a worktree's gitdir file.
  std::optional<std::string> ReadPointer(const std::string& file, const std::string& base,
                                         GitPointerKind kind) {
    auto text = fs_.read_file(file, kMaxPointerBytes);
    if (!text || !*text) return std::nullopt;
    auto target = ParseGitPointer(**text, kind);
    if (!target) return std::nullopt;
    return (*target)[0] == '/' ? *target : Join(base, *target);
  }

  Status ReadRepo(GitRepo& repo) {
    ANVIL_RETURN_IF_ERROR(CheckTime(repo.marker));
    switch (repo.kind) {
      case GitMarkerKind::kGitDir:
      case GitMarkerKind::kBareDir:
        repo.gitdir = repo.marker;
        break;
      case GitMarkerKind::kGitFile:
        repo.gitdir = ReadPointer(repo.marker, repo.top, GitPointerKind::kDotGitFile).value_or("");
        break;
      case GitMarkerKind::kGitLink: {
        auto target = fs_.resolve(repo.marker);
        if (target && fs_.lstat(*target).type == GitFileType::kDir) {
          repo.gitdir = *target;
        } else if (target) {
          repo.gitdir = ReadPointer(*target, repo.top, GitPointerKind::kDotGitFile).value_or("");
        }
        break;
      }
    }
    if (repo.gitdir.empty()) return Ok();
    auto real_gitdir = fs_.resolve(repo.gitdir);
    if (!real_gitdir || fs_.lstat(*real_gitdir).type != GitFileType::kDir) return Ok();
    repo.commondir =
        ReadPointer(Join(repo.gitdir, "commondir"), repo.gitdir, GitPointerKind::kCommonDir)
            .value_or(repo.gitdir);
    if (auto back =
            ReadPointer(Join(repo.gitdir, "gitdir"), repo.gitdir, GitPointerKind::kBackPointer)) {
      repo.worktree_dotgits.push_back(*back);
    }
    const std::string worktrees = Join(repo.commondir, "worktrees");
    if (fs_.lstat(worktrees).type == GitFileType::kDir) {
      auto list = fs_.list_dir(worktrees);
      if (list) {
        ANVIL_RETURN_IF_ERROR(CountEntries(list->entries.size(), worktrees));
        for (const auto& e : list->entries) {
          const std::string wt = Join(worktrees, e.name);
          if (auto back = ReadPointer(Join(wt, "gitdir"), wt, GitPointerKind::kBackPointer)) {
            repo.worktree_dotgits.push_back(*back);
          }
        }
      }
    }
    std::sort(repo.worktree_dotgits.begin(), repo.worktree_dotgits.end());
    repo.worktree_dotgits.erase(
        std::unique(repo.worktree_dotgits.begin(), repo.worktree_dotgits.end()),
        repo.worktree_dotgits.end());
    size_t files = 0;
    in_repo_ = true;
    ReadConfigChain(Join(repo.commondir, "config"), "", 0, 0, files, repo.configs);
    ReadConfigChain(Join(repo.gitdir, "config.worktree"), "", 0, 0, files, repo.configs);
    for (const auto& f : repo.configs) {
      for (const auto& e : f.entries) {
        if (e.section == "core" && !e.has_subsection && e.key == "worktree" && e.value &&
            !e.value->empty()) {
          repo.core_worktree = (*e.value)[0] == '/' ? *e.value : Join(repo.gitdir, *e.value);
        }
      }
    }
    ListHooks(Join(repo.commondir, "hooks"), repo.hooks, repo.hooks_unknown);
    if (repo.commondir != repo.gitdir) {
      ListHooks(Join(repo.gitdir, "hooks"), repo.hooks, repo.hooks_unknown);
    }
    if (mode_ == GitBoundMode::kSkipAndName) {
      size_t entries = 0;
      ReadModules(Join(repo.commondir, "modules"), repo, 0, entries);
    }
    in_repo_ = false;
    return Ok();
  }

  // The submodules' git dirs under `dir` (a git dir's `modules`, where a submodule named a/b
  // lies in a/b): each one's config and hooks, and its own `modules` in turn. Anything git
  // could take otherwise than as read here (a symlink on the way, an unlistable directory, a
  // git dir sharing another's, past the bounds) leaves them unread: a new repository holding
  // such a thing is judged as one that runs code.
  void ReadModules(const std::string& dir, GitRepo& repo, size_t depth, size_t& entries) {
    if (!repo.modules_unread.empty()) return;
    const GitFileFacts facts = fs_.lstat(dir);
    if (facts.type == GitFileType::kMissing) return;
    auto unread = [&](const std::string& why) { repo.modules_unread = dir + ": " + why; };
    if (facts.type != GitFileType::kDir) return unread("not a directory git reads as it is");
    if (depth > kMaxModuleDepth) return unread("submodules nested deeper than allowed");
    if (auto s = CheckTime(dir); !s) return unread(s.error().message);
    auto list = fs_.list_dir(dir);
    if (!list) return unread(list.error().message);
    entries += list->entries.size();
    if (entries > kMaxModuleEntries) return unread("more entries than the check reads");
    if (depth > 0 && IsGitDirShape(GitDirNamesOf(dir, list->entries, fs_))) {
      GitRepo::Module m;
      m.gitdir = dir;
      if (fs_.lstat(Join(dir, "commondir")).exists()) return unread("a git dir with a commondir");
      size_t files = 0;
      ReadConfigChain(Join(dir, "config"), "", 0, 0, files, m.configs);
      ReadConfigChain(Join(dir, "config.worktree"), "", 0, 0, files, m.configs);
      ListHooks(Join(dir, "hooks"), m.hooks, m.hooks_unknown);
      repo.modules.push_back(std::move(m));
      return ReadModules(Join(dir, "modules"), repo, depth + 1, entries);
    }
    for (const auto& e : list->entries) {
      if (e.type == GitFileType::kSymlink) return unread("a symlink: " + e.name);
      if (e.type == GitFileType::kDir) ReadModules(Join(dir, e.name), repo, depth + 1, entries);
    }
  }

  void ListHooks(const std::string& dir, std::vector<std::string>& hooks, bool& unknown) {
    GitFileFacts facts = fs_.lstat(dir);
    if (facts.type == GitFileType::kMissing) return;
    if (facts.type != GitFileType::kDir) {
      unknown = true;  // a symlink (or a file) where git looks for hooks
      return;
    }
    auto list = fs_.list_dir(dir);
    if (!list) {
      unknown = true;
      return;
    }
    for (const auto& e : list->entries) {
      if (EndsWith(e.name, ".sample")) continue;
      if (SameAsTemplate(e.name, Join(dir, e.name))) continue;
      hooks.push_back(e.name);
    }
  }

  bool SameAsTemplate(const std::string& name, const std::string& path) {
    for (const auto& t : templates_) {
      auto a = fs_.read_file(Join(Join(t, "hooks"), name), kMaxHookCompareBytes);
      if (!a || !*a) continue;
      auto b = fs_.read_file(path, kMaxHookCompareBytes);
      if (b && *b && **a == **b) return true;
    }
    return false;
  }

  void ReadConfigChain(const std::string& path, const std::string& from, int line, int depth,
                       size_t& files, std::vector<GitConfigFile>& out) {
    GitConfigFile f;
    f.path = path;
    f.included_from = from;
    f.include_line = line;
    if (++files > kMaxConfigFiles) {
      f.exists = true;
      f.error = "more than " + std::to_string(kMaxConfigFiles) + " config files included";
      out.push_back(std::move(f));
      return;
    }
    auto text = fs_.read_file(path, kMaxConfigBytes);
    if (!text) {
      f.exists = true;
      // Unreadable to the caller: neither the caller's git nor the command can read it. After
      // the run, a repository's config the caller owns may be one the command chmodded closed
      // (git reads it once the user opens it again): not read in full.
      if (text.error().code != "denied" || (in_repo_ && mode_ == GitBoundMode::kSkipAndName)) {
        f.error = text.error().message;
      }
      out.push_back(std::move(f));
      return;
    }
    if (!*text) {
      out.push_back(std::move(f));  // git skips a missing config (and a missing include)
      return;
    }
    f.exists = true;
    auto parsed = ParseGitConfig(**text);
    if (!parsed) {
      f.error = parsed.error().message;
      out.push_back(std::move(f));
      return;
    }
    f.entries = std::move(*parsed);
    const size_t index = out.size();
    out.push_back(f);
    for (const auto& e : f.entries) {
      if (ClassifyGitConfigKey(e) != GitKeyUse::kInclude) continue;
      if (!e.value) {
        out[index].error = "include path without a value (line " + std::to_string(e.line) + ")";
        continue;
      }
      auto target = ExpandUserPath(*e.value, env_, fs_);
      if (!target || target->empty()) continue;
      if ((*target)[0] != '/') target = Join(Dirname(path), *target);
      if (depth + 1 > kMaxIncludeDepth) {
        out[index].error = "includes nested deeper than " + std::to_string(kMaxIncludeDepth);
        continue;
      }
      ReadConfigChain(*target, path, e.line, depth + 1, files, out);
    }
  }

  void ReadUserConfigs() {
    std::vector<std::string> paths;
    if (!env_.config_system.empty()) paths.push_back(env_.config_system);
    paths.emplace_back("/etc/gitconfig");
    if (!env_.config_global.empty()) paths.push_back(env_.config_global);
    if (!env_.home.empty()) paths.push_back(Join(StripTrailingSlashes(env_.home), ".gitconfig"));
    if (!env_.xdg_config_home.empty()) {
      paths.push_back(Join(StripTrailingSlashes(env_.xdg_config_home), "git/config"));
    } else if (!env_.home.empty()) {
      paths.push_back(Join(StripTrailingSlashes(env_.home), ".config/git/config"));
    }
    std::vector<std::string> seen;
    for (const auto& p : paths) {
      if (std::find(seen.begin(), seen.end(), p) != seen.end()) continue;
      seen.push_back(p);
      size_t files = 0;
      ReadConfigChain(p, "", 0, 0, files, scan_.user_configs);
    }
  }

  void FindTemplates() {
    if (!env_.template_dir.empty()) templates_.push_back(env_.template_dir);
    for (const auto& f : scan_.user_configs) {
      for (const auto& e : f.entries) {
        if (ClassifyGitConfigKey(e) == GitKeyUse::kTemplateDir && e.value) {
          if (auto t = ExpandUserPath(*e.value, env_, fs_); t && !t->empty()) {
            templates_.push_back(*t);
          }
        }
      }
    }
    templates_.emplace_back(kDefaultTemplateDir);
  }

  const GitEnv& env_;
  const GitFs& fs_;
  const GitScanLimits& limits_;
  const GitWalkMemo* previous_;
  GitBoundMode mode_;
  // Why the rest of the walk is skipped (kSkipAndName past the 'entries' or 'seconds' bound).
  std::string exhausted_;
  bool remembered_ = false;
  bool in_repo_ = false;  // reading a repository's configs (not the user's)
  std::chrono::steady_clock::time_point start_;
  int64_t wall_start_;
  std::vector<std::string> templates_;
  GitScan scan_;
};

}  // namespace

Result<GitScan> ScanGitMetadata(const std::vector<std::string>& roots, const GitEnv& env,
                                const GitFs& fs, const GitScanLimits& limits,
                                const GitWalkMemo* previous, GitBoundMode mode) {
  return Scanner(env, fs, limits, previous, mode).Run(roots);
}

}  // namespace anvil
