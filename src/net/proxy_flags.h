// anvil-proxy's flags, in one table (common/flag_set.h): parsing and --help both come from it.
// The values are checked after parsing (the allowlist by netpolicy/proxy_policy.h), where a
// failure is also reported on --status-fd.
#pragma once

#include <string>
#include <vector>

#include "common/flag_set.h"

namespace anvil {

struct ProxyOptions {
  int channel_fd = -1;                   // required: the listening sockets arrive here (SCM_RIGHTS)
  int status_fd = -1;                    // "ok" or why not, then one JSON line per distinct refusal
  std::vector<std::string> allow_hosts;  // H[:PORT]
  std::string audit_log;                 // JSON lines; empty: stderr
  // Test-only (the trusted command line of `anvil sandbox`).
  std::vector<std::string> unsafe_test_allow_addresses;  // ADDR[:PORT]
  std::string unsafe_test_resolver;                      // ADDR:PORT
};

// The table; each flag's handler sets its field of `options` (which must outlive the table).
CommandSpec ProxyFlags(ProxyOptions& options);

}  // namespace anvil
