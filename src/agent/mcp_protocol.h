// `anvil mcp`'s Model Context Protocol messages, without any I/O: one line of newline-delimited
// JSON-RPC 2.0 in, the replies to write and what the server must do (start a tool call, cancel
// one, hand a client's answer to the call that asked) out. The server loop (cli/mcp_server.cc)
// owns the threads, the processes and stdin/stdout; everything decided about a message is here
// and table-tested (tests/unit/mcp_protocol_test.cc).
//
// Errors, as docs/agents.md lists them: malformed JSON -32700; not a JSON-RPC request, or a line
// longer than kMaxLineBytes, -32600; an unknown method -32601; bad params (also an unknown tool
// or arguments of the wrong type) -32602, with a message naming the field and the fix. A command
// refused by the rules or a person is not a protocol error: it is a tool result with isError.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/approval.h"

namespace anvil::agent::mcp {

inline constexpr std::string_view kProtocolVersion = "2025-06-18";
// Versions whose messages this server speaks: a client asking for one of them gets it back,
// anything else gets kProtocolVersion (the client then decides whether to go on).
inline constexpr std::string_view kSupportedVersions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};
// One message (one line) at most; a longer line is answered with -32600 and skipped.
inline constexpr std::size_t kMaxLineBytes = std::size_t{4} << 20;

inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;

struct ToolDef {
  std::string name;  // [A-Za-z0-9_.-]{1,64} (ToolName)
  std::string title;
  std::string description;
  nlohmann::json input_schema;
  nlohmann::json output_schema;  // null: none
};

// A tools/call to start.
struct ToolCall {
  nlohmann::json id;  // the request id (a string or a number)
  std::string tool;
  nlohmann::json arguments;  // an object (checked by the tool's ArgumentCheck)
  std::optional<nlohmann::json> progress_token;
};

// The client's response to a request of ours (elicitation/create).
struct ClientReply {
  nlohmann::json id;
  std::optional<nlohmann::json> result;
  std::optional<nlohmann::json> error;
};

// What one line asks of the server.
struct Step {
  std::vector<nlohmann::json> send;      // to write now, in order
  std::optional<ToolCall> call;          // start it (answer when it is done)
  std::optional<nlohmann::json> cancel;  // the request id to stop; answer nothing for it
  std::optional<ClientReply> reply;      // for the call waiting on this id
};

// Checks a tool's arguments before the call starts: "" when they are fine, else the -32602
// message ("arguments.argv: expected an array of strings (fix: ...)").
using ArgumentCheck = std::function<std::string(const std::string& tool, const nlohmann::json&)>;

class Protocol {
 public:
  Protocol(std::string server_version, std::vector<ToolDef> tools, ArgumentCheck check);

  Step HandleLine(std::string_view line);
  // A line longer than kMaxLineBytes was skipped (`bytes` read of it); `head` and `tail` are
  // its first and last bytes (up to 256 each), where the request's id is looked for so the
  // client's pending request gets its error (null when not found).
  Step LineTooLong(std::size_t bytes, std::string_view head = {}, std::string_view tail = {}) const;

  bool ClientCanElicit() const { return elicitation_; }
  const std::string& NegotiatedVersion() const { return version_; }
  const std::vector<ToolDef>& Tools() const { return tools_; }

 private:
  Step HandleRequest(const nlohmann::json& id, const std::string& method,
                     const nlohmann::json& params);
  Step HandleNotification(const std::string& method, const nlohmann::json& params);

  std::string server_version_;
  std::vector<ToolDef> tools_;
  ArgumentCheck check_;
  bool elicitation_ = false;
  std::string version_;
};

// The top-level id of a message from its first bytes (`{"jsonrpc":"2.0","id":ID` or
// `{"id":ID`) or its last bytes (`"id":ID}`); null when neither shows it.
nlohmann::json IdFromEdges(std::string_view head, std::string_view tail);

nlohmann::json Response(const nlohmann::json& id, nlohmann::json result);
nlohmann::json ErrorResponse(const nlohmann::json& id, int code, const std::string& message);
nlohmann::json Notification(const std::string& method, nlohmann::json params);
nlohmann::json ProgressNotification(const nlohmann::json& token, double progress,
                                    const std::string& message);
// The tool definition as tools/list shows it.
nlohmann::json ToolJson(const ToolDef& tool);

// MCP tool names: 1 to 64 of [A-Za-z0-9_.-]; anything else becomes '_', longer is cut.
std::string ToolName(std::string_view raw);

// elicitation/create for one approval question: `message` is Question::Text(); the requested
// schema is a flat object with one required enum `answer` ("once", "always" when offered,
// "never").
nlohmann::json ElicitRequest(const nlohmann::json& id, const std::string& message,
                             bool always_offered);
// The answer in the client's response: accept with a valid `answer` -> that answer; decline ->
// never; cancel, an error, anything else -> nullopt (no answer: refused).
std::optional<ApprovalAnswer> AnswerFromElicitation(const ClientReply& reply, bool always_offered);

// run_command's arguments.
struct RunCommandArgs {
  std::vector<std::string> argv;  // from argv, or {"bash", "-lc", script}
  std::string cwd;                // as given ("" for the workspace)
  std::optional<std::uint64_t> timeout_ms;
  std::string widen;  // as `anvil exec --widen`
  std::string reason;
};
inline constexpr std::uint64_t kDefaultTimeoutMs = 120'000;
inline constexpr std::uint64_t kMaxTimeoutMs = 3'600'000;
// "" and the parsed arguments, or the -32602 message.
std::string ParseRunCommandArgs(const nlohmann::json& arguments, RunCommandArgs* out);
nlohmann::json RunCommandInputSchema();
nlohmann::json RunCommandOutputSchema();

// A plugin command's arguments: {args?: string[]}.
std::string ParsePluginArgs(const nlohmann::json& arguments, std::vector<std::string>* out);
nlohmann::json PluginInputSchema();

// Output captured with a cap: the first `head` bytes and the last `tail` bytes are kept, the
// middle is dropped and counted.
class CappedOutput {
 public:
  CappedOutput(std::size_t head, std::size_t tail) : head_cap_(head), tail_cap_(tail) {}
  void Append(std::string_view bytes);
  std::uint64_t Total() const { return total_; }
  bool Truncated() const { return total_ > head_.size() + std::min(tail_.size(), tail_cap_); }
  // The kept text with "[anvil: N bytes cut]" where the middle was; not yet UTF-8-checked.
  std::string Text() const;

 private:
  std::size_t head_cap_, tail_cap_;
  std::string head_, tail_;
  std::uint64_t total_ = 0;
};
inline constexpr std::size_t kOutputHeadBytes = 16 * 1024;
inline constexpr std::size_t kOutputTailBytes = 48 * 1024;

// Bytes as valid UTF-8: every invalid sequence becomes U+FFFD.
std::string ValidUtf8(std::string_view bytes);

}  // namespace anvil::agent::mcp
