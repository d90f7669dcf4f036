// The outcome of an exec job (exec_job.h, JobOutcome): pure, from what the output pump saw.
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "gateway/exec_job.h"

namespace anvil::gateway {

ipc::Response JobOutcome(PumpEnd end, std::chrono::milliseconds timeout,
                         const std::string& program) {
  ExecResult& result = end.result;
  if (end.done_status) {
    const int32_t wait_status = *end.done_status;
    result.code = WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : WEXITSTATUS(wait_status);
    return EncodeExecAnswer(std::move(result));
  }
  if (end.cancelled) return EncodeExecError(Error{"cancelled", "sys.exec cancelled", 0});

  nlohmann::json parsed = nlohmann::json::parse(end.report, nullptr, /*allow_exceptions=*/false);
  std::string outcome = parsed.is_object() ? parsed.value("outcome", "") : "";
  std::string error = parsed.is_object() ? parsed.value("error", "") : "";
  if (!result.limit.empty()) {
    // Stopped by us at an output cap: what was read is the answer, marked truncated.
    result.code = parsed.is_object() ? parsed.value("exit_code", 0) : 0;
    return EncodeExecAnswer(std::move(result));
  }
  if (outcome == "timed_out" || end.backstop_hit) {
    char secs[32];
    std::snprintf(secs, sizeof(secs), "%g", static_cast<double>(timeout.count()) / 1000.0);
    return EncodeExecError(Error{"timeout",
                                 "sys.exec " + program + " passed its " + secs +
                                     " s limit; the whole process tree was killed",
                                 0});
  }
  if (outcome == "setup_failed" || outcome.empty()) {
    std::string why = !error.empty() ? error : "the runner ended without a report";
    return EncodeExecError(Error{"sandbox", "sys.exec did not run (fail closed): " + why, 0});
  }
  if (outcome == "exec_failed") {
    return EncodeExecError(Error{"io", "sys.exec could not start " + program + ": " + error, 0});
  }
  result.code = parsed.value("exit_code", 0);
  return EncodeExecAnswer(std::move(result));
}

}  // namespace anvil::gateway
