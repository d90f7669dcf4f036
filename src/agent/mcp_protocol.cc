#include "agent/mcp_protocol.h"

#include <algorithm>
#include <regex>

#include "common/json_depth.h"
#include "fs/utf8.h"

namespace anvil::agent::mcp {
namespace {

using nlohmann::json;

bool IsValidId(const json& id) { return id.is_string() || id.is_number_integer(); }

Step Error(const json& id, int code, const std::string& message) {
  Step s;
  s.send.push_back(ErrorResponse(id, code, message));
  return s;
}

std::string TypeName(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

// Parses `arguments` strictly: only `known` fields.
std::string UnknownField(const json& arguments, std::initializer_list<std::string_view> known) {
  for (auto it = arguments.begin(); it != arguments.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
      std::string names;
      for (auto k : known) names += (names.empty() ? "" : ", ") + std::string(k);
      return "arguments." + ValidUtf8(it.key().substr(0, 64)) + ": unknown field (fix: use " +
             names + ")";
    }
  }
  return "";
}

std::string StringArray(const json& v, std::string_view field, std::vector<std::string>* out) {
  const std::string name = "arguments." + std::string(field);
  if (!v.is_array()) {
    return name + ": expected an array of strings, got " + TypeName(v) +
           " (fix: [\"make\", \"test\"])";
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) {
      return name + "[" + std::to_string(i) + "]: expected a string, got " + TypeName(v[i]) +
             " (fix: pass every word as a string)";
    }
    const std::string& s = v[i].get_ref<const std::string&>();
    if (s.find('\0') != std::string::npos) {
      return name + "[" + std::to_string(i) + "]: contains a NUL character (fix: remove it)";
    }
    out->push_back(s);
  }
  return "";
}

}  // namespace

