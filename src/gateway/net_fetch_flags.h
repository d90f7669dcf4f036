// anvil-gateway's sys.net.fetch flags, parsed here so the gateway's main stays a list of
// calls. The --unsafe-test-* flags are test-only: they let the positive path run against a DNS
// server and HTTPS servers on loopback with a test CA. Only the trusted side (anvil run / serve,
// the test suites) starts the gateway, so only it can pass them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "gateway/net_fetch_op.h"

namespace anvil::gateway {

// Usage lines for the flags below.
extern const char kNetFetchFlagsUsage[];

// If args[i] is one of the flags, consumes it (and its value, advancing i) into `options` and
// returns true; `error` is set when the value is malformed. Returns false for other flags.
bool TakeNetFetchFlag(const std::vector<std::string>& args, std::size_t& i,
                      NetFetchOptions& options, std::string& error);

}  // namespace anvil::gateway
