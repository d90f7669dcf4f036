// policy/git_dir_closed.h: what a git dir the command made may hold.
#include "policy/git_dir_closed.h"

#include <algorithm>
#include <string_view>

#include "fs/git_dir_guard.h"
#include "fs/protected_names.h"
#include "policy/git_config.h"
#include "policy/git_paths.h"

namespace anvil {
namespace {

// More than a todo of a long rebase holds: a larger state file is not read, and not closed.
constexpr size_t kMaxStateFileBytes = 8 << 20;

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

// What `git bisect start` and its steps leave (the good and bad refs lie in refs/bisect/).
bool BisectFile(std::string_view name) {
  return OneOf(name,
               {"BISECT_START", "BISECT_LOG", "BISECT_NAMES", "BISECT_TERMS", "BISECT_EXPECTED_REV",
                "BISECT_ANCESTORS_OK", "BISECT_FIRST_PARENT", "BISECT_HEAD", "BISECT_RUN"});
}

// The directories a stopped rebase (merge or apply backend), am, cherry-pick or revert keeps.
bool SequencerDir(std::string_view name) {
  return OneOf(name, {"rebase-merge", "rebase-apply", "sequencer"});
}

// The files git's sequencer, rebase and am write in those directories (a patch of am's is
// numbered: 0001).
bool SequencerFile(std::string_view name) {
  if (!name.empty() && name.size() <= 8 &&
      name.find_first_not_of("0123456789") == std::string_view::npos) {
    return true;
  }
  return OneOf(
      name,
      {// sequencer.c, rebase -i and the merge backend
       "git-rebase-todo", "git-rebase-todo.backup", "dropped", "done", "msgnum", "end", "message",
       "message-squash", "message-fixup", "current-fixups", "author-script", "amend", "stopped-sha",
       "rewritten-list", "rewritten-pending", "squash-onto", "refs-to-delete", "gpg_sign_opt",
       "cdate_is_adate", "ignore_date", "orig-head", "verbose", "quiet", "signoff", "head-name",
       "onto", "autostash", "strategy", "strategy_opts", "allow_rerere_autoupdate",
       "reschedule-failed-exec", "no-reschedule-failed-exec", "drop_redundant_commits",
       "keep_redundant_commits", "interactive", "patch", "update-refs",
       // cherry-pick and revert
       "todo", "opts", "head", "abort-safety",
       // am and the apply backend
       "next", "last", "msg", "final-commit", "original-commit", "info", "keep", "messageid",
       "scissors", "quoted-cr", "utf8", "threeway", "sign", "apply-opt", "rebasing", "applying",
       "dirtyindex", "patch-merge-index", "patch-format", "keepcr", "no_inbody_headers", "empty"});
}

// The state files whose contents could name a command (GitStateFileNotInert).
bool JudgedByContents(std::string_view name) {
  return OneOf(name, {"git-rebase-todo", "git-rebase-todo.backup", "done", "todo", "strategy",
                      "gpg_sign_opt", "apply-opt", "opts", "autostash", "BISECT_START"});
}

std::optional<GitDirPart> FileOrDir(GitDirPart part, const GitDirEntry& e) {
  const std::string_view n = e.name;
  const bool dir = e.type == GitFileType::kDir;
  switch (part) {
    case GitDirPart::kShapedDir:
      // Not a git dir yet: no state of a rebase or bisect under way either.
      if (SequencerDir(n) || BisectFile(n)) return std::nullopt;
      [[fallthrough]];
    case GitDirPart::kGitDir:
      if (dir) {
        if (OneOf(n, {"objects", "refs", "logs", "rr-cache", "lfs", "reftable"})) {
          return GitDirPart::kData;
        }
        if (n == "hooks") return GitDirPart::kHooks;
        if (n == "info") return GitDirPart::kInfo;
        if (n == "modules") return GitDirPart::kModules;
        if (n == "worktrees") return GitDirPart::kWorktrees;
        if (n == "branches" || n == "remotes") return GitDirPart::kEmpty;
        if (SequencerDir(n)) return GitDirPart::kSequencer;
        return std::nullopt;
      }
      if (StateFile(n) || BisectFile(n) ||
          OneOf(n, {"config", "description", "packed-refs", "shallow", "TAG_EDITMSG",
                    "NOTES_EDITMSG", "EDIT_DESCRIPTION", "gc.log", "gc.pid", "gitk.cache"}) ||
          n.substr(0, 12) == "sharedindex.") {
        return GitDirPart::kGitDir;
      }
      return std::nullopt;
    case GitDirPart::kWorktree:
      if (dir) {
        if (n == "logs" || n == "refs") return GitDirPart::kData;
        return SequencerDir(n) ? std::optional(GitDirPart::kSequencer) : std::nullopt;
      }
      if (StateFile(n) || BisectFile(n) || OneOf(n, {"commondir", "gitdir", "locked"})) return part;
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
    case GitDirPart::kSequencer:
      return !dir && SequencerFile(n) ? std::optional(part) : std::nullopt;
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

// The strategies git ships (a builtin or a script beside git): any other NAME is a
// git-merge-NAME git looks for on PATH and runs.
bool ShippedStrategy(std::string_view name) {
  return OneOf(name, {"ort", "recursive", "resolve", "octopus", "ours", "subtree"});
}

std::string_view Trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// A todo line git runs as a shell command: git skips blanks and tabs, then takes `exec` or `x`
// followed by a blank, a tab, the line's end or the text's. Any other blank skipped too:
// over-matching only refuses more.
std::optional<std::string> TodoRunsCode(std::string_view text) {
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    const auto b = line.find_first_not_of(" \t\r\v\f");
    if (b == std::string_view::npos) continue;
    line = line.substr(b);
    for (std::string_view cmd : {"exec", "x"}) {
      if (line.substr(0, cmd.size()) != cmd) continue;
      if (line.size() == cmd.size() ||
          std::string_view(" \t\r\v\f\0", 6).find(line[cmd.size()]) != std::string_view::npos) {
        return "line " + std::to_string(line_no) + " is an `" + std::string(cmd) +
               "` line (git rebase --continue runs it as a shell command)";
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> GitStateFileNotInert(std::string_view name, std::string_view text) {
  if (OneOf(name, {"git-rebase-todo", "git-rebase-todo.backup", "done", "todo"})) {
    return TodoRunsCode(text);
  }
  if (name == "strategy") {
    if (ShippedStrategy(Trim(text))) return std::nullopt;
    return "names the merge strategy '" + std::string(Trim(text)) +
           "', not one git ships (git runs git-merge-NAME from PATH)";
  }
  if (name == "gpg_sign_opt") {
    if (Trim(text).empty()) return std::nullopt;
    return std::string("names a signing key (git runs the signing program to continue)");
  }
  if (name == "apply-opt") {
    if (Trim(text).empty()) return std::nullopt;
    return std::string("holds options for git apply (none are written by a plain rebase or am)");
  }
  if (name == "autostash") {
    // The stash git applies when the rebase ends, as `git stash apply ID`: an object id only.
    const std::string_view id = Trim(text);
    if ((id.size() == 40 || id.size() == 64) &&
        id.find_first_not_of("0123456789abcdef") == std::string_view::npos) {
      return std::nullopt;
    }
    return std::string("is not an object id (git hands it to git stash apply)");
  }
  if (name == "BISECT_START") {
    if (Trim(text).substr(0, 1) != "-") return std::nullopt;
    return std::string("starts with '-' (git bisect reset passes it to git checkout)");
  }
  if (name == "opts") {
    // cherry-pick's and revert's options, in git's config syntax.
    auto entries = ParseGitConfig(text);
    if (!entries) return "git cannot read it (" + entries.error().message + ")";
    for (const auto& e : *entries) {
      const std::string key = e.section + "." + e.key;
      if (e.section != "options" || e.has_subsection) {
        return key + " is not one of cherry-pick's or revert's options";
      }
      if (e.key == "strategy") {
        if (e.value && ShippedStrategy(*e.value)) continue;
        return "options.strategy is not a merge strategy git ships (git runs git-merge-NAME "
               "from PATH)";
      }
      if (e.key == "gpg-sign") {
        return std::string("options.gpg-sign names a signing key (git runs the signing program)");
      }
    }
    return std::nullopt;
  }
  return std::nullopt;
}

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
    if (e.type == GitFileType::kDir) {
      v.descend.emplace_back(e.name, *in);
    } else if ((*in == GitDirPart::kSequencer || *in == GitDirPart::kGitDir ||
                *in == GitDirPart::kWorktree) &&
               JudgedByContents(e.name)) {
      v.contents.push_back(e.name);
    }
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
    const std::string where = Join(path, "").substr(dir.size() + 1);
    if (v.refused) return "in its git dir, " + where + *v.refused;
    for (const auto& name : v.contents) {
      auto text = fs.read_file(Join(path, name), kMaxStateFileBytes);
      if (!text)
        return "in its git dir, " + where + name + " cannot be read (" + text.error().message + ")";
      if (!*text) return "in its git dir, " + where + name + " is no regular file";
      if (auto why = GitStateFileNotInert(name, **text)) {
        return "in its git dir, " + where + name + " " + *why;
      }
    }
    for (auto& [name, q] : v.descend) stack.emplace_back(Join(path, name), q);
  }
  return std::nullopt;
}

}  // namespace anvil
