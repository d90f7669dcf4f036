// `anvil run` (run_command.cc), `anvil plugin ...` (plugin_command.cc) and `anvil audit`
// (audit_command.cc): manifests, consent and grants on the trusted side; what they share on the
// terminal is cli/plugin_cli.h.
#pragma once

#include <string>
#include <vector>

#include "common/flag_set.h"

namespace anvil::cli {

int RunRunCommand(const std::vector<std::string>& args);
int RunPluginCommand(const std::vector<std::string>& args);
int RunAuditCommand(const std::vector<std::string>& args);
CommandSpec RunCommandSpec();
CommandSpec PluginCommandSpec();
CommandSpec AuditCommandSpec();

}  // namespace anvil::cli
