// The exec broker's own check of a call, made in the job process before anything starts:
// everything the gateway checked, again, with nothing taken on trust. The stdin cap, the
// program (an executable policy table entry, never a path), the argv against that entry's
// rules, and the read plan's shape (it cannot name anything outside the workspace; which files
// the grant allows is the gateway's decision, which holds the grant and the workspace).
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "fs/read_plan.h"
#include "gateway/exec_request.h"
#include "policy/exec_rules.h"

namespace anvil::gateway {

// A call that passed the check: what the job hands the runner.
struct CheckedJob {
  const ExecRule* rule = nullptr;
  CheckedArgv argv;          // the program's fixed path and the full argv
  std::vector<ReadOp> plan;  // see ExecRequest::read_plan
  std::string stdin_data;
};

// In this order: the stdin cap ("limit"), the program, the argv (the table's own errors:
// "not_found", "denied", "invalid"), the read plan ("invalid"). `exists` answers whether a
// table path names an executable (injected for tests).
Result<CheckedJob> CheckJob(ExecRequest request, const ExecLimits& limits,
                            const ExecutableExistsFn& exists = ExecutableExistsOnHost);

}  // namespace anvil::gateway
