#include "policy/git_metadata.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <set>

#include "common/ascii.h"
#include "common/syscalls.h"
#include "common/unique_fd.h"
#include "fs/git_dir_guard.h"
#include "fs/protected_names.h"
#include "policy/git_inert_keys.h"
#include "policy/sandbox_policy.h"

namespace anvil {
namespace {

// A listed entry as the git-dir predicate takes it. d_type says nothing of execute bits: a file
// is a plain one here (GitDirNamesOf lstats the ones whose bits matter).
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
constexpr size_t kMaxCommandWords = 512;   // words taken from one command line
constexpr size_t kMaxUnwalkedNamed = 100;  // subtrees named in GitScan::unwalked
constexpr char kDefaultTemplateDir[] = "/usr/share/git-core/templates";

std::string Join(const std::string& dir, std::string_view name) {
  if (dir == "/") return "/" + std::string(name);
  return dir + "/" + std::string(name);
}

std::string StripTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

std::string Dirname(const std::string& path) {
  std::string p = StripTrailingSlashes(path);
  auto slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

std::string Basename(const std::string& path) {
  std::string p = StripTrailingSlashes(path);
  auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r' || s[b] == '\n')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r' || s[e - 1] == '\n')) {
    --e;
  }
  return std::string(s.substr(b, e - b));
}

// "." and ".." taken away lexically (what the name says, before any symlink is followed).
std::string LexicalNormal(const std::string& path) {
  std::vector<std::string> parts;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    std::string part = path.substr(pos, next - pos);
    pos = next + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(std::move(part));
  }
  std::string out;
  for (const auto& p : parts) out += "/" + p;
  return out.empty() ? "/" : out;
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

bool WithinAny(const std::string& path, const std::vector<std::string>& roots) {
  return std::any_of(roots.begin(), roots.end(),
                     [&](const std::string& r) { return PathIsWithin(path, r); });
}

// `path` or one of the directories above it is in `set` (canonical paths): a walk up, not a
// comparison with every member.
bool UnderAny(const std::string& path, const std::set<std::string>& set) {
  std::string p = path;
  for (;;) {
    if (set.count(p)) return true;
    if (p == "/" || p.empty() || p == ".") return false;
    p = Dirname(p);
  }
}

// The home directory of `user` from a passwd(5) file (no NSS: the anvil binary is static).
std::optional<std::string> HomeOf(const std::string& user, const GitEnv& env, const GitFs& fs) {
  auto text = fs.read_file(env.passwd_file, 16 << 20);
  if (!text || !*text) return std::nullopt;
  std::string_view rest(**text);
  while (!rest.empty()) {
    auto nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    std::vector<std::string_view> fields;
    size_t start = 0;
    for (;;) {
      auto colon = line.find(':', start);
      fields.push_back(line.substr(start, colon - start));
      if (colon == std::string_view::npos) break;
      start = colon + 1;
    }
    if (fields.size() >= 6 && fields[0] == user && !fields[5].empty()) {
      return std::string(fields[5]);
    }
  }
  return std::nullopt;
}

// git's expand_user_path: `~/` and `~user/`; "%(prefix)/" (git's install prefix) never names a
// workspace path. nullopt when it cannot be expanded.
std::optional<std::string> ExpandUserPath(const std::string& value, const GitEnv& env,
                                          const GitFs& fs) {
  if (value.rfind("%(prefix)/", 0) == 0) return std::nullopt;
  if (value.empty() || value[0] != '~') return value;
  auto slash = value.find('/');
  std::string user = value.substr(1, slash == std::string::npos ? std::string::npos : slash - 1);
  std::string rest = slash == std::string::npos ? "" : value.substr(slash);
  if (user.empty()) {
    if (env.home.empty()) return std::nullopt;
    return StripTrailingSlashes(env.home) + rest;
  }
  auto home = HomeOf(user, env, fs);
  if (!home) return std::nullopt;
  return StripTrailingSlashes(*home) + rest;
}

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

Error LimitError(std::string_view bound, const std::string& value, const std::string& what,
                 const std::string& where) {
  return Error{"limit",
               "git metadata: " + what + " (the '" + std::string(bound) + "' bound is " + value +
                   "; reached at " + where +
                   "). The sandbox did not start: a repository past the bound could not be "
                   "protected. fix: raise it with --git-scan-limit " +
                   std::string(bound) +
                   "=N, or pass --writable-git to run without protecting git metadata"};
}

std::string SecondsText(double s) {
  std::string t = std::to_string(s);
  while (t.find('.') != std::string::npos && (t.back() == '0' || t.back() == '.')) {
    bool dot = t.back() == '.';
    t.pop_back();
    if (dot) break;
  }
  return t;
}

// ---- the scan -------------------------------------------------------------------------------

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
      if (auto s = Walk(r); !s) return tl::unexpected(s.error());
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
        Remember(*listing);
        entries = std::move(listing->entries);
      }
      const std::vector<GitDirEntry>* list = &entries;
      // Names folded: the walk does not know which directories fold case, and over-matching
      // only looks at more repositories.
      if (IsGitDirShape(GitDirNamesOf(dir, *list, fs_))) {
        // git takes a directory holding HEAD, objects/ and refs/ (or HEAD and commondir) for a
        // git dir (a bare repository, or a git dir under another name) when it starts inside
        // it (fs/git_dir_guard.h: the predicate the gateway's plugin guard uses too).
        GitRepo repo;
        repo.marker = dir;
        repo.kind = GitMarkerKind::kBareDir;
        scan_.repos.push_back(std::move(repo));
        continue;
      }
      for (const auto& e : *list) {
        const std::string path = Join(dir, e.name);
        if (IsAnvilProtected(e)) scan_.protected_names.push_back(path);
        if (AsciiLower(e.name) == ".git") {
          GitRepo repo;
          repo.marker = path;
          repo.top = dir;
          switch (e.type) {
            case GitFileType::kDir:
              repo.kind = GitMarkerKind::kGitDir;
              break;
            case GitFileType::kFile:
              repo.kind = GitMarkerKind::kGitFile;
              break;
            case GitFileType::kSymlink:
              repo.kind = GitMarkerKind::kGitLink;
              break;
            default:
              continue;  // a socket or device named .git is nothing git reads
          }
          scan_.repos.push_back(std::move(repo));
          continue;  // never descend into a git dir
        }
        if (e.type != GitFileType::kDir) continue;  // symlinks are not followed
        if (depth + 1 > limits_.depth) {
          if (mode_ == GitBoundMode::kSkipAndName) {
            Unwalked(path, "past the 'depth' bound (" + std::to_string(limits_.depth) + ")");
            continue;
          }
          return tl::unexpected(LimitError("depth", std::to_string(limits_.depth),
                                           "directories nested deeper than allowed", path));
        }
        stack.emplace_back(path, depth + 1);
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

  // A directory or regular file with a protected name of Anvil's own (not .git: a repository).
  static bool IsAnvilProtected(const GitDirEntry& e) {
    if (e.type != GitFileType::kDir && e.type != GitFileType::kFile) return false;
    const auto kind = ProtectedNameKindOf(e.name);
    return kind && *kind != ProtectedNameKind::kGitMetadata;
  }

  // Whether `name` is one the walk acts on: a directory, `.git`, part of a git dir's shape, or
  // one of Anvil's protected names.
  static bool Kept(const GitDirEntry& e) {
    if (e.type == GitFileType::kDir) return true;
    if (AsciiLower(e.name) == ".git") return true;
    if (IsAnvilProtected(e)) return true;
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
        it->second.ctime_nsec != f.ctime_nsec || it->second.mnt_id != f.mnt_id) {
      return Ok();
    }
    if (auto s = CountEntries(it->second.entries, dir); !s) return s;
    entries = it->second.kept;
    scan_.memo.dirs[it->first] = it->second;
    ++scan_.memo_dirs;
    remembered_ = true;
    return Ok();
  }

  void Remember(const GitDirListing& listing) {
    const GitFileFacts& f = listing.dir;
    // Changed within the last second before the walk: a later change in the same timestamp
    // tick would leave the ctime as it is.
    if (!f.ctime_tracks_entries || f.ctime_sec >= wall_start_ - 1) return;
    GitWalkMemo::Dir d{f.ctime_sec, f.ctime_nsec, f.mnt_id, listing.entries.size(), {}};
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
    if (auto s = CheckTime(repo.marker); !s) return s;
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
        if (auto s = CountEntries(list->entries.size(), worktrees); !s) return s;
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
    ListHooks(Join(repo.commondir, "hooks"), repo);
    if (repo.commondir != repo.gitdir) ListHooks(Join(repo.gitdir, "hooks"), repo);
    return Ok();
  }

  void ListHooks(const std::string& dir, GitRepo& repo) {
    GitFileFacts facts = fs_.lstat(dir);
    if (facts.type == GitFileType::kMissing) return;
    if (facts.type != GitFileType::kDir) {
      repo.hooks_unknown = true;  // a symlink (or a file) where git looks for hooks
      return;
    }
    auto list = fs_.list_dir(dir);
    if (!list) {
      repo.hooks_unknown = true;
      return;
    }
    for (const auto& e : list->entries) {
      if (EndsWith(e.name, ".sample")) continue;
      if (SameAsTemplate(e.name, Join(dir, e.name))) continue;
      repo.hooks.push_back(e.name);
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
      // Unreadable to the caller: neither the caller's git nor the command can read it.
      if (text.error().code != "denied") f.error = text.error().message;
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
  std::chrono::steady_clock::time_point start_;
  int64_t wall_start_;
  std::vector<std::string> templates_;
  GitScan scan_;
};

// ---- the key table ----------------------------------------------------------------------------

enum class Sub { kNone, kAny, kEither };
struct KeyRule {
  std::string_view section;
  Sub sub;
  std::string_view key;  // "*": any key
  GitKeyUse use;
};

// Every key whose value git (or a command git starts for it) executes, or follows as a path to
// more config or to hooks. Not here, by design: paths git only reads as data
// (core.excludesFile, core.attributesFile, commit.template, mailmap.file, ...): they can select
// which of the configured drivers runs, never add one.
constexpr KeyRule kKeyRules[] = {
    {"include", Sub::kNone, "path", GitKeyUse::kInclude},
    {"includeif", Sub::kAny, "path", GitKeyUse::kInclude},
    {"core", Sub::kNone, "hookspath", GitKeyUse::kHooksDir},
    {"init", Sub::kNone, "templatedir", GitKeyUse::kTemplateDir},
    {"core", Sub::kNone, "fsmonitor", GitKeyUse::kCommandOrBool},
    {"core", Sub::kNone, "sshcommand", GitKeyUse::kCommand},
    {"core", Sub::kNone, "pager", GitKeyUse::kCommand},
    {"core", Sub::kNone, "editor", GitKeyUse::kCommand},
    {"core", Sub::kNone, "askpass", GitKeyUse::kCommand},
    {"core", Sub::kNone, "gitproxy", GitKeyUse::kCommand},
    {"core", Sub::kNone, "alternaterefscommand", GitKeyUse::kCommand},
    {"sequence", Sub::kNone, "editor", GitKeyUse::kCommand},
    {"diff", Sub::kNone, "external", GitKeyUse::kCommand},
    {"diff", Sub::kAny, "textconv", GitKeyUse::kCommand},
    {"diff", Sub::kAny, "command", GitKeyUse::kCommand},
    {"difftool", Sub::kAny, "cmd", GitKeyUse::kCommand},
    {"difftool", Sub::kAny, "path", GitKeyUse::kCommand},
    {"mergetool", Sub::kAny, "cmd", GitKeyUse::kCommand},
    {"mergetool", Sub::kAny, "path", GitKeyUse::kCommand},
    {"merge", Sub::kAny, "driver", GitKeyUse::kCommand},
    {"filter", Sub::kAny, "clean", GitKeyUse::kCommand},
    {"filter", Sub::kAny, "smudge", GitKeyUse::kCommand},
    {"filter", Sub::kAny, "process", GitKeyUse::kCommand},
    {"credential", Sub::kEither, "helper", GitKeyUse::kCommand},
    {"gpg", Sub::kEither, "program", GitKeyUse::kCommand},
    {"gpg", Sub::kAny, "defaultkeycommand", GitKeyUse::kCommand},
    {"pager", Sub::kNone, "*", GitKeyUse::kCommandOrBool},
    {"alias", Sub::kNone, "*", GitKeyUse::kBangCommand},
    {"submodule", Sub::kAny, "update", GitKeyUse::kBangCommand},
    {"uploadpack", Sub::kNone, "packobjectshook", GitKeyUse::kCommand},
    {"remote", Sub::kAny, "uploadpack", GitKeyUse::kCommand},
    {"remote", Sub::kAny, "receivepack", GitKeyUse::kCommand},
    {"interactive", Sub::kNone, "difffilter", GitKeyUse::kCommand},
    {"hook", Sub::kAny, "command", GitKeyUse::kCommand},
    {"trailer", Sub::kAny, "command", GitKeyUse::kCommand},
    {"trailer", Sub::kAny, "cmd", GitKeyUse::kCommand},
    {"sendemail", Sub::kEither, "smtpserver", GitKeyUse::kCommand},
    {"sendemail", Sub::kEither, "sendmailcmd", GitKeyUse::kCommand},
    {"sendemail", Sub::kEither, "tocmd", GitKeyUse::kCommand},
    {"sendemail", Sub::kEither, "cccmd", GitKeyUse::kCommand},
    {"sendemail", Sub::kEither, "headercmd", GitKeyUse::kCommand},
    {"imap", Sub::kNone, "tunnel", GitKeyUse::kCommand},
    {"browser", Sub::kAny, "cmd", GitKeyUse::kCommand},
    {"browser", Sub::kAny, "path", GitKeyUse::kCommand},
    {"man", Sub::kAny, "cmd", GitKeyUse::kCommand},
    {"man", Sub::kAny, "path", GitKeyUse::kCommand},
    {"guitool", Sub::kAny, "cmd", GitKeyUse::kCommand},
    {"gui", Sub::kNone, "editor", GitKeyUse::kCommand},
    {"instaweb", Sub::kNone, "httpd", GitKeyUse::kCommand},
    {"svn", Sub::kEither, "authorsprog", GitKeyUse::kCommand},
    {"lfs", Sub::kAny, "path", GitKeyUse::kCommand},  // lfs.customtransfer.<name>.path
};

// Why git reads a config file: the user's own, or an include of another.
std::string ConfigReason(const GitConfigFile& f) {
  return f.included_from.empty()
             ? "git's user config"
             : "include in " + f.included_from + ":" + std::to_string(f.include_line);
}

std::string KeyName(const GitConfigEntry& e) {
  return e.has_subsection ? e.section + "." + e.subsection + "." + e.key : e.section + "." + e.key;
}

// ---- the plan -------------------------------------------------------------------------------

enum class NameKind { kDir, kFile, kWord, kProgramWord };

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
      if ((*p)[0] == '/') {
        Name(*p, reason, repo, NameKind::kDir);
        return;
      }
      std::vector<std::string> bases = dir_bases;
      if (use == GitKeyUse::kTemplateDir) bases.push_back(Dirname(f.path));
      for (const auto& b : bases) Name(Join(b, *p), reason, repo, NameKind::kDir);
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
  // file `path` (existing or not): pinned, so that none can be renamed away and remade with
  // another config in it while the command runs. A symlink on the way cannot be pinned: the
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

  void AddNamed(const std::string& path, const std::string& reason, int repo) {
    if (named_seen_.insert({path, repo}).second) plan_.named.push_back({path, reason, repo});
  }

  void Finish() {
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
  GitProtectionPlan plan_;
};

void AddId(GitIdentitySet& ids, const GitFileFacts& f) {
  if (f.exists()) ids.insert({f.dev, f.ino});
}

void AddResolvedId(GitIdentitySet& ids, const GitFs& fs, const std::string& path) {
  if (path.empty()) return;
  if (auto r = fs.resolve(path)) AddId(ids, fs.lstat(*r));
}

}  // namespace

