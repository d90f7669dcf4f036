// One sandbox run's share of the record of unchecked subtrees (policy/unchecked_subtrees.h):
// before the run, the subtrees earlier runs left unchecked that lie in this run's writable
// roots (its git walk takes what they hold as the command's work); after it, what this run's
// check could not vouch for is added to the record, or, when it vouched for everything, the
// subtrees it walked leave the record.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "linux/sandbox_launch.h"
#include "policy/unchecked_subtrees.h"

namespace anvil {

class UncheckedRun {
 public:
  // Reads the records (an unreadable one fails the run: it may stand for an unchecked subtree).
  static Result<UncheckedRun> Start(const std::vector<std::string>& roots);

  // The subtrees of earlier records inside this run's roots.
  const std::vector<std::string>& Suspect() const { return suspect_; }

  // Once the checks after the run are done: records what `out` says was left unchecked, or
  // resolves what this run walked when its check was complete (`git_checked`: the git check
  // ran). A record that cannot be written makes the run fail (out.git.check_error).
  void Finish(SandboxOutcome& out, bool git_checked) const;

 private:
  std::string dir_;
  std::vector<std::string> roots_;
  std::vector<LoadedUncheckedRecord> loaded_;
  std::vector<std::string> suspect_;
};

}  // namespace anvil
