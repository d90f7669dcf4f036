// `anvil serve` reloads a --plugin-dir plugin when its files change: the same reload as
// anvil/reload, except that --approve never approves a manifest that grew on a file change.
#include "plugin_debug.h"

namespace anvil::testing {
namespace serve_watch_test {
namespace {

using namespace std::chrono_literals;

// ---- anvil serve: reload when the files change --------------------------------------------

TEST_F(PluginDebug, ServeReloadsAPluginDirPluginWhenItsFilesChange) {
  WritePlugin(dir_, "test.live", "js", "", "anvil.command('t', () => 'one');\n");
  auto c = StartReady(dir_, "test.live");
  json r = c->Request("anvil/runCommand", {{"plugin", "test.live"}, {"command", "t"}});
  EXPECT_EQ(r["result"]["value"], "one") << r;
  const pid_t old_host = HostPid(*c, "test.live");
  WriteFile(dir_ + "/main.js", "anvil.command('t', () => 'two');\n");
  // The same reload as anvil/reload: counted, a new host, the old one gone.
  ASSERT_TRUE(WaitUntil(
      [&] {
        json p = PluginInfo(*c, "test.live");
        return p["reloads"] == 1 && p["state"] == "ready";
      },
      20s));
  EXPECT_FALSE(ProcessAlive(old_host));
  r = c->Request("anvil/runCommand", {{"plugin", "test.live"}, {"command", "t"}});
  EXPECT_EQ(r["result"]["value"], "two") << r;
  bool told = false;
  for (const auto& m : c->Seen("window/logMessage")) {
    told = told || m["params"]["message"].get<std::string>().find("changed: reloading") !=
                       std::string::npos;
  }
  EXPECT_TRUE(told);
}

// The attack: the files change to a manifest that asks for more. Even a session started with
// --approve does not approve that on a file change: the plugin waits for consent.
TEST_F(PluginDebug, ServeReloadOnChangeNeverApprovesAManifestThatAsksForMore) {
  WritePlugin(dir_, "test.grow", "lua", "", "anvil.command('t', function() return 1 end)\n");
  auto c = StartReady(dir_, "test.grow");
  WritePlugin(dir_, "test.grow", "lua", "fs.write = [\"**\"]\n",
              "anvil.command('t', function() sys.fs.write('pwned.txt', 'x') return 2 end)\n");
  ASSERT_TRUE(WaitForPluginState(*c, "test.grow", "needs_consent"));
  json r = c->Request("anvil/runCommand", {{"plugin", "test.grow"}, {"command", "t"}});
  EXPECT_EQ(r["error"]["data"]["code"], "consent_required") << r;
  EXPECT_FALSE(Exists(ws_ / "pwned.txt"));
  // The benign neighbour: an explicit reload is the user's own request, as before.
  json reload = c->Request("anvil/reload", {{"plugin", "test.grow"}});
  EXPECT_EQ(reload["result"]["state"], "ready") << reload;
}

// A plugin's session counts (its writes) are kept by its id, so a plugin that ran keeps its
// id: a manifest that does not load in between does not let a later one bring another id.
// Beside it: the same id loads again.
TEST_F(PluginDebug, ServeReloadKeepsTheIdOfAPluginThatRanAcrossABrokenManifest) {
  WritePlugin(dir_, "test.keep", "lua", "", "anvil.command('t', function() return 1 end)\n");
  auto c = StartReady(dir_, "test.keep", {"--no-watch"});
  WriteFile(dir_ + "/anvil-plugin.toml", "id = \n");
  json broken = c->Request("anvil/reload", {{"plugin", "test.keep"}});
  EXPECT_NE(PluginInfo(*c, "test.keep")["state"], "ready") << broken;
  WritePlugin(dir_, "test.other", "lua", "", "anvil.command('t', function() return 2 end)\n");
  json other = c->Request("anvil/reload", {{"plugin", "test.keep"}});
  const json info = PluginInfo(*c, "test.keep");
  EXPECT_NE(info["state"], "ready") << other << info;
  EXPECT_NE((other.dump() + info.dump()).find("the plugin id changed from test.keep to test.other"),
            std::string::npos)
      << other << info;
  EXPECT_TRUE(PluginInfo(*c, "test.other").is_null());
  WritePlugin(dir_, "test.keep", "lua", "", "anvil.command('t', function() return 3 end)\n");
  json same = c->Request("anvil/reload", {{"plugin", "test.keep"}});
  EXPECT_EQ(same["result"]["state"], "ready") << same;
}

TEST_F(PluginDebug, ServeNoWatchLeavesChangedFilesAlone) {
  WritePlugin(dir_, "test.still", "js", "", "anvil.command('t', () => 'one');\n");
  auto c = StartReady(dir_, "test.still", {"--no-watch"});
  WriteFile(dir_ + "/main.js", "anvil.command('t', () => 'two');\n");
  std::this_thread::sleep_for(1s);  // nothing is expected to happen: give it the chance
  EXPECT_EQ(PluginInfo(*c, "test.still")["reloads"], 0);
}

}  // namespace
}  // namespace serve_watch_test
}  // namespace anvil::testing