// ---- public ---------------------------------------------------------------------------------

Status ApplyGitScanLimit(std::string_view flag_value, GitScanLimits& limits) {
  auto eq = flag_value.find('=');
  if (eq == std::string_view::npos) {
    return Fail("invalid", "--git-scan-limit expects NAME=VALUE, got " + std::string(flag_value));
  }
  std::string name(flag_value.substr(0, eq));
  std::string value(flag_value.substr(eq + 1));
  char* end = nullptr;
  errno = 0;
  if (name == "seconds") {
    double s = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || errno != 0 || !(s > 0) || !std::isfinite(s) || s > 86400) {
      return Fail("invalid", "--git-scan-limit seconds expects a positive number, got " + value);
    }
    limits.seconds = s;
    return Ok();
  }
  unsigned long long n = std::strtoull(value.c_str(), &end, 10);
  if (value.empty() || value[0] == '-' || *end != '\0' || errno != 0 || n == 0 ||
      n > (1ULL << 40)) {
    return Fail("invalid",
                "--git-scan-limit " + name + " expects a positive whole number, got " + value);
  }
  if (name == "entries") {
    limits.entries = n;
  } else if (name == "depth") {
    limits.depth = n;
  } else if (name == "paths") {
    limits.paths = n;
  } else {
    return Fail("invalid",
                "--git-scan-limit: unknown bound '" + name + "' (entries, depth, seconds, paths)");
  }
  return Ok();
}

