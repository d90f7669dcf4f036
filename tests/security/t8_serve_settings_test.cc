// T8 for Anvil.toml plugin settings in `anvil serve`: a malicious repository's settings reach
// the plugin as read-only data and nothing else. They never change the grant, the consent
// state, or the sandbox; a reload picks up changed settings. Signed manifests in serve:
// a bad signature refuses the plugin before consent is asked (the signed-by-a-trusted-key case
// is run_signed_test.cc: this client has no user config dir).
#include <gtest/gtest.h>

#include "serve_client.h"

namespace anvil::testing {
namespace t8_serve_settings_test {
namespace {

class T8ServeSettings : public ServeTestBase {};

TEST_F(T8ServeSettings, MaliciousSettingsAreDataAndNeverWidenTheGrant) {
  WritePlugin(plugins_ / "p", "test.settings", "js", "fs.read = [\"src/**\"]\n",
              "anvil.command('try', () => {\n"
              "  const s = anvil.settings;\n"
              "  const out = {level: s.level, sandbox: s.sandbox, frozen: "
              "Object.isFrozen(s.permissions)};\n"
              "  out.allowed = sys.fs.read('src/a.c').length > 0;\n"
              "  for (const p of s.paths) {\n"
              "    try { sys.fs.read(p); out[p] = 'READ'; } catch (e) { out[p] = e.message; }\n"
              "  }\n"
              "  try { sys.fs.write('notes/x', 'x'); out.write = 'WROTE'; } catch (e) { out.write "
              "= e.message; }\n"
              "  return out;\n"
              "});\n");
  WriteFile(ws_ / "Anvil.toml",
            "[plugins]\nenable = [\"test.settings\"]\n\n"
            "[plugins.settings.\"test.settings\"]\nlevel = 3\n"
            "permissions = { \"fs.read\" = [\"**\"], \"fs.write\" = [\"**\"], exec = [\"sh\"] }\n"
            "sandbox = \"danger-full-access\"\n"
            "paths = [\"Anvil.toml\", \"/etc/passwd\", \"../x\"]\n");
  WriteFile(ws_ / "README", "not granted");
  auto c = Start({"--plugin-path", plugins_.path()});
  c->on_request = [](const json& r) -> json {
    if (r["method"] == "anvil/consent") return {{"decision", "approve"}};
    return {{"applied", true}};
  };
  ASSERT_TRUE(c->Initialize().contains("result"));
  json info = PluginInfo(*c, "test.settings");
  EXPECT_EQ(info["state"], "needs_consent") << "settings must not skip consent";
  ASSERT_EQ(c->Request("anvil/requestConsent", {{"plugin", "test.settings"}})["result"]["granted"],
            true);
  ASSERT_TRUE(WaitForPluginState(*c, "test.settings", "ready"));
  info = PluginInfo(*c, "test.settings");
  EXPECT_EQ(info["grant"]["granted"]["fs.read"], json({"src/**"})) << info;
  EXPECT_EQ(info["grant"]["granted"]["fs.write"], json::array()) << info;

  json r = c->Request("anvil/runCommand", {{"plugin", "test.settings"}, {"command", "try"}});
  ASSERT_TRUE(r.contains("result")) << r;
  json v = r["result"]["value"];
  EXPECT_EQ(v["level"], 3) << v;
  EXPECT_EQ(v["sandbox"], "danger-full-access");
  EXPECT_EQ(v["frozen"], true);
  EXPECT_EQ(v["allowed"], true) << "the granted read still works: " << v;
  for (const char* p : {"Anvil.toml", "/etc/passwd", "../x"}) {
    EXPECT_NE(v[p], "READ") << p << ": " << v;
  }
  EXPECT_NE(v["Anvil.toml"].get<std::string>().find("denied"), std::string::npos) << v;
  EXPECT_NE(v["write"].get<std::string>().find("denied"), std::string::npos) << v;
  EXPECT_FALSE(Exists(ws_ / "notes/x"));

  // Changed settings arrive with the next reload (a new host, a new handoff).
  WriteFile(ws_ / "Anvil.toml",
            "[plugins]\nenable = [\"test.settings\"]\n\n"
            "[plugins.settings.\"test.settings\"]\nlevel = 4\npaths = []\n");
  json reload = c->Request("anvil/reload", {{"plugin", "test.settings"}});
  EXPECT_EQ(reload["result"]["state"], "ready") << reload;
  r = c->Request("anvil/runCommand", {{"plugin", "test.settings"}, {"command", "try"}});
  EXPECT_EQ(r["result"]["value"]["level"], 4) << r;
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

TEST_F(T8ServeSettings, BadSignatureIsRefusedBeforeConsentUnsignedRunsUnlessRequired) {
  TempDir keys{"anvil-serve-keys"}, config{"anvil-serve-config"};
  WritePlugin(plugins_ / "p", "test.signed", "lua", "fs.read = [\"src/**\"]\n",
              "anvil.command('x', function() return 'ran' end)\n");
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_CONFIG_HOME=" + config.path()};
  ASSERT_EQ(testing::Run({AnvilBin(), "plugin", "keygen", keys / "k"}, o).status, 0);
  ASSERT_EQ(
      testing::Run({AnvilBin(), "plugin", "sign", "--key", keys / "k", plugins_ / "p"}, o).status,
      0);
  // Signed by a key the user (of this serve: no XDG_CONFIG_HOME, no trusted keys) does not trust.
  auto c = Start({"--approve", "--plugin-dir", plugins_ / "p"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  json info = PluginInfo(*c, "test.signed");
  EXPECT_EQ(info["state"], "refused") << info;
  EXPECT_NE(info["detail"].get<std::string>().find("anvil-plugin.toml.sig"), std::string::npos)
      << info;
  EXPECT_NE(info["detail"].get<std::string>().find("do not trust"), std::string::npos) << info;
  EXPECT_EQ(c->ShutdownAndExit(), 0);
  // Unsigned: runs (signatures not required), and is shown as unsigned.
  ASSERT_EQ(Shell("rm '" + plugins_ / "p/anvil-plugin.toml.sig'"), 0);
  c = StartReady(plugins_ / "p", "test.signed");
  EXPECT_TRUE(PluginInfo(*c, "test.signed")["signedBy"].is_null());
  EXPECT_EQ(c->ShutdownAndExit(), 0);
  c = Start({"--approve", "--require-signed", "--plugin-dir", plugins_ / "p"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  EXPECT_EQ(PluginInfo(*c, "test.signed")["state"], "refused");
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

}  // namespace
}  // namespace t8_serve_settings_test
}  // namespace anvil::testing
