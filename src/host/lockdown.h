// The plugin host's lockdown (T4): applied after the plugin's files are read and before its
// first line runs, each step verified; any failure means the plugin never starts.
//   1. rlimits: address space, open files, no new processes, CPU seconds, no core dumps
//   2. no_new_privs
//   3. Landlock: every filesystem right handled and none granted; TCP bind/connect handled
//      and none granted (ABI 4+); signals and abstract sockets scoped (ABI 6+)
//   4. seccomp allowlist (seccomp::BuildPluginHostFilter)
//   5. verification: opening a file and making a socket must now fail
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace anvil::host {

struct LockdownOptions {
  uint64_t address_space = 1ull << 30;  // RLIMIT_AS (VM budget + runtime + headroom)
  uint64_t open_files = 16;             // RLIMIT_NOFILE (only the two sockets are needed)
  uint64_t cpu_seconds = 60;            // RLIMIT_CPU backstop (the trusted side's deadline first)
  std::string fail_step_for_testing;    // "landlock", "seccomp", "rlimit": inject a failure
};

Status LockDown(const LockdownOptions& options);

}  // namespace anvil::host
