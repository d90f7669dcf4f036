// anvil/exec (docs/protocol.md, section 4): an editor or agent asks `anvil serve` to run a
// command through the same flow as `anvil exec` (agent/exec_flow.h). The session runs it as a
// child `anvil exec --ask-fd 3 ...` and forwards each question the child asks to the editor as
// anvil/approve, so the serve loop stays one thread and never waits for a person (see
// docs/architecture.md). This file is the pure part: the request's params checked field by
// field into that child's command line, and the anvil/approve params made of a question.
// Table tests: tests/unit/exec_request_test.cc.
#pragma once

#include <chrono>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "policy/approval.h"

namespace anvil::session {

// What one anvil/exec result holds of the command's output, per stream; beyond, the rest is
// read and dropped and "stdout_truncated" / "stderr_truncated" say so.
inline constexpr std::size_t kExecOutputCapBytes = 256 * 1024;
// The command given: at most this many words and bytes in all.
inline constexpr std::size_t kMaxExecArgs = 4096;
inline constexpr std::size_t kMaxExecArgvBytes = 256 * 1024;
// A timeout_ms beyond a day is refused.
inline constexpr long long kMaxExecTimeoutMs = 24LL * 3600 * 1000;

struct ExecDefaults {
  std::string workspace;  // canonical
  ApprovalMode mode = ApprovalMode::kOnRequest;
  std::chrono::milliseconds timeout{10000};
};

struct ExecCall {
  std::vector<std::string> argv;  // the command
  std::string cwd;                // canonical, the workspace or inside it
  ApprovalMode mode = ApprovalMode::kOnRequest;
  // `anvil exec`'s arguments (after "exec"), "--ask-fd 3" included, "--", the command.
  std::vector<std::string> exec_args;
  nlohmann::json progress_token;  // null: none
};

// Whether a request may run in `requested` in a session whose person chose `session`: only
// where it asks at least whenever the session's mode would (so "untrusted" stays "untrusted",
// and "never" is never turned into questions); between "on-request" and "on-failure", and from
// them to "untrusted" or "never", it may.
bool ModeMayReplace(ApprovalMode session, ApprovalMode requested);

// params {argv | script, cwd?, approval?, widen?, reason?, timeout_ms?, workDoneToken?}. An
// error's message names the field and what it must be ("params.argv must be ...").
// `canonical`: realpath, injected (a directory that does not exist gives "").
Result<ExecCall> ParseExecParams(const nlohmann::json& params, const ExecDefaults& defaults,
                                 std::string (*canonical)(const std::string&));

// The anvil/approve params for a question anvil exec asked (agent/ask_protocol.h): title, text,
// argv, cwd, mode, sandbox, reason, widening (null or {kind, value, flags}), agentReason (null
// or the agent's words), choices, and request: the anvil/exec request's id.
nlohmann::json ApproveParams(const nlohmann::json& question, const nlohmann::json& request_id);

}  // namespace anvil::session
