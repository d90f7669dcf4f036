// `anvil serve` end to end: the real binary, real plugins (Lua and JS, sandboxed hosts, a real
// gateway), driven over JSON-RPC 2.0 with LSP framing as an editor would.
#include <gtest/gtest.h>
#include <signal.h>

#include "serve_client.h"

namespace anvil::testing {
namespace serve_test {
namespace {

class ServeTest : public ServeTestBase {};

TEST_F(ServeTest, ConversationWithLuaAndJsPlugins) {
  auto c =
      Start({"--plugin-dir", Examples() + "/hello-lua", "--plugin-dir", Examples() + "/notes-js"});
  // Before initialize nothing but initialize is served.
  json early = c->Request("anvil/listPlugins");
  EXPECT_EQ(early["error"]["code"], -32002) << early;

  json init = c->Initialize();
  ASSERT_TRUE(init.contains("result")) << init;
  EXPECT_EQ(init["result"]["capabilities"]["positionEncoding"], "utf-16");
  EXPECT_EQ(init["result"]["serverInfo"]["name"], "anvil");

  // Not granted yet: listed, not started, refused with a clear code.
  json hello = PluginInfo(*c, "example.hello");
  EXPECT_EQ(hello["state"], "needs_consent") << hello;
  EXPECT_EQ(hello["grant"]["requested"]["fs.read"], json({"**"}));
  EXPECT_TRUE(hello["pid"].is_null());
  json refused =
      c->Request("anvil/runCommand", {{"plugin", "example.hello"}, {"command", "summary"}});
  EXPECT_EQ(refused["error"]["code"], -32803) << refused;
  EXPECT_EQ(refused["error"]["data"]["code"], "consent_required");

  // The editor shows the consent request and the user approves both plugins.
  std::vector<json> asked;
  c->on_request = [&](const json& r) -> json {
    if (r["method"] == "anvil/consent") {
      asked.push_back(r["params"]);
      return {{"decision", "approve"}};
    }
    return {{"applied", true}};
  };
  for (const char* id : {"example.hello", "example.notes"}) {
    json granted = c->Request("anvil/requestConsent", {{"plugin", id}});
    EXPECT_EQ(granted["result"]["granted"], true) << granted;
  }
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_NE(asked[1]["text"].get<std::string>().find("Write files matching:"), std::string::npos)
      << asked[1];
  EXPECT_NE(asked[1]["text"].get<std::string>().find("\"notes/**\""), std::string::npos);
  EXPECT_EQ(asked[1]["request"]["fs.write"], json({"notes/**"}));
  EXPECT_EQ(asked[1]["plugin"]["id"], "example.notes");

  // Lua: a command with progress and a result.
  json run =
      c->Request("anvil/runCommand",
                 {{"plugin", "example.hello"}, {"command", "summary"}, {"workDoneToken", "tok-1"}});
  ASSERT_TRUE(run.contains("result")) << run;
  EXPECT_EQ(run["result"]["value"], "1 files, 1 TODO markers");
  auto progress = c->Seen("$/progress");
  ASSERT_GE(progress.size(), 2u);
  EXPECT_EQ(progress.front()["params"]["token"], "tok-1");
  EXPECT_EQ(progress.front()["params"]["value"]["kind"], "begin");
  EXPECT_EQ(progress.back()["params"]["value"]["kind"], "end");

  // JS: writes under notes/ and notifies, attributed to the plugin.
  run = c->Request("anvil/runCommand", {{"plugin", "example.notes"}, {"command", "report"}});
  ASSERT_TRUE(run.contains("result")) << run;
  EXPECT_EQ(run["result"]["value"]["written"], "notes/report.md");
  EXPECT_NE(ReadFile(ws_ / "notes/report.md").find("src/a.c"), std::string::npos);
  auto shown = c->Seen("window/showMessage");
  ASSERT_EQ(shown.size(), 1u);
  EXPECT_EQ(shown[0]["params"]["message"], "[example.notes] report written to notes/report.md");
  EXPECT_EQ(shown[0]["params"]["anvil"]["plugin"], "example.notes");

  // A command the plugin does not have.
  json missing = c->Request("anvil/runCommand", {{"plugin", "example.notes"}, {"command", "nope"}});
  EXPECT_EQ(missing["error"]["data"]["code"], "not_found") << missing;

  json status = c->Request("anvil/status")["result"];
  pid_t gateway = status["gateway"]["pid"].get<pid_t>();
  std::vector<pid_t> hosts;
  for (const auto& p : status["plugins"]) hosts.push_back(p["pid"].get<pid_t>());
  EXPECT_EQ(c->ShutdownAndExit(), 0);
  EXPECT_FALSE(ProcessAlive(gateway));
  for (pid_t h : hosts) EXPECT_FALSE(ProcessAlive(h));
}

TEST_F(ServeTest, FramingErrorsAreAnsweredAndTheSessionGoesOn) {
  auto c = Start({"--max-message-bytes", "4096"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  std::string big = R"({"jsonrpc":"2.0","id":77,"method":"anvil/status","params":{"x":")" +
                    std::string(5000, 'a') + "\"}}";
  struct Case {
    const char* name;
    std::string bytes;
    int code;
    json id;
  };
  std::vector<Case> cases = {
      {"non-numeric length", "Content-Length: abc\r\n\r\n{}", -32600, nullptr},
      {"negative length", "Content-Length: -1\r\n\r\n{}", -32600, nullptr},
      {"missing length", "X-Other: 1\r\n\r\n{}", -32600, nullptr},
      {"duplicate length", "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", -32600, nullptr},
      {"header without colon", "Content-Length 2\r\n\r\n{}", -32600, nullptr},
      {"control character in header", "Content-Length: 2\x01\r\n\r\n{}", -32600, nullptr},
      {"latin-1 charset",
       "Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=latin1\r\n\r\n{}",
       -32600, nullptr},
      {"oversized message", ServeClient::Frame(big), -32600, nullptr},
      {"invalid JSON", ServeClient::Frame("{not json"), -32700, nullptr},
      {"invalid UTF-8", ServeClient::Frame("{\"a\":\"\xff\"}"), -32700, nullptr},
      {"batch", ServeClient::Frame("[1,2]"), -32600, nullptr},
      {"not an object", ServeClient::Frame("42"), -32600, nullptr},
      {"wrong jsonrpc version",
       ServeClient::Frame(R"({"jsonrpc":"1.0","id":6,"method":"anvil/status"})"), -32600, 6},
      {"object id", ServeClient::Frame(R"({"jsonrpc":"2.0","id":{"x":1},"method":"anvil/status"})"),
       -32600, nullptr},
      {"unknown method", ServeClient::Frame(R"({"jsonrpc":"2.0","id":5,"method":"no/such"})"),
       -32601, 5},
      {"params not an object",
       ServeClient::Frame(R"({"jsonrpc":"2.0","id":8,"method":"anvil/status","params":3})"), -32600,
       8},
      {"bad params",
       ServeClient::Frame(R"({"jsonrpc":"2.0","id":9,"method":"anvil/runCommand",)"
                          R"("params":{"plugin":7}})"),
       -32803, 9},
      {"no method", ServeClient::Frame(R"({"jsonrpc":"2.0","id":10})"), -32600, 10},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(k.name);
    c->SendRaw(k.bytes);
    auto reply = c->Read();
    ASSERT_TRUE(reply) << "no answer (or the server died)";
    ASSERT_TRUE(reply->contains("error")) << *reply;
    EXPECT_EQ((*reply)["error"]["code"], k.code) << *reply;
    EXPECT_EQ((*reply)["id"], k.id) << *reply;
    EXPECT_FALSE((*reply)["error"]["message"].get<std::string>().empty());
    // The stream is back in sync: the next well-formed request is served.
    json ok = c->Request("anvil/status");
    EXPECT_TRUE(ok.contains("result")) << ok;
  }
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

TEST_F(ServeTest, TruncatedBodyAtEndOfInputIsReportedAndNothingIsLeft) {
  auto c = StartReady(Examples() + "/hello-lua", "example.hello");
  json status = c->Request("anvil/status")["result"];
  pid_t gateway = status["gateway"]["pid"].get<pid_t>();
  pid_t host = status["plugins"][0]["pid"].get<pid_t>();
  c->SendRaw("Content-Length: 100\r\n\r\n{\"jsonrpc\":");
  c->CloseInput();
  auto reply = c->Read();
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["error"]["code"], -32600) << *reply;
  EXPECT_NE((*reply)["error"]["message"].get<std::string>().find("ended inside"),
            std::string::npos);
  EXPECT_EQ(c->Wait(), 1);  // no shutdown was asked for
  EXPECT_FALSE(ProcessAlive(gateway));
  EXPECT_FALSE(ProcessAlive(host));
}

TEST_F(ServeTest, FormatterEditsABufferThroughAVersionedApplyEdit) {
  auto c = Start({"--approve", "--plugin-dir", Examples() + "/fmt-js"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  c->Notify("textDocument/didOpen", {{"textDocument",
                                      {{"uri", Uri("src/a.c")},
                                       {"languageId", "c"},
                                       {"version", 4},
                                       {"text", "int x;  \n\tcall();\n\n\n"}}}});
  json run =
      c->Request("anvil/runCommand",
                 {{"plugin", "example.fmt"}, {"command", "format"}, {"arguments", {"src/a.c"}}});
  ASSERT_TRUE(run.contains("result")) << run;
  EXPECT_EQ(run["result"]["value"]["changed"], true);
  auto edits = c->Seen("workspace/applyEdit");
  ASSERT_EQ(edits.size(), 1u);
  json change = edits[0]["params"]["edit"]["documentChanges"][0];
  EXPECT_EQ(change["textDocument"]["uri"], Uri("src/a.c"));
  EXPECT_EQ(change["textDocument"]["version"], 4);
  EXPECT_EQ(change["edits"][0]["newText"], "int x;\n    call();\n");
  EXPECT_EQ(change["edits"][0]["range"]["end"], json({{"line", 4}, {"character", 0}}));
  EXPECT_EQ(edits[0]["params"]["label"], "[example.fmt] format");
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

TEST_F(ServeTest, StaleSnapshotEditIsRefusedNeverMerged) {
  WritePlugin(plugins_ / "ed", "test.ed", "lua", "fs.read = [\"src/**\"]\n", R"(
anvil.command('get', function(a)
  local b = editor.buffer.get(a[1])
  return {uri = b.uri, version = b.version, text = b.text}
end)
anvil.command('edit', function(a)
  return editor.buffer.edit(a[1], a[2], {{text = a[3]}})
end)
anvil.command('edit-range', function(a)
  return editor.buffer.edit(a[1], a[2], {{range = {start = {line = 0, character = a[3]},
                                                    ["end"] = {line = 0, character = a[4]}},
                                           text = a[5]}})
end)
)");
  auto c = Start({"--approve", "--plugin-dir", plugins_ / "ed"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  const std::string uri = Uri("src/a.c");
  c->Notify("textDocument/didOpen",
            {{"textDocument",
              {{"uri", uri}, {"languageId", "c"}, {"version", 1}, {"text", "hello\nworld\n"}}}});
  auto run = [&](const std::string& command, json args) {
    return c->Request("anvil/runCommand",
                      {{"plugin", "test.ed"}, {"command", command}, {"arguments", args}});
  };
  json got = run("get", {"src/a.c"});
  ASSERT_TRUE(got.contains("result")) << got;
  EXPECT_EQ(got["result"]["value"]["version"], 1);
  EXPECT_EQ(got["result"]["value"]["uri"], uri);

  // The user types: version 2 (an incremental change). The snapshot of version 1 is stale.
  json change = {
      {"range",
       {{"start", {{"line", 1}, {"character", 0}}}, {"end", {{"line", 1}, {"character", 5}}}}},
      {"text", "there"}};
  c->Notify("textDocument/didChange", {{"textDocument", {{"uri", uri}, {"version", 2}}},
                                       {"contentChanges", json::array({change})}});
  json stale = run("edit", {uri, 1, "X"});
  EXPECT_EQ(stale["error"]["data"]["code"], "stale") << stale;
  EXPECT_TRUE(c->Seen("workspace/applyEdit").empty()) << "a stale edit reached the editor";
  EXPECT_EQ(run("get", {uri})["result"]["value"]["text"], "hello\nthere\n");

  // Against the current version it goes to the editor, versioned.
  json ok = run("edit", {uri, 2, "X"});
  ASSERT_TRUE(ok.contains("result")) << ok;
  auto edits = c->Seen("workspace/applyEdit");
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0]["params"]["edit"]["documentChanges"][0]["textDocument"]["version"], 2);
  // Version 2 is used up: a second edit against it is stale, not stacked on the first.
  EXPECT_EQ(run("edit", {uri, 2, "Y"})["error"]["data"]["code"], "stale");

  // The editor refuses (its buffer moved on): the plugin hears "stale", nothing is merged.
  c->Notify("textDocument/didChange", {{"textDocument", {{"uri", uri}, {"version", 3}}},
                                       {"contentChanges", json::array({json{{"text", "é😀x\n"}}})}});
  c->on_request = [](const json&) -> json {
    return {{"applied", false}, {"failureReason", "version mismatch"}};
  };
  json refused = run("edit", {uri, 3, "Z"});
  EXPECT_EQ(refused["error"]["data"]["code"], "stale") << refused;
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("version mismatch"),
            std::string::npos);

  // Columns: plugins count UTF-8 bytes; the editor gets UTF-16 code units.
  c->on_request = [](const json&) -> json { return {{"applied", true}}; };
  json range = run("edit-range", {uri, 3, 6, 7, "y"});  // "x" after é (2 bytes) and 😀 (4)
  ASSERT_TRUE(range.contains("result")) << range;
  json lsp = c->Seen("workspace/applyEdit").back()["params"]["edit"]["documentChanges"][0];
  EXPECT_EQ(lsp["edits"][0]["range"]["start"], json({{"line", 0}, {"character", 3}}));
  EXPECT_EQ(lsp["edits"][0]["range"]["end"], json({{"line", 0}, {"character", 4}}));
  json inside = run("edit-range", {uri, 3, 1, 2, "y"});  // inside é
  EXPECT_EQ(inside["error"]["data"]["code"], "stale");   // version 3 was used by the edit above
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

TEST_F(ServeTest, CommandPastItsDeadlineIsKilledAndTheNextOneRuns) {
  WritePlugin(plugins_ / "slow", "test.slow", "lua", "",
              "anvil.command('spin', function() while true do string.rep('x', 1e6):find('y', 1, "
              "true) end end)\nanvil.command('ok', function() return 'fine' end)\n");
  auto c = StartReady(plugins_ / "slow", "test.slow", {"--timeout", "1"});
  pid_t before = PluginInfo(*c, "test.slow")["pid"].get<pid_t>();
  json r = c->Request("anvil/runCommand", {{"plugin", "test.slow"}, {"command", "spin"}});
  EXPECT_EQ(r["error"]["data"]["code"], "timeout") << r;
  // Gone (reaped before the answer; bounded, not timed, so a loaded machine cannot fake a host
  // that lives on).
  EXPECT_TRUE(WaitUntil([&] { return !ProcessAlive(before); }, std::chrono::seconds(3)));
  json ok = c->Request("anvil/runCommand", {{"plugin", "test.slow"}, {"command", "ok"}});
  EXPECT_EQ(ok["result"]["value"], "fine") << ok;
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

}  // namespace
}  // namespace serve_test
}  // namespace anvil::testing
