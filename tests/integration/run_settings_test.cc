// Anvil.toml plugin settings reach the plugin through `anvil run`, read-only, in Lua and JS;
// they are data and never change what the plugin may do (INTERFACES.md: Anvil.toml is
// untrusted input from the repository).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace run_settings_test {
namespace {

class AnvilRunSettings : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(ws_ / "a.txt", "alpha");
    WriteFile(ws_ / "secret.txt", "do not read");
    ASSERT_EQ(
        Shell("mkdir -p '" + ws_.path() + "/notes' '" + lua_.path() + "' '" + js_.path() + "'"), 0);
  }
  void Plugin(const TempDir& dir, const std::string& id, const std::string& runtime,
              const std::string& permissions, const std::string& code) {
    const std::string entry = runtime == "lua" ? "main.lua" : "main.js";
    WriteFile(dir / "anvil-plugin.toml", "id = \"" + id + "\"\nversion = \"1\"\nruntime = \"" +
                                             runtime + "\"\nentry = \"" + entry +
                                             "\"\n\n[permissions]\n" + permissions);
    WriteFile(dir / entry, code);
  }
  RunResult Anvil(std::vector<std::string> args) {
    args.insert(args.begin(), {AnvilBin(), "run", "--workspace", ws_.path()});
    RunOptions o;
    o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path()};
    return testing::Run(args, o);
  }
  TempDir ws_{"anvil-settings-ws"};
  TempDir lua_{"anvil-settings-lua"};
  TempDir js_{"anvil-settings-js"};
  TempDir state_{"anvil-settings-state"};
};

