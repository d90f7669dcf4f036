#include "cli/mcp_spec.h"

namespace anvil::cli {

CommandSpec McpCommandSpec() {
  auto ignore = [](const std::string&) { return Ok(); };
  CommandSpec spec;
  spec.name = "mcp";
  spec.program = "anvil mcp";
  spec.summary = "serve the Model Context Protocol to a coding agent";
  spec.synopsis =
      "[--workspace DIR] [--approval MODE] [--rules FILE]... [--plugin-dir DIR]...\n"
      "                 [--plugin-path DIR]... [--no-plugins] [sandbox options]";
  spec.description =
      "Serve the Model Context Protocol on stdin/stdout (newline-delimited JSON-RPC 2.0,\n"
      "protocol 2025-06-18) for a coding agent (docs/agents.md). Tools: run_command (the flow\n"
      "of `anvil exec`: rules, approval, sandbox, refusals, escalation) and one tool per\n"
      "command of every plugin with an approved grant (run as `anvil run --json`). Questions go\n"
      "to the client as elicitation/create when it declares that capability.";
  spec.flags = {
      Text("--workspace", "DIR", "the workspace commands run in (default: the current directory)",
           ignore)
          .Expects("a directory")
          .Completes(Completion::kDirectory),
      Text("--approval", "MODE", "untrusted | on-failure | on-request (default) | never", ignore)
          .Choices({"untrusted", "on-failure", "on-request", "never"}),
      Text("--rules", "FILE",
           "read FILE as your rules instead of ~/.config/anvil/rules/*.toml; repeatable", ignore)
          .Completes(Completion::kFile)
          .Repeatable(),
      Text("--plugin-dir", "DIR", "offer this plugin's commands too (still needs a grant)", ignore)
          .Completes(Completion::kDirectory)
          .Repeatable(),
      Text("--plugin-path", "DIR",
           "search DIR's subdirectories for plugins (default\n"
           "${XDG_DATA_HOME:-~/.local/share}/anvil/plugins)",
           ignore)
          .Completes(Completion::kDirectory)
          .Repeatable(),
      Switch("--no-plugins", "offer run_command only", [] {}),
  };
  spec.sections = {
      {"",
       "Every other option is `anvil sandbox`'s and applies to every command (not --cwd or\n"
       "--workdir: the workspace is --workspace, a call's directory its cwd argument).\n"
       "Exit: 0 at the end of stdin; 2 usage errors and rules files that do not load.",
       false},
  };
  spec.examples = {
      "anvil mcp --workspace .",
      "claude mcp add anvil -- anvil mcp --workspace .",
  };
  return spec;
}

}  // namespace anvil::cli
