// The real file system and environment behind the git walk (policy/git_metadata.h's GitFs and
// GitEnv): directories listed with getdents64, facts from statx (the mount's id, whether the
// filesystem's directory ctimes track their entries), paths resolved by the kernel,
// renameat2(RENAME_NOREPLACE) for the quarantine.
#pragma once

#include "policy/git_metadata.h"

namespace anvil {

GitFs RealGitFs();

// $HOME, $XDG_CONFIG_HOME, $GIT_CONFIG_GLOBAL, $GIT_CONFIG_SYSTEM, $GIT_TEMPLATE_DIR.
GitEnv GitEnvFromProcess();

}  // namespace anvil
