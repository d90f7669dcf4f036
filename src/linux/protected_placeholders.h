// Keeping a protected name (.git) that does not exist yet in a writable root from being created
// by the sandboxed command.
//
// The mount view keeps an existing .git read-only by binding it read-only, but a name that does
// not exist has nothing to bind, and Landlock cannot refuse one name in a directory where it
// allows creating files. A command that creates `.git` with hooks or `core.fsmonitor` in a
// workspace without one (a fresh directory, or a subdirectory of a repository) gets code run by
// the user's next `git` there, outside any sandbox. So, before the view is computed, the
// supervisor creates each missing name as an empty directory, which the view then binds
// read-only like any existing one; after the run it removes it again if it is still the empty
// directory it made. While it exists it is harmless: git skips an empty `.git` and keeps
// looking upward. It is visible to the command (`ls -A` shows an empty `.git`); --writable-git
// drops it along with the rest of the .git protection.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace anvil {

class ProtectedPlaceholders {
 public:
  // For each of `names` missing in each of `roots` (canonical absolute directories), an empty
  // directory, mode 0755. A name that appears meanwhile is left alone (the view binds what is
  // there). A root the caller cannot create entries in is skipped: the command, running with
  // the caller's credentials or fewer, cannot create the name either. Any other failure is a
  // "sandbox" error and nothing made so far is left behind.
  static Result<ProtectedPlaceholders> Create(const std::vector<std::string>& roots,
                                              const std::vector<std::string>& names);

  ProtectedPlaceholders() = default;
  ProtectedPlaceholders(ProtectedPlaceholders&&) = default;
  ProtectedPlaceholders& operator=(ProtectedPlaceholders&&) = default;
  ProtectedPlaceholders(const ProtectedPlaceholders&) = delete;
  ProtectedPlaceholders& operator=(const ProtectedPlaceholders&) = delete;
  // Removes every placeholder that is still the empty directory it made.
  ~ProtectedPlaceholders();

  // Absolute paths of the placeholders made.
  std::vector<std::string> Paths() const;

 private:
  struct Made {
    UniqueFd parent;  // the root, held open: a renamed root cannot redirect the removal
    std::string root, name;
    dev_t dev = 0;
    ino_t ino = 0;
  };
  std::vector<Made> made_;
};

}  // namespace anvil
