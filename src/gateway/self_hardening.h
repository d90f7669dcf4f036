// The gateway locks itself down once its socket and workspace fd exist: no_new_privs, Landlock
// (workspace, its runtime dir and audit log, the system runtime read-only) and the command
// seccomp deny-list (no ptrace, mount, bpf, module loading, ...). A compromised gateway then
// still cannot read the user's home or attach to other processes.
#pragma once

#include <string>

#include "common/result.h"

namespace anvil::gateway {

Status HardenGateway(const std::string& workspace, const std::string& runtime_dir,
                     const std::string& audit_log);

}  // namespace anvil::gateway
