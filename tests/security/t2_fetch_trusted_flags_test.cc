// T2: the --unsafe-test-* options are the trusted side's alone. Only the command line of
// anvil-gateway (passed by `anvil run` / `anvil serve`) sets them; a manifest, a grant, an
// Anvil.toml or a request cannot, and without them a plugin cannot reach a loopback server even
// when everything it controls names one.
#include <nlohmann/json.hpp>

#include "policy/grant.h"
#include "policy/manifest.h"
#include "policy/workspace_config.h"
#include "t2_fetch_fixture.h"

namespace anvil::testing {
namespace t2_fetch_trusted_flags_test {
namespace {

using T2TrustedFlags = T2FetchTest;

const char* kOptionNames[] = {"unsafe-test-resolver", "unsafe-test-allow-address", "unsafe-test-ca",
                              "unsafe_test_allow_address"};

TEST_F(T2TrustedFlags, WithoutTheAllowFlagLoopbackIsUnreachableEvenWhenGranted) {
  // DNS and CA flags, but no --unsafe-test-allow-address: the production connect policy.
  StartNet({"api.anvil.test", "127.0.0.2"}, false,
           {"--unsafe-test-resolver", dns_->Address(), "--unsafe-test-ca", pki_->ca_path()},
           /*test_flags=*/false);
  for (const std::string& url : {Url("api.anvil.test", "/hello"), WithPort("https://127.0.0.2:P/"),
                                 std::string("https://api.anvil.test/hello")}) {
    auto f = Fetch(url);
    EXPECT_FALSE(f.ok) << url;
    EXPECT_EQ(f.code, "denied") << url << ": " << f.message;
  }
  ExpectNoConnections();
}

TEST_F(T2TrustedFlags, ARequestCannotCarryExtraOptions) {
  StartNet({"api.anvil.test"});
  auto r = client_->Call("net.fetch", {Url("api.anvil.test", "/hello"), "GET", "{}", "",
                                       "--unsafe-test-allow-address=127.0.0.1"});
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->ok);
  EXPECT_EQ(r->fields[0], "invalid");
  auto h = Fetch(Url("api.anvil.test", "/hello"), "GET",
                 R"({"X-Unsafe-Test-Allow-Address": "127.0.0.1"})");
  EXPECT_TRUE(h.ok);  // just a header, sent to the server; it changes nothing here
  EXPECT_EQ(forbidden_->Connections(), 0);
}

TEST(T2TrustedFlagsConfig, ManifestCannotNameTheOptions) {
  for (const char* name : kOptionNames) {
    for (const std::string& where : {std::string("[permissions]\n"), std::string("")}) {
      const std::string toml =
          "id = \"t2.m\"\nversion = \"1.0.0\"\nruntime = \"lua\"\n"
          "entry = \"main.lua\"\n" +
          where + "\"" + name + "\" = \"127.0.0.1:53\"\n";
      auto m = ParseManifest(toml, "anvil-plugin.toml");
      EXPECT_FALSE(m) << toml;
      if (!m) {
        EXPECT_EQ(m.error().code, "invalid");
      }
    }
  }
  // Benign neighbour: the same manifest with only net.hosts parses.
  EXPECT_TRUE(
      ParseManifest("id = \"t2.m\"\nversion = \"1.0.0\"\nruntime = \"lua\"\n"
                    "entry = \"main.lua\"\n[permissions]\nnet.hosts = [\"api.anvil.test\"]\n",
                    "anvil-plugin.toml"));
}

TEST(T2TrustedFlagsConfig, GrantCannotCarryTheOptions) {
  for (const char* name : kOptionNames) {
    nlohmann::json grant = GrantToJson(Grant{});
    grant[name] = "127.0.0.1";
    EXPECT_FALSE(GrantFromJson(grant)) << name;
  }
  EXPECT_TRUE(GrantFromJson(GrantToJson(Grant{})));
}

TEST(T2TrustedFlagsConfig, AnvilTomlCannotNameTheOptions) {
  for (const char* name : kOptionNames) {
    const std::string toml = std::string("\"") + name + "\" = \"127.0.0.1:53\"\n";
    EXPECT_FALSE(ParseWorkspaceConfig(toml)) << toml;
    const std::string nested = std::string("[net]\n\"") + name + "\" = \"127.0.0.1:53\"\n";
    EXPECT_FALSE(ParseWorkspaceConfig(nested)) << nested;
  }
  // Plugin settings may hold any value -- they are the plugin's own data, handed to the plugin,
  // never read by the gateway (see the end-to-end test in t2_fetch_plugin_e2e_test.cc).
  EXPECT_TRUE(
      ParseWorkspaceConfig("[plugins]\nenable = [\"t2.m\"]\n[plugins.settings.\"t2.m\"]\n"
                           "unsafe-test-allow-address = \"127.0.0.1\"\n"));
}

TEST(T2TrustedFlagsConfig, GatewayRejectsMalformedTestFlagValues) {
  for (const std::vector<std::string>& flags :
       std::vector<std::vector<std::string>>{{"--unsafe-test-resolver", "127.0.0.1"},
                                             {"--unsafe-test-resolver", "localhost:53"},
                                             {"--unsafe-test-allow-address", "0177.0.0.1"},
                                             {"--unsafe-test-allow-address", "127.0.0.1:0"},
                                             {"--unsafe-test-ca", "relative.pem"},
                                             {"--net-max-body-bytes", "-1"},
                                             {"--unsafe-test-ca"}}) {
    std::vector<std::string> argv = {BinDir() + "/anvil-gateway", "--workspace", "/tmp",
                                     "--control-fd", "99"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto r = testing::Run(argv);
    EXPECT_EQ(r.status, 2) << flags[0] << " " << (flags.size() > 1 ? flags[1] : "") << r.err;
  }
}

}  // namespace
}  // namespace t2_fetch_trusted_flags_test
}  // namespace anvil::testing
