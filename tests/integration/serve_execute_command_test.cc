// `workspace/executeCommand` in `anvil serve`: the standard LSP request mapped onto a plugin
// command ("PLUGIN_ID/COMMAND"), with anvil/runCommand's consent, queue, deadline, cancellation
// and progress; the commands advertised in initialize's executeCommandProvider.
#include <gtest/gtest.h>

#include "serve_client.h"

namespace anvil::testing {
namespace serve_execute_command_test {
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

// A plugin approved after initialize is not in the static list: a client that supports dynamic
// registration gets its commands through client/registerCapability, and the registration is
// withdrawn when the plugin's commands change on reload. A client without the capability gets no
// such request (executeCommand still runs the command).
TEST_F(ServeExecuteCommand, CommandsOfAPluginApprovedLaterAreRegisteredDynamically) {
  for (bool dynamic : {true, false}) {
    // Each round its own plugin (and so its own grant).
    const std::string id = dynamic ? "test.dyn" : "test.static";
    const std::string dir = plugins_ / id;
    WritePlugin(dir, id, "lua", "", "anvil.command('first', function() return 1 end)");
    auto c = Start({"--plugin-dir", dir});  // no --approve: needs consent
    json caps = {{"workspace", {{"executeCommand", {{"dynamicRegistration", dynamic}}}}}};
    json init = c->Initialize(false, caps);
    EXPECT_EQ(init["result"]["capabilities"]["executeCommandProvider"]["commands"], json::array());
    c->on_request = [](const json& r) -> json {
      if (r["method"] == "anvil/consent") return {{"decision", "approve"}};
      return nullptr;
    };
    ASSERT_EQ(c->Request("anvil/requestConsent", {{"plugin", id}})["result"]["granted"], true);
    ASSERT_TRUE(WaitForPluginState(*c, id, "ready"));
    c->Request("anvil/status");  // one more round trip: a registration would have come by now
    auto regs = c->Seen("client/registerCapability");
    if (!dynamic) {
      EXPECT_TRUE(regs.empty()) << regs.front();
      EXPECT_EQ(c->Request("workspace/executeCommand", {{"command", id + "/first"}})["result"], 1);
      EXPECT_EQ(c->ShutdownAndExit(), 0);
      continue;
    }
    ASSERT_EQ(regs.size(), 1u);
    json reg = regs[0]["params"]["registrations"][0];
    EXPECT_EQ(reg["method"], "workspace/executeCommand");
    EXPECT_EQ(reg["registerOptions"]["commands"], json({id + "/first"})) << reg;
    EXPECT_EQ(c->Request("workspace/executeCommand", {{"command", id + "/first"}})["result"], 1);

    // The plugin's code changes its commands; after the reload the old registration is
    // withdrawn and the new command registered.
    WritePlugin(dir, id, "lua", "", "anvil.command('second', function() return 2 end)");
    json reload = c->Request("anvil/reload", {{"plugin", id}});
    ASSERT_TRUE(reload.contains("result")) << reload;
    ASSERT_TRUE(WaitForPluginState(*c, id, "ready"));
    c->Request("anvil/status");
    auto unregs = c->Seen("client/unregisterCapability");
    ASSERT_FALSE(unregs.empty());
    EXPECT_EQ(unregs[0]["params"]["unregisterations"][0]["id"], reg["id"]) << unregs[0];
    regs = c->Seen("client/registerCapability");
    ASSERT_GE(regs.size(), 2u);
    EXPECT_EQ(regs.back()["params"]["registrations"][0]["registerOptions"]["commands"],
              json({id + "/second"}))
        << regs.back();
    EXPECT_EQ(c->ShutdownAndExit(), 0);
  }
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
}  // namespace serve_execute_command_test
}  // namespace anvil::testing
