// anvil mcp's message handling (agent/mcp_protocol.h), pure: a line in, the replies and the
// server's next step out. The real client end to end: tests/integration/mcp_client.
#include "agent/mcp_protocol.h"

#include <gtest/gtest.h>

namespace anvil::agent::mcp {
namespace mcp_protocol_test {
namespace {

using nlohmann::json;

Protocol Make() {
  ToolDef run{"run_command", "Run", "runs", RunCommandInputSchema(), RunCommandOutputSchema()};
  ToolDef plugin{"plugin__a_b__c", "a.b c", "plugin", PluginInputSchema(), nullptr};
  return Protocol("1.2.3", {run, plugin}, [](const std::string& tool, const json& args) {
    if (tool == "run_command") {
      RunCommandArgs parsed;
      return ParseRunCommandArgs(args, &parsed);
    }
    std::vector<std::string> out;
    return ParsePluginArgs(args, &out);
  });
}

struct ErrorCase {
  const char* name;
  std::string line;
  int code;
  const char* message_part;  // the message names the field / the fix
  json id;
};

TEST(McpProtocol, EveryErrorClassIsAnsweredWithItsCodeAndAFix) {
  const std::vector<ErrorCase> cases = {
      {"malformed JSON", "{\"jsonrpc\":", kParseError, "not valid JSON", nullptr},
      {"not an object", "42", kInvalidRequest, "JSON-RPC 2.0 object", nullptr},
      {"a batch", "[]", kInvalidRequest, "one message per line", nullptr},
      {"bad id type", R"({"jsonrpc":"2.0","id":{},"method":"ping"})", kInvalidRequest, "id must be",
       nullptr},
      {"no jsonrpc", R"({"id":1,"method":"ping"})", kInvalidRequest, "\"2.0\"", 1},
      {"no method", R"({"jsonrpc":"2.0","id":1})", kInvalidRequest, "no \"method\"", 1},
      {"unknown method", R"({"jsonrpc":"2.0","id":2,"method":"foo/bar"})", kMethodNotFound,
       "foo/bar", 2},
      {"params not an object", R"({"jsonrpc":"2.0","id":3,"method":"tools/list","params":[]})",
       kInvalidParams, "params: expected an object", 3},
      {"initialize without version",
       R"({"jsonrpc":"2.0","id":4,"method":"initialize","params":{}})", kInvalidParams,
       "params.protocolVersion", 4},
      {"call without name", R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{}})",
       kInvalidParams, "params.name", 5},
      {"unknown tool",
       R"({"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"nope"}})",
       kInvalidParams, "unknown tool 'nope'", "x"},
      {"arguments not an object",
       R"({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"run_command","arguments":1}})",
       kInvalidParams, "params.arguments", 6},
      {"argv of the wrong type",
       R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_command","arguments":{"argv":"ls"}}})",
       kInvalidParams, "arguments.argv: expected an array of strings", 7},
      {"argv element of the wrong type",
       R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"run_command","arguments":{"argv":["ls",1]}}})",
       kInvalidParams, "arguments.argv[1]", 8},
      {"both argv and script",
       R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"run_command","arguments":{"argv":["ls"],"script":"ls"}}})",
       kInvalidParams, "exactly one of argv", 9},
      {"unknown field",
       R"({"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"run_command","arguments":{"argv":["ls"],"shell":true}}})",
       kInvalidParams, "arguments.shell: unknown field", 10},
      {"timeout out of range",
       R"({"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"run_command","arguments":{"argv":["ls"],"timeout_ms":0}}})",
       kInvalidParams, "arguments.timeout_ms", 11},
      {"widen without reason",
       R"({"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"run_command","arguments":{"argv":["ls"],"widen":"writable-git"}}})",
       kInvalidParams, "needs arguments.reason", 12},
      {"plugin args of the wrong type",
       R"({"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"plugin__a_b__c","arguments":{"args":[true]}}})",
       kInvalidParams, "arguments.args[0]", 13},
  };
  for (const auto& c : cases) {
    Protocol p = Make();
    Step s = p.HandleLine(c.line);
    ASSERT_EQ(s.send.size(), 1u) << c.name;
    EXPECT_FALSE(s.call) << c.name;
    const json& r = s.send[0];
    EXPECT_EQ(r["jsonrpc"], "2.0") << c.name;
    EXPECT_EQ(r["id"], c.id) << c.name;
    EXPECT_EQ(r["error"]["code"], c.code) << c.name << ": " << r.dump();
    EXPECT_NE(r["error"]["message"].get<std::string>().find(c.message_part), std::string::npos)
        << c.name << ": " << r.dump();
  }
}

