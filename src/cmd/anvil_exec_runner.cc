// anvil-exec-runner: sandboxes itself and execs one fixed executable handed over as an fd.
// The gateway's sys.exec path; same walls as `anvil sandbox`.
#include <string>
#include <vector>

#include "cli/sandbox_command.h"
#include "common/std_fds.h"

int main(int argc, char** argv) {
  // Before anything opens a descriptor (common/std_fds.h).
  if (!anvil::EnsureStandardDescriptors()) return 125;
  std::vector<std::string> args(argv + 1, argv + argc);
  return anvil::cli::RunSandboxCommand(args, anvil::cli::SandboxFrontEnd::kExecRunner);
}
