// `anvil mcp`'s own flags as a table, for its man page, the shell completions and `anvil
// --help` (src/cli/command_docs.h). `anvil mcp` parses them itself (src/cli/mcp_options.cc) and
// hands every other option to `anvil sandbox`'s parser; a unit test keeps its --help and this
// table naming the same flags.
#pragma once

#include "common/flag_set.h"

namespace anvil::cli {

CommandSpec McpCommandSpec();

}  // namespace anvil::cli
