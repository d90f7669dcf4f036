// T8/T5 in `anvil serve`: plugin A, granted fs.write = ["**"] over a workspace that holds plugin
// B's directory, rewrote B's main.lua; serve reloaded B on the change (an edit of an approved
// directory never asks again, by design, for the user's own edits) and B's next command ran A's
// code with B's grant (red team, plugdirs). The gateway refuses A's write, and so does
// editor.buffer.edit of B's code (policy/plugin_code_paths.h). The benign neighbours: A writes
// files next to B's directory, and the user's own edit of B on disk reloads B as before.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "serve_client.h"

namespace anvil::testing {
namespace t8_serve_plugin_code_test {
namespace {

using namespace std::chrono_literals;

class T8ServePluginCode : public ServeTestBase {};

TEST_F(T8ServePluginCode, APluginCannotRewriteAnotherPluginsCodeAndRunWithItsGrant) {
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(ws_ / "secret")), 0);
  WriteFile(ws_ / "secret/key", "SECRET-KEY");
  WritePlugin(ws_ / "tools/b", "t8.b", "lua", "fs.read = [\"secret/**\"]\n",
              "anvil.command('x', function() return 'b' end)\n");
  WritePlugin(ws_ / "tools/a", "t8.a", "lua", "fs.read = [\"**\"]\nfs.write = [\"**\"]\n",
              "anvil.command('write', function(a)\n"
              "  local ok, err = pcall(sys.fs.write, a[1], a[2])\n"
              "  return ok and 'wrote' or tostring(err)\n"
              "end)\n"
              "anvil.command('edit', function(a)\n"
              "  return editor.buffer.edit(a[1], 1, {{text = 'OWNED'}})\n"
              "end)\n");
  auto c = Start({"--approve", "--plugin-dir", ws_ / "tools/a", "--plugin-dir", ws_ / "tools/b"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  ASSERT_TRUE(WaitForPluginState(*c, "t8.a", "ready"));
  ASSERT_TRUE(WaitForPluginState(*c, "t8.b", "ready"));
  auto run = [&](const std::string& plugin, const std::string& command, json args) {
    return c->Request("anvil/runCommand",
                      {{"plugin", plugin}, {"command", command}, {"arguments", args}});
  };
  const std::string evil =
      "anvil.command('x', function() return 'pwned ' .. sys.fs.read('secret/key') end)\n";
  json r = run("t8.a", "write", {"tools/b/main.lua", evil});
  const std::string said = r["result"]["value"].get<std::string>();
  EXPECT_NE(said.find("denied"), std::string::npos) << r;
  EXPECT_NE(said.find("t8.b"), std::string::npos) << r;
  // Whatever serve did meanwhile, B runs its own code.
  std::this_thread::sleep_for(1s);
  ASSERT_TRUE(WaitForPluginState(*c, "t8.b", "ready"));
  r = run("t8.b", "x", json::array());
  EXPECT_EQ(r["result"]["value"], "b") << r;
  EXPECT_EQ(r.dump().find("SECRET-KEY"), std::string::npos) << r;
  // editor.buffer.edit of B's code is a write the editor saves: refused too.
  c->Notify("textDocument/didOpen", {{"textDocument",
                                      {{"uri", Uri("tools/b/main.lua")},
                                       {"languageId", "lua"},
                                       {"version", 1},
                                       {"text", "shown"}}}});
  c->Notify("textDocument/didOpen",
            {{"textDocument",
              {{"uri", Uri("notes.txt")}, {"languageId", "text"}, {"version", 1}, {"text", "n"}}}});
  ASSERT_EQ(::symlink("tools/b", (ws_ / "blink").c_str()), 0);
  c->Notify("textDocument/didOpen", {{"textDocument",
                                      {{"uri", Uri("blink/main.lua")},
                                       {"languageId", "lua"},
                                       {"version", 1},
                                       {"text", "shown"}}}});
  for (const char* rel : {"tools/b/main.lua", "blink/main.lua"}) {  // by name, and where it leads
    json edit = run("t8.a", "edit", {rel});
    EXPECT_EQ(edit["error"]["data"]["code"], "denied") << rel << ": " << edit;
    EXPECT_NE(edit.dump().find("t8.b"), std::string::npos) << rel << ": " << edit;
  }
  EXPECT_TRUE(c->Seen("workspace/applyEdit").empty());
  // The benign neighbours: A's write next to B's directory and its edit of an ordinary buffer.
  r = run("t8.a", "write", {"tools/notes.txt", "x"});
  EXPECT_EQ(r["result"]["value"], "wrote") << r;
  EXPECT_TRUE(run("t8.a", "edit", {"notes.txt"}).contains("result"));
  EXPECT_EQ(c->Seen("workspace/applyEdit").size(), 1u);
  // The user's own edit of B's code on disk reloads B, which runs it under B's grant.
  const int before = PluginInfo(*c, "t8.b")["reloads"].get<int>();
  WriteFile(ws_ / "tools/b/main.lua",
            "anvil.command('x', function() return 'b2 ' .. sys.fs.read('secret/key') end)\n");
  ASSERT_TRUE(WaitUntil(
      [&] {
        json p = PluginInfo(*c, "t8.b");
        return p["reloads"].get<int>() > before && p["state"] == "ready";
      },
      20s));
  r = run("t8.b", "x", json::array());
  EXPECT_EQ(r["result"]["value"], "b2 SECRET-KEY") << r;
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

// Anvil's trust state in the workspace (here $XDG_CONFIG_HOME/anvil: trusted keys, command
// rules): editor.buffer.edit of it is a write the editor saves, refused as the gateway refuses
// a plugin's fs writes there (policy/trust_state_paths.h). Benign: an ordinary buffer beside it.
TEST_F(T8ServePluginCode, APluginCannotEditAnvilsTrustStateThroughABuffer) {
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(ws_ / "cfg/anvil")), 0);
  WriteFile(ws_ / "cfg/anvil/config.toml", "# the user's\n");
  WritePlugin(ws_ / "tools/a", "t8.a", "lua", "fs.read = [\"**\"]\nfs.write = [\"**\"]\n",
              "anvil.command('edit', function(a)\n"
              "  return editor.buffer.edit(a[1], 1, {{text = 'OWNED'}})\n"
              "end)\n");
  auto c =
      Start({"--approve", "--plugin-dir", ws_ / "tools/a"}, {"XDG_CONFIG_HOME=" + ws_ / "cfg"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  ASSERT_TRUE(WaitForPluginState(*c, "t8.a", "ready"));
  for (const char* rel : {"cfg/anvil/config.toml", "cfg/notes.txt"}) {
    c->Notify("textDocument/didOpen",
              {{"textDocument",
                {{"uri", Uri(rel)}, {"languageId", "text"}, {"version", 1}, {"text", "t"}}}});
  }
  auto run = [&](const std::string& rel) {
    return c->Request("anvil/runCommand",
                      {{"plugin", "t8.a"}, {"command", "edit"}, {"arguments", {rel}}});
  };
  json edit = run("cfg/anvil/config.toml");
  EXPECT_EQ(edit["error"]["data"]["code"], "denied") << edit;
  EXPECT_NE(edit.dump().find("trust state"), std::string::npos) << edit;
  EXPECT_TRUE(c->Seen("workspace/applyEdit").empty());
  EXPECT_TRUE(run("cfg/notes.txt").contains("result"));
  EXPECT_EQ(c->Seen("workspace/applyEdit").size(), 1u);
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

}  // namespace
}  // namespace t8_serve_plugin_code_test
}  // namespace anvil::testing
