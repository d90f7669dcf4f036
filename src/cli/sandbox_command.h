// `anvil sandbox` and `anvil-exec-runner`: command-line parsing into a LaunchSpec, and the run.
#pragma once

#include <string>
#include <vector>

#include "cli/sandbox_setup.h"
#include "common/result.h"
#include "linux/sandbox_launch.h"
#include "policy/env_policy.h"
#include "policy/refusals.h"

namespace anvil::cli {

struct SandboxInvocation {
  LaunchSpec spec;
  bool json = false;
  int report_fd = -1;  // anvil-exec-runner --report-fd: the JSON report goes here, not stderr
  // --network proxy: handed to anvil-proxy, which validates them.
  std::vector<std::string> allow_hosts;
  std::vector<std::string> unsafe_test_allow_addresses;  // test-only (trusted command line)
  std::string unsafe_test_resolver;                      // test-only: ADDR:PORT for the proxy
  bool quiet = false;        // --quiet: no summary of refusals on stderr
  SandboxSettings settings;  // configuration, profiles and home (anvil sandbox only)
};

enum class SandboxFrontEnd { kAnvilSandbox, kExecRunner };

// Parses the flags of INTERFACES.md (`--policy`, `--cwd`, `--writable-root`, ...,
// `-- CMD [ARGS...]`) with the front end's table and validates their combinations (both pure,
// src/cli/sandbox_spec.h), then resolves the paths, the workspace and the command once, outside
// the sandbox (src/cli/sandbox_resolve.cc). `environ_entries` is the caller's environment
// (NAME=VALUE).
Result<SandboxInvocation> ParseSandboxArgs(const std::vector<std::string>& args,
                                           const std::vector<std::string>& environ_entries,
                                           SandboxFrontEnd front_end);

// What one run came to, for a front end that runs the sandbox in-process (`anvil exec`).
struct SandboxRunFacts {
  bool started = false;  // set up and started: false when nothing ran (125)
  // What the sandbox and the proxy refused the command (policy/refusals.h): the facts an
  // escalation is decided from (anvil exec). Recorded whenever `facts` is given.
  std::vector<Refusal> refusals;
  // The command ran, but the check after it for git metadata could not vouch for the writable
  // roots (the run exits 125): why, in one line. "" when it could.
  std::string git_check_error;
};

// Runs the whole subcommand; returns the process exit status. `facts`, when given, is filled.
int RunSandboxCommand(const std::vector<std::string>& args, SandboxFrontEnd front_end,
                      SandboxRunFacts* facts = nullptr);

}  // namespace anvil::cli
