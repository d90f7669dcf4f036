// `anvil sandbox`'s and anvil-exec-runner's flags, in one table (common/flag_set.h): the parser
// (ParseSandboxArgs, src/cli/sandbox_command.h), --help, the man page and the shell completions
// all come from it.
#pragma once

#include <string>
#include <vector>

#include "cli/sandbox_command.h"
#include "common/flag_set.h"

namespace anvil::cli {

// What the flags said, before the workspace, the command and the configuration are resolved.
struct SandboxArgs {
  SandboxInvocation inv;  // the flags that go straight into the invocation and its LaunchSpec
  EnvPolicy env;
  std::string cwd;
  std::string workdir;  // --workdir: CMD's working directory (default: the workspace)
  bool network_explicit = false;
  SandboxFlags config_flags;
  bool minimal_env = false;
  int exec_fd = -1;
  int call_fd = -1;
  bool readable_flags = false;  // --readable-path or --no-workspace-read
  std::vector<std::string> allow_hosts;
  std::string unsafe_test_ca;
};

// The table; its handlers fill `into` (which must outlive the table).
CommandSpec SandboxCommandSpec(SandboxFrontEnd front_end, SandboxArgs& into);
// The same table for its documentation (the handlers fill a value nobody reads).
CommandSpec SandboxCommandSpec(SandboxFrontEnd front_end);

}  // namespace anvil::cli
