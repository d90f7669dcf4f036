// anvil: the CLI and trusted editor side. Parses the subcommand and hands off to src/cli.
#include <iostream>
#include <string>
#include <vector>

#include "cli/doctor_command.h"
#include "cli/exec_command.h"
#include "cli/rules_command.h"
#include "cli/run_command.h"
#include "cli/sandbox_command.h"
#include "cli/serve_command.h"

namespace {

constexpr char kUsage[] = R"(usage: anvil <command> [options]

Run untrusted plugins and commands without trusting them.

Commands:
  sandbox   run a command under a sandbox policy       (anvil sandbox --help)
  exec      run an agent's command (rules, approval) (anvil exec --help)
  run       run one command of a plugin, sandboxed     (anvil run --help)
  serve     JSON-RPC sidecar for editors and agents    (anvil serve --help)
  plugin    inspect, approve, revoke and lock plugins  (anvil plugin --help)
  audit     read the audit log of a workspace          (anvil audit --help)
  rules     check a command against the command rules  (anvil rules --help)
  doctor    check which kernel sandbox layers work     (anvil doctor --help)

Examples:
  anvil doctor
  anvil sandbox -- make test
  anvil sandbox --policy read-only --json -- rg TODO
  anvil run --approve examples/plugins/hello-lua summary
  anvil rules check -- git push --force origin main
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  std::string command = args[0];
  args.erase(args.begin());
  if (command == "sandbox") {
    return anvil::cli::RunSandboxCommand(args, anvil::cli::SandboxFrontEnd::kAnvilSandbox);
  }
  if (command == "exec") return anvil::cli::RunExecCommand(args);
  if (command == "doctor") return anvil::cli::RunDoctorCommand(args);
  if (command == "run") return anvil::cli::RunRunCommand(args);
  if (command == "serve") return anvil::cli::RunServeCommand(args);
  if (command == "plugin") return anvil::cli::RunPluginCommand(args);
  if (command == "audit") return anvil::cli::RunAuditCommand(args);
  if (command == "rules") return anvil::cli::RunRulesCommand(args);
  std::cerr << "anvil: invalid: unknown command '" << command << "' (see anvil --help)\n";
  return 2;
}