GitKeyUse ClassifyGitConfigKey(const GitConfigEntry& e) {
  for (const auto& rule : kKeyRules) {
    if (e.section != rule.section) continue;
    if (rule.sub == Sub::kNone && e.has_subsection) continue;
    if (rule.sub == Sub::kAny && !e.has_subsection) continue;
    if (rule.key != "*" && e.key != rule.key) continue;
    return rule.use;
  }
  return GitKeyUse::kNone;
}

bool GitEntryIsActive(const GitConfigEntry& e) {
  switch (ClassifyGitConfigKey(e)) {
    case GitKeyUse::kNone:
      return false;
    case GitKeyUse::kInclude:
      return true;  // even without a value: git refuses such a config
    case GitKeyUse::kHooksDir:
    case GitKeyUse::kTemplateDir:
    case GitKeyUse::kCommand:
      return e.value && !Trim(*e.value).empty();
    case GitKeyUse::kCommandOrBool:
      return e.value && !Trim(*e.value).empty() && !GitConfigBool(e.value).has_value();
    case GitKeyUse::kBangCommand:
      return e.value && !e.value->empty() && (*e.value)[0] == '!';
  }
  return false;
}

namespace {

bool IsShellName(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

void SplitCommand(std::string_view text, int depth, std::vector<GitCommandWord>& words) {
  // Tokens: words (quotes and escapes removed) and the operators between simple commands.
  struct Token {
    std::string text;
    bool op = false;
    bool quoted_blank = false;  // a quoted part held blanks or operators: split it again
  };
  std::vector<Token> tokens;
  Token cur;
  bool in_word = false;
  auto flush = [&] {
    if (in_word) tokens.push_back(std::move(cur));
    cur = Token{};
    in_word = false;
  };
  auto note_quoted = [&](std::string_view part) {
    if (part.find_first_of(" \t\n;&|()<>`") != std::string_view::npos) cur.quoted_blank = true;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\') {
      if (i + 1 < text.size()) {
        if (text[i + 1] != '\n') cur.text += text[i + 1];
        ++i;
      }
      in_word = true;
    } else if (c == '\'') {
      auto close = text.find('\'', i + 1);
      if (close == std::string_view::npos) close = text.size();
      std::string_view part = text.substr(i + 1, close - i - 1);
      cur.text.append(part);
      note_quoted(part);
      i = close;
      in_word = true;
    } else if (c == '"') {
      std::string part;
      size_t j = i + 1;
      for (; j < text.size() && text[j] != '"'; ++j) {
        if (text[j] == '\\' && j + 1 < text.size() &&
            std::string_view("\"\\$`\n").find(text[j + 1]) != std::string_view::npos) {
          ++j;
        }
        part += text[j];
      }
      cur.text += part;
      note_quoted(part);
      i = j;
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      flush();
    } else if (c == '\n' || std::string_view(";&|()<>`").find(c) != std::string_view::npos) {
      flush();
      tokens.push_back(Token{std::string(1, c), true, false});
    } else {
      cur.text += c;
      in_word = true;
    }
  }
  flush();
  bool program = true;  // at the start of a simple command
  for (auto& t : tokens) {
    if (words.size() >= kMaxCommandWords) return;
    if (t.op) {
      // After a redirection comes a file name, not a program.
      program = !(t.text == "<" || t.text == ">");
      continue;
    }
    auto eq = t.text.find('=');
    if (program && eq != std::string::npos && IsShellName(std::string_view(t.text).substr(0, eq))) {
      words.push_back({t.text.substr(eq + 1), false});  // VAR=value before the program
      continue;
    }
    words.push_back({t.text, program});
    if (eq != std::string::npos && eq + 1 < t.text.size()) {
      words.push_back({t.text.substr(eq + 1), false});  // --file=PATH
    }
    if (t.quoted_blank && depth < 2) SplitCommand(t.text, depth + 1, words);  // sh -c "..."
    // A reserved word is followed by a command: `{ x; }`, `if x; then y; fi`, `! x`.
    static constexpr std::string_view kReserved[] = {"{",    "}",    "!",     "if",    "then",
                                                     "else", "elif", "while", "until", "do"};
    program = program &&
              std::find(std::begin(kReserved), std::end(kReserved), t.text) != std::end(kReserved);
  }
}

}  // namespace

