// What makes git take a directory for a git directory, and the plugin-side guard built on it
// (threat model T1: nothing a plugin plants is executed or followed by git on the host).
//
// git does not need a `.git` name to use a directory as a repository's metadata. Started in a
// directory D (or anywhere beneath it), git's discovery (setup.c is_git_directory) takes D itself
// for a git dir when
//   D/HEAD is a file or a symlink (git then checks its contents: "ref: refs/..." or an object
//   id; any content is counted here, since the next write can change it), and
//   the common dir — D/commondir's target when that file exists, else D — holds `objects` and
//   `refs` that access(X_OK) accepts: a directory, a symlink (followed), or an executable file.
// git then reads D/config (core.hooksPath, core.fsmonitor, aliases, ...) and runs D/hooks: code
// on the host. A D/commondir file counts whatever it names (it may name a repository outside
// the workspace), so HEAD plus commondir is enough.
//
// IsGitDirShape is the one predicate: the command sandbox's walk (policy/git_scan.cc)
// finds bare git dirs with it, and the gateway refuses a plugin fs op that would make one.
// Names are compared as the directory looks them up: exactly on a case-sensitive file system
// (git on Linux is: "head" is not HEAD there), folded where the directory folds case.
//
// The plugin guard, pure (DecideGitDirMutation) over facts a thin caller gathers
// (WorkspaceRoot::ProbeGitDirs, FindGitDirBeneath: git_dir_guard.cc):
//   - nothing is made, written, removed or moved beneath a directory that already is a git dir
//     (a bare repository kept in the workspace, or one planted earlier) — its config and hooks
//     are what git would run;
//   - no entry is made (written, mkdir'ed, renamed into place) that completes the shape in its
//     directory;
//   - no tree holding a git dir is moved (or removed).
// The top-level repository's `.git` (and every other `.git`) is a protected name with rules of
// its own (path_glob.h): paths through a protected name are left to them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace anvil {

// The entry a directory lookup of one of git's names finds (lstat: a symlink is kSymlink).
enum class GitDirEntryKind {
  kMissing,
  kFile,      // a regular file without any execute bit
  kExecFile,  // a regular file with an execute bit: access(X_OK) may accept it
  kDir,
  kSymlink,
  kOther,  // a FIFO, socket or device
};

// What one directory holds under the names is_git_directory looks up.
struct GitDirNames {
  GitDirEntryKind head = GitDirEntryKind::kMissing;
  GitDirEntryKind objects = GitDirEntryKind::kMissing;
  GitDirEntryKind refs = GitDirEntryKind::kMissing;
  GitDirEntryKind commondir = GitDirEntryKind::kMissing;
};

// Whether git would take the directory for a git dir: HEAD, and objects + refs or commondir.
bool IsGitDirShape(const GitDirNames& names);

enum class GitDirName { kNone, kHead, kObjects, kRefs, kCommonDir };
// Which of git's names `name` is, as a directory looks names up: exactly, or — when it folds
// case (ext4/f2fs casefold, vfat, SMB, ...) — after the folds of FoldNameForLookup
// (protected_names.h).
GitDirName ClassifyGitDirName(std::string_view name, bool folds_case);

// `names` with the entry `name` of `kind` recorded in it (unchanged when `name` is none of git's).
GitDirNames WithEntry(GitDirNames names, std::string_view name, GitDirEntryKind kind,
                      bool folds_case);

// The same for a walk over a directory's listing, where several entries may be taken for one
// of git's names (compared folded, not knowing how the directory looks names up): the entry is
// recorded unless the name already holds one that git would accept — any of them may be the one
// the directory's lookup finds. The shape can only grow with more entries.
GitDirNames WithListedEntry(GitDirNames names, std::string_view name, GitDirEntryKind kind,
                            bool folds_case);

// ---- the plugin guard (pure) -----------------------------------------------------------------

// One existing directory on the way to an op's target, as probed.
struct GitDirProbe {
  std::string dir;  // normalized workspace path ("." for the root)
  GitDirNames names;
  bool folds_case = false;  // the directory looks names up without regard to case
};

// What a plugin fs op would do, in terms the guard decides on.
struct GitDirMutation {
  std::string op;  // "fs.write", "fs.mkdir", "fs.remove", "fs.rename": for messages
  // The existing directories from the root down to the one whose entries change (each that
  // exists; the last is where `name` is made). Every one of them is checked for being a git dir.
  std::vector<GitDirProbe> dirs;
  // The entry made in dirs.back() (empty: the op makes none there, e.g. fs.remove or the source
  // side of a rename), and what it would be.
  std::string name;
  GitDirEntryKind kind = GitDirEntryKind::kMissing;
  // Whether dirs.back() is the directory `name` is made in (false when a parent on the way is
  // still missing: the entry then goes into a new, empty directory).
  bool made_in_last = true;
};

// "ok", or "denied" saying which directory is or would become a git dir, why that runs code, and
// the fix. Pure.
Status DecideGitDirMutation(const GitDirMutation& m);

// The refusal for a tree (moved or removed by `op`) that holds git dir `found` (relative to
// `top`; "" for `top` itself).
Error GitDirInTreeError(std::string_view op, std::string_view top, std::string_view found);

}  // namespace anvil
