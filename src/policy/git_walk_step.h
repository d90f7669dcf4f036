// What the git walk (policy/git_scan.cc, ScanGitMetadata) does with each entry of a directory it
// listed. Pure; the walk is a thin loop over it.
//
// The one rule: every directory the walk lists is looked through alike. A directory that is a
// git dir by its shape (HEAD beside objects/ and refs/, or beside commondir:
// fs/git_dir_guard.h IsGitDirShape) is recorded as a repository, and its entries are then
// taken as any directory's: Anvil's protected names in it are recorded, and its subdirectories
// walked (within the same 'entries' and 'depth' bounds). git started anywhere below it finds
// the `.git` (or git dir) nearest to where it starts, and Anvil started there reads the
// nearest Anvil.toml: a shape that stopped the walk hid both from the check after the run.
// A real bare repository costs its entries (a cloned one holds a few pack files).
//
// Not entered: a `.git` entry. Any other spelling of it (`.GIT`) is recorded as a repository
// (where names fold case, it is one) and walked as well: where they do not, it is an ordinary
// directory, which a command could fill with what the walk would then never see. A `.git` directory
// that exists before the run is bound read-only whole; one made during the run is judged whole (its
// config, hooks and submodule git dirs, policy/git_check.cc), and it is nobody's working directory:
// neither the user nor an editor starts git or Anvil inside it, and entering every repository's
// objects would make every walk cost what the repositories hold. Symbolic links are not followed
// (what they lead to in a root is walked where it is).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "policy/git_metadata.h"

namespace anvil {

enum class GitWalkDescent {
  kNone,       // not a directory, a symlink, or a `.git`
  kWalk,       // a subdirectory walked next
  kPastDepth,  // a subdirectory past the 'depth' bound
};

struct GitWalkStep {
  bool protected_name = false;          // one of Anvil's protected names (not .git): recorded
  std::optional<GitMarkerKind> marker;  // a `.git` (directory, file or symlink): a repository
  GitWalkDescent descent = GitWalkDescent::kNone;
};

// The step for entry `e` of a directory named `dir_name` (its last component), `depth` levels
// below its writable root, with `max_depth` the 'depth' bound. Nothing else about the directory
// (its shape included) changes it; its name only makes a file of kProtectedFilesIn
// (fs/protected_names.h: `.vscode/tasks.json`) a protected name.
GitWalkStep DecideGitWalkEntry(const GitDirEntry& e, std::string_view dir_name, size_t depth,
                               size_t max_depth);

}  // namespace anvil
