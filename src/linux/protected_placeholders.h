// Keeping a protected name (.git, or a path a repository's git config names, see
// policy/git_metadata.h) that does not exist yet in a writable root from
// being created by the sandboxed command (which names: policy/protected_names_plan.h).
//
// The mount view keeps an existing .git read-only by binding it read-only, but a name that does
// not exist has nothing to bind, and Landlock cannot refuse one name in a directory where it
// allows creating files. A command that creates `.git` with hooks or `core.fsmonitor` in a
// workspace without one (a fresh directory, or a subdirectory of a repository) gets code run by
// the user's next `git` there, outside any sandbox. So, before the view is computed,
// the supervisor creates each missing name as an empty directory or file (marked with the
// extended attribute `user.anvil.placeholder` where the filesystem supports it), which the view
// then binds read-only like any existing one; after the run it removes it again. While it
// exists it is harmless: git skips an empty `.git` and keeps looking upward; an empty hooks
// directory holds no hook; an empty, non-executable file named as a program or an include runs
// nothing. It is visible to the command (`ls -A` shows an empty `.git`), not to
// `git status` (an empty directory is nothing to git); --writable-git drops the `.git` one with
// the rest of the .git protection. (A missing Anvil.toml gets no placeholder: the run moves aside
// what its command left there instead, linux/workspace_config_watch.h.)
//
// Concurrent sandboxes in one workspace share a placeholder. Removing a directory that is a
// mount point in another mount namespace succeeds and silently detaches that mount (Linux
// 3.18+), which would take the other sandbox's protection away mid-run. So every run holds a
// shared flock(2) on each protected directory it binds, placeholder or not, for as long as it
// runs, and a placeholder is removed only under an exclusive lock taken without waiting: the
// last run to finish removes it.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace anvil {

// One name to keep: `name` in the directory `parent` (canonical, absolute), created as an empty
// directory or an empty file (mode 0444) when missing — or, without `create`, only locked when
// it exists and the caller can open it (what the walk found: one that vanished since is nothing
// to make, and one the caller cannot open is no placeholder of the caller's runs).
struct PlaceholderSpec {
  std::string parent;
  std::string name;
  bool directory = true;
  bool create = true;
};

class ProtectedPlaceholders {
 public:
  // Each spec's name in its parent (canonical absolute directories): one that exists as a
  // directory or regular file is locked shared, whatever the kind asked for; a missing one is
  // created empty (a directory 0755, a file 0444; marked) and locked. A parent the caller cannot
  // create entries in is skipped (the command, running with the caller's credentials or fewer,
  // cannot create the name either), and so is every later spec inside what it would have made
  // (a spec's parent may be a placeholder of an earlier spec: the missing directories on the
  // way to a name). Anything else there (a symlink, a socket) is left to the view (which refuses
  // a symlinked .git). Any other failure is a "sandbox" error and nothing made so far is left
  // behind. Removed in the reverse order, the innermost first.
  static Result<ProtectedPlaceholders> Create(const std::vector<PlaceholderSpec>& specs);

  ProtectedPlaceholders() = default;
  ProtectedPlaceholders(ProtectedPlaceholders&&) = default;
  ProtectedPlaceholders& operator=(ProtectedPlaceholders&&) = default;
  ProtectedPlaceholders(const ProtectedPlaceholders&) = delete;
  ProtectedPlaceholders& operator=(const ProtectedPlaceholders&) = delete;
  // Removes each placeholder (made by this run, or marked by an earlier one) that no other run
  // holds and that is still empty; releases the locks.
  ~ProtectedPlaceholders();

  // Absolute paths of the placeholders this run created.
  std::vector<std::string> Created() const;

 private:
  struct Held {
    UniqueFd parent;  // the root, held open: a renamed root cannot redirect the removal
    UniqueFd dir;     // the protected directory (or file), flock()ed shared
    std::string root, name;
    bool created = false;      // made by this run
    bool placeholder = false;  // made by this run or marked as a placeholder
    bool directory = true;     // what the name is now
  };
  std::vector<Held> held_;
};

// The extended attribute that marks a placeholder directory.
inline constexpr char kPlaceholderXattr[] = "user.anvil.placeholder";

// Makes `name` in `parent` as an empty directory (`dir_mode`) or an empty read-only file (0444)
// that carries the placeholder mark from the moment the name exists: it is made under a private
// random name, marked, and renamed into place without replacing anything. A run that finds the
// name must see the mark, or it takes the placeholder for the user's own and never removes it
// (and when that run is the last one out, nobody does). Returns 0, or the errno of the step that
// failed (EEXIST: the name appeared meanwhile). Where the file system cannot rename without
// replacing, the name is made in place and marked after (best effort, as without user xattrs).
int MakeMarkedPlaceholder(int parent, const std::string& name, bool directory, mode_t dir_mode);

}  // namespace anvil
