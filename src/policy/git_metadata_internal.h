// What the git walk (git_scan.cc), its plan (git_plan.cc), the config keys
// (git_config_keys.cc) and the check after the run (git_check.cc) share; private to policy/.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "policy/git_metadata.h"

namespace anvil::git_internal {

std::string Trim(std::string_view s);

// git's expand_user_path: `~/` and `~user/`; "%(prefix)/" (git's install prefix) never names a
// workspace path. nullopt when it cannot be expanded.
std::optional<std::string> ExpandUserPath(const std::string& value, const GitEnv& env,
                                          const GitFs& fs);

// A bound of GitScanLimits reached: the error naming it, its value and the way out.
Error LimitError(std::string_view bound, const std::string& value, const std::string& what,
                 const std::string& where);
std::string SecondsText(double s);

// Why git reads a config file: the user's own, or an include of another.
std::string ConfigReason(const GitConfigFile& f);

// "section.subsection.key" of an entry.
std::string KeyName(const GitConfigEntry& e);

}  // namespace anvil::git_internal
