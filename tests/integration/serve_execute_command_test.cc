// `workspace/executeCommand` in `anvil serve`: the standard LSP request mapped onto a plugin
// command ("PLUGIN_ID/COMMAND"), with anvil/runCommand's consent, queue, deadline, cancellation
// and progress; the commands advertised in initialize's executeCommandProvider.
#include <gtest/gtest.h>

#include "serve_client.h"

namespace anvil::testing {
namespace {

class ServeExecuteCommand : public ServeTestBase {};

TEST_F(ServeExecuteCommand, InitializeAdvertisesReadyCommandsAndExecuteCommandRunsThem) {
  WritePlugin(plugins_ / "p", "test.exec", "lua", "",
              "anvil.command('echo', function(args) return {first = args[1], n = #args} end)\n"
              "anvil.command('plain', function() return 'text' end)");
  auto c = Start({"--approve", "--plugin-dir", plugins_ / "p"});
  json init = c->Initialize();
  ASSERT_TRUE(init.contains("result")) << init;
  json advertised = init["result"]["capabilities"]["executeCommandProvider"]["commands"];
  EXPECT_EQ(advertised, json({"test.exec/echo", "test.exec/plain"})) << init;

  json run = c->Request("workspace/executeCommand", {{"command", "test.exec/echo"},
                                                     {"arguments", {"a", json{{"k", 1}}}},
                                                     {"workDoneToken", "tok-x"}});
  ASSERT_TRUE(run.contains("result")) << run;
  EXPECT_EQ(run["result"], json({{"first", "a"}, {"n", 2}}));  // the value itself (LSPAny)
  auto progress = c->Seen("$/progress");
  ASSERT_GE(progress.size(), 2u);
  EXPECT_EQ(progress.front()["params"]["token"], "tok-x");
  EXPECT_EQ(progress.front()["params"]["value"]["kind"], "begin");
  EXPECT_EQ(progress.back()["params"]["value"]["kind"], "end");
  EXPECT_EQ(c->Request("workspace/executeCommand", {{"command", "test.exec/plain"}})["result"],
            "text");
  // anvil/runCommand is unchanged: {"value": ...}.
  EXPECT_EQ(c->Request("anvil/runCommand",
                       {{"plugin", "test.exec"}, {"command", "plain"}})["result"]["value"],
            "text");
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

TEST_F(ServeExecuteCommand, MalformedOrUnknownCommandsAreRefused) {
  WritePlugin(plugins_ / "p", "test.exec", "lua", "",
              "anvil.command('plain', function() return 'text' end)");
  auto c = StartReady(plugins_ / "p", "test.exec");
  for (const json& bad : {json("plain"), json("/plain"), json("test.exec/"), json(7)}) {
    json r = c->Request("workspace/executeCommand", {{"command", bad}});
    EXPECT_EQ(r["error"]["code"], -32602) << bad << " " << r;
  }
  json args = c->Request("workspace/executeCommand",
                         {{"command", "test.exec/plain"}, {"arguments", {{"x", 1}}}});
  EXPECT_EQ(args["error"]["code"], -32602) << "arguments must be an array: " << args;
  json unknown_plugin = c->Request("workspace/executeCommand", {{"command", "nope.x/plain"}});
  EXPECT_EQ(unknown_plugin["error"]["data"]["code"], "not_found") << unknown_plugin;
  json unknown_command = c->Request("workspace/executeCommand", {{"command", "test.exec/nope"}});
  EXPECT_EQ(unknown_command["error"]["data"]["code"], "not_found") << unknown_command;
  // The benign request still works after the refusals.
  EXPECT_EQ(c->Request("workspace/executeCommand", {{"command", "test.exec/plain"}})["result"],
            "text");
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

TEST_F(ServeExecuteCommand, ConsentIsRequiredAsForRunCommand) {
  WritePlugin(plugins_ / "p", "test.exec", "lua", "fs.write = [\"notes/**\"]\n",
              "anvil.command('w', function() sys.fs.write('notes/ran.txt', 'x') return 'ok' end)");
  auto c = Start({"--plugin-dir", plugins_ / "p"});  // no --approve
  json init = c->Initialize();
  EXPECT_EQ(init["result"]["capabilities"]["executeCommandProvider"]["commands"], json::array())
      << init;
  json refused = c->Request("workspace/executeCommand", {{"command", "test.exec/w"}});
  EXPECT_EQ(refused["error"]["data"]["code"], "consent_required") << refused;
  EXPECT_FALSE(Exists(ws_ / "notes/ran.txt"));
  c->on_request = [](const json& r) -> json {
    if (r["method"] == "anvil/consent") return {{"decision", "approve"}};
    return {{"applied", true}};
  };
  ASSERT_EQ(c->Request("anvil/requestConsent", {{"plugin", "test.exec"}})["result"]["granted"],
            true);
  json ran = c->Request("workspace/executeCommand", {{"command", "test.exec/w"}});
  EXPECT_EQ(ran["result"], "ok") << ran;
  EXPECT_TRUE(Exists(ws_ / "notes/ran.txt"));
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

TEST_F(ServeExecuteCommand, CancelRequestStopsAnExecuteCommandThatIgnoresIt) {
  WritePlugin(plugins_ / "p", "test.exec", "lua", "",
              "anvil.command('spin', function() while true do end end)\n"
              "anvil.command('plain', function() return 'text' end)");
  auto c = StartReady(plugins_ / "p", "test.exec", {"--cancel-grace-ms", "100"});
  json id = c->SendRequest("workspace/executeCommand", {{"command", "test.exec/spin"}});
  ASSERT_TRUE(WaitUntil([&] {
    json status = c->Request("anvil/status")["result"];
    return status["plugins"][0]["running"] == true;
  }));
  c->Notify("$/cancelRequest", {{"id", id}});
  json reply = c->ReadResponse(id);
  EXPECT_EQ(reply["error"]["code"], -32800) << reply;
  EXPECT_EQ(reply["error"]["data"]["code"], "cancelled");
  // The plugin is back (a fresh host) and runs the next command.
  ASSERT_TRUE(WaitForPluginState(*c, "test.exec", "ready"));
  EXPECT_EQ(c->Request("workspace/executeCommand", {{"command", "test.exec/plain"}})["result"],
            "text");
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

}  // namespace
}  // namespace anvil::testing