std::vector<GitCommandWord> GitCommandWords(std::string_view command) {
  std::vector<GitCommandWord> words;
  SplitCommand(command, 0, words);
  return words;
}

Result<GitScan> ScanGitMetadata(const std::vector<std::string>& roots, const GitEnv& env,
                                const GitFs& fs, const GitScanLimits& limits,
                                const GitWalkMemo* previous, GitBoundMode mode) {
  return Scanner(env, fs, limits, previous, mode).Run(roots);
}

GitProtectionPlan PlanGitProtection(const GitScan& scan, const GitEnv& env, const GitFs& fs,
                                    const GitScanLimits& limits,
                                    const std::set<int>& skip_configs) {
  return Planner(scan, env, fs, limits, skip_configs).Run();
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
  }
  for (const auto& p : plan.read_only) AddId(ids, fs.lstat(p));
  for (const auto& ph : plan.placeholders) AddId(ids, fs.lstat(Join(ph.parent, ph.name)));
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

std::optional<std::string> GitRepoRunsCode(const GitRepo& repo) {
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
  for (const auto& f : repo.configs) {
    if (!f.error.empty()) return "config " + f.path + " git cannot read: " + f.error;
    for (const auto& e : f.entries) {
      const std::string where = KeyName(e) + " in " + f.path + ":" + std::to_string(e.line);
      if (ClassifyGitConfigKey(e) != GitKeyUse::kNone && GitEntryIsActive(e)) return where;
      // Only the keys git init, clone and friends write (policy/git_inert_keys.h).
      if (auto why = GitKeyNotInert(e, worktree_is_top(e))) return where + " (" + *why + ")";
    }
  }
  return std::nullopt;
}

