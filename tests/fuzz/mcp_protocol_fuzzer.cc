// anvil mcp's message handling (src/agent/mcp_protocol: every line an MCP client sends is
// untrusted). The input is split into lines, each handed to one Protocol in order, as the
// server does. Invariants: handling never throws and never crashes (deep nesting included);
// every message to send is a JSON-RPC 2.0 object that serialises; an error carries an integer
// code and a non-empty message; a request with a valid id is answered, started as a call, or
// (for a response of the client's) neither; a started call names a known tool with object
// arguments that its check accepted; and a skipped over-long line is answered too.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/mcp_protocol.h"
#include "fuzz_util.h"

using anvil::fuzz::Require;
using nlohmann::json;
namespace mcp = anvil::agent::mcp;

namespace {

mcp::Protocol Make() {
  mcp::ToolDef run{"run_command", "Run", "runs", mcp::RunCommandInputSchema(),
                   mcp::RunCommandOutputSchema()};
  mcp::ToolDef plugin{"plugin__a_b__c", "a.b c", "plugin", mcp::PluginInputSchema(), nullptr};
  return mcp::Protocol("1.2.3", {run, plugin}, [](const std::string& tool, const json& args) {
    if (tool == "run_command") {
      mcp::RunCommandArgs parsed;
      return mcp::ParseRunCommandArgs(args, &parsed);
    }
    std::vector<std::string> out;
    return mcp::ParsePluginArgs(args, &out);
  });
}

void CheckStep(const mcp::Step& step, const std::string& input) {
  for (const json& m : step.send) {
    Require(m.is_object(), "a message that is not an object", input);
    Require(m.value("jsonrpc", json()) == "2.0", "a message without jsonrpc 2.0", input);
    const std::string text = m.dump(-1, ' ', false, json::error_handler_t::replace);
    Require(!text.empty() && text.find('\n') == std::string::npos, "a message over two lines",
            input);
    if (m.contains("error")) {
      const json& e = m["error"];
      Require(e.is_object() && e.contains("code") && e["code"].is_number_integer(),
              "an error without an integer code", input);
      Require(e.contains("message") && e["message"].is_string() &&
                  !e["message"].get<std::string>().empty(),
              "an error without a message", input);
    }
  }
  if (step.call) {
    Require(step.call->tool == "run_command" || step.call->tool == "plugin__a_b__c",
            "a call to an unknown tool", input);
    Require(step.call->arguments.is_object(), "a call whose arguments are not an object", input);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(anvil::fuzz::AsView(data, size));
  mcp::Protocol protocol = Make();
  std::string_view rest = input;
  while (!rest.empty()) {
    const std::size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    CheckStep(protocol.HandleLine(line), input);
    if (nl == std::string_view::npos) break;
    rest.remove_prefix(nl + 1);
  }
  const std::string_view head = std::string_view(input).substr(0, 256);
  const std::string_view tail =
      std::string_view(input).substr(input.size() > 256 ? input.size() - 256 : 0);
  const mcp::Step too_long = protocol.LineTooLong(mcp::kMaxLineBytes + 1, head, tail);
  Require(too_long.send.size() == 1, "an over-long line is not answered", input);
  CheckStep(too_long, input);
  return 0;
}
