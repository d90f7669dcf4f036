// Where Anvil's helper executables (anvil-gateway, anvil-gateway-offline, anvil-plugin-host,
// anvil-exec-runner, anvil-proxy) are: found from the running program's own location
// (/proc/self/exe), never through PATH or the current directory, and refused when anyone but
// root or the caller could replace them.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace anvil {

// Every helper Anvil starts, in the order `anvil doctor` lists them.
inline constexpr std::string_view kHelperNames[] = {"anvil-gateway", "anvil-gateway-offline",
                                                    "anvil-plugin-host", "anvil-exec-runner",
                                                    "anvil-proxy"};

// The installed layout: helpers in this directory relative to the one holding `anvil`
// (bin/ -> libexec/anvil/; set from CMake's install directories at build time).
std::string_view InstalledHelperDir();

// Pure: where to look for helper `name`, best first, for a program running from `self_dir`
// (absolute, no trailing slash): the installed layout, then beside the program (the build tree,
// and the helpers among themselves in libexec/anvil/).
std::vector<std::string> HelperCandidates(std::string_view self_dir, std::string_view name);

// One step of the path to a helper: the helper itself, then each directory above it up to /.
struct PathStep {
  std::string path;
  uid_t uid = 0;
  mode_t mode = 0;  // st_mode: type and permission bits
};

// Pure: whether a helper reached through `steps` (the helper first, / last) may be executed by
// a caller with effective uid `euid`. Each step must be owned by root or the caller, and no one
// else may write it: no group or other write bit, except on a directory with the sticky bit
// (like /tmp), where others can add entries but cannot rename or remove the ones root or the
// caller own, which the next step checks. With POSIX ACLs the group bits are the ACL mask, so a
// named user or group with write access shows as a group write bit here too. The helper must be
// a regular file. Returns an error with code "sandbox" naming the step, who could write it and
// the fix.
Status CheckHelperPath(const std::vector<PathStep>& steps, uid_t euid);

struct HelperLocation {
  std::string name;
  std::string path;  // canonical
};

// Finds helper `name` for the running program and checks it with CheckHelperPath. Code
// "not_found" when no candidate exists (the message lists where it looked), "sandbox" when the
// helper or a directory above it could be replaced by someone else. The check is on owners and
// modes: only root or the caller can change any step, so nothing can swap the helper between
// this check and the exec that follows.
Result<HelperLocation> FindHelper(std::string_view name);

}  // namespace anvil
