// `anvil run` and `anvil plugin ...`: manifests, consent and grants on the trusted side.
#pragma once

#include <string>
#include <vector>

#include "cli/flag_table.h"

namespace anvil::cli {

int RunRunCommand(const std::vector<std::string>& args);
int RunPluginCommand(const std::vector<std::string>& args);
int RunAuditCommand(const std::vector<std::string>& args);
CommandSpec RunCommandSpec();
CommandSpec PluginCommandSpec();
CommandSpec AuditCommandSpec();

}  // namespace anvil::cli
