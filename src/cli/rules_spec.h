// `anvil rules`'s flags as a table, for its man page, the shell completions and `anvil --help`
// (src/cli/command_docs.h). `anvil rules check` still parses them itself
// (src/cli/rules_command.cc); a unit test keeps its --help and this table naming the same flags.
#pragma once

#include "common/flag_set.h"

namespace anvil::cli {

CommandSpec RulesCommandSpec();

}  // namespace anvil::cli
