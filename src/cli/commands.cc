#include "cli/commands.h"

#include <unistd.h>

#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "cli/doctor_command.h"
#include "cli/exec_command.h"
#include "cli/exec_spec.h"
#include "cli/mcp_command.h"
#include "cli/mcp_spec.h"
#include "cli/rules_command.h"
#include "cli/rules_spec.h"
#include "cli/run_command.h"
#include "cli/sandbox_command.h"
#include "cli/sandbox_spec.h"
#include "cli/serve_command.h"
#include "policy/display_text.h"
#include "policy/user_config.h"

namespace anvil::cli {
namespace {

constexpr int kExitUsage = 2;

const CommandEntry* FindCommand(const std::string& name) {
  for (const CommandEntry& c : AnvilCommands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::vector<std::string> CommandNames() {
  std::vector<std::string> names;
  for (const CommandEntry& c : AnvilCommands()) names.push_back(std::string(c.name));
  return names;
}

int UnknownCommand(const std::string& command) {
  std::cerr << "anvil: invalid: unknown command '" << SanitizeForDisplay(command, 64)
            << "' (see anvil --help)";
  std::vector<std::string> known = CommandNames();
  known.push_back("help");
  if (auto s = Suggest(command, known)) std::cerr << "; did you mean " << *s << "?";
  std::cerr << "\n";
  return kExitUsage;
}

}  // namespace

const std::vector<CommandEntry>& AnvilCommands() {
  static const std::vector<CommandEntry> commands = {
      {"sandbox", [] { return SandboxCommandSpec(SandboxFrontEnd::kAnvilSandbox); },
       [](const std::vector<std::string>& args) {
         return RunSandboxCommand(args, SandboxFrontEnd::kAnvilSandbox);
       }},
      {"exec", ExecCommandSpec, RunExecCommand},
      {"mcp", McpCommandSpec, RunMcpCommand},
      {"run", RunCommandSpec, RunRunCommand},
      {"serve", ServeCommandSpec, RunServeCommand},
      {"plugin", PluginCommandSpec, RunPluginCommand},
      {"audit", AuditCommandSpec, RunAuditCommand},
      {"rules", RulesCommandSpec, RunRulesCommand},
      {"doctor", DoctorCommandSpec, RunDoctorCommand},
  };
  return commands;
}

ToolSpec AnvilTool(std::string version) {
  ToolSpec tool;
  tool.version = std::move(version);
  tool.summary = "Run untrusted plugins and commands without trusting them.";
  tool.description =
      "Anvil lets editors and coding agents run untrusted plugins (Lua 5.4, QuickJS) and\n"
      "untrusted commands on Linux without trusting them. Every command runs behind several\n"
      "independent kernel walls: a private mount view (read-only system, writable workspace with\n"
      ".git and .anvil kept read-only), Landlock, seccomp-bpf, user, pid and network\n"
      "namespaces, no_new_privs and resource limits. If any wall the policy needs cannot be\n"
      "built, nothing runs.\n"
      "\n"
      "Exit status of a sandboxed command is the command's own; 128+N when killed by signal N;\n"
      "124 on timeout; 125 when the sandbox could not be set up (nothing ran); 126 not\n"
      "executable; 127 not found. Usage errors exit 2.";
  tool.flags = {
      Switch("-h, --help",
             "this help; `anvil COMMAND --help` or `anvil help COMMAND` for one "
             "command",
             [] {}),
      Switch("-V, --version", "the version and the commit it was built from", [] {}),
  };
  tool.examples = {
      "anvil doctor",
      "anvil sandbox -- make test",
      "anvil sandbox --policy read-only --json -- rg TODO",
      "anvil run --approve examples/plugins/hello-lua summary",
      "anvil rules check -- git push --force origin main",
  };
  for (const CommandEntry& c : AnvilCommands()) tool.commands.push_back(c.spec());
  return tool;
}

namespace {
std::string& VersionSlot() {
  static std::string version;
  return version;
}
}  // namespace

std::string_view AnvilVersion() { return VersionSlot(); }

int RunAnvil(const std::vector<std::string>& args, std::string_view version,
             std::string_view version_line) {
  VersionSlot() = std::string(version);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << RenderToolHelp(AnvilTool(std::string(version)));
    return args.empty() ? kExitUsage : 0;
  }
  const std::string& command = args[0];
  if (command == "__complete") {
    // For the generated completion scripts (command_docs.cc): the names `--profile` takes,
    // built-in and from the user's config.toml. Prints nothing it cannot read; never fails.
    if (args.size() == 2 && args[1] == "profiles") {
      std::set<std::string> names;
      for (const auto& [name, profile] : BuiltinProfiles()) names.insert(name);
      std::vector<std::string> env;
      for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
      if (auto config = LoadUserConfig(UserConfigPath(env))) {
        for (const auto& [name, profile] : config->profile_defs) names.insert(name);
      }
      for (const auto& name : names) std::cout << SanitizeForDisplay(name, 100) << "\n";
      return 0;
    }
    return kExitUsage;
  }
  if (command == "--version" || command == "-V") {
    std::cout << version_line << "\n";
    return 0;
  }
  if (command == "help") {
    if (args.size() == 1) {
      std::cout << RenderToolHelp(AnvilTool(std::string(version)));
      return 0;
    }
    const CommandEntry* entry = FindCommand(args[1]);
    if (entry == nullptr) return UnknownCommand(args[1]);
    // The command's own --help: one text, whichever way it is asked for.
    return entry->run({"--help"});
  }
  if (!command.empty() && command[0] == '-') {
    std::cerr << "anvil: invalid: unknown option " << SanitizeForDisplay(command, 100)
              << " (see anvil --help)";
    if (auto s = Suggest(command, {"--help", "--version"})) {
      std::cerr << "; did you mean " << *s << "?";
    }
    std::cerr << "\n";
    return kExitUsage;
  }
  const CommandEntry* entry = FindCommand(command);
  if (entry == nullptr) return UnknownCommand(command);
  return entry->run(std::vector<std::string>(args.begin() + 1, args.end()));
}

}  // namespace anvil::cli
