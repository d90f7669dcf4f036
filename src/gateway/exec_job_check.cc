#include "gateway/exec_job_check.h"

namespace anvil::gateway {

Result<CheckedJob> CheckJob(ExecRequest request, const ExecLimits& limits,
                            const ExecutableExistsFn& exists) {
  if (request.stdin_data.size() > limits.max_stdin_bytes) {
    return Fail("limit",
                "sys.exec stdin over " + std::to_string(limits.max_stdin_bytes) + " bytes");
  }
  ANVIL_TRY(rule, LookupExecRule(request.program));
  ANVIL_TRY(checked, CheckExecArgv(**rule, request.args, exists));
  // The shape only: which files the grant allows is the gateway's decision (it holds the grant
  // and the workspace); the plan cannot name anything outside the workspace.
  ANVIL_RETURN_IF_ERROR(ValidateReadPlan(request.read_plan));
  return CheckedJob{*rule, std::move(*checked), std::move(request.read_plan),
                    std::move(request.stdin_data)};
}

}  // namespace anvil::gateway
