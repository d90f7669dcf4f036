// anvil: the CLI and trusted editor side. Hands off to src/cli (commands.h).
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "anvil_build_info.h"  // generated: ANVIL_VERSION, ANVIL_COMMIT
#include "cli/commands.h"
#include "common/std_fds.h"
#include "gateway/gateway.h"
#include "policy/display_text.h"
#include "session/gateway_process.h"

int main(int argc, char** argv) {
  // Before anything opens a descriptor (common/std_fds.h).
  if (!anvil::EnsureStandardDescriptors()) return 125;
  std::vector<std::string> args(argv + 1, argv + argc);
  // The offline gateway's code is linked in: sessions fork it instead of exec'ing the helper.
  anvil::session::SetInProcessGateway("anvil-gateway-offline", &anvil::gateway::GatewayMain);
  // No input may abort anvil: an exception that escaped a subcommand (a bug) still unwinds, so
  // the sessions it started stop their gateway and hosts, and the user gets an error line.
  try {
    return anvil::cli::RunAnvil(args, ANVIL_VERSION,
                                "anvil " ANVIL_VERSION " (commit " ANVIL_COMMIT ")");
  } catch (const std::exception& e) {
    std::cerr << "anvil: internal: unexpected failure: " << anvil::SanitizeForDisplay(e.what())
              << " (this is a bug; please report it)\n";
  }
  // A command run in the sandbox reports its own status; 125 says nothing ran as asked.
  const bool runs_a_command = !args.empty() && (args[0] == "sandbox" || args[0] == "exec");
  return runs_a_command ? 125 : 1;
}
