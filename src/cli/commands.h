// `anvil` itself: its subcommands, --version, `anvil help COMMAND`, and "did you mean" for a
// mistyped command. The same table feeds anvil-docgen (man pages and shell completions).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command_docs.h"
#include "common/flag_set.h"

namespace anvil::cli {

struct CommandEntry {
  std::string_view name;              // the spec's name, without building the spec
  std::function<CommandSpec()> spec;  // bound to throwaway state: for help and documents only
  std::function<int(const std::vector<std::string>&)> run;
};

// Every subcommand, in the order `anvil --help` lists them.
const std::vector<CommandEntry>& AnvilCommands();

// `anvil` and its subcommands as the documents describe them.
ToolSpec AnvilTool(std::string version);

// The version RunAnvil was given ("" before it runs): `anvil mcp`'s serverInfo.
std::string_view AnvilVersion();

// The whole program: dispatches to a subcommand. `version_line` is what --version prints.
int RunAnvil(const std::vector<std::string>& args, std::string_view version,
             std::string_view version_line);

}  // namespace anvil::cli
