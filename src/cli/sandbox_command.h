// `anvil sandbox` and `anvil-exec-runner`: command-line parsing into a LaunchSpec, and the run.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "linux/sandbox_launch.h"
#include "policy/env_policy.h"

namespace anvil::cli {

struct SandboxInvocation {
  LaunchSpec spec;
  bool json = false;
  int report_fd = -1;  // anvil-exec-runner --report-fd: the JSON report goes here, not stderr
  // --network proxy: handed to anvil-proxy, which validates them.
  std::vector<std::string> allow_hosts;
  std::vector<std::string> unsafe_test_allow_addresses;  // test-only (trusted command line)
};

enum class SandboxFrontEnd { kAnvilSandbox, kExecRunner };

// Parses the flags of INTERFACES.md (`--policy`, `--cwd`, `--writable-root`, ...,
// `-- CMD [ARGS...]`), resolves the workspace and the command once, outside the sandbox.
// `environ_entries` is the caller's environment (NAME=VALUE).
Result<SandboxInvocation> ParseSandboxArgs(const std::vector<std::string>& args,
                                           const std::vector<std::string>& environ_entries,
                                           SandboxFrontEnd front_end);

std::string SandboxUsage(SandboxFrontEnd front_end);

// Runs the whole subcommand; returns the process exit status.
int RunSandboxCommand(const std::vector<std::string>& args, SandboxFrontEnd front_end);

}  // namespace anvil::cli
