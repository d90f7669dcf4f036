// A job of the exec broker (exec_broker.h): one process per call. It reads the call from its
// connection, checks it (exec_job_check.h), prepares the program and stdin, hands the call to
// its warm runner (exec_warm_runner.h), pumps the tool's output under the caps while watching
// for a cancel and the deadline (the output pump), and answers with the outcome. The outcome is
// decided from what the pump saw alone (JobOutcome, pure).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "common/unique_fd.h"
#include "gateway/exec_broker.h"
#include "gateway/exec_request.h"
#include "gateway/exec_warm_runner.h"
#include "ipc/frame.h"

namespace anvil::gateway {

using Clock = std::chrono::steady_clock;

inline constexpr auto kTermGrace = std::chrono::milliseconds(500);
inline constexpr auto kBackstop = std::chrono::seconds(3);  // beyond the runner's own timeout

// Milliseconds until `t` (rounded up), 0 when it has passed: a poll timeout.
int MillisUntil(Clock::time_point t);

// A warm job's process: starts its runner at once, then waits for the one connection the
// broker hands it on `link`. EOF on `link` (the broker is shutting down): the unused runner
// ends quietly. Returns the process exit status.
int WarmJobMain(int link, int runner_fd, const ExecBrokerConfig& config);

// ---- the output pump -------------------------------------------------------------------------

// A call the runner took: the runner's process and every descriptor the pump watches.
struct RunningCall {
  pid_t child = -1;  // the runner
  UniqueFd pidfd;    // the runner's (none on a kernel without pidfds)
  UniqueFd done;     // the call channel: init writes kWarmCallDone and the wait status on it
  UniqueFd out_r, err_r, rep_r;
  UniqueFd stdin_w;  // while stdin has more to write
  bool reaped = false;
  int status = 0;
};

// What the pump saw.
struct PumpEnd {
  ExecResult result;          // the output read within the caps; `limit` names a cap passed
  std::string report;         // the runner's report (JSON), as read
  bool cancelled = false;     // the gateway withdrew the call
  bool backstop_hit = false;  // the call passed its timeout and the backstop
  // Init said the command is over (kWarmCallDone) and nothing stopped it: its wait status.
  // The answer is sent before the runner has torn the sandbox down.
  std::optional<int32_t> done_status;
};

// Moves the runner's descriptors into a call (`runner` has none left).
RunningCall TakeCall(Runner& runner, UniqueFd stdin_w);

// Writes stdin, reads stdout, stderr and the report under the caps, stops the tool when a cap
// is passed, the gateway cancels (anything readable on `conn`) or the deadline (the call's
// timeout plus the backstop) passes, until the runner is gone and its pipes are closed, or init
// said the command is over.
PumpEnd PumpOutput(int conn, RunningCall& call, const std::string& stdin_data,
                   const ExecLimits& limits);

// After an early answer: the runner tears the sandbox down, and is reaped within a bound.
void ReapAfterAnswer(RunningCall& call);

// ---- the outcome -----------------------------------------------------------------------------

// The answer to the call, from what the pump saw: the tool's status and output, or the error
// (cancelled, timeout, sandbox: the runner failed closed, io: the tool could not start).
// `program` names the tool in messages.
ipc::Response JobOutcome(PumpEnd end, std::chrono::milliseconds timeout,
                         const std::string& program);

}  // namespace anvil::gateway
