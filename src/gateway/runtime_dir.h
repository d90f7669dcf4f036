// The gateway's per-session runtime directory: 0700, owned by this user, beneath
// $XDG_RUNTIME_DIR/anvil (or a private /tmp/anvil-UID) unless --runtime-dir names one. It holds
// the plugin socket and, by default, the audit log.
#pragma once

#include <string>

#include "common/result.h"
#include "gateway/gateway.h"

namespace anvil::gateway {

// Makes (or checks) the directory, filling `options.runtime_dir` when it was empty; returns
// the socket's path in it. Refuses a base or directory that is not this user's alone.
Result<std::string> PrepareRuntimeDir(GatewayOptions& options);

}  // namespace anvil::gateway
