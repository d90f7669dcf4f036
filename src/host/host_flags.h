// anvil-plugin-host's flags, in one table (common/flag_set.h): parsing and --help both come
// from it.
#pragma once

#include "common/flag_set.h"
#include "host/plugin_host.h"

namespace anvil::host {

// The table; each flag's handler sets its field of `options` (which must outlive the table).
// Test-hook builds add their hidden flags to it (src/cmd/anvil_plugin_host.cc).
CommandSpec HostFlags(HostOptions& options);

}  // namespace anvil::host
