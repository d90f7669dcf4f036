// `anvil mcp`'s flags as one table: its parser (ParseMcpArgs, src/cli/mcp_options.cc), its
// --help, man page and shell completions (src/cli/command_docs.h) all come from it. Every other
// option is `anvil sandbox`'s: the table forwards it, with its value, to that parser.
#pragma once

#include <string>

#include "common/flag_set.h"

namespace anvil::cli {

namespace mcp_server {
struct McpOptions;
}

// The table, its handlers storing into `into` (the workspace as given into `workspace`).
CommandSpec McpFlags(mcp_server::McpOptions& into, std::string& workspace);
// The same table for the documentation (its values are dropped).
CommandSpec McpCommandSpec();

}  // namespace anvil::cli
