// The warm runner, seen from the exec broker's job process: anvil-exec-runner started with
// --call-fd before any call exists, so that by the time a call comes it has made its
// namespaces, pids cgroup and file view (all but the workspace's readable paths) and waits on
// its call channel (linux/sandbox_launch.h, SendWarmCall). Started with vfork (the job's
// address space is a fork of the gateway's), in a process group of its own, killed with its job.
#pragma once

#include <sys/types.h>

#include <string>

#include "common/result.h"
#include "common/unique_fd.h"
#include "gateway/exec_broker.h"

namespace anvil::gateway {

// A started anvil-exec-runner waiting for its one call (warm).
struct Runner {
  pid_t pid = -1;                // -1: none (not started, handed on, or reaped)
  UniqueFd call;                 // SOCK_STREAM to the sandbox's init
  UniqueFd out_r, err_r, rep_r;  // the tool's stdout and stderr, the runner's report
};

// Starts a runner from `runner_fd` (anvil-exec-runner, opened once by the broker).
Result<Runner> SpawnRunner(int runner_fd, const ExecBrokerConfig& config);

// Reads what is left of a runner's report once it is gone (bounded wait), and reaps it.
std::string FinishedRunnerReport(Runner& r);

// An unused runner: EOF on its call channel ends it quietly (its pids cgroup removed), then it
// is reaped; one that does not end in time is killed with its group.
void RetireRunner(Runner& r);

// Kills the runner's process group and reaps it.
void KillRunner(Runner& r);

}  // namespace anvil::gateway
