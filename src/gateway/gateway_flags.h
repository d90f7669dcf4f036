// anvil-gateway's flags, in one table (common/flag_set.h): parsing and --help both come from it,
// so the gateway's main stays a list of calls. The --unsafe-test-* flags of sys.net.fetch are
// test-only: they let the positive path run against a DNS server and HTTPS servers on loopback
// with a test CA. Only the trusted side (anvil run / serve, the test suites) starts the gateway,
// so only it can pass them.
#pragma once

#include "common/flag_set.h"
#include "gateway/gateway.h"

namespace anvil::gateway {

// The table; each flag's handler sets its field of `options` (which must outlive the table).
// Test-hook builds add their hidden flags to it (src/cmd/anvil_gateway.cc).
CommandSpec GatewayFlags(GatewayOptions& options);

}  // namespace anvil::gateway
