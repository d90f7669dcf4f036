// `anvil plugin new` (a working plugin: cli/plugin_scaffold.h) and `anvil plugin types` (the
// editor-support files of an existing plugin, regenerated for this anvil).
#pragma once

#include <string>
#include <vector>

namespace anvil::cli {

// `args` are what follows "new" / "types".
int RunPluginNewCommand(const std::vector<std::string>& args);
int RunPluginTypesCommand(const std::vector<std::string>& args);

}  // namespace anvil::cli
