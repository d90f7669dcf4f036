// `anvil sandbox`'s (and anvil-exec-runner's) flag table, for its man page, the shell
// completions and `anvil help sandbox` (src/cli/command_docs.h).
#pragma once

#include "cli/flag_table.h"
#include "cli/sandbox_command.h"

namespace anvil::cli {

CommandSpec SandboxCommandSpec(SandboxFrontEnd front_end);

}  // namespace anvil::cli
