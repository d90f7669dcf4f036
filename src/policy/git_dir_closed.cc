// policy/git_dir_closed.h: what a git dir the command made may hold.
#include "policy/git_dir_closed.h"

#include <algorithm>
#include <string_view>

#include "fs/git_dir_guard.h"
#include "fs/protected_names.h"
#include "policy/git_paths.h"

namespace anvil {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool OneOf(std::string_view name, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Files git leaves in a git dir (and in a linked worktree's) that it reads only as data: a
// commit id, a message, the index. A lock file of a git killed mid-way is data too.
bool StateFile(std::string_view name) {
  return OneOf(name,
               {"HEAD", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "MERGE_MSG", "MERGE_MODE",
                "MERGE_RR", "MERGE_AUTOSTASH", "AUTO_MERGE", "SQUASH_MSG", "CHERRY_PICK_HEAD",
                "REVERT_HEAD", "REBASE_HEAD", "COMMIT_EDITMSG", "index", "config.worktree"}) ||
         EndsWith(name, ".lock");
}

std::optional<GitDirPart> FileOrDir(GitDirPart part, const GitDirEntry& e) {
  const std::string_view n = e.name;
  const bool dir = e.type == GitFileType::kDir;
  switch (part) {
    case GitDirPart::kGitDir:
    case GitDirPart::kShapedDir:
      if (dir) {
        if (OneOf(n, {"objects", "refs", "logs", "rr-cache", "lfs", "reftable"})) {
          return GitDirPart::kData;
        }
        if (n == "hooks") return GitDirPart::kHooks;
        if (n == "info") return GitDirPart::kInfo;
        if (n == "modules") return GitDirPart::kModules;
        if (n == "worktrees") return GitDirPart::kWorktrees;
        if (n == "branches" || n == "remotes") return GitDirPart::kEmpty;
        return std::nullopt;
      }
      if (StateFile(n) ||
          OneOf(n, {"config", "description", "packed-refs", "shallow", "TAG_EDITMSG",
                    "NOTES_EDITMSG", "EDIT_DESCRIPTION", "gc.log", "gc.pid", "gitk.cache"}) ||
          n.substr(0, 12) == "sharedindex.") {
        return GitDirPart::kGitDir;
      }
      return std::nullopt;
    case GitDirPart::kWorktree:
      if (dir) return n == "logs" || n == "refs" ? std::optional(GitDirPart::kData) : std::nullopt;
      if (StateFile(n) || OneOf(n, {"commondir", "gitdir", "locked"})) return part;
      return std::nullopt;
    case GitDirPart::kData:
      return part;
    case GitDirPart::kHooks:
      return dir ? std::nullopt : std::optional(part);
    case GitDirPart::kInfo:
      if (dir) return std::nullopt;
      return OneOf(n, {"exclude", "attributes", "refs", "sparse-checkout"}) ? std::optional(part)
                                                                            : std::nullopt;
    case GitDirPart::kModules:
    case GitDirPart::kModule:
      return dir ? std::optional(GitDirPart::kModule) : std::nullopt;
    case GitDirPart::kWorktrees:
      return dir ? std::optional(GitDirPart::kWorktree) : std::nullopt;
    case GitDirPart::kEmpty:
      return std::nullopt;
  }
  return std::nullopt;
}

// State git reads in a git dir that git init, clone, commit and merge never leave: refused in a
// directory of git dir shape whatever else it holds.
bool GitOnlyState(std::string_view name) {
  return OneOf(name, {"rebase-merge", "rebase-apply", "sequencer", "remotes", "branches",
                      "commondir", "gitdir"}) ||
         name.substr(0, 7) == "BISECT_" || name.substr(0, 11) == "NOTES_MERGE";
}

}  // namespace

GitDirVerdict JudgeGitDirListing(GitDirPart part, const std::vector<GitDirEntry>& entries) {
  GitDirVerdict v;
  if (part == GitDirPart::kModule) {
    // A submodule's git dir by the shape git takes for one; else a directory of its name.
    GitDirNames names;
    for (const auto& e : entries) {
      const GitDirEntryKind kind = e.type == GitFileType::kDir    ? GitDirEntryKind::kDir
                                   : e.type == GitFileType::kFile ? GitDirEntryKind::kFile
                                                                  : GitDirEntryKind::kOther;
      names = WithListedEntry(names, e.name, kind, false);
    }
    part = IsGitDirShape(names) ? GitDirPart::kGitDir : GitDirPart::kModules;
  }
  if (part == GitDirPart::kData) {
    // objects/, refs/, logs/, lfs/ take any names: a repository hidden there (a `.git`, or a
    // directory of git dir shape) would be one git on the host opens, with its config, when
    // run inside it.
    GitDirNames names;
    for (const auto& e : entries) {
      if (FoldNameForLookup(e.name) == ".git") {
        v.refused = e.name + " is a .git in git's data (a repository hidden there)";
        return v;
      }
      // A file as objects or refs taken as executable: over-matching only refuses more.
      const GitDirEntryKind kind = e.type == GitFileType::kDir    ? GitDirEntryKind::kDir
                                   : e.type == GitFileType::kFile ? GitDirEntryKind::kExecFile
                                                                  : GitDirEntryKind::kOther;
      names = WithListedEntry(names, e.name, kind, true);
    }
    if (IsGitDirShape(names)) {
      v.refused = " is of git dir shape (HEAD, objects, refs): a repository hidden in git's data";
      return v;
    }
  }
  for (const auto& e : entries) {
    // By shape only: what git neither writes nor reads there is the walk's.
    if (part == GitDirPart::kShapedDir && !FileOrDir(part, {e.name, GitFileType::kDir}) &&
        !FileOrDir(part, {e.name, GitFileType::kFile}) && !GitOnlyState(e.name)) {
      continue;
    }
    if (e.type == GitFileType::kSymlink) {
      v.refused = e.name + " is a symlink (git follows it to whatever is made there later)";
      return v;
    }
    if (e.type != GitFileType::kFile && e.type != GitFileType::kDir) {
      v.refused = e.name + " is a FIFO, socket or device (git reads what is written into it)";
      return v;
    }
    auto in = FileOrDir(part, e);
    if (!in) {
      v.refused = e.name + (e.type == GitFileType::kDir ? "/" : "") +
                  " is not something git init, clone, fetch, commit or merge writes there";
      return v;
    }
    if (e.type == GitFileType::kDir) v.descend.emplace_back(e.name, *in);
  }
  return v;
}

std::optional<std::string> GitDirNotClosed(const std::string& dir, GitDirPart part, const GitFs& fs,
                                           size_t max_entries) {
  using git_paths::Join;
  const GitFileFacts top = fs.lstat(dir);
  if (top.type != GitFileType::kDir) return "git dir " + dir + " is not a directory";
  std::vector<std::pair<std::string, GitDirPart>> stack{{dir, part}};
  size_t entries = 0;
  while (!stack.empty()) {
    auto [path, p] = std::move(stack.back());
    stack.pop_back();
    auto listing = fs.list_dir(path);
    if (!listing) return path + " cannot be listed (" + listing.error().message + ")";
    entries += listing->entries.size();
    if (entries > max_entries) {
      return "git dir " + dir + " holds more than " + std::to_string(max_entries) +
             " entries, more than the check reads";
    }
    if (path == dir && (p == GitDirPart::kGitDir || p == GitDirPart::kShapedDir)) {
      // Whether git takes it for a git dir now (HEAD with objects/ and refs/, or commondir).
      // Names folded, and a file as `objects` or `refs` with its execute bits (access(X_OK)
      // takes one): over-matching only judges more.
      GitDirNames names;
      for (const auto& e : listing->entries) {
        GitDirEntryKind kind = e.type == GitFileType::kDir       ? GitDirEntryKind::kDir
                               : e.type == GitFileType::kFile    ? GitDirEntryKind::kFile
                               : e.type == GitFileType::kSymlink ? GitDirEntryKind::kSymlink
                                                                 : GitDirEntryKind::kOther;
        const GitDirName which = ClassifyGitDirName(e.name, true);
        if (kind == GitDirEntryKind::kFile &&
            (which == GitDirName::kObjects || which == GitDirName::kRefs) &&
            fs.lstat(Join(path, e.name)).executable) {
          kind = GitDirEntryKind::kExecFile;
        }
        names = WithListedEntry(names, e.name, kind, true);
      }
      // Not a git dir to git now: judged by the names git reads there (a symlink, FIFO or the
      // state git acts on refused), the rest left to the walk. Passing it by whole let a later
      // `git init` by the user, or a FIFO fed by a later run, complete a git dir whose config
      // was a link into a sandbox home (review).
      if (!IsGitDirShape(names)) p = GitDirPart::kShapedDir;
    }
    GitDirVerdict v = JudgeGitDirListing(p, listing->entries);
    if (v.refused) return "in its git dir, " + Join(path, "").substr(dir.size() + 1) + *v.refused;
    for (auto& [name, q] : v.descend) stack.emplace_back(Join(path, name), q);
  }
  return std::nullopt;
}

}  // namespace anvil
