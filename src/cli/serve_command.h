// `anvil serve`: flags, then the session loop of src/session/serve_session.h.
#pragma once

#include <string>
#include <vector>

#include "common/flag_set.h"

namespace anvil::cli {

int RunServeCommand(const std::vector<std::string>& args);
CommandSpec ServeCommandSpec();

}  // namespace anvil::cli
