#include "session/exec_request.h"

#include <cstdio>

#include "agent/escalation.h"
#include "fs/workspace_path.h"
#include "policy/consent.h"

namespace anvil::session {
namespace {

using json = nlohmann::json;

Status Invalid(const std::string& what) { return Fail("invalid", "invalid params: " + what); }

const json* Member(const json& params, const char* key) {
  auto it = params.find(key);
  return it == params.end() || it->is_null() ? nullptr : &*it;
}

std::string StringOr(const json& j, const char* key, const std::string& fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

}  // namespace

bool ModeMayReplace(ApprovalMode session, ApprovalMode requested) {
  if (requested == session) return true;
  const bool session_middle =
      session == ApprovalMode::kOnRequest || session == ApprovalMode::kOnFailure;
  return session_middle;  // any mode from on-request/on-failure; none from untrusted or never
}

Result<ExecCall> ParseExecParams(const json& params, const ExecDefaults& defaults,
                                 std::string (*canonical)(const std::string&)) {
  ExecCall call;
  const json* argv = Member(params, "argv");
  const json* script = Member(params, "script");
  if ((argv == nullptr) == (script == nullptr)) {
    return tl::unexpected(
        Invalid("give exactly one of params.argv (an array of strings) and params.script (a "
                "shell script, run as sh -c SCRIPT)")
            .error());
  }
  if (argv != nullptr) {
    if (!argv->is_array() || argv->empty()) {
      return tl::unexpected(Invalid("params.argv must be a non-empty array of strings").error());
    }
    if (argv->size() > kMaxExecArgs) {
      return tl::unexpected(
          Invalid("params.argv has more than " + std::to_string(kMaxExecArgs) + " words").error());
    }
    for (const auto& word : *argv) {
      if (!word.is_string()) {
        return tl::unexpected(Invalid("params.argv must be an array of strings").error());
      }
      call.argv.push_back(word.get<std::string>());
    }
    if (call.argv[0].empty()) {
      return tl::unexpected(Invalid("params.argv[0] must name a program").error());
    }
  } else {
    if (!script->is_string() || script->get_ref<const std::string&>().empty()) {
      return tl::unexpected(Invalid("params.script must be a non-empty string").error());
    }
    call.argv = {"sh", "-c", script->get<std::string>()};
  }
  std::size_t bytes = 0;
  for (const auto& w : call.argv) {
    bytes += w.size() + 1;
    if (w.find('\0') != std::string::npos) {
      return tl::unexpected(Invalid("params.argv: a word holds a NUL character").error());
    }
  }
  if (bytes > kMaxExecArgvBytes) {
    return tl::unexpected(Invalid("the command (params.argv or params.script) is longer than " +
                                  std::to_string(kMaxExecArgvBytes) + " bytes")
                              .error());
  }

  call.cwd = defaults.workspace;
  if (const json* cwd = Member(params, "cwd")) {
    if (!cwd->is_string() || cwd->get_ref<const std::string&>().empty()) {
      return tl::unexpected(Invalid("params.cwd must be a directory (a string)").error());
    }
    const std::string& given = cwd->get_ref<const std::string&>();
    const std::string path = given[0] == '/' ? given : defaults.workspace + "/" + given;
    const std::string dir = canonical(path);
    if (dir.empty()) {
      return tl::unexpected(
          Invalid("params.cwd " + QuotePathForMessage(given) + " is not an existing directory")
              .error());
    }
    if (dir != defaults.workspace && dir.rfind(defaults.workspace + "/", 0) != 0) {
      return tl::unexpected(Invalid("params.cwd " + QuotePathForMessage(given) +
                                    " is outside the workspace " +
                                    QuotePathForMessage(defaults.workspace))
                                .error());
    }
    call.cwd = dir;
  }

  call.mode = defaults.mode;
  if (const json* mode = Member(params, "approval")) {
    auto parsed = mode->is_string() ? ParseApprovalMode(mode->get<std::string>()) : std::nullopt;
    if (!parsed) {
      return tl::unexpected(
          Invalid("params.approval must be \"untrusted\", \"on-failure\", \"on-request\" or "
                  "\"never\"")
              .error());
    }
    if (!ModeMayReplace(defaults.mode, *parsed)) {
      return tl::unexpected(
          Invalid("params.approval \"" + std::string(ToString(*parsed)) +
                  "\" would ask less than this session's mode \"" +
                  std::string(ToString(defaults.mode)) +
                  "\" (anvil serve --approval, the person's choice); fix: leave approval out")
              .error());
    }
    call.mode = *parsed;
  }

  std::vector<std::string> widen_args;
  const json* widen = Member(params, "widen");
  const json* reason = Member(params, "reason");
  if (widen != nullptr) {
    if (!widen->is_string()) {
      return tl::unexpected(Invalid("params.widen must be a string: writable-git, "
                                    "allow-host=HOST[:PORT] or writable-root=DIR")
                                .error());
    }
    if (auto w = agent::ParseWidening(widen->get<std::string>()); !w) {
      return tl::unexpected(Invalid("params.widen: " + w.error().message).error());
    }
    if (reason == nullptr || !reason->is_string() ||
        reason->get_ref<const std::string&>().empty()) {
      return tl::unexpected(
          Invalid("params.reason must be a non-empty string when params.widen is given (it is "
                  "shown to the person asked)")
              .error());
    }
    widen_args = {"--widen", widen->get<std::string>(), "--reason", reason->get<std::string>()};
  } else if (reason != nullptr) {
    return tl::unexpected(Invalid("params.reason goes with params.widen").error());
  }

  long long timeout_ms = defaults.timeout.count();
  if (const json* timeout = Member(params, "timeout_ms")) {
    if (!timeout->is_number_integer() || timeout->get<long long>() <= 0 ||
        timeout->get<long long>() > kMaxExecTimeoutMs) {
      return tl::unexpected(Invalid("params.timeout_ms must be an integer from 1 to " +
                                    std::to_string(kMaxExecTimeoutMs))
                                .error());
    }
    timeout_ms = timeout->get<long long>();
  }

  if (const json* token = Member(params, "workDoneToken")) {
    if (!token->is_string() && !token->is_number_integer()) {
      return tl::unexpected(Invalid("params.workDoneToken must be a string or an integer").error());
    }
    call.progress_token = *token;
  }

  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.3f", static_cast<double>(timeout_ms) / 1000.0);
  call.exec_args = {"exec",
                    "--ask-fd",
                    "3",
                    "--requester",
                    "anvil serve",
                    "--approval",
                    std::string(ToString(call.mode)),
                    "--cwd",
                    defaults.workspace,
                    "--timeout",
                    seconds};
  // The session's workspace stays the sandbox's (its Anvil.toml narrowing, its rules, its audit
  // log); the request's directory is only where the command starts.
  if (call.cwd != defaults.workspace) {
    call.exec_args.push_back("--workdir");
    call.exec_args.push_back(call.cwd);
  }
  call.exec_args.insert(call.exec_args.end(), widen_args.begin(), widen_args.end());
  call.exec_args.push_back("--");
  call.exec_args.insert(call.exec_args.end(), call.argv.begin(), call.argv.end());
  return call;
}

json ApproveParams(const json& question, const json& request_id) {
  json widening = nullptr;
  if (auto it = question.find("widening"); it != question.end() && it->is_object()) {
    widening = *it;
  }
  json argv = json::array();
  if (auto it = question.find("command"); it != question.end() && it->is_array()) argv = *it;
  auto agent_reason = question.find("agent_reason");
  return {
      {"title", StringOr(question, "title", "Anvil: a question")},
      {"text", StringOr(question, "text", "")},
      {"kind", StringOr(question, "kind", "command")},
      {"argv", argv},
      {"cwd", StringOr(question, "cwd", "")},
      {"mode", StringOr(question, "mode", "")},
      {"sandbox", StringOr(question, "sandbox", "")},
      {"reason", StringOr(question, "reason", "")},
      {"widening", widening},
      {"agentReason",
       agent_reason != question.end() && agent_reason->is_string() ? *agent_reason : json(nullptr)},
      {"choices", question.value("choices", json::array())},
      {"request", request_id}};
}

}  // namespace anvil::session
