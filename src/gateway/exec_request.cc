#include "gateway/exec_request.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace anvil::gateway {
namespace {

std::string JoinNul(const std::vector<std::string>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out.push_back('\0');
    out += parts[i];
  }
  return out;
}

std::vector<std::string> SplitNul(const std::string& joined, size_t count) {
  std::vector<std::string> out;
  if (count == 0) return out;
  size_t start = 0;
  while (true) {
    size_t end = joined.find('\0', start);
    if (end == std::string::npos) {
      out.push_back(joined.substr(start));
      break;
    }
    out.push_back(joined.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

Result<size_t> ParseCount(const std::string& text) {
  if (text.empty() || text.size() > 6 || !std::all_of(text.begin(), text.end(), ::isdigit)) {
    return Fail("invalid", "malformed exec request");
  }
  return static_cast<size_t>(std::stoul(text));
}

}  // namespace

ipc::Request EncodeExecCall(const ExecRequest& request) {
  ipc::Request wire;
  wire.id = 1;
  wire.op = "exec";
  wire.args = {request.program,
               request.stdin_data,
               std::to_string(request.args.size()),
               JoinNul(request.args),
               std::to_string(2 * request.read_plan.size()),
               JoinNul(EncodeReadPlan(request.read_plan))};
  return wire;
}

Result<ExecRequest> DecodeExecCall(ipc::Request wire) {
  if (wire.op != "exec" || wire.args.size() != 6) return Fail("invalid", "malformed exec request");
  auto nargs = ParseCount(wire.args[2]);
  auto nstrings = ParseCount(wire.args[4]);
  if (!nargs || !nstrings) return Fail("invalid", "malformed exec request");
  ExecRequest request;
  request.args = SplitNul(wire.args[3], *nargs);
  std::vector<std::string> plan_strings = SplitNul(wire.args[5], *nstrings);
  if (request.args.size() != *nargs || plan_strings.size() != *nstrings) {
    return Fail("invalid", "malformed exec request");
  }
  ANVIL_TRY(plan, DecodeReadPlan(plan_strings));
  request.program = std::move(wire.args[0]);
  request.stdin_data = std::move(wire.args[1]);
  request.read_plan = std::move(*plan);
  return request;
}

ipc::Response EncodeExecAnswer(ExecResult result) {
  return ipc::Response{
      1,
      true,
      {std::to_string(result.code), std::move(result.stdout_data), std::move(result.stderr_data),
       result.stdout_truncated ? "1" : "0", result.stderr_truncated ? "1" : "0", result.limit}};
}

ipc::Response EncodeExecError(const Error& error) {
  return ipc::Response::Error(1, error.code, error.message);
}

Result<ExecResult> DecodeExecAnswer(ipc::Response answer) {
  auto& f = answer.fields;
  if (!answer.ok) {
    return tl::unexpected(
        Error{f.size() > 0 ? ErrorCode::FromWire(f[0], Code::kInternal) : ErrorCode("io"),
              f.size() > 1 ? f[1] : "", 0});
  }
  if (f.size() != 6) return Fail("io", "sys.exec: malformed answer from the exec broker");
  ExecResult result;
  result.code = std::atoi(f[0].c_str());
  result.stdout_data = std::move(f[1]);
  result.stderr_data = std::move(f[2]);
  result.stdout_truncated = f[3] == "1";
  result.stderr_truncated = f[4] == "1";
  result.limit = std::move(f[5]);
  return result;
}

}  // namespace anvil::gateway
