// `anvil plugin new` (a working plugin: cli/plugin_scaffold.h) and `anvil plugin types` (the
// editor-support files of an existing plugin, regenerated for this anvil).
#pragma once

#include <string>
#include <vector>

#include "common/flag_set.h"
#include "policy/manifest.h"

namespace anvil::cli {

// `args` are what follows "new" / "types".
int RunPluginNewCommand(const std::vector<std::string>& args);
int RunPluginTypesCommand(const std::vector<std::string>& args);

// Their tables: the parser and --help of each (`anvil plugin`'s own lists them by synopsis).
// `runtime` is set by --lua and --js.
CommandSpec PluginNewSpec(PluginRuntime& runtime);
CommandSpec PluginTypesSpec();

}  // namespace anvil::cli
