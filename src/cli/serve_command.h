// `anvil serve`: flags, then the session loop of src/session/serve_session.h.
#pragma once

#include <string>
#include <vector>

#include "cli/flag_table.h"

namespace anvil::cli {

int RunServeCommand(const std::vector<std::string>& args);
CommandSpec ServeCommandSpec();

}  // namespace anvil::cli
