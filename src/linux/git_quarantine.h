// The moves of the check after the run: DecideGitQuarantine's actions (policy/git_metadata.h)
// carried out, each path renamed aside (`NAME.anvil-quarantine`) without replacing anything, a
// git dir's HEAD too, and a symlink into a sandbox home replaced by a file of that name holding
// its target (renamed, it would still lead there), through GitFs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "policy/git_metadata.h"

namespace anvil {

struct GitQuarantined {
  std::string path;
  std::string moved_to;
  std::string reason;
  std::string restore;  // the shell command that puts it back
};
struct GitQuarantineResult {
  std::vector<GitQuarantined> moved;
  std::vector<std::string> failures;  // "PATH: why it could not be moved"
};
GitQuarantineResult ApplyGitQuarantine(const std::vector<GitQuarantineAction>& actions,
                                       const std::vector<std::string>& roots, const GitFs& fs);

// The suffix a quarantined path gets.
inline constexpr std::string_view kGitQuarantineSuffix = ".anvil-quarantine";

}  // namespace anvil