json Response(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json ErrorResponse(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

json Notification(const std::string& method, json params) {
  return {{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

json ProgressNotification(const json& token, double progress, const std::string& message) {
  return Notification("notifications/progress",
                      {{"progressToken", token}, {"progress", progress}, {"message", message}});
}

json ToolJson(const ToolDef& tool) {
  json out = {{"name", tool.name},
              {"title", tool.title},
              {"description", tool.description},
              {"inputSchema", tool.input_schema}};
  if (!tool.output_schema.is_null()) out["outputSchema"] = tool.output_schema;
  return out;
}

std::string ToolName(std::string_view raw) {
  std::string out;
  for (char c : raw) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    out.push_back(ok ? c : '_');
    if (out.size() == 64) break;
  }
  if (out.empty()) out = "_";
  return out;
}

Protocol::Protocol(std::string server_version, std::vector<ToolDef> tools, ArgumentCheck check)
    : server_version_(std::move(server_version)),
      tools_(std::move(tools)),
      check_(std::move(check)),
      version_(kProtocolVersion) {}

json IdFromEdges(std::string_view head, std::string_view tail) {
  static const std::regex kHead(
      R"re(^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?[0-9]{1,18}|"[A-Za-z0-9_.:-]{0,128}")\s*[,}])re");
  static const std::regex kTail(
      R"re([,{]\s*"id"\s*:\s*(-?[0-9]{1,18}|"[A-Za-z0-9_.:-]{0,128}")\s*\}\s*$)re");
  std::match_results<std::string_view::const_iterator> m;
  for (auto [text, re] : {std::pair{head, &kHead}, std::pair{tail, &kTail}}) {
    if (std::regex_search(text.begin(), text.end(), m, *re)) {
      json id = json::parse(m[1].str(), nullptr, false);
      if (IsValidId(id)) return id;
    }
  }
  return nullptr;
}

Step Protocol::LineTooLong(std::size_t bytes, std::string_view head, std::string_view tail) const {
  return Error(IdFromEdges(head, tail), kInvalidRequest,
               "message too long: " + std::to_string(bytes) + " bytes without a newline (the " +
                   "limit is " + std::to_string(kMaxLineBytes) +
                   " bytes, 4 MiB; fix: send smaller arguments)");
}

Step Protocol::HandleLine(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
    line.remove_suffix(1);
  }
  if (line.empty()) return {};
  bool too_deep = false;
  json msg = ParseBoundedJson(line, &too_deep);
  if (too_deep) {
    return Error(
        IdFromEdges(line.substr(0, 256), line.substr(line.size() > 256 ? line.size() - 256 : 0)),
        kInvalidRequest,
        "invalid request: nested deeper than " + std::to_string(kMaxJsonNesting) +
            " arrays/objects (fix: send flatter arguments)");
  }
  if (msg.is_discarded()) {
    return Error(nullptr, kParseError, "parse error: the line is not valid JSON");
  }
  if (msg.is_array()) {
    return Error(nullptr, kInvalidRequest,
                 "batches are not part of MCP 2025-06-18 (fix: send one message per line)");
  }
  if (!msg.is_object()) {
    return Error(nullptr, kInvalidRequest, "invalid request: expected a JSON-RPC 2.0 object");
  }
  const json id = msg.contains("id") ? msg["id"] : json();
  const bool has_id = msg.contains("id");
  if (has_id && !IsValidId(id)) {
    return Error(nullptr, kInvalidRequest,
                 "invalid request: id must be a string or an integer (fix: \"id\": 1)");
  }
  if (msg.value("jsonrpc", json()) != "2.0") {
    return Error(has_id ? id : json(), kInvalidRequest,
                 "invalid request: \"jsonrpc\" must be \"2.0\"");
  }
  if (!msg.contains("method")) {
    if (has_id && (msg.contains("result") || msg.contains("error"))) {
      Step s;
      ClientReply reply{id, std::nullopt, std::nullopt};
      if (msg.contains("result")) reply.result = msg["result"];
      if (msg.contains("error")) reply.error = msg["error"];
      s.reply = std::move(reply);
      return s;
    }
    return Error(has_id ? id : json(), kInvalidRequest, "invalid request: no \"method\"");
  }
  if (!msg["method"].is_string()) {
    return Error(has_id ? id : json(), kInvalidRequest,
                 "invalid request: \"method\" must be a string");
  }
  const std::string method = msg["method"].get<std::string>();
  json params = msg.contains("params") ? msg["params"] : json::object();
  if (!params.is_object()) {
    if (!has_id) return {};
    return Error(id, kInvalidParams, "params: expected an object, got " + TypeName(params));
  }
  if (!has_id) return HandleNotification(method, params);
  return HandleRequest(id, method, params);
}

Step Protocol::HandleNotification(const std::string& method, const json& params) {
  Step s;
  if (method == "notifications/cancelled") {
    if (params.contains("requestId") && IsValidId(params["requestId"])) {
      s.cancel = params["requestId"];
    }
  }
  // notifications/initialized and anything else: nothing to answer (a notification never is).
  return s;
}

Step Protocol::HandleRequest(const json& id, const std::string& method, const json& params) {
  if (method == "initialize") {
    if (!params.contains("protocolVersion") || !params["protocolVersion"].is_string()) {
      return Error(id, kInvalidParams,
                   "params.protocolVersion: expected a string (fix: \"" +
                       std::string(kProtocolVersion) + "\")");
    }
    const std::string asked = params["protocolVersion"].get<std::string>();
    version_ = std::string(kProtocolVersion);
    for (auto v : kSupportedVersions) {
      if (asked == v) version_ = asked;
    }
    const json caps = params.value("capabilities", json::object());
    elicitation_ =
        caps.is_object() && caps.contains("elicitation") && caps["elicitation"].is_object();
    Step s;
    s.send.push_back(Response(
        id, {{"protocolVersion", version_},
             {"capabilities", {{"tools", {{"listChanged", false}}}}},
             {"serverInfo", {{"name", "anvil"}, {"title", "Anvil"}, {"version", server_version_}}},
             {"instructions",
              "Run commands through run_command: Anvil's command rules decide, the user is asked "
              "when a rule says so, and every command runs in Anvil's sandbox (the workspace "
              "writable, .git and .anvil read-only, no network unless configured). A failure "
              "caused by the sandbox comes back with the refusals and the one widening that "
              "would let it through."}}));
    return s;
  }
  if (method == "ping") {
    Step s;
    s.send.push_back(Response(id, json::object()));
    return s;
  }
  if (method == "tools/list") {
    if (params.contains("cursor") && !params["cursor"].is_string()) {
      return Error(id, kInvalidParams, "params.cursor: expected a string");
    }
    json list = json::array();
    for (const auto& t : tools_) list.push_back(ToolJson(t));
    Step s;
    s.send.push_back(Response(id, {{"tools", list}}));
    return s;
  }
  if (method == "tools/call") {
    if (!params.contains("name") || !params["name"].is_string()) {
      return Error(id, kInvalidParams,
                   "params.name: expected the tool's name as a string (fix: \"run_command\"; "
                   "tools/list lists them)");
    }
    const std::string name = params["name"].get<std::string>();
    auto tool = std::find_if(tools_.begin(), tools_.end(),
                             [&](const ToolDef& t) { return t.name == name; });
    if (tool == tools_.end()) {
      return Error(id, kInvalidParams,
                   "params.name: unknown tool '" + ValidUtf8(name.substr(0, 100)) +
                       "' (fix: one of the names tools/list returns)");
    }
    json arguments = params.contains("arguments") ? params["arguments"] : json::object();
    if (!arguments.is_object()) {
      return Error(id, kInvalidParams,
                   "params.arguments: expected an object, got " + TypeName(arguments));
    }
    if (std::string why = check_ ? check_(name, arguments) : ""; !why.empty()) {
      return Error(id, kInvalidParams, why);
    }
    ToolCall call{id, name, std::move(arguments), std::nullopt};
    if (params.contains("_meta") && params["_meta"].is_object() &&
        params["_meta"].contains("progressToken")) {
      const json& token = params["_meta"]["progressToken"];
      if (token.is_string() || token.is_number_integer()) call.progress_token = token;
    }
    Step s;
    s.call = std::move(call);
    return s;
  }
  if (method == "resources/list" || method == "prompts/list") {
    // Not offered (capabilities say so); a polite client does not ask.
    return Error(id, kMethodNotFound,
                 "method not found: " + method + " (anvil mcp offers tools only)");
  }
  return Error(id, kMethodNotFound,
               "method not found: '" + ValidUtf8(method.substr(0, 100)) +
                   "' (anvil mcp answers initialize, ping, tools/list and tools/call)");
}

json ElicitRequest(const json& id, const std::string& message, bool always_offered) {
  json choices =
      always_offered ? json::array({"once", "always", "never"}) : json::array({"once", "never"});
  json names =
      always_offered
          ? json::array({"Run it once", "Always (write an allow rule)", "Never (refuse it)"})
          : json::array({"Run it once", "Never (refuse it)"});
  return {{"jsonrpc", "2.0"},
          {"id", id},
          {"method", "elicitation/create"},
          {"params",
           {{"message", message},
            {"requestedSchema",
             {{"type", "object"},
              {"properties",
               {{"answer",
                 {{"type", "string"},
                  {"title", "Answer"},
                  {"description",
                   "once: run it this time; always: also write an allow rule "
                   "for it; never: refuse it"},
                  {"enum", choices},
                  {"enumNames", names}}}}},
              {"required", json::array({"answer"})}}}}}};
}

std::optional<ApprovalAnswer> AnswerFromElicitation(const ClientReply& reply, bool always_offered) {
  if (reply.error || !reply.result || !reply.result->is_object()) return std::nullopt;
  const json& r = *reply.result;
  const json action = r.value("action", json());
  if (action == "decline") return ApprovalAnswer::kNever;
  if (action != "accept") return std::nullopt;
  if (!r.contains("content") || !r["content"].is_object()) return std::nullopt;
  const json answer = r["content"].value("answer", json());
  if (!answer.is_string()) return std::nullopt;
  auto parsed = ParseApprovalAnswer(answer.get<std::string>());
  if (!parsed) return std::nullopt;
  if (*parsed == ApprovalAnswer::kAlways && !always_offered) return std::nullopt;
  return parsed;
}

std::string ParseRunCommandArgs(const json& arguments, RunCommandArgs* out) {
  if (std::string why =
          UnknownField(arguments, {"argv", "script", "cwd", "timeout_ms", "widen", "reason"});
      !why.empty()) {
    return why;
  }
  const bool has_argv = arguments.contains("argv");
  const bool has_script = arguments.contains("script");
  if (has_argv == has_script) {
    return "arguments: give exactly one of argv (an array of strings) or script (a string run "
           "as bash -c) (fix: {\"argv\": [\"make\", \"test\"]})";
  }
  if (has_argv) {
    if (auto why = StringArray(arguments["argv"], "argv", &out->argv); !why.empty()) return why;
    if (out->argv.empty() || out->argv[0].empty()) {
      return "arguments.argv: empty (fix: the program first, then its arguments)";
    }
  } else {
    const json& s = arguments["script"];
    if (!s.is_string()) {
      return "arguments.script: expected a string, got " + TypeName(s) +
             " (fix: \"make && make test\")";
    }
    const std::string& text = s.get_ref<const std::string&>();
    if (text.empty()) return "arguments.script: empty (fix: the script to run)";
    if (text.find('\0') != std::string::npos) {
      return "arguments.script: contains a NUL character (fix: remove it)";
    }
    out->argv = {"bash", "-c", text};
  }
  if (arguments.contains("cwd")) {
    const json& c = arguments["cwd"];
    if (!c.is_string()) return "arguments.cwd: expected a string (a directory in the workspace)";
    out->cwd = c.get<std::string>();
    if (out->cwd.find('\0') != std::string::npos) {
      return "arguments.cwd: contains a NUL character (fix: remove it)";
    }
  }
  if (arguments.contains("timeout_ms")) {
    const json& t = arguments["timeout_ms"];
    if (!t.is_number_unsigned() || t.get<std::uint64_t>() == 0 ||
        t.get<std::uint64_t>() > kMaxTimeoutMs) {
      return "arguments.timeout_ms: expected an integer from 1 to " +
             std::to_string(kMaxTimeoutMs) + " (milliseconds)";
    }
    out->timeout_ms = t.get<std::uint64_t>();
  }
  for (auto field : {"widen", "reason"}) {
    if (!arguments.contains(field)) continue;
    if (!arguments[field].is_string()) {
      return std::string("arguments.") + field + ": expected a string";
    }
  }
  out->widen = arguments.value("widen", std::string());
  out->reason = arguments.value("reason", std::string());
  if (!out->widen.empty() && out->reason.empty()) {
    return "arguments.widen needs arguments.reason (fix: say why, it is shown to the user)";
  }
  if (out->widen.empty() && !out->reason.empty()) {
    return "arguments.reason goes with arguments.widen";
  }
  return "";
}

json RunCommandInputSchema() {
  return {
      {"type", "object"},
      {"properties",
       {{"argv",
         {{"type", "array"},
          {"items", {{"type", "string"}}},
          {"minItems", 1},
          {"description", "the command and its arguments (no shell); give this or script"}}},
        {"script",
         {{"type", "string"},
          {"description",
           "a shell script run as `bash -c SCRIPT` (each simple command is judged by the "
           "rules; anything the parser does not fully understand is asked about)"}}},
        {"cwd",
         {{"type", "string"},
          {"description",
           "working directory: relative to the workspace, or absolute inside "
           "it (default: the workspace)"}}},
        {"timeout_ms",
         {{"type", "integer"},
          {"minimum", 1},
          {"maximum", kMaxTimeoutMs},
          {"description", "kill the whole process tree after this many milliseconds (default " +
                              std::to_string(kDefaultTimeoutMs) + ")"}}},
        {"widen",
         {{"type", "string"},
          {"description",
           "ask for a wider sandbox up front: writable-git, allow-host=HOST[:PORT] or "
           "writable-root=DIR (needs reason; the user is asked)"}}},
        {"reason",
         {{"type", "string"}, {"description", "why the widening is needed (shown to the user)"}}}}},
      {"additionalProperties", false}};
}

json RunCommandOutputSchema() {
  const json string_or_null = {{"type", json::array({"string", "null"})}};
  return {{"type", "object"},
          {"properties",
           {{"exit_code", {{"type", "integer"}}},
            {"ran", {{"type", "boolean"}}},
            {"refused", {{"type", "boolean"}}},
            {"refusal", {{"type", "string"}}},
            {"how_to_allow", {{"type", "string"}}},
            {"timed_out", {{"type", "boolean"}}},
            {"decision", string_or_null},
            {"stdout", {{"type", "string"}}},
            {"stderr", {{"type", "string"}}},
            {"stdout_bytes", {{"type", "integer"}}},
            {"stderr_bytes", {{"type", "integer"}}},
            {"stdout_truncated", {{"type", "boolean"}}},
            {"stderr_truncated", {{"type", "boolean"}}},
            {"sandbox_refusals", {{"type", "array"}, {"items", {{"type", "object"}}}}},
            {"escalation", {{"type", json::array({"object", "null"})}}},
            {"report", {{"type", "object"}}}}},
          {"required", json::array({"exit_code", "ran", "refused", "stdout", "stderr",
                                    "sandbox_refusals", "escalation"})}};
}

std::string ParsePluginArgs(const json& arguments, std::vector<std::string>* out) {
  if (std::string why = UnknownField(arguments, {"args"}); !why.empty()) return why;
  if (!arguments.contains("args")) return "";
  return StringArray(arguments["args"], "args", out);
}

json PluginInputSchema() {
  return {{"type", "object"},
          {"properties",
           {{"args",
             {{"type", "array"},
              {"items", {{"type", "string"}}},
              {"description", "the command's arguments, as `anvil run PLUGIN COMMAND ARGS...`"}}}}},
          {"additionalProperties", false}};
}

void CappedOutput::Append(std::string_view bytes) {
  total_ += bytes.size();
  if (head_.size() < head_cap_) {
    const std::size_t n = std::min(head_cap_ - head_.size(), bytes.size());
    head_.append(bytes.substr(0, n));
    bytes.remove_prefix(n);
  }
  if (bytes.empty() || tail_cap_ == 0) return;
  tail_.append(bytes);
  // Trim in chunks, not per append: the copy stays linear in what was read.
  if (tail_.size() > 2 * tail_cap_) tail_.erase(0, tail_.size() - tail_cap_);
}

std::string CappedOutput::Text() const {
  std::string tail = tail_.size() > tail_cap_ ? tail_.substr(tail_.size() - tail_cap_) : tail_;
  const std::uint64_t kept = head_.size() + tail.size();
  if (total_ <= kept) return head_ + tail;
  return head_ + "\n[anvil: " + std::to_string(total_ - kept) + " bytes cut]\n" + tail;
}

std::string ValidUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    char32_t cp = 0;
    const std::size_t n = fs_internal::DecodeUtf8(bytes, pos, &cp);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++pos;
    } else {
      out.append(bytes.substr(pos, n));
      pos += n;
    }
  }
  return out;
}

}  // namespace anvil::agent::mcp