TEST_F(AnvilRunSettings, LuaAndJsPluginsReadTheirOwnSettingsReadOnly) {
  WriteFile(ws_ / "Anvil.toml",
            "[plugins.settings.\"test.lua\"]\npattern = \"TODO|FIXME\"\nmax_results = 200\n"
            "[plugins.settings.\"test.lua\".nested]\nlist = [1, 2, 3]\n"
            "[plugins.settings.\"test.js\"]\ngreeting = \"hi\"\n");
  Plugin(lua_, "test.lua", "lua", "",
         "anvil.command('show', function()\n"
         "  local ok, e = pcall(function() anvil.settings.pattern = 'x' end)\n"
         "  local ok2 = pcall(rawset, anvil.settings.nested, 'list', {})\n"
         "  return {pattern = anvil.settings.pattern, max = anvil.settings.max_results,\n"
         "          n = #anvil.settings.nested.list, greeting = anvil.settings.greeting,\n"
         "          write = ok and 'WROTE' or e, rawset = ok2 and 'WROTE' or 'refused'}\n"
         "end)");
  auto r = Anvil({"--approve", "--json", lua_.path(), "show"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto v = nlohmann::json::parse(r.out)["result"];
  EXPECT_EQ(v["pattern"], "TODO|FIXME") << v;
  EXPECT_EQ(v["max"], 200);
  EXPECT_EQ(v["n"], 3);
  EXPECT_FALSE(v.contains("greeting")) << "another plugin's settings leaked: " << v;
  EXPECT_NE(v["write"].get<std::string>().find("denied: Anvil's tables are read-only"),
            std::string::npos)
      << v;
  EXPECT_EQ(v["rawset"], "refused");

  Plugin(js_, "test.js", "js", "",
         "anvil.command('show', () => {\n"
         "  'use strict';\n"
         "  let write = 'WROTE';\n"
         "  try { anvil.settings.greeting = 'x'; } catch (e) { write = String(e); }\n"
         "  return {greeting: anvil.settings.greeting, frozen: Object.isFrozen(anvil.settings),\n"
         "          pattern: anvil.settings.pattern === undefined ? null : 'LEAK', write};\n"
         "});");
  r = Anvil({"--approve", "--json", js_.path(), "show"});
  ASSERT_EQ(r.status, 0) << r.err;
  v = nlohmann::json::parse(r.out)["result"];
  EXPECT_EQ(v["greeting"], "hi") << v;
  EXPECT_EQ(v["frozen"], true);
  EXPECT_TRUE(v["pattern"].is_null()) << v;
  EXPECT_NE(v["write"], "WROTE");
}

TEST_F(AnvilRunSettings, NoAnvilTomlMeansEmptySettingsAndABrokenOneIsOnlyAWarning) {
  Plugin(lua_, "test.lua", "lua", "",
         "anvil.command('n', function() local n = 0 for _ in pairs(anvil.settings) do n = n + 1 "
         "end return n end)");
  auto r = Anvil({"--approve", lua_.path(), "n"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "0\n");
  WriteFile(ws_ / "Anvil.toml", "[plugins.settings.\"test.lua\"\nbroken");
  r = Anvil({"--approve", lua_.path(), "n"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "0\n");
  EXPECT_NE(r.err.find("warning: invalid: Anvil.toml"), std::string::npos) << r.err;
}

// A hostile repository names permissions, paths, executables and sandbox options in the
// plugin's settings. They arrive as data; the grant and the sandbox are what the user approved.
TEST_F(AnvilRunSettings, MaliciousSettingsNeverWidenTheGrantOrTheSandbox) {
  WriteFile(ws_ / "Anvil.toml",
            "[plugins.settings.\"test.lua\"]\n"
            "permissions = { fs = { read = [\"**\"], write = [\"**\"] }, exec = [\"sh\"] }\n"
            "\"fs.read\" = [\"**\", \"/etc/passwd\", \"../\"]\n"
            "\"net.hosts\" = [\"evil.example\"]\n"
            "sandbox = \"danger-full-access\"\n"
            "writable_roots = [\"/\"]\n"
            "unsafe_test_resolver = \"127.0.0.1:53\"\n"
            "grant = \"all\"\n"
            "paths = [\"/etc\", \"secret.txt\"]\n");
  Plugin(lua_, "test.lua", "lua", "fs.read = [\"a.txt\"]\n",
         "anvil.command('try', function()\n"
         "  local out = {sandbox = anvil.settings.sandbox}\n"
         "  out.allowed = sys.fs.read('a.txt')\n"
         "  for _, p in ipairs(anvil.settings.paths) do\n"
         "    local ok, e = pcall(sys.fs.read, p)\n"
         "    out[p] = ok and 'READ' or e\n"
         "  end\n"
         "  local ok, e = pcall(sys.fs.write, 'notes/x.txt', 'x')\n"
         "  out.write = ok and 'WROTE' or e\n"
         "  ok, e = pcall(sys.exec, {program = 'sh', args = {'-c', 'id'}})\n"
         "  out.exec = ok and 'RAN' or e\n"
         "  return out\n"
         "end)");
  auto r = Anvil({"--approve", "--json", lua_.path(), "try"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto v = nlohmann::json::parse(r.out)["result"];
  EXPECT_EQ(v["sandbox"], "danger-full-access") << "the setting is visible as data";
  EXPECT_EQ(v["allowed"], "alpha") << v;  // the benign, granted read works
  EXPECT_NE(v["secret.txt"].get<std::string>().find("denied"), std::string::npos) << v;
  EXPECT_NE(v["/etc"], "READ") << v;
  EXPECT_NE(v["/etc"].get<std::string>().find("invalid"), std::string::npos) << v;
  EXPECT_NE(v["write"].get<std::string>().find("denied"), std::string::npos) << v;
  EXPECT_NE(v["exec"].get<std::string>().find("denied"), std::string::npos) << v;
  EXPECT_FALSE(Exists(ws_ / "notes/x.txt"));
  // The stored grant is exactly the manifest's request.
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path()};
  auto list = testing::Run({AnvilBin(), "plugin", "list", "--workspace", ws_.path()}, o);
  ASSERT_EQ(list.status, 0) << list.err;
  EXPECT_NE(list.out.find("\"a.txt\""), std::string::npos) << list.out;
  EXPECT_EQ(list.out.find("\"**\""), std::string::npos) << list.out;
  EXPECT_EQ(list.out.find("evil.example"), std::string::npos) << list.out;
}

}  // namespace
}  // namespace run_settings_test
}  // namespace anvil::testing
