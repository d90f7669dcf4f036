// T2 end to end: `anvil run` of real Lua and JS plugins whose manifests request net.hosts, with
// the trusted-side test flags on the `anvil run` command line, through the session's gateway to
// the HTTPS test server. And the same plugin without the allow flag: denied, nothing connected,
// whatever the workspace's Anvil.toml says.
#include "t2_fetch_fixture.h"

namespace anvil::testing {
namespace t2_fetch_plugin_e2e_test {
namespace {

class T2PluginEndToEnd : public T2FetchTest {
 protected:
  void Plugin(const std::string& runtime, const std::string& code, bool post = false) {
    const std::string entry = runtime == "lua" ? "main.lua" : "main.js";
    WriteFile(plugin_ / "anvil-plugin.toml",
              "id = \"t2.fetcher\"\nversion = \"1.0.0\"\nruntime = \"" + runtime +
                  "\"\nentry = \"" + entry + "\"\n\n[permissions]\n" +
                  "net.hosts = [\"api.anvil.test\"]\n" + (post ? "net.post = true\n" : ""));
    WriteFile(plugin_ / entry, code);
  }
  RunResult Anvil(const std::vector<std::string>& flags, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {AnvilBin(), "run", "--workspace", ws_->path(), "--approve"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back(plugin_.path());
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions o;
    o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path()};
    return testing::Run(argv, o);
  }
  TempDir plugin_{"anvil-t2-plugin"};
  TempDir state_{"anvil-t2-state"};
};

const char kLuaPlugin[] = R"(
anvil.command('get', function(args)
  local r = sys.net.fetch{url = args[1]}
  return r.status .. ' ' .. r.headers['content-type'] .. ' ' .. r.body
end)
anvil.command('post', function(args)
  local r = sys.net.fetch{url = args[1], method = 'POST', body = 'lua-body',
                          headers = {['Content-Type'] = 'text/plain'}}
  return r.status .. ' ' .. r.body
end)
anvil.command('try', function(args)
  local ok, err = pcall(sys.net.fetch, {url = args[1]})
  return tostring(ok) .. ' ' .. tostring(err)
end)
)";

TEST_F(T2PluginEndToEnd, LuaPluginFetchesThroughTheSessionGateway) {
  Plugin("lua", kLuaPlugin, /*post=*/true);
  auto r = Anvil(TestFlags(), {"get", Url("api.anvil.test", "/hello")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "200 text/plain hello from allowed\n") << r.err;
  auto p = Anvil(TestFlags(), {"post", Url("api.anvil.test", "/echo")});
  EXPECT_EQ(p.status, 0) << p.err;
  EXPECT_EQ(p.out, "200 lua-body\n") << p.err;
  EXPECT_EQ(forbidden_->Connections(), 0);
}

TEST_F(T2PluginEndToEnd, JsPluginFetchesThroughTheSessionGateway) {
  Plugin("js", R"(
anvil.command('get', (args) => {
  const r = sys.net.fetch({url: args[0]});
  return r.status + ' ' + r.headers['content-type'] + ' ' + r.body;
});
)");
  auto r = Anvil(TestFlags(), {"get", Url("api.anvil.test", "/hello")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "200 text/plain hello from allowed\n") << r.err;
}

TEST_F(T2PluginEndToEnd, WithoutTheTrustedFlagsThePluginCannotReachLoopback) {
  Plugin("lua", kLuaPlugin);
  // The workspace tries its luck: plugin settings naming the options are the plugin's data only.
  WriteFile(*ws_ / "Anvil.toml",
            "[plugins]\nenable = [\"t2.fetcher\"]\n[plugins.settings.\"t2.fetcher\"]\n"
            "unsafe-test-allow-address = \"127.0.0.2:" +
                std::to_string(port_) + "\"\n");
  auto r = Anvil({"--unsafe-test-resolver", dns_->Address(), "--unsafe-test-ca", pki_->ca_path()},
                 {"try", Url("api.anvil.test", "/hello")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("false denied: ", 0), 0u) << r.out << r.err;
  ExpectNoConnections();
  // Benign neighbour: the same plugin with the trusted flag reaches the server.
  auto ok = Anvil(TestFlags(), {"try", Url("api.anvil.test", "/hello")});
  EXPECT_NE(ok.out.find("true"), std::string::npos) << ok.out << ok.err;
}

TEST_F(T2PluginEndToEnd, TheFetchExamplePluginRunsAgainstTheTestServer) {
  // examples/plugins/fetch-example is granted example.com; the test DNS points that name at
  // the loopback server (whose test certificate names it). Nothing leaves this machine.
  dns_->Set("example.com", {IpAddress::V4(127, 0, 0, 2)});
  std::vector<std::string> argv = {AnvilBin(), "run", "--workspace", ws_->path(), "--approve"};
  for (const auto& f : TestFlags()) argv.push_back(f);
  argv.insert(argv.end(), {std::string(ANVIL_SOURCE_DIR) + "/examples/plugins/fetch-example", "get",
                           "https://example.com:" + std::to_string(port_) + "/hello"});
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path()};
  auto r = testing::Run(argv, o);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "200 text/plain hello from allowed\n") << r.err;
}

}  // namespace
}  // namespace t2_fetch_plugin_e2e_test
}  // namespace anvil::testing
