// What users read about `anvil` and its commands beyond --help, rendered from the flag tables
// (src/common/flag_set.h, whose RenderHelp is each command's --help and `anvil help COMMAND`):
// `anvil --help`, the roff man pages, and the bash, zsh and fish completions. Pure functions of
// the tables; anvil-docgen writes the files at build time.
#pragma once

#include <string>
#include <vector>

#include "common/flag_set.h"

namespace anvil::cli {

// `anvil` itself and its subcommands, as the renderers see them.
struct ToolSpec {
  std::string version;      // "0.1.0"
  std::string summary;      // one line
  std::string description;  // the man page's DESCRIPTION (`anvil --help` stays short)
  std::vector<Flag> flags;  // --help, --version
  std::vector<std::string> examples;
  std::vector<CommandSpec> commands;
};

// RenderHelp(CommandSpec) is the flag set's own (common/flag_set.h).
std::string RenderToolHelp(const ToolSpec& tool);

// roff (man(7) macros), section 1: anvil(1) and anvil-COMMAND(1).
std::string RenderToolMan(const ToolSpec& tool);
std::string RenderMan(const ToolSpec& tool, const CommandSpec& spec);

// Shell completion scripts for `anvil`: bash (completions/anvil), zsh (_anvil), fish
// (anvil.fish).
std::string RenderBashCompletion(const ToolSpec& tool);
std::string RenderZshCompletion(const ToolSpec& tool);
std::string RenderFishCompletion(const ToolSpec& tool);

}  // namespace anvil::cli
