// Runs one command inside the command sandbox and supervises it to the end. Shared by
// `anvil sandbox` and `anvil-exec-runner` (the gateway's sys.exec), so both get the same walls.
//
// Process shape:
//   supervisor (caller; outside)      — deadline, signal forwarding, exit report
//     └─ init  (pid 1 of a new pid ns; new user+mount+ipc[+net] ns)  — builds the file view,
//        │                                 reaps; its exit tears down the whole namespace
//        └─ command (own session)          — rlimits, no_new_privs, Landlock, caps dropped,
//                                            seccomp, then execveat(program fd)
// When no pid namespace can be made, init is a child subreaper that kills and reaps every
// remaining descendant when the command ends.
//
// One file per process: the supervisor (sandbox_launch.cc), init (sandbox_init.cc), the command
// (sandbox_command.cc); what they share (sandbox_process.h: the plan, failing), the records
// they send the supervisor (sandbox_report.h), the warm call's wire format (warm_call.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "linux/git_guard.h"
#include "policy/protected_names_plan.h"
#include "policy/refusals.h"
#include "policy/sandbox_policy.h"

namespace anvil {

// Where the proxy listens inside a --network proxy sandbox (127.0.0.1 and ::1).
inline constexpr uint16_t kProxyPort = 3128;

struct ResourceLimits {
  std::optional<uint64_t> processes = 4096;  // RLIMIT_NPROC, counted per sandbox (userns)
  std::optional<uint64_t> open_files;        // RLIMIT_NOFILE
  std::optional<uint64_t> address_space;     // RLIMIT_AS, bytes
  std::optional<uint64_t> data;              // RLIMIT_DATA, bytes (heap and private writable maps)
  std::optional<uint64_t> file_size;         // RLIMIT_FSIZE, bytes
  std::optional<uint64_t> cpu_seconds;       // RLIMIT_CPU
  uint64_t tmp_size = 1ULL << 30;            // size= of the private /tmp tmpfs
  bool tmp_size_set = false;                 // --limit tmp: a throw-away tmpfs of that size
  // --limit shm: size= of the view's /dev/shm; nullopt: DevShmSize's rule (linux/memory_cgroup.h).
  std::optional<uint64_t> shm_size;
  // Memory ceiling of the whole sandbox, bytes (a memory cgroup, where one can be had:
  // linux/memory_cgroup.h); 0: none. kDefaultMemoryCeiling: half of the physical memory.
  static constexpr uint64_t kDefaultMemoryCeiling = UINT64_MAX;
  uint64_t memory = kDefaultMemoryCeiling;
};

struct LaunchSpec {
  SandboxPolicy policy;
  UniqueFd program;  // the executable, opened once outside (O_PATH)
  // The path the lookup outside produced for `program` (linux/program_exec.h): run by that path
  // when it names the same file in the view. Empty: run the descriptor (sys.exec).
  std::string program_path;
  // `program_path` was a symbolic link outside (ResolvedProgram::link): never run as its target
  // where the view does not show its directory (ExecWay::kHidden).
  bool program_is_link = false;
  // The virtualenv or conda environment `program_path`'s directory belongs to, seen outside
  // (ProgramEnvironment): what the message names when the view does not show it.
  std::string program_environment;
  std::vector<std::string> argv;  // argv[0] as the user wrote it
  std::vector<std::string> env;   // final environment, NAME=VALUE
  std::string cwd;                // absolute; must be inside the view
  // `cwd` by the workspace's logical path (SandboxPolicy::workspace_logical), the one the
  // command enters when it leads to `cwd` in the view (`env` then says so in PWD); else `cwd`,
  // with PWD set to it. Empty: none.
  std::string logical_cwd;
  std::optional<std::chrono::milliseconds> timeout;
  ResourceLimits limits;
  // --network proxy: a SOCK_SEQPACKET end connected to anvil-proxy; init sends it the listening
  // sockets it makes inside the network namespace (then closes it).
  UniqueFd proxy_channel;
  // Bounds of the search for git repositories in the writable roots (workspace-write without
  // --writable-git): past one the sandbox does not start.
  GitScanLimits git_scan_limits;
  // Test-only fault injection: fail the named set-up step ("landlock", "seccomp", "mount",
  // "userns") to prove nothing runs when a layer cannot be applied. Never set by user input.
  std::string fail_step_for_testing;
  // Warm start (anvil-exec-runner --call-fd): a SOCK_STREAM end on which init, once everything
  // that does not depend on the call is in place (namespaces, pids cgroup, the file view but for
  // the workspace's readable paths), waits for one call (SendWarmCall): the program, stdin,
  // argv and readable workspace paths. `program` and `argv` stay empty until then; the policy
  // must name an empty workspace_read_subpaths list (the call fills it in). The timeout counts
  // from the call. EOF instead of a call ends the sandbox without running anything.
  UniqueFd call_channel;
  // Record what the sandbox refuses the command (linux/refusal_observer.h) into
  // SandboxOutcome::refusals. Cold starts with a confined filesystem only.
  bool observe_refusals = false;
  // The command may ptrace, and read and write the memory of, its own processes (debuggers,
  // strace, LeakSanitizer): seccomp leaves ptrace and process_vm_readv/writev to the kernel's
  // checks and Landlock, which refuse every process outside the command's Landlock domain (the
  // sandbox's init, Anvil, other sandboxes, the rest of the host; docs/policy.md "Debuggers
  // and sanitizers"). Confined policies only. `anvil sandbox` sets it; anvil-exec-runner
  // (sys.exec) never does.
  bool allow_tracing = false;
};

// The one call a warm sandbox takes (LaunchSpec::call_channel).
struct WarmCall {
  std::vector<std::string> argv;  // argv[0] as shown to the program
  // What of the workspace the view holds (fs/read_plan.h; checked again by the sandbox).
  std::vector<ReadOp> read_plan;
  // With SandboxPolicy::runtime_from_call: the tool's executable, loader, libraries and
  // ld.so.cache (absolute host paths); the only system files of the view.
  std::vector<std::string> runtime_files;
};
// Sends `call` with the program (O_PATH fd) and stdin descriptors. Blocks until sent; an
// "io" error when the sandbox's init is gone (it died, or its warm-up failed).
Status SendWarmCall(int channel, int program_fd, int stdin_fd, const WarmCall& call);
// What init writes back on the channel once it holds the whole call: from here on the call is
// the sandbox's (its report says how it ended).
inline constexpr char kWarmCallTaken = 'T';
// What init writes next on the channel when the command has exited and init has killed and
// reaped every other process of the sandbox: kWarmCallDone, then the command's wait status
// (int32_t, host byte order). It comes before the namespaces are torn down and the runner
// exits: from here on no process of the sandbox runs and all the command's output is in its
// pipes, so the caller may answer at once. A call that ends any other way (timeout, a set-up or
// exec failure, killed) sends nothing: the runner's report says how it ended.
inline constexpr char kWarmCallDone = 'D';

// What each layer ended up as, for --json and doctor.
struct LayerReport {
  bool user_namespace = false;
  bool pid_namespace = false;
  bool mount_namespace = false;
  bool net_namespace = false;
  int landlock_abi = 0;  // 0 when Landlock was not applied
  bool landlock_net = false;
  bool landlock_scoped = false;
  bool seccomp = false;
  bool no_new_privs = false;
  bool subreaper = false;
  bool process_limit = false;  // the process count is bounded (user-ns RLIMIT_NPROC or pids cgroup)
  uint64_t memory_limit = 0;   // bytes; 0: no memory cgroup could be had
  uint64_t shm_size = 0;       // bytes: size of the view's /dev/shm; 0: the view has none
  bool refusal_observer = false;  // linux/refusal_observer.h watched the command
};

struct SandboxOutcome {
  enum class Kind { kExited, kSignaled, kTimedOut, kSetupFailed, kExecFailed };
  Kind kind = Kind::kSetupFailed;
  int exit_status = 0;  // exit code (kExited) or signal number (kSignaled)
  int exec_errno = 0;   // kExecFailed
  std::string error;    // kSetupFailed / kExecFailed, "code: message"
  LayerReport layers;
  bool out_of_memory = false;  // the kernel killed a process at the memory ceiling
  double duration_ms = 0;
  GitReport git;  // the writable roots' repositories: protected, and what was quarantined
  // The workspace's Anvil.toml, when the check after the run moved it aside or could not
  // (policy/protected_names_plan.h, linux/workspace_config_watch.h).
  std::optional<ConfigQuarantine> workspace_config;
  // What the sandbox refused the command (LaunchSpec::observe_refusals), deduplicated, and how
  // many more the observer saw past its cap.
  std::vector<Refusal> refusals;
  size_t refusals_dropped = 0;

  // The exit status `anvil sandbox` uses: command's own, 128+N, 124, 125, 126, 127.
  int ShellStatus() const;
};

// Runs the command to completion. Never throws; any set-up failure is kSetupFailed and the
// command did not run.
SandboxOutcome RunSandboxed(LaunchSpec spec);

// Resolves CMD once, outside the sandbox: a name without '/' is looked up on `path_env`
// (the caller's PATH); opened O_PATH|O_CLOEXEC. Errors: not_found (127) / not_executable (126).
Result<UniqueFd> OpenExecutable(const std::string& command, const std::string& path_env,
                                const std::string& cwd);

}  // namespace anvil