std::map<int, std::string> NewGitReposThatRunCode(const GitIdentitySet& before,
                                                  const GitScan& after, const GitFs& fs) {
  auto known = [&](const GitFileFacts& f) { return before.count({f.dev, f.ino}) > 0; };
  auto known_path = [&](const std::string& path) {
    if (path.empty()) return true;
    auto r = fs.resolve(path);
    return !r || known(fs.lstat(*r));
  };
  std::map<int, std::string> out;
  for (size_t i = 0; i < after.repos.size(); ++i) {
    const GitRepo& repo = after.repos[i];
    // The same .git as before and leading to the same git dir: protected all along.
    if (known(fs.lstat(repo.marker)) && known_path(repo.gitdir) && known_path(repo.commondir)) {
      continue;
    }
    if (auto why = GitRepoRunsCode(repo)) out[static_cast<int>(i)] = *why;  // else: a plain init
  }
  return out;
}

std::vector<GitQuarantineAction> DecideGitQuarantine(const GitIdentitySet& before,
                                                     const GitWatchedConfigs& configs,
                                                     const GitScan& after,
                                                     const GitProtectionPlan& after_plan,
                                                     const GitFs& fs) {
  auto known = [&](const GitFileFacts& f) { return before.count({f.dev, f.ino}) > 0; };
  std::vector<GitQuarantineAction> actions;
  std::set<int> moved;
  for (const auto& [i, why] : NewGitReposThatRunCode(before, after, fs)) {
    const GitRepo& repo = after.repos[static_cast<size_t>(i)];
    auto parent = fs.resolve(Dirname(repo.marker));
    if (!parent || !WithinAny(*parent, after.roots)) continue;
    actions.push_back({Join(*parent, Basename(repo.marker)),
                       repo.kind == GitMarkerKind::kGitDir || repo.kind == GitMarkerKind::kBareDir,
                       "a git repository the command made or swapped in runs code: " + why});
    moved.insert(i);
  }
  // `path` now leads to `real`, which is not what it led to at the start.
  auto move_aside = [&](const std::string& path, const std::string& real,
                        const std::string& reason) {
    // The object git would now use, moved aside where it really is, when it is new.
    auto parent = fs.resolve(Dirname(real));
    if (!known(fs.lstat(real)) && parent && WithinAny(*parent, after.roots) && real != *parent) {
      actions.push_back({real, false, reason});
      return;
    }
    // It lies outside the writable roots, or is something that was there (another config): a
    // symlink the command made on the way leads there.
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
        break;
      }
    }
  };
  for (const auto& n : after_plan.named) {
    if (n.repo >= 0 && moved.count(n.repo)) continue;
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
  // Moving a directory aside moves what lies in it: only the outermost of nested actions.
  std::set<std::string> paths;
  for (const auto& a : actions) paths.insert(a.path);
  std::vector<GitQuarantineAction> out;
  for (auto& a : actions) {
    if (!out.empty() && out.back().path == a.path) continue;
    if (a.path != "/" && UnderAny(Dirname(a.path), paths)) continue;
    out.push_back(std::move(a));
  }
  return out;
}

