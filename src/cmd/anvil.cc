// anvil: the CLI and trusted editor side. Hands off to src/cli (commands.h).
#include <string>
#include <vector>

#include "anvil_build_info.h"  // generated: ANVIL_VERSION, ANVIL_COMMIT
#include "cli/commands.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return anvil::cli::RunAnvil(args, ANVIL_VERSION,
                              "anvil " ANVIL_VERSION " (commit " ANVIL_COMMIT ")");
}
