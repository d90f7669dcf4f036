// `anvil run` and `anvil plugin ...`: manifests, consent and grants on the trusted side.
#pragma once

#include <string>
#include <vector>

namespace anvil::cli {

int RunRunCommand(const std::vector<std::string>& args);
int RunPluginCommand(const std::vector<std::string>& args);
int RunAuditCommand(const std::vector<std::string>& args);

}  // namespace anvil::cli
