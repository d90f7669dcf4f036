// sys.exec as the gateway hands it to the exec broker (exec_broker.h): the call (ExecRequest),
// its caps (ExecLimits), its answer (ExecResult), and their wire form on a job's connection,
// encoded and decoded here and nowhere else. A call is one request frame (op "exec", id 1);
// its answer is one response frame (id 1), an error or [code, stdout, stderr, stdout_truncated,
// stderr_truncated, limit].
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "fs/read_plan.h"
#include "ipc/frame.h"

namespace anvil::gateway {

struct ExecLimits {
  uint64_t max_stdout_bytes = 8u << 20;  // past this the tool is stopped; output kept, truncated
  uint64_t max_stderr_bytes = 1u << 20;
  uint64_t max_stdin_bytes = 8u << 20;
  std::chrono::milliseconds timeout{30000};  // per call; the whole tree is killed at the deadline
  uint64_t max_processes = 64;               // RLIMIT_NPROC inside (pids cgroup for root)
  uint32_t max_concurrent = 4;               // per session; beyond: "busy"
  uint64_t tmp_bytes = 16u << 20;            // the tool's private /tmp, and its /dev/shm
  uint64_t max_memory_bytes = 1ull << 30;    // RLIMIT_DATA of the tool (heap and anonymous maps)
};

struct ExecRequest {
  std::string program;            // a table name ("rg"), never a path
  std::vector<std::string> args;  // the plugin's argv, without argv[0]
  std::string stdin_data;
  // What of the workspace the tool's view holds (fs/read_plan.h), computed by the gateway from
  // the grant; the broker checks its shape, the runner builds it.
  std::vector<ReadOp> read_plan;
};

struct ExecResult {
  int code = 0;  // the tool's exit status, or 128+N when a signal ended it
  std::string stdout_data;
  std::string stderr_data;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  std::string limit;  // "" or the cap that stopped the tool: "stdout", "stderr"
};

// The call's frame. Its fields: program, stdin, the count of args, the args joined by NUL,
// the count of the read plan's strings, those strings joined by NUL.
ipc::Request EncodeExecCall(const ExecRequest& request);
// Only the form ("invalid: malformed exec request", or the read plan's own error): what the
// call may do is CheckJob's (exec_job_check.h).
Result<ExecRequest> DecodeExecCall(ipc::Request wire);

// The answer's frame: the tool ran (its status and output), or the call failed with `error`.
ipc::Response EncodeExecAnswer(ExecResult result);
ipc::Response EncodeExecError(const Error& error);
// The error of a failed call, or the result; "io" when the answer is malformed.
Result<ExecResult> DecodeExecAnswer(ipc::Response answer);

}  // namespace anvil::gateway
