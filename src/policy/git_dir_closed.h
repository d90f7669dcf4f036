// What a git dir the command made (or swapped in) may hold and still be left alone after the
// run (policy/git_metadata.h, step 3): an allowlist of entries, not a list of what git reads.
//
// git reads far more of a git dir than its config and hooks: legacy remotes (`remotes/<name>`,
// `branches/<name>`: a URL, whose repository's hooks a push runs), an interrupted rebase's or
// the sequencer's todo (`rebase-merge/git-rebase-todo`: `exec` lines, which `git rebase
// --continue` — what `git status` tells the user — runs), and it follows a symlink and reads a
// FIFO wherever it opens a file. A check that reads a config through a symlink sees what the
// link leads to now, not what a later run writes there (into the sandbox home, which no check
// walks); one that takes a FIFO for a missing file sees nothing of what a later run feeds it.
// So a new git dir must be closed: only the names git init, clone, fetch, commit, merge, stash,
// gc, submodule add and worktree add write there, and those a bisect or a stopped rebase, am,
// cherry-pick or revert leaves (its files that could name a command judged by their contents),
// every file a regular file and every directory a real one, as listed (no symlink followed, no
// FIFO, socket or device), and no repository hidden in git's data directories (a `.git`, or a
// directory of git dir shape, in objects/ or lfs/: git run inside it takes it with its config).
// Anything else makes it one that may run code: moved aside, as a hook would. Only the
// repositories the check judges (new ones) are listed, each bounded.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "policy/git_config.h"
#include "policy/git_metadata.h"

namespace anvil {

// The part of a git dir a directory is; what it may hold.
enum class GitDirPart {
  kGitDir,  // a git dir: the repository's own, or a submodule's under modules/
  // A directory git takes for a git dir by its shape alone (HEAD, objects/, refs/), found by
  // the walk anywhere in the roots — a working directory may be one too (a test fixture) —, or
  // a `.git` spelled otherwise (`.GIT`: an ordinary directory where names do not fold):
  // what git reads there as kGitDir, the state git reads that it never writes in a clean one
  // (rebase-merge/, rebase-apply/, sequencer/, BISECT_*, NOTES_MERGE_*, a remotes or branches
  // file) refused, other names (which git never reads, and the walk judges) left to the walk.
  kShapedDir,
  kWorktree,   // a linked worktree's own git dir (worktrees/<name>)
  kData,       // objects/, refs/, logs/, rr-cache/, lfs/, reftable/: files and directories
  kHooks,      // hooks/: files (which of them git runs: GitRepo::hooks)
  kInfo,       // info/: exclude, attributes, refs, sparse-checkout
  kModules,    // modules/: a directory per submodule name
  kModule,     // a directory in modules/: a git dir by shape, else more of a name (a/b)
  kWorktrees,  // worktrees/: a directory per linked worktree
  kEmpty,      // branches/, remotes/: empty (git init's template makes branches/)
  // rebase-merge/, rebase-apply/, sequencer/: the state of a rebase, am, cherry-pick or revert
  // that stopped. Files git names there only; those that could name a command are judged by
  // their contents (GitStateFileNotInert).
  kSequencer,
};

struct GitDirVerdict {
  std::optional<std::string> refused;  // why not closed, naming the entry ("" parts: none)
  std::vector<std::pair<std::string, GitDirPart>> descend;  // directories in it, to judge next
  std::vector<std::string> contents;  // files in it whose contents GitStateFileNotInert judges
};

// Pure: the verdict on one directory of a git dir, the `part` it is, from its listing.
GitDirVerdict JudgeGitDirListing(GitDirPart part, const std::vector<GitDirEntry>& entries);

// Pure: why the state file `name` (listed in `contents`) holding `text` could make git run a
// command, or nullopt: a todo line git would run (`exec`, `x`), a merge strategy that is not one
// git ships (git runs git-merge-NAME, found on PATH), a signing key (git runs the signing
// program), options for `git apply`, cherry-pick or revert options beyond those of the data
// kind, an autostash (or MERGE_AUTOSTASH) that is no object id, a linked worktree's `commondir`
// other than `../..` or `gitdir` other than the absolute path of a `.git` (judged so in a
// repository's worktrees/ only), a BISECT_START that `git bisect reset` would pass as
// an option, rerere's list of conflicted paths (MERGE_RR, which git writes resolutions to) when
// not empty, an index (its own or a split index's shared one) naming a path git's verify_path
// would refuse (outside the working tree, into a `.git`) in an entry or its resolve-undo list, or
// holding an extension beyond the data ones, or not read as an index with object ids
// `hash_bytes` long (20: SHA-1, 32: SHA-256).
std::optional<std::string> GitStateFileNotInert(std::string_view name, std::string_view text,
                                                size_t hash_bytes = 20);

// The length of the object ids in the index of a git dir whose config holds `entries`, as git
// takes it: 20 (SHA-1) without extensions.objectformat, 20 or 32 for "sha1" or "sha256". An
// error naming why otherwise: the format named more than once (git takes the last: a check
// that took another would read the index with the wrong length), or one git does not know.
Result<size_t> GitObjectIdBytes(const std::vector<GitConfigEntry>& entries);

// Why the git dir `dir` (canonical) is not closed, or nullopt: each directory listed through
// GitFs (never through a symlink) and judged; one that cannot be listed, or more than
// `max_entries` entries in all, is not closed either. A `dir` git would not take for a git dir
// now (no HEAD with objects/ and refs/ or commondir, as fs/git_dir_guard.h judges it) is judged
// as a directory of git dir shape: by the names git reads there only (a later `git init`, or a
// FIFO fed later, could make it one). An index is read with the object ids of the git dir it
// belongs to (GitObjectIdBytes of that git dir's config; a submodule's under modules/ has its
// own), a linked worktree's (`part` kWorktree) with those of `common_dir`, its repository's.
// A linked worktree's `gitdir` (where `git worktree repair` writes a `.git` file) must name a
// path in `roots` (canonical; empty: not judged) whose `.git`, when there, is a file leading back
// to that worktree's git dir. `objects/pack` holds no multi-pack-index (git joins the pack names
// it lists to the pack directory, `../` and all, and `git multi-pack-index expire` unlinks them).
std::optional<std::string> GitDirNotClosed(const std::string& dir, GitDirPart part, const GitFs& fs,
                                           size_t max_entries = 1000000,
                                           const std::string& common_dir = "",
                                           const std::vector<std::string>& roots = {});

}  // namespace anvil
