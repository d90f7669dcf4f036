// policy/git_dir_closed.h: what a git dir the command made may hold.
#include "policy/git_dir_closed.h"

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "fs/git_dir_guard.h"
#include "fs/protected_names.h"
#include "policy/display_text.h"
#include "policy/git_config.h"
#include "policy/git_paths.h"

namespace anvil {
namespace {

// More than a todo of a long rebase holds: a larger state file is not read, and not closed.
constexpr size_t kMaxStateFileBytes = 8 << 20;
// An index is about 100 bytes a file: this is a working tree of two million files.
constexpr size_t kMaxIndexBytes = 256 << 20;

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

// The index files of a git dir: its own and the shared ones of a split index.
bool IndexFile(std::string_view name) {
  return name == "index" || name.substr(0, 12) == "sharedindex.";
}

// The state files whose contents could name a command, or a path git writes
// (GitStateFileNotInert).
bool JudgedByContents(std::string_view name) {
  return OneOf(name, {"git-rebase-todo", "git-rebase-todo.backup", "done", "todo", "strategy",
                      "gpg_sign_opt", "apply-opt", "opts", "autostash", "MERGE_AUTOSTASH",
                      "BISECT_START", "MERGE_RR"}) ||
         IndexFile(name);
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

// A path git would write in the working tree as its verify_path takes one: relative, no empty,
// `.` or `..` component, no component a file system may take for `.git` (the protected names'
// fold: case, ignorable code points, trailing dots and blanks). `dir`: a sparse directory entry,
// which ends in one `/`.
bool GitIndexPathOk(std::string_view path, bool dir) {
  if (dir) {
    if (path.empty() || path.back() != '/') return false;
    path.remove_suffix(1);
  }
  if (path.empty()) return false;
  size_t start = 0;
  while (true) {
    const size_t end = path.find('/', start);
    const std::string_view c =
        path.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (c.empty() || c == "." || c == ".." || FoldNameForLookup(c) == ".git") return false;
    if (end == std::string_view::npos) return true;
    start = end + 1;
  }
}

uint32_t Be32(std::string_view s, size_t at) {
  return (uint32_t{static_cast<unsigned char>(s[at])} << 24) |
         (uint32_t{static_cast<unsigned char>(s[at + 1])} << 16) |
         (uint32_t{static_cast<unsigned char>(s[at + 2])} << 8) |
         uint32_t{static_cast<unsigned char>(s[at + 3])};
}

// Why the index `text` (git's index format, versions 2 to 4, entries' object ids `hash` bytes
// long) names a path git must not write, or could not be read so: nullopt when every entry's
// path and every resolve-undo path is one git's verify_path takes. Extensions: the cache tree,
// end-of-index and offset tables, the fsmonitor token and the sparse marker are data; the
// resolve-undo list's paths are judged (`git checkout -m` writes them); anything else (a split
// index's link, the untracked cache, one git does not know) is refused.
std::optional<std::string> IndexNotInert(std::string_view text, size_t hash) {
  if (text.size() < 12 + hash || text.substr(0, 4) != "DIRC") return "is not a git index";
  const uint32_t version = Be32(text, 4);
  if (version < 2 || version > 4) return "is an index of a version git does not write";
  const uint32_t count = Be32(text, 8);
  const size_t end = text.size() - hash;  // the checksum
  size_t at = 12;
  std::string previous;
  // Where each entry starts, and for version 4 whether its name kept nothing of the previous
  // one: what an offset table (IEOT) must agree with.
  std::vector<size_t> starts;
  std::vector<bool> fresh_name;
  for (uint32_t i = 0; i < count; ++i) {
    if (at >= end) return "ends inside an entry";
    starts.push_back(at);
    const size_t fixed = 40 + hash;  // times, dev, ino, mode, uid, gid, size, object id
    if (end - at < fixed + 2) return "ends inside an entry";
    const uint32_t mode = Be32(text, at + 24);
    const uint16_t flags =
        static_cast<uint16_t>((static_cast<unsigned char>(text[at + fixed]) << 8) |
                              static_cast<unsigned char>(text[at + fixed + 1]));
    size_t p = at + fixed + 2;
    if (flags & 0x4000) {
      if (version < 3) return "has an extended entry in a version 2 index";
      if (end - p < 2) return "ends inside an entry";
      p += 2;
    }
    // The name's length is the flags' (12 bits; all ones: up to its NUL), as git reads it.
    size_t length = flags & 0xfff;
    std::string name;
    if (version == 4) {
      // The number of bytes to drop from the previous name, then the rest, NUL-terminated.
      uint64_t drop = 0;
      unsigned char c = 0;
      int bytes = 0;
      do {
        if (p >= end || ++bytes > 9) return "has an entry whose name cannot be read";
        c = static_cast<unsigned char>(text[p++]);
        if (bytes > 1) drop = (drop + 1) << 7;
        drop |= c & 0x7f;
      } while (c & 0x80);
      if (drop > previous.size()) return "has an entry whose name cannot be read";
      const size_t kept = previous.size() - drop;
      if (length == 0xfff) {
        const size_t nul = text.find('\0', p);
        if (nul == std::string_view::npos || nul >= end) return "ends inside an entry";
        length = kept + (nul - p);
      }
      if (length < kept || end - p < length - kept + 1) return "ends inside an entry";
      // git takes the name as the C string its length ends: the byte there must end it.
      if (text[p + (length - kept)] != '\0') return "has an entry whose name is not NUL-ended";
      fresh_name.push_back(kept == 0);
      name = previous.substr(0, kept);
      name.append(text.substr(p, length - kept));
      at = p + (length - kept) + 1;
    } else {
      if (length == 0xfff) {
        const size_t nul = text.find('\0', p);
        if (nul == std::string_view::npos || nul >= end) return "ends inside an entry";
        length = nul - p;
      }
      if (end - p < length + 1) return "ends inside an entry";
      if (text[p + length] != '\0') return "has an entry whose name is not NUL-ended";
      name.assign(text.substr(p, length));
      // 1 to 8 NULs pad the entry to a multiple of 8 bytes.
      at += (p - at + length + 8) / 8 * 8;
      if (at > end) return "ends inside an entry";
    }
    if (name.find('\0') != std::string::npos) return "has an entry whose name holds a NUL";
    const bool sparse_dir = (mode & 0170000) == 0040000;
    if (!GitIndexPathOk(name, sparse_dir)) {
      return "has an entry git would write outside its working tree or into a .git: '" +
             SanitizeForDisplay(name) + "'";
    }
    previous = std::move(name);
  }
  const size_t entries_end = at;
  size_t eoie_at = std::string_view::npos;  // where this walk met an end-of-index extension
  while (at < end) {
    if (end - at < 8) return "ends inside an extension";
    const size_t ext_at = at;
    const std::string_view sig = text.substr(at, 4);
    const uint32_t size = Be32(text, at + 4);
    at += 8;
    if (size > end - at) return "ends inside an extension";
    const std::string_view data = text.substr(at, size);
    at += size;
    if (sig == "TREE" || sig == "FSMN" || sig == "sdir") continue;
    // A git that reads with threads (index.threads) finds the extensions where the end-of-index
    // entry says and loads the entries from the offset table's blocks, each a fresh start of
    // the names: both must be the entries read above, or git reads other ones (review).
    if (sig == "EOIE") {
      if ((data.size() != 24 && data.size() != 4 + hash) || Be32(data, 0) != entries_end) {
        return "has an end-of-index extension that does not point at the end of its entries";
      }
      if (at != end) return "has an end-of-index extension that is not its last";
      eoie_at = ext_at;
      continue;
    }
    if (sig == "IEOT") {
      if (data.size() < 4 || (data.size() - 4) % 8 != 0 || Be32(data, 0) != 1) {
        return "has an index entry offset table git cannot read";
      }
      uint64_t first = 0;
      for (size_t b = 4; b < data.size(); b += 8) {
        const uint32_t offset = Be32(data, b);
        const uint32_t entries = Be32(data, b + 4);
        if (first >= count || starts[first] != offset || (version == 4 && !fresh_name[first])) {
          return "has an index entry offset table that does not match its entries";
        }
        first += entries;
      }
      if (first != count) return "has an index entry offset table that does not match its entries";
      continue;
    }
    if (sig != "REUC") {
      return "has the index extension '" + SanitizeForDisplay(sig) +
             "' (a split index, the untracked cache or one git does not write by default)";
    }
    // Resolve-undo: a path, NUL, three octal modes each NUL-terminated, an object id per
    // non-zero mode.
    size_t q = 0;
    while (q < data.size()) {
      const size_t nul = data.find('\0', q);
      if (nul == std::string_view::npos) return "ends inside its resolve-undo list";
      const std::string_view path = data.substr(q, nul - q);
      if (!GitIndexPathOk(path, false)) {
        return "has a resolve-undo path git would write outside its working tree or into a "
               ".git: '" +
               SanitizeForDisplay(path) + "'";
      }
      q = nul + 1;
      size_t ids = 0;
      for (int stage = 0; stage < 3; ++stage) {
        const size_t z = data.find('\0', q);
        if (z == std::string_view::npos) return "ends inside its resolve-undo list";
        const std::string_view octal = data.substr(q, z - q);
        if (octal.empty() || octal.find_first_not_of("01234567") != std::string_view::npos) {
          return "has a resolve-undo entry git cannot read";
        }
        q = z + 1;
        if (octal.find_first_not_of('0') != std::string_view::npos) ++ids;
      }
      q += ids * hash;  // an object id per stage whose mode is not 0, after the three modes
      if (q > data.size()) return "ends inside its resolve-undo list";
    }
  }
  // git does not walk to the end-of-index entry: it reads one at a fixed place, the 32 bytes
  // before the checksum ("EOIE", size 24), and then finds the extensions (and the offset table)
  // where it points, whatever this walk read there. One there must be the EOIE this walk met
  // last: bytes of an entry or of a cache tree shaped like one hid an entry from the check
  // (review s15).
  if (text.size() >= 12 + 32 + hash) {
    const size_t tail = text.size() - hash - 32;
    if (text.substr(tail, 4) == "EOIE" && Be32(text, tail + 4) == 24 && eoie_at != tail) {
      return "holds what git reads as an end-of-index extension that is not one of its own";
    }
  }
  return std::nullopt;
}

// One line as git's read_oneliner takes it: one trailing LF, then one CR, removed; nothing else.
std::string_view OneLiner(std::string_view text) {
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  return text;
}

}  // namespace

Result<size_t> GitObjectIdBytes(const std::vector<GitConfigEntry>& entries) {
  std::optional<size_t> bytes;
  for (const auto& e : entries) {
    if (e.section != "extensions" || e.has_subsection || e.key != "objectformat") continue;
    if (bytes) {
      return Fail(Code::kInvalid, "names extensions.objectformat more than once (line " +
                                      std::to_string(e.line) +
                                      "): the object format of a repository is named once");
    }
    if (e.value && *e.value == "sha1") {
      bytes = 20;
    } else if (e.value && *e.value == "sha256") {
      bytes = 32;
    } else {
      return Fail(Code::kInvalid, "names an object format git does not know (line " +
                                      std::to_string(e.line) + "): sha1 or sha256");
    }
  }
  return bytes.value_or(20);
}

std::optional<std::string> GitStateFileNotInert(std::string_view name, std::string_view text,
                                                size_t hash_bytes) {
  if (OneOf(name, {"git-rebase-todo", "git-rebase-todo.backup", "done", "todo"})) {
    return TodoRunsCode(text);
  }
  if (IndexFile(name)) return IndexNotInert(text, hash_bytes);
  if (name == "MERGE_RR") {
    // rerere's record of conflicted paths: git commit, merge and rebase --continue write the
    // recorded resolution to each path as written (outside the working tree too, through a
    // symlink in it) and copy each file into rr-cache. Empty is all a run with no conflict
    // left unresolved leaves.
    if (text.empty()) return std::nullopt;
    return std::string(
        "lists conflicted paths for rerere (git writes a recorded resolution to "
        "each path it names)");
  }
  if (name == "strategy") {
    if (ShippedStrategy(OneLiner(text))) return std::nullopt;
    return "names the merge strategy '" + SanitizeForDisplay(OneLiner(text)) +
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
  if (name == "autostash" || name == "MERGE_AUTOSTASH") {
    // The stash git applies when the rebase ends, as `git stash apply ID`: an object id only.
    const std::string_view id = Trim(text);
    if ((id.size() == 40 || id.size() == 64) &&
        id.find_first_not_of("0123456789abcdef") == std::string_view::npos) {
      return std::nullopt;
    }
    return std::string("is not an object id (git hands it to git stash apply)");
  }
  if (name == "commondir") {
    // In a linked worktree's own git dir (worktrees/<name>), which `git worktree add` made: its
    // repository's git dir, two levels up. Anything else makes git take another directory for
    // the repository, with its config, which nothing judged (review).
    if (OneLiner(text) == "../..") return std::nullopt;
    return "names another common dir than its repository's ('" +
           SanitizeForDisplay(OneLiner(text)) + "'; git worktree add writes ../..)";
  }
  if (name == "gitdir") {
    // The worktree's `.git` file, which `git worktree repair` (re)writes and `prune` judges: an
    // absolute path of a `.git`, as git worktree add writes it; where it may lie is the
    // caller's (GitDirNotClosed).
    const std::string_view path = OneLiner(text);
    if (!path.starts_with("/") || !path.ends_with("/.git") ||
        !GitIndexPathOk(path.substr(1, path.size() - 6), false)) {
      return "names '" + SanitizeForDisplay(path) +
             "', not the absolute path of a worktree's .git (git worktree repair writes a .git "
             "file there)";
    }
    return std::nullopt;
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

namespace {

// Why the `.git` a linked worktree's `gitdir` names (`dotgit`, absolute) is not that worktree's:
// outside `roots`, or something else than missing or a file leading back to `worktree_dir`.
std::optional<std::string> WorktreeDotGitNotOurs(const std::string& dotgit,
                                                 const std::string& worktree_dir, const GitFs& fs,
                                                 const std::vector<std::string>& roots) {
  if (roots.empty()) return std::nullopt;
  using git_paths::Join;
  const std::string parent = git_paths::Dirname(dotgit);
  const std::string where = fs.resolve(parent).value_or(parent);
  if (!git_paths::WithinAny(where, roots)) {
    return "names " + SanitizeForDisplay(dotgit) +
           ", outside the writable roots (git worktree repair writes a .git file there)";
  }
  const GitFileFacts f = fs.lstat(Join(where, ".git"));
  if (f.type == GitFileType::kMissing) return std::nullopt;
  if (f.type == GitFileType::kFile) {
    auto text = fs.read_file(Join(where, ".git"), 4096);
    if (text && *text) {
      std::string_view line = OneLiner(**text);
      if (line.starts_with("gitdir: ")) line.remove_prefix(8);
      if (line == worktree_dir || fs.resolve(std::string(line)) == fs.resolve(worktree_dir)) {
        return std::nullopt;
      }
    }
  }
  return "names " + SanitizeForDisplay(dotgit) +
         ", which is not this worktree's .git (git worktree repair overwrites it)";
}

}  // namespace

std::optional<std::string> GitDirNotClosed(const std::string& dir, GitDirPart part, const GitFs& fs,
                                           size_t max_entries, const std::string& common_dir,
                                           const std::vector<std::string>& roots) {
  using git_paths::Join;
  const GitFileFacts top = fs.lstat(dir);
  if (top.type != GitFileType::kDir) return "git dir " + dir + " is not a directory";
  // The object ids' length in a git dir's index, as git takes it from that git dir's config
  // (a submodule's under modules/ has its own; a linked worktree's is its repository's).
  auto id_bytes = [&](const std::string& git_dir) -> Result<size_t> {
    auto config = fs.read_file(Join(git_dir, "config"), kMaxStateFileBytes);
    if (!config || !*config) return size_t{20};  // no config: git does not take it for one
    auto entries = ParseGitConfig(**config);
    if (!entries) return tl::unexpected(entries.error());
    return GitObjectIdBytes(*entries);
  };
  struct Pending {
    std::string path;
    GitDirPart part;
    size_t hash_bytes;
  };
  size_t top_bytes = 20;
  if (part == GitDirPart::kWorktree && !common_dir.empty()) {
    auto bytes = id_bytes(common_dir);
    if (!bytes) return "its repository's config " + bytes.error().message;
    top_bytes = *bytes;
  }
  std::vector<Pending> stack{{dir, part, top_bytes}};
  size_t entries = 0;
  while (!stack.empty()) {
    auto [path, p, hash_bytes] = std::move(stack.back());
    stack.pop_back();
    // A git dir of its own: the repository's, a submodule's (modules/<name>), one by shape.
    if (p == GitDirPart::kGitDir || p == GitDirPart::kShapedDir || p == GitDirPart::kModule) {
      auto bytes = id_bytes(path);
      if (!bytes)
        return "in its git dir, " + Join(path, "").substr(dir.size() + 1) + "config " +
               bytes.error().message;
      hash_bytes = *bytes;
    }
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
      auto text =
          fs.read_file(Join(path, name), IndexFile(name) ? kMaxIndexBytes : kMaxStateFileBytes);
      if (!text)
        return "in its git dir, " + where + name + " cannot be read (" + text.error().message + ")";
      if (!*text) return "in its git dir, " + where + name + " is no regular file";
      if (auto why = GitStateFileNotInert(name, **text, hash_bytes)) {
        return "in its git dir, " + where + name + " " + *why;
      }
    }
    // A linked worktree's git dir in this one's worktrees/: its way back to this repository and
    // to its working tree's `.git`. (One judged as the top, found through a worktree's `.git`,
    // has its common dir resolved and judged by the caller.)
    if (p == GitDirPart::kWorktree && path != dir) {
      for (const char* name : {"commondir", "gitdir"}) {
        if (fs.lstat(Join(path, name)).type != GitFileType::kFile) continue;
        auto text = fs.read_file(Join(path, name), kMaxStateFileBytes);
        if (!text || !*text) return "in its git dir, " + where + name + " cannot be read";
        if (auto why = GitStateFileNotInert(name, **text, hash_bytes)) {
          return "in its git dir, " + where + name + " " + *why;
        }
        if (std::string_view(name) == "gitdir") {
          if (auto why = WorktreeDotGitNotOurs(std::string(OneLiner(**text)), path, fs, roots)) {
            return "in its git dir, " + where + name + " " + *why;
          }
        }
      }
    }
    if (where == "objects/pack/") {
      for (const auto& e : listing->entries) {
        if (FoldNameForLookup(e.name).starts_with("multi-pack-index")) {  // and its .d/ layers
          return "in its git dir, " + where +
                 "multi-pack-index is there (it names packs by paths git does not check: `git "
                 "multi-pack-index expire` unlinks what they name; git writes one only when "
                 "asked)";
        }
      }
    }
    for (auto& [name, q] : v.descend) stack.push_back({Join(path, name), q, hash_bytes});
  }
  return std::nullopt;
}

}  // namespace anvil
