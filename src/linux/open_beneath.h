// Opening a path below a directory without ever leaving it (openat2 RESOLVE_BENEATH |
// RESOLVE_NO_MAGICLINKS), for the kernel walls that take a path from a workspace the
// sandboxed side controls: the mount view's binds and Landlock's rules.
#pragma once

#include <string>

#include "common/result.h"
#include "common/unique_fd.h"

namespace anvil {

// O_PATH descriptor of `relative` beneath the directory `base`. A path that does not exist, or
// that a symlink or ".." would take outside `base`, is an invalid descriptor (and Ok): it is
// simply not there to be granted. Other failures are "sandbox" errors.
Result<UniqueFd> OpenBeneath(const std::string& base, const std::string& relative);

}  // namespace anvil