TEST(McpProtocol, VersionNegotiation) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"2025-06-18", "2025-06-18"}, {"2025-03-26", "2025-03-26"}, {"2024-11-05", "2024-11-05"},
      {"2025-11-25", "2025-06-18"},  // newer than ours: ours, the client decides
      {"1999-01-01", "2025-06-18"},
  };
  for (const auto& [asked, answered] : cases) {
    Protocol p = Make();
    Step s = p.HandleLine(json({{"jsonrpc", "2.0"},
                                {"id", 1},
                                {"method", "initialize"},
                                {"params", {{"protocolVersion", asked}, {"capabilities", {}}}}})
                              .dump());
    ASSERT_EQ(s.send.size(), 1u);
    const json& result = s.send[0]["result"];
    EXPECT_EQ(result["protocolVersion"], answered) << asked;
    EXPECT_EQ(result["serverInfo"]["name"], "anvil");
    EXPECT_EQ(result["serverInfo"]["version"], "1.2.3");
    EXPECT_TRUE(result["capabilities"]["tools"].is_object());
    EXPECT_FALSE(p.ClientCanElicit());
  }
  Protocol p = Make();
  p.HandleLine(
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}}}})");
  EXPECT_TRUE(p.ClientCanElicit());
}

TEST(McpProtocol, ToolsListShape) {
  Protocol p = Make();
  Step s = p.HandleLine(R"({"jsonrpc":"2.0","id":"l","method":"tools/list"})");
  ASSERT_EQ(s.send.size(), 1u);
  const json& tools = s.send[0]["result"]["tools"];
  ASSERT_EQ(tools.size(), 2u);
  EXPECT_EQ(tools[0]["name"], "run_command");
  EXPECT_EQ(tools[0]["inputSchema"]["type"], "object");
  EXPECT_EQ(tools[0]["outputSchema"]["type"], "object");
  EXPECT_TRUE(tools[0]["inputSchema"]["properties"].contains("argv"));
  EXPECT_TRUE(tools[0]["inputSchema"]["properties"].contains("script"));
  EXPECT_FALSE(tools[1].contains("outputSchema"));
}

TEST(McpProtocol, RequestsNotificationsAndReplies) {
  Protocol p = Make();
  // ping answers {}; notifications answer nothing.
  Step ping = p.HandleLine(R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
  ASSERT_EQ(ping.send.size(), 1u);
  EXPECT_EQ(ping.send[0]["result"], json::object());
  EXPECT_TRUE(
      p.HandleLine(R"({"jsonrpc":"2.0","method":"notifications/initialized"})").send.empty());
  EXPECT_TRUE(p.HandleLine(R"({"jsonrpc":"2.0","method":"whatever"})").send.empty());
  EXPECT_TRUE(p.HandleLine("").send.empty());
  EXPECT_TRUE(p.HandleLine("  \r").send.empty());
  // A valid call starts, with its progress token.
  Step call = p.HandleLine(
      R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_command","arguments":{"script":"make && make test"},"_meta":{"progressToken":"t1"}}})");
  ASSERT_TRUE(call.call);
  EXPECT_TRUE(call.send.empty());
  EXPECT_EQ(call.call->id, 7);
  EXPECT_EQ(call.call->tool, "run_command");
  EXPECT_EQ(*call.call->progress_token, "t1");
  RunCommandArgs args;
  ASSERT_EQ(ParseRunCommandArgs(call.call->arguments, &args), "");
  EXPECT_EQ(args.argv, (std::vector<std::string>{"bash", "-c", "make && make test"}));
  // Cancellation names the request; the server answers nothing.
  Step cancel = p.HandleLine(
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"x"}})");
  ASSERT_TRUE(cancel.cancel);
  EXPECT_EQ(*cancel.cancel, 7);
  EXPECT_TRUE(cancel.send.empty());
  // A response to our request is routed, not answered.
  Step reply = p.HandleLine(
      R"({"jsonrpc":"2.0","id":"anvil-elicit-1","result":{"action":"accept","content":{"answer":"once"}}})");
  ASSERT_TRUE(reply.reply);
  EXPECT_TRUE(reply.send.empty());
  EXPECT_EQ(AnswerFromElicitation(*reply.reply, false), ApprovalAnswer::kOnce);
}