GitQuarantineResult ApplyGitQuarantine(const std::vector<GitQuarantineAction>& actions,
                                       const std::vector<std::string>& roots, const GitFs& fs) {
  GitQuarantineResult result;
  for (const auto& a : actions) {
    auto parent = fs.resolve(Dirname(a.path));
    if (!parent || !WithinAny(*parent, roots)) {
      result.failures.push_back(a.path + ": no longer inside a writable root");
      continue;
    }
    const std::string from = Join(*parent, Basename(a.path));
    std::string to;
    Status moved = Fail("io", "no free name");
    for (int n = 1; n <= 100; ++n) {
      to = from + std::string(kGitQuarantineSuffix) + (n == 1 ? "" : "-" + std::to_string(n));
      moved = fs.rename_noreplace(from, to);
      if (moved || moved.error().sys_errno != EEXIST) break;
    }
    if (!moved) {
      result.failures.push_back(from + ": " + moved.error().message);
      continue;
    }
    std::string restore = "mv " + Quote(to) + " " + Quote(from);
    if (a.git_dir && fs.lstat(Join(to, "HEAD")).exists()) {
      // Under its new name the directory would still be a git dir to git started inside it.
      const std::string head = Join(to, "HEAD");
      const std::string head_to = head + std::string(kGitQuarantineSuffix);
      if (auto s = fs.rename_noreplace(head, head_to); s) {
        restore = "mv " + Quote(head_to) + " " + Quote(head) + " && " + restore;
      } else {
        result.failures.push_back(head + ": " + s.error().message);
      }
    }
    result.moved.push_back({from, to, a.reason, restore});
  }
  return result;
}

