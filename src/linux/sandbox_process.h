// What the sandbox's three processes share (sandbox_launch.h draws them): the plan the
// supervisor makes before the clone, which init (sandbox_init.cc) and the command
// (sandbox_command.cc) only read, and the way either of them fails.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/result.h"
#include "linux/landlock_rules.h"
#include "linux/sandbox_launch.h"
#include "linux/seccomp.h"
#include "linux/terminal_relay.h"
#include "linux/user_ns_limits.h"
#include "policy/sandbox_policy.h"

namespace anvil::launch {

// Everything decided before the clone; the children only read it.
struct Plan {
  LaunchSpec* spec = nullptr;
  bool confine_fs = false;
  FileView view;
  seccomp::Program filter;
  bool allow_tracing = false;  // the filter's (FilterChoice::allow_tracing)
  int landlock_abi = 0;
  // The command's Landlock rule set, made in the command's process before its rlimits are set
  // (PlanFileRules): nothing after the address-space limit may need fresh memory, which a
  // sanitizer runtime maps in large regions.
  landlock::RulesetPlan landlock_rules;
  bool userns = false, pidns = false, mountns = false, netns = false;
  uid_t uid = 0;
  gid_t gid = 0;
  int report_fd = -1;  // write end of the record pipe
  int alive_fd = -1;   // read end; HUP when the supervisor is gone
  int go_fd = -1;      // read end; one byte once init is in its pids cgroup (-1: no wait)
  // cgroup v1: `tasks` of the pids and memory cgroups, through which init joins them itself
  // (PidsCgroup/MemoryCgroup::OpenSelfAttach); -1 where the supervisor moves it instead.
  int cgroup_tasks_fds[2] = {-1, -1};
  bool program_is_script = false;
  bool process_limit = false;  // RLIMIT_NPROC in our user namespace, or a pids cgroup
  bool warm = false;           // spec->call_channel: the call arrives after the set-up
  uint64_t shm_size = 0;       // size= of the view's /dev/shm (DevShmSize)
  // Root's sandbox (root_remap.h): its 0 maps to an unprivileged host id, the supervisor writes
  // the maps and hands init idmapped trees of these roots over remap_fd (init's end).
  bool remap_root = false;
  std::vector<std::string> idmapped_roots;
  int remap_fd = -1;
  // The sandbox's user namespace's share of the caller's per-user counts (user_ns_limits.h).
  std::vector<UserNsLimit> user_limits;
  int stdin_fd = -1;  // warm start: the call's stdin, made fd 0 of the command
  // Warm start: the write end of a pipe on which the command, before it execs, writes one byte
  // when it fails (a layer, or the exec): its exit status is then not the tool's.
  int command_failed_fd = -1;
  const ChildStdStreams* streams = nullptr;  // what the command's descriptors 0-2 become
  int terminal_slave = -1;                   // init: the pseudo-terminal's slave, for the command
  // LaunchSpec::observe_refusals: the two ends of the socketpair on which the command hands
  // its seccomp listener to init (linux/refusal_observer.h); -1 without.
  int observer_command_fd = -1;
  int observer_init_fd = -1;
  std::vector<char*> argv, envp;
  // With spec->logical_cwd: the index in envp of its PWD, and the entry that takes its place
  // when the command enters spec->cwd instead.
  int pwd_index = -1;
  std::string pwd_fallback;
};

// The command's failure before its exec, for a warm call's caller (Plan::command_failed_fd).
void MarkCommandFailed(const Plan& plan);
// Reports `error` to the supervisor and exits 125: the command never runs.
[[noreturn]] void Die(const Plan& plan, const Error& error);
// The test-only failure of the named set-up step (LaunchSpec::fail_step_for_testing).
Status InjectedFailure(const Plan& plan, const char* step);
Status WriteFile(const char* path, const std::string& text);
// Pointers into `strings`, null-terminated, for exec.
std::vector<char*> CStrings(std::vector<std::string>& strings);
// Whether the program behind `fd` starts with "#!".
bool IsScript(int fd);

// The sandbox's init (sandbox_init.cc): builds what the command runs in, starts it, reaps.
[[noreturn]] void RunInit(Plan& plan);
// The command (sandbox_command.cc): puts up its walls, one after the other, and execs; the
// first step that fails reports it (Die) and nothing runs.
[[noreturn]] void ConfineAndExec(Plan& plan);

}  // namespace anvil::launch