TEST(McpProtocol, ElicitationAnswers) {
  auto reply = [](json result) { return ClientReply{1, result, std::nullopt}; };
  struct Case {
    ClientReply r;
    bool always;
    std::optional<ApprovalAnswer> want;
  };
  const std::vector<Case> cases = {
      {reply({{"action", "accept"}, {"content", {{"answer", "once"}}}}), false,
       ApprovalAnswer::kOnce},
      {reply({{"action", "accept"}, {"content", {{"answer", "always"}}}}), true,
       ApprovalAnswer::kAlways},
      {reply({{"action", "accept"}, {"content", {{"answer", "always"}}}}), false, std::nullopt},
      {reply({{"action", "accept"}, {"content", {{"answer", "never"}}}}), true,
       ApprovalAnswer::kNever},
      {reply({{"action", "accept"}, {"content", {{"answer", "yes please"}}}}), true, std::nullopt},
      {reply({{"action", "accept"}}), true, std::nullopt},
      {reply({{"action", "decline"}}), true, ApprovalAnswer::kNever},
      {reply({{"action", "cancel"}}), true, std::nullopt},
      {ClientReply{1, std::nullopt, json{{"code", -1}, {"message", "no"}}}, true, std::nullopt},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(AnswerFromElicitation(cases[i].r, cases[i].always), cases[i].want) << i;
  }
  const json req = ElicitRequest("e1", "Anvil: question", true);
  EXPECT_EQ(req["method"], "elicitation/create");
  EXPECT_EQ(req["params"]["message"], "Anvil: question");
  EXPECT_EQ(req["params"]["requestedSchema"]["properties"]["answer"]["enum"],
            json::array({"once", "always", "never"}));
  EXPECT_EQ(
      ElicitRequest("e2", "q", false)["params"]["requestedSchema"]["properties"]["answer"]["enum"],
      json::array({"once", "never"}));
}

TEST(McpProtocol, LongLinesAreAnsweredWithTheirIdWhenItShows) {
  Protocol p = Make();
  Step s = p.LineTooLong(5u << 20, R"({"method":"tools/call","params":{"arguments":{"argv":["x)",
                         R"(xxxx"]}},"jsonrpc":"2.0","id":17})");
  ASSERT_EQ(s.send.size(), 1u);
  EXPECT_EQ(s.send[0]["id"], 17);
  EXPECT_EQ(s.send[0]["error"]["code"], kInvalidRequest);
  EXPECT_NE(s.send[0]["error"]["message"].get<std::string>().find("4 MiB"), std::string::npos);
  EXPECT_EQ(IdFromEdges(R"({"jsonrpc":"2.0","id":"a-1","method":)", "xx"), "a-1");
  EXPECT_EQ(IdFromEdges("{\"method\":\"x\"", "\"nested\":{\"id\":3}}"), nullptr);
  EXPECT_EQ(IdFromEdges("garbage", "garbage"), nullptr);
}

TEST(McpProtocol, DeepNestingIsRefusedBeforeAnythingWalksIt) {
  // Attack: one line of tens of thousands of nested arrays; parsing takes it, but every copy
  // and dump of the value recurses once per level.
  Protocol p = Make();
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  Step s = p.HandleLine(
      R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"run_command","arguments":{"argv":)" +
      deep + "}}}");
  ASSERT_EQ(s.send.size(), 1u);
  EXPECT_EQ(s.send[0]["id"], 9);
  EXPECT_EQ(s.send[0]["error"]["code"], kInvalidRequest);
  EXPECT_NE(s.send[0]["error"]["message"].get<std::string>().find("nested deeper"),
            std::string::npos);
  // The benign neighbour: ordinary nesting is served.
  Step ok = p.HandleLine(R"({"jsonrpc":"2.0","id":10,"method":"ping","params":{"x":[[[[1]]]]}})");
  ASSERT_EQ(ok.send.size(), 1u);
  EXPECT_TRUE(ok.send[0].contains("result")) << ok.send[0];
}

TEST(McpProtocol, ToolNamesAndOutput) {
  EXPECT_EQ(ToolName("plugin__example_notes__find todos"), "plugin__example_notes__find_todos");
  EXPECT_EQ(ToolName(""), "_");
  EXPECT_EQ(ToolName(std::string(100, 'a')).size(), 64u);
  EXPECT_EQ(ToolName("a\xc3\xa9"), "a__");

  CappedOutput small(4, 4);
  small.Append("abc");
  EXPECT_EQ(small.Text(), "abc");
  EXPECT_FALSE(small.Truncated());
  CappedOutput big(4, 4);
  for (int i = 0; i < 100; ++i) big.Append("0123456789");
  EXPECT_TRUE(big.Truncated());
  EXPECT_EQ(big.Total(), 1000u);
  EXPECT_EQ(big.Text(), "0123\n[anvil: 992 bytes cut]\n6789");

  EXPECT_EQ(ValidUtf8("a\xff"
                      "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(ValidUtf8("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(ValidUtf8("\xc0\xae"), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

}  // namespace
}  // namespace mcp_protocol_test
}  // namespace anvil::agent::mcp
