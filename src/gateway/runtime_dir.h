// The gateway's per-session runtime directory: 0700, owned by this user, beneath
// $XDG_RUNTIME_DIR/anvil (or a private /tmp/anvil-UID) unless --runtime-dir names one. It holds
// the plugin socket and, by default, the audit log.
#pragma once

#include <string>

#include "common/result.h"
#include "common/unique_fd.h"
#include "gateway/gateway.h"

namespace anvil::gateway {

// Makes (or checks) the directory, filling `options.runtime_dir` when it was empty; returns
// the socket's path in it. Refuses a base or directory that is not this user's alone. `held`
// gets the directory open with a shared flock on it, for the gateway to keep as long as it
// lives: the sign that the session is alive, which a later session's sweep of dead ones
// (session/runtime_sweep.h) takes before it removes anything.
Result<std::string> PrepareRuntimeDir(GatewayOptions& options, UniqueFd* held);

}  // namespace anvil::gateway
