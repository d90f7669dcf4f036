#include "gateway/exec_job_check.h"

namespace anvil::gateway {

Result<CheckedJob> CheckJob(ExecRequest request, const ExecLimits& limits,
                            const ExecutableExistsFn& exists) {
  if (request.stdin_data.size() > limits.max_stdin_bytes) {
    return Fail("limit",
                "sys.exec stdin over " + std::to_string(limits.max_stdin_bytes) + " bytes");
  }
  auto rule = LookupExecRule(request.program);
  if (!rule) return tl::unexpected(rule.error());
  auto checked = CheckExecArgv(**rule, request.args, exists);
  if (!checked) return tl::unexpected(checked.error());
  // The shape only: which files the grant allows is the gateway's decision (it holds the grant
  // and the workspace); the plan cannot name anything outside the workspace.
  if (auto s = ValidateReadPlan(request.read_plan); !s) return tl::unexpected(s.error());
  return CheckedJob{*rule, std::move(*checked), std::move(request.read_plan),
                    std::move(request.stdin_data)};
}

}  // namespace anvil::gateway