namespace {

// statx(2) of `path` beneath `dirfd` (AT_SYMLINK_NOFOLLOW, or AT_EMPTY_PATH for the fd):
// lstat's facts and the mount's id. nullopt when it fails (errno set).
std::optional<GitFileFacts> FactsAt(int dirfd, const char* path, int flags) {
  struct statx sx {};
  if (::statx(dirfd, path, flags, STATX_BASIC_STATS | STATX_MNT_ID | STATX_MNT_ID_UNIQUE, &sx) !=
      0) {
    return std::nullopt;
  }
  GitFileFacts f;
  f.type = S_ISDIR(sx.stx_mode)   ? GitFileType::kDir
           : S_ISREG(sx.stx_mode) ? GitFileType::kFile
           : S_ISLNK(sx.stx_mode) ? GitFileType::kSymlink
                                  : GitFileType::kOther;
  f.executable = S_ISREG(sx.stx_mode) && (sx.stx_mode & 0111) != 0;
  f.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
  f.ino = sx.stx_ino;
  f.ctime_sec = sx.stx_ctime.tv_sec;
  f.ctime_nsec = sx.stx_ctime.tv_nsec;
  // The unique id is 64 bits and never reused within a boot; the plain one is reused after an
  // unmount, so the two are kept apart (the top bit marks the plain one).
  if (sx.stx_mask & STATX_MNT_ID_UNIQUE) {
    f.mnt_id = sx.stx_mnt_id & ~(uint64_t{1} << 63);
  } else if (sx.stx_mask & STATX_MNT_ID) {
    f.mnt_id = sx.stx_mnt_id | (uint64_t{1} << 63);
  }
  return f;
}

// Local filesystems, where creating, removing or renaming an entry sets the directory's ctime
// (the VFS does it for them); network and FUSE filesystems report what a server says, overlay
// what a layer says.
bool CtimeTracksEntries(int64_t magic) {
  switch (static_cast<uint32_t>(magic)) {
    case 0xEF53:      // ext2, ext3, ext4
    case 0x58465342:  // xfs
    case 0x9123683E:  // btrfs
    case 0x01021994:  // tmpfs
    case 0xF2F52010:  // f2fs
    case 0x2FC12FC1:  // zfs
    case 0xCA451A4E:  // bcachefs
      return true;
    default:
      return false;
  }
}

}  // namespace

