// `anvil mcp`'s tools/call worker (mcp_server.h): run_command (agent/exec_flow.h's RunExec with
// the client as the Asker and a sandbox child as the SandboxRunner) and a plugin's command (an
// `anvil run --json` child); what their results say, from what came back, is pure.
#include <unistd.h>

#include "cli/exec_command.h"
#include "cli/mcp_server.h"
#include "policy/display_text.h"
#include "policy/sandbox_policy.h"

extern char** environ;

namespace anvil::cli::mcp_server {

json ToolText(const std::string& text) { return json::array({{{"type", "text"}, {"text", text}}}); }

json ToolError(const std::string& message) {
  return {{"content", ToolText(message)}, {"isError", true}};
}

namespace {

std::string WidenArgument(const json& widening) {
  const std::string kind = widening.value("kind", std::string());
  const std::string value = widening.value("value", std::string());
  return value.empty() ? kind : kind + "=" + value;
}

// A call whose `anvil exec` command line does not parse: not run.
json NotRunResult(const Error& error) {
  const std::string& code = error.code;
  const int status = code == "not_found" ? 127 : code == "not_executable" ? 126 : 2;
  json structured = {{"exit_code", status},   {"ran", false},
                     {"refused", false},      {"stdout", ""},
                     {"stderr", ""},          {"sandbox_refusals", json::array()},
                     {"escalation", nullptr}, {"error", error.ToString()}};
  return {{"content", ToolText("not run: " + error.ToString())},
          {"structuredContent", structured},
          {"isError", true}};
}

// What a run_command call that went through RunExec says: its last sandbox run's output,
// the refusals and the escalation on offer.
json RunCommandResult(const agent::ExecResult& result, const ChildOutcome& last, bool timed_out,
                      std::chrono::milliseconds timeout) {
  const json& report = result.report;
  const bool refused = report.value("refused", false);
  json structured = {{"exit_code", result.exit_status},
                     {"ran", report.value("ran", false)},
                     {"refused", refused},
                     {"timed_out", timed_out},
                     {"decision", report.contains("decision") ? report["decision"] : json()},
                     {"stdout", mcp::ValidUtf8(last.out.Text())},
                     {"stderr", mcp::ValidUtf8(last.err.Text())},
                     {"stdout_bytes", last.out.Total()},
                     {"stderr_bytes", last.err.Total()},
                     {"stdout_truncated", last.out.Truncated()},
                     {"stderr_truncated", last.err.Truncated()},
                     {"sandbox_refusals", report.value("refusals", json::array())},
                     {"escalation", report.contains("escalation") ? report["escalation"] : json()},
                     {"report", report}};
  std::string text;
  bool is_error = refused;
  if (report.contains("error")) {
    is_error = true;
    text += "not run: " + report["error"].get<std::string>() + "\n";
    structured["error"] = report["error"];
  }
  if (refused) {
    structured["refusal"] = report.value("refusal", std::string());
    const std::string refusal = report.value("refusal", std::string());
    // Some refusals already say so ("refused: no answer came").
    text += (refusal.rfind("refused", 0) == 0 ? "" : "refused: ") + refusal + "\n";
    if (report.contains("how_to_allow")) {
      structured["how_to_allow"] = report["how_to_allow"];
      text += "to allow it: " + report["how_to_allow"].get<std::string>() + "\n";
    }
  } else if (!report.contains("error")) {
    text += "exit " + std::to_string(result.exit_status);
    if (timed_out) text += " (timed out after " + std::to_string(timeout.count()) + " ms)";
    text += "\n";
    if (last.out.Total() > 0) {
      text += "--- stdout" + std::string(last.out.Truncated() ? " (truncated)" : "") + " ---\n" +
              mcp::ValidUtf8(last.out.Text()) + "\n";
    }
    if (last.err.Total() > 0) {
      text += "--- stderr" + std::string(last.err.Truncated() ? " (truncated)" : "") + " ---\n" +
              mcp::ValidUtf8(last.err.Text()) + "\n";
    }
  }
  if (report.contains("git_check_error")) {
    // The user's next git in the workspace may run what the command left: an error, never a
    // plain exit status.
    is_error = true;
    structured["git_check_error"] = report["git_check_error"];
    text += "sandbox error: " + report["git_check_error"].get<std::string>() + "\n";
  }
  const json& refusals = report.value("refusals", json::array());
  if (!refusals.empty() && result.exit_status != 0) {
    text += "the sandbox refused:";
    for (const auto& r : refusals) text += " " + r.value("subject", std::string());
    text += "\n";
  }
  const json& esc = report.contains("escalation") ? report["escalation"] : json();
  if (esc.is_object() && esc.contains("widening")) {
    const std::string widen = WidenArgument(esc["widening"]);
    structured["escalation"]["widen_argument"] = widen;
    const std::string state = esc.value("state", std::string());
    text += "the widening that would let it through: " + esc["widening"]["flags"].dump() + " (" +
            state + ")";
    if (state != "approved") {
      text += "; to ask the user for it: call run_command again with \"widen\": \"" + widen +
              "\" and a \"reason\"";
    }
    text += "\n";
  }
  return {{"content", ToolText(text)}, {"structuredContent", structured}, {"isError", is_error}};
}

// What a plugin command's `anvil run --json` child printed, as a tool result.
json PluginResult(const ChildOutcome& child) {
  const std::string out = mcp::ValidUtf8(child.out.Text());
  const std::string err = mcp::ValidUtf8(child.err.Text());
  json parsed = json::parse(out, nullptr, false);
  json structured = {{"exit_code", child.status}, {"stderr", err}};
  std::string text;
  bool ok = false;
  if (parsed.is_object() && parsed.contains("ok")) {
    ok = parsed.value("ok", false) && child.status == 0;
    structured["ok"] = ok;
    if (parsed.contains("result")) {
      structured["result"] = parsed["result"];
      text = parsed["result"].is_string() ? parsed["result"].get<std::string>()
                                          : parsed["result"].dump(2);
    }
    if (parsed.contains("error")) {
      structured["error"] = parsed["error"];
      text = "error: " + (parsed["error"].is_string() ? parsed["error"].get<std::string>()
                                                      : parsed["error"].dump());
    }
  } else {
    structured["ok"] = false;
    text = "anvil run exited " + std::to_string(child.status) + (out.empty() ? "" : ": " + out);
  }
  if (!err.empty() && !ok) text += "\n--- stderr ---\n" + err;
  return {{"content", ToolText(text)}, {"structuredContent", structured}, {"isError", !ok}};
}

}  // namespace

json Server::RunCommandTool(Call& call, const json& arguments) {
  mcp::RunCommandArgs args;
  if (std::string why = mcp::ParseRunCommandArgs(arguments, &args); !why.empty()) {
    return ToolError(why);  // checked before the call started; kept for safety
  }
  std::string workdir;
  if (!args.cwd.empty()) {
    const std::string given = args.cwd;
    workdir = Canonical(given[0] == '/' ? given : options_.workspace + "/" + given);
    if (workdir.empty() || !IsRealDirectory(workdir)) {
      return ToolError("cwd " + SanitizeForDisplay(given, 400) +
                       ": no such directory in the workspace " +
                       SanitizeForDisplay(options_.workspace, 400));
    }
    if (!PathIsWithin(workdir, options_.workspace)) {
      return ToolError("cwd " + SanitizeForDisplay(given, 400) + " is outside the workspace " +
                       SanitizeForDisplay(options_.workspace, 400) +
                       " (fix: a directory inside it, relative to it or absolute)");
    }
  }
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  auto parsed = ParseExecArgs(ExecArgs(options_, workdir, args), env);
  if (!parsed) return NotRunResult(parsed.error());
  agent::ExecRequest& request = parsed->request;
  request.requester = options_.requester;
  request.session = "mcp-" + std::to_string(::getpid());
  request.id = call.number;
  const std::chrono::milliseconds timeout(args.timeout_ms.value_or(mcp::kDefaultTimeoutMs));
  ChildOutcome last;
  bool timed_out = false;
  auto runner = [&](const std::vector<std::string>& sandbox_args) {
    Progress(call, "running in the sandbox");
    // The sandbox keeps the deadline too (a second later, so the server's own stop normally
    // comes first and is reported as the timeout): a command outlives no server.
    const long long backstop_ms = static_cast<long long>(timeout.count()) + 1000;
    std::vector<std::string> argv = {
        self_,
        "sandbox",
        "--report-fd",
        "3",
        "--quiet",
        "--timeout",
        std::to_string(backstop_ms / 1000) + "." + std::to_string(backstop_ms % 1000 / 100)};
    argv.insert(argv.end(), sandbox_args.begin(), sandbox_args.end());
    last = RunChild(call, argv, timeout, true);
    timed_out = timed_out || last.timed_out;
    agent::SandboxRun run = FromReport(last);
    if (last.timed_out || last.cancelled) run.refusals.clear();  // killed: not the sandbox's
    return run;
  };
  McpAsker asker(*this, call, call.can_elicit);
  const agent::ExecResult result = agent::RunExec(request, asker, runner, IsRealDirectory, audit_);
  return RunCommandResult(result, last, timed_out, timeout);
}

json Server::RunPluginTool(Call& call, const PluginTool& tool, const json& arguments) {
  std::vector<std::string> args;
  if (std::string why = mcp::ParsePluginArgs(arguments, &args); !why.empty()) {
    return ToolError(why);
  }
  std::vector<std::string> argv = {self_,
                                   "run",
                                   "--workspace",
                                   options_.workspace,
                                   "--json",
                                   "--timeout",
                                   std::to_string(kPluginTimeoutSeconds),
                                   tool.plugin_dir,
                                   tool.command};
  argv.insert(argv.end(), args.begin(), args.end());
  Progress(call, "running " + tool.plugin_id + " " + tool.command);
  ChildOutcome child =
      RunChild(call, argv, std::chrono::seconds(kPluginTimeoutSeconds + 30), false);
  return PluginResult(child);
}

ChildOutcome Server::RunChild(Call& call, const std::vector<std::string>& argv,
                              std::chrono::milliseconds timeout, bool report_fd) {
  return mcp_server::RunChild(self_, argv, timeout, report_fd, call.cancelled,
                              [&](const std::string& message) { Progress(call, message); });
}

}  // namespace anvil::cli::mcp_server
