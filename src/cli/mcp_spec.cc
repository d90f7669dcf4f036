#include "cli/mcp_spec.h"

#include "cli/exec_command.h"
#include "cli/exec_spec.h"
#include "cli/mcp_server.h"
#include "policy/display_text.h"

namespace anvil::cli {
namespace {

// A canonical directory for --plugin-dir and --plugin-path, or the refusal naming it.
Result<std::string> Directory(const std::string& flag, const std::string& value) {
  const std::string c = mcp_server::Canonical(value);
  if (c.empty()) {
    return Fail("invalid", flag + " " + SanitizeForDisplay(value, 400) + ": no such directory");
  }
  return c;
}

}  // namespace

CommandSpec McpFlags(mcp_server::McpOptions& into, std::string& workspace) {
  CommandSpec spec;
  spec.name = "mcp";
  spec.program = "anvil mcp";
  spec.summary = "serve the Model Context Protocol to a coding agent";
  spec.synopsis =
      "[--workspace DIR] [--approval MODE] [--rules FILE]...\n"
      "                 [--plugin-dir DIR]... [--plugin-path DIR]... [--no-plugins]\n"
      "                 [--requester NAME] [--rules-workspace DIR] [sandbox options]";
  spec.description =
      "Serve the Model Context Protocol on stdin/stdout (newline-delimited JSON-RPC 2.0, protocol\n"
      "2025-06-18) for a coding agent (docs/agents.md, \"anvil mcp\"). Tools: run_command (the "
      "same\n"
      "flow as `anvil exec`: the command rules, the approval mode, the sandbox, the refusals it\n"
      "recorded and the escalation on offer) and one tool per command of every plugin with an\n"
      "approved grant (run exactly as `anvil run --json` runs it).";
  spec.flags = {
      TextInto("--workspace", "DIR",
               "the workspace commands run in (default: the current directory)", workspace)
          .Expects("a directory")
          .Completes(Completion::kDirectory),
      Text("--approval", "MODE", "untrusted | on-failure | on-request (default) | never",
           [&into](const std::string& v) -> Status {
             auto mode = ParseApprovalMode(v);
             if (!mode) {
               return Fail("invalid", "--approval " + SanitizeForDisplay(v, 40) +
                                          " (fix: untrusted, on-failure, on-request or never)");
             }
             into.mode = *mode;
             return Ok();
           })
          .Choices({"untrusted", "on-failure", "on-request", "never"}),
      CollectInto("--rules", "FILE",
                  "read FILE as your rules instead of ~/.config/anvil/rules/*.toml\n"
                  "(repeatable; the admin layer and the workspace's rules still apply)",
                  into.rules_files)
          .Completes(Completion::kFile),
      Text("--plugin-dir", "DIR",
           "offer this plugin's commands too (repeatable; still needs a grant)",
           [&into](const std::string& v) -> Status {
             ANVIL_TRY(dir, Directory("--plugin-dir", v));
             into.plugin_dirs.push_back(*dir);
             return Ok();
           })
          .Completes(Completion::kDirectory)
          .Repeatable(),
      Text("--plugin-path", "DIR",
           "search DIR's subdirectories for plugins (repeatable; default\n"
           "${XDG_DATA_HOME:-~/.local/share}/anvil/plugins)",
           [&into](const std::string& v) -> Status {
             ANVIL_TRY(dir, Directory("--plugin-path", v));
             into.search_paths.push_back(*dir);
             into.default_path = false;
             return Ok();
           })
          .Completes(Completion::kDirectory)
          .Repeatable(),
      Switch("--no-plugins", "offer run_command only", [&into] { into.plugins = false; }),
      Text("--requester", "NAME",
           "who asks, as the audit log names it (default \"anvil mcp\"; say, the\n"
           "agent's name)",
           [&into](const std::string& v) -> Status {
             if (v.empty() || v.size() > 64) {
               return Fail("invalid", "--requester needs a name of 1 to 64 characters");
             }
             into.requester = SanitizeForDisplay(v, 64);
             return Ok();
           }),
  };
  spec.sections = {
      {"",
       "Every other option is `anvil sandbox`'s and applies to every command (--cwd and --workdir\n"
       "excepted: the workspace is --workspace, a call's cwd its `cwd` argument), as does\n"
       "`anvil exec`'s --rules-workspace DIR; its --ask-fd does not apply (questions go to the\n"
       "client), nor do --json, --widen and --reason (a call's arguments).",
       false},
      {"",
       "Questions go to the client as elicitation/create when it declares that capability; "
       "without\n"
       "it, a command that needs a question is refused, with the one line that would allow it.",
       false},
      {"", "Exit: 0 at the end of stdin; 2 usage errors and rules files that do not load.", false},
  };
  spec.examples = {
      "anvil mcp --workspace .",
      "anvil mcp --workspace ~/src/app --approval untrusted --network proxy --allow-host crates.io",
  };
  spec.style.equals_value = true;
  spec.style.dash_alone_is_operand = true;
  // Every other option is `anvil sandbox`'s: `anvil exec`'s parser checks it for each call.
  spec.style.forward_unknown = true;
  spec.forwarded_value = [](std::string_view name) {
    return name == "--rules-workspace" || SandboxValueFlags().contains(std::string(name));
  };
  // An option that none of anvil mcp's, anvil exec's and anvil sandbox's tables holds is
  // refused here, at startup, with a "did you mean" from all three.
  static const auto exec = std::make_shared<const CommandSpec>(ExecCommandSpec());
  spec.forward_to = {exec};
  // `anvil sandbox`'s and `anvil exec`'s options that a call decides, refused by name.
  spec.extra = [](const std::vector<std::string>& args, size_t& i, std::string& error) {
    const std::string flag = args[i].substr(0, args[i].find('='));
    if (flag == "--cwd" || flag == "--workdir") {
      error = flag +
              " is not an option of anvil mcp (fix: --workspace DIR; a call picks its directory "
              "with run_command's cwd)";
      return true;
    }
    if (flag == "--ask-fd") {
      error =
          "--ask-fd is not an option of anvil mcp (questions go to the client as MCP "
          "elicitation/create; a client without it gets the refusal and the line that would "
          "allow the command)";
      return true;
    }
    if (flag == "--json" || flag == "--report-fd" || flag == "--widen" || flag == "--reason") {
      error = flag + " is not an option of anvil mcp (it is per call: run_command's arguments)";
      return true;
    }
    return false;
  };
  spec.messages.missing_value = [](const std::string& flag) {
    return flag + " needs a value (see --help)";
  };
  spec.messages.unexpected_operand = [](const std::string& shown) {
    return "unexpected argument '" + shown +
           "' (anvil mcp takes options only; the commands come from the client)";
  };
  spec.echo = SanitizeFlagArgument;
  spec.help.options_title = false;
  spec.help.column = 21;
  return spec;
}

CommandSpec McpCommandSpec() {
  static mcp_server::McpOptions unused;
  static std::string unused_workspace;
  return McpFlags(unused, unused_workspace);
}

}  // namespace anvil::cli
