// T6 for `anvil serve` (resource exhaustion): a plugin's writes are capped per session, per
// plugin id (bytes written, files and directories made), whatever `anvil serve` restarts under
// it — its host, or the gateway itself (to serve a plugin admitted later that needs more, or
// after a crash or a kill -9).
#include <gtest/gtest.h>
#include <signal.h>

#include "serve_client.h"

namespace anvil::testing {
namespace t6_serve_write_budget_test {
namespace {

class T6Serve : public ServeTestBase {
 protected:
  // `mk PREFIX N` makes notes/PREFIX1 .. notes/PREFIXN and says how many it made before the
  // first refusal; `big` writes 600 bytes over notes/big.
  void Writer(const std::string& dir, const std::string& id) {
    WritePlugin(plugins_ / dir, id, "lua", "fs.read = [\"notes/**\"]\nfs.write = [\"notes/**\"]\n",
                R"LUA(
anvil.command('mk', function(a)
  local made = 0
  for i = 1, tonumber(a[2]) do
    local ok, err = pcall(sys.fs.mkdir, 'notes/' .. a[1] .. i)
    if not ok then return {made = made, error = tostring(err)} end
    made = made + 1
  end
  return {made = made}
end)
anvil.command('big', function()
  local ok, err = pcall(sys.fs.write, 'notes/big', string.rep('b', 600))
  return ok and 'wrote' or tostring(err)
end)
)LUA");
  }
  static json Mk(ServeClient& c, const std::string& id, const std::string& prefix, int n) {
    json r =
        c.Request("anvil/runCommand", {{"plugin", id},
                                       {"command", "mk"},
                                       {"arguments", json::array({prefix, std::to_string(n)})}});
    return r.contains("result") ? r["result"]["value"] : r;
  }
  static std::string Big(ServeClient& c, const std::string& id) {
    json r = c.Request("anvil/runCommand", {{"plugin", id}, {"command", "big"}});
    if (r.contains("result") && r["result"]["value"].is_string()) return r["result"]["value"];
    return r.dump();
  }
  static json Status(ServeClient& c) { return c.Request("anvil/status")["result"]; }
  static json Writes(ServeClient& c, const std::string& id) {
    const json status = Status(c);
    for (const auto& p : status["plugins"]) {
      if (p["id"] == id) return p["writes"];
    }
    return nullptr;
  }
  // Waits until a gateway other than `before` runs and `ids` are ready again.
  static bool NewGatewayServes(ServeClient& c, const json& before,
                               const std::vector<std::string>& ids) {
    return WaitUntil([&] {
      const json now = Status(c)["gateway"]["pid"];
      if (!now.is_number_integer() || now == before) return false;
      for (const auto& id : ids) {
        if (PluginInfo(c, id)["state"] != "ready") return false;
      }
      return true;
    });
  }
};

// Red team: a plugin granted fs.write made its 100,000 directories; then a plugin that needs
// exec was approved, `anvil serve` restarted the gateway to serve it, and the first plugin made
// 99,999 more; the same after the gateway was killed -9. The budget lived in the gateway alone.
// Now it is counted in memory `anvil serve` owns and every gateway it starts maps, charged before
// each write: neither a planned restart nor a kill -9 gives any of it back. The neighbour: another
// plugin's budget is its own, and it writes after both restarts.
TEST_F(T6Serve, APluginsWriteBudgetOutlivesEveryGatewayItRanUnder) {
  Writer("writer", "test.writer");
  Writer("neighbour", "test.neighbour");
  WritePlugin(plugins_ / "grower", "test.grower", "lua", "fs.read = [\"src/**\"]\n",
              "anvil.command('x', function() return 1 end)\n");
  auto c = Start({"--approve", "--plugin-dir", plugins_ / "writer", "--plugin-dir",
                  plugins_ / "neighbour", "--plugin-dir", plugins_ / "grower", "--no-watch",
                  "--max-plugin-new-entries", "20", "--max-plugin-write-bytes", "1K"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  for (const char* id : {"test.writer", "test.neighbour", "test.grower"}) {
    ASSERT_TRUE(WaitForPluginState(*c, id, "ready")) << id;
  }
  // Spent: 600 of 1,024 bytes, and 1 + 19 of 20 entries.
  EXPECT_EQ(Big(*c, "test.writer"), "wrote");
  json made = Mk(*c, "test.writer", "a", 30);
  EXPECT_EQ(made["made"], 19) << made;
  EXPECT_NE(made["error"].get<std::string>().find("its cap of 20 files and directories"),
            std::string::npos)
      << made;
  EXPECT_EQ(Writes(*c, "test.writer"), json({{"bytes", 600}, {"entries", 20}}));
  // A plugin that now needs exec: the gateway is restarted to serve it.
  json gateway = Status(*c)["gateway"]["pid"];
  WritePlugin(plugins_ / "grower", "test.grower", "lua",
              "fs.read = [\"src/**\"]\nexec = [\"rg\"]\n",
              "anvil.command('x', function() return 1 end)\n");
  json reload = c->Request("anvil/reload", {{"plugin", "test.grower"}});
  EXPECT_EQ(reload["result"]["state"], "ready") << reload;
  ASSERT_TRUE(NewGatewayServes(*c, gateway, {"test.writer", "test.neighbour"}));
  EXPECT_EQ(Status(*c)["gateway"]["widenings"], 1);
  made = Mk(*c, "test.writer", "b", 5);
  EXPECT_EQ(made["made"], 0) << "a widened gateway gave the budget back: " << made;
  EXPECT_NE(Big(*c, "test.writer").find("its cap of 1024 bytes"), std::string::npos);
  // The gateway killed -9: whatever it had charged is in the session's table, not lost with it.
  gateway = Status(*c)["gateway"]["pid"];
  ASSERT_TRUE(gateway.is_number_integer());
  ASSERT_EQ(::kill(gateway.get<pid_t>(), SIGKILL), 0);
  ASSERT_TRUE(NewGatewayServes(*c, gateway, {"test.writer", "test.neighbour"}));
  made = Mk(*c, "test.writer", "c", 5);
  EXPECT_EQ(made["made"], 0) << "a gateway killed -9 gave the budget back: " << made;
  EXPECT_NE(Big(*c, "test.writer").find("its cap of 1024 bytes"), std::string::npos);
  EXPECT_EQ(Writes(*c, "test.writer"), json({{"bytes", 600}, {"entries", 20}}));
  for (const char* name : {"notes/b1", "notes/c1"}) EXPECT_FALSE(Exists(ws_ / name)) << name;
  // The neighbour's budget is its own, untouched by the restarts.
  EXPECT_EQ(Mk(*c, "test.neighbour", "n", 5)["made"], 5);
  EXPECT_EQ(Writes(*c, "test.neighbour"), json({{"bytes", 0}, {"entries", 5}}));
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

}  // namespace
}  // namespace t6_serve_write_budget_test
}  // namespace anvil::testing