std::optional<std::string> ParseGitPointer(std::string_view text, GitPointerKind kind) {
  // git reads the file as a C string: what follows a NUL is not there.
  text = text.substr(0, text.find('\0'));
  if (kind == GitPointerKind::kDotGitFile) {
    // read_gitfile_gently: "gitdir: " exactly, the rest of the file the path.
    constexpr std::string_view kPrefix = "gitdir: ";
    if (text.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
    text.remove_prefix(kPrefix.size());
  }
  // git strips line ends at the end only (a worktree's back pointer: any blank, strbuf_rtrim);
  // blanks and lines before them are part of the path.
  auto strip = [&](char c) {
    return c == '\n' || c == '\r' ||
           (kind == GitPointerKind::kBackPointer && std::isspace(static_cast<unsigned char>(c)));
  };
  while (!text.empty() && strip(text.back())) text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  return std::string(text);
}

GitEnv GitEnvFromProcess() {
  GitEnv env;
  auto get = [](const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
  };
  env.home = get("HOME");
  env.xdg_config_home = get("XDG_CONFIG_HOME");
  env.config_global = get("GIT_CONFIG_GLOBAL");
  env.config_system = get("GIT_CONFIG_SYSTEM");
  env.template_dir = get("GIT_TEMPLATE_DIR");
  return env;
}

GitFs RealGitFs() {
  GitFs fs;
  // Filesystem type per device, looked up once: whether a directory's ctime tracks its entries.
  auto tracks = std::make_shared<std::map<uint64_t, bool>>();
  fs.list_dir = [tracks](const std::string& dir) -> Result<GitDirListing> {
    GitDirListing out;
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) {
      // Gone, or no longer a directory, since its parent was listed: nothing to look at.
      if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) return out;
      return SysFail(errno == EACCES || errno == EPERM ? Code::kDenied : Code::kIo, "open " + dir);
    }
    // The directory's own facts before its entries: a change after them moves its ctime.
    auto facts = FactsAt(fd.Get(), "", AT_EMPTY_PATH);
    if (!facts) return SysFail("io", "stat " + dir);
    out.dir = *facts;
    auto known = tracks->find(facts->dev);
    if (known == tracks->end()) {
      struct statfs sfs {};
      bool local = ::fstatfs(fd.Get(), &sfs) == 0 && CtimeTracksEntries(sfs.f_type);
      known = tracks->emplace(facts->dev, local).first;
    }
    out.dir.ctime_tracks_entries = known->second;
    alignas(8) char buf[64 * 1024];
    for (;;) {
      long n = syscall(SYS_getdents64, fd.Get(), buf, sizeof(buf));
      if (n < 0) {
        if (errno == EINTR) continue;
        return SysFail("io", "read directory " + dir);
      }
      if (n == 0) break;
      for (long off = 0; off < n;) {
        struct Dirent64 {
          uint64_t d_ino;
          int64_t d_off;
          unsigned short d_reclen;
          unsigned char d_type;
          char d_name[1];
        };
        auto* d = reinterpret_cast<Dirent64*>(buf + off);
        off += d->d_reclen;
        std::string_view name(d->d_name);
        if (name == "." || name == "..") continue;
        unsigned char t = d->d_type;
        if (t == DT_UNKNOWN) {
          struct stat est {};
          if (::fstatat(fd.Get(), d->d_name, &est, AT_SYMLINK_NOFOLLOW) != 0) continue;
          t = S_ISDIR(est.st_mode)   ? DT_DIR
              : S_ISREG(est.st_mode) ? DT_REG
              : S_ISLNK(est.st_mode) ? DT_LNK
                                     : DT_UNKNOWN;
        }
        GitFileType type = t == DT_DIR   ? GitFileType::kDir
                           : t == DT_REG ? GitFileType::kFile
                           : t == DT_LNK ? GitFileType::kSymlink
                                         : GitFileType::kOther;
        out.entries.push_back({std::string(name), type});
      }
    }
    return out;
  };
  fs.lstat = [](const std::string& path) {
    return FactsAt(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW).value_or(GitFileFacts{});
  };
  fs.resolve = [](const std::string& path) -> std::optional<std::string> {
    // The kernel's own resolution, read back from /proc: three syscalls whatever the depth,
    // where realpath(3) asks readlink(2) about every component (most of the walk's set-up
    // cost with many repositories).
    UniqueFd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
    if (!fd) {
      if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP || errno == EACCES) {
        return std::nullopt;
      }
    } else {
      char buf[PATH_MAX];
      std::string link = "/proc/self/fd/" + std::to_string(fd.Get());
      ssize_t n = ::readlink(link.c_str(), buf, sizeof(buf) - 1);
      if (n > 0 && buf[0] == '/') return std::string(buf, static_cast<size_t>(n));
    }
    char buf[PATH_MAX];  // no /proc: the slow way
    if (::realpath(path.c_str(), buf) == nullptr) return std::nullopt;
    return std::string(buf);
  };
  fs.read_file = [](const std::string& path,
                    size_t max_bytes) -> Result<std::optional<std::string>> {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (!fd) {
      if (errno == EACCES || errno == EPERM) return SysFail("denied", "open " + path);
      if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP || errno == ENXIO ||
          errno == EISDIR) {
        return std::optional<std::string>();
      }
      return SysFail("io", "open " + path);
    }
    struct stat st {};
    if (::fstat(fd.Get(), &st) != 0) return SysFail("io", "stat " + path);
    if (!S_ISREG(st.st_mode)) return std::optional<std::string>();
    if (static_cast<uint64_t>(st.st_size) > max_bytes) {
      return Fail("limit", path + " is larger than " + std::to_string(max_bytes) + " bytes");
    }
    std::string data;
    char buf[16384];
    for (;;) {
      ssize_t n = ::read(fd.Get(), buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return SysFail("io", "read " + path);
      if (n == 0) break;
      data.append(buf, static_cast<size_t>(n));
      if (data.size() > max_bytes) {
        return Fail("limit", path + " is larger than " + std::to_string(max_bytes) + " bytes");
      }
    }
    return std::optional<std::string>(std::move(data));
  };
  fs.writable = [](const std::string& dir) {
    return ::faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) == 0;
  };
  fs.now = [] { return std::chrono::steady_clock::now(); };
  fs.wall_seconds = [] {
    struct timespec ts {};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<int64_t>(ts.tv_sec);
  };
  fs.rename_noreplace = [](const std::string& from, const std::string& to) -> Status {
    if (syscall(SYS_renameat2, AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) ==
        0) {
      return Ok();
    }
    return SysFail("io", "rename " + from + " to " + to);
  };
  return fs;
}

}  // namespace anvil
