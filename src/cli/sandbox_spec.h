// `anvil sandbox`'s and anvil-exec-runner's flags, in one table (common/flag_set.h): the parser,
// --help, the man page and the shell completions all come from it. ParseSandboxArgs
// (src/cli/sandbox_command.h) is three steps: ParseSandboxFlags (argv to what the flags said;
// pure), the Validate steps below (their combinations; pure, tests/unit/sandbox_args_test.cc)
// and the resolution (src/cli/sandbox_resolve.cc: paths, the configuration, the program).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cli/sandbox_command.h"
#include "common/flag_set.h"

namespace anvil::cli {

// What the flags said, before the workspace, the command and the configuration are resolved.
// Paths are as given: --writable-root in policy.extra_writable_roots and --readable-root in
// config_flags.readable_roots until the resolution makes them canonical and checks they exist.
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
  std::vector<std::string> command;  // CMD [ARGS...]
};

// Whether `fd` is open in this process: the one fact parsing reads (a descriptor flag's value is
// "an open descriptor number"). Tests pass their own.
using DescriptorProbe = std::function<bool(int fd)>;
bool DescriptorIsOpen(int fd);  // fcntl(F_GETFD)

// The table; its handlers fill `into` (which must outlive the table).
CommandSpec SandboxCommandSpec(SandboxFrontEnd front_end, SandboxArgs& into,
                               DescriptorProbe open = DescriptorIsOpen);
// The same table for its documentation (the handlers fill a value nobody reads).
CommandSpec SandboxCommandSpec(SandboxFrontEnd front_end);

// Parse: the flags and CMD [ARGS...], each value checked on its own; no path is looked at.
// --help anywhere is an error here (RunSandboxCommand answers a leading one first).
Result<SandboxArgs> ParseSandboxFlags(const std::vector<std::string>& args,
                                      SandboxFrontEnd front_end,
                                      const DescriptorProbe& open = DescriptorIsOpen);

// Validate, before anything is resolved: where the command comes from (CMD, --exec-fd or
// --call-fd, which takes the readable workspace paths from the call: their list starts empty).
Status ValidateCommandSource(SandboxArgs& a);

// Validate, once the workspace is set and the configuration applied (cli/sandbox_setup.h): the
// combinations of policy, network, readable paths and proxy options. Also what follows from them:
// relative --read-only-subpath paths are taken under the workspace, a readable list holding "."
// is the whole workspace, and danger-full-access has the full network unless --network was given.
Status ValidatePolicyCombination(SandboxArgs& a);

// Set under --network none unless the caller's environment has them: tools' update checks and
// telemetry, which can only be refused there.
inline constexpr const char* kOfflineQuiet[] = {
    "NO_UPDATE_NOTIFIER=1",
    "npm_config_update_notifier=false",
    "PIP_DISABLE_PIP_VERSION_CHECK=1",
    "DOTNET_CLI_TELEMETRY_OPTOUT=1",
    "NEXT_TELEMETRY_DISABLED=1",
    "GATSBY_TELEMETRY_DISABLED=1",
    "HOMEBREW_NO_AUTO_UPDATE=1",
    "DO_NOT_TRACK=1",
};

// The command's environment (pure): the caller's (or the minimal one) filtered by the --*-env
// flags, ANVIL_SANDBOX, the proxy's variables with --network proxy (and `test_ca`, the
// resolved --unsafe-test-ca, for the usual CA variables), no TMPDIR when files are confined.
// `caller_is_root`: the caller's effective uid is 0, so a confined command is uid 0 of its own
// user namespace, which owns nothing but the caller's own ids (GNU tar is told not to restore
// an archive's owners, which it tries as root and cannot do there).
std::vector<std::string> SandboxEnvironment(const SandboxArgs& a,
                                            const std::vector<std::string>& environ_entries,
                                            const std::string& test_ca,
                                            bool caller_is_root = false);

}  // namespace anvil::cli
