// T8 through the gateway's fs ops: a plugin never writes Anvil's own trust state. In a workspace
// that holds it (the user's home as the workspace, or $XDG_STATE_HOME inside the workspace), a
// plugin granted fs.write = ["**"] rewrote ~/.local/state/anvil/grants.json (red team s4
// rtreview): a grant for any plugin, for any code and any permission, that the next `anvil run`
// honoured without asking — or a trusted key in ~/.config/anvil. The command sandbox kept these
// directories read-only (linux/trust_shield.h); the gateway now refuses fs.write, fs.mkdir,
// fs.remove and fs.rename at or beneath them, and a move or removal of a tree that holds one
// (policy/trust_state_paths.h). Each attack beside its benign neighbour.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gateway_fixture.h"

namespace anvil::testing {
namespace t8_gateway_trust_state_test {
namespace {

// The trusted side's XDG directories inside the workspace, for the gateway it starts.
class T8GatewayTrustState : public GatewayTest {
 protected:
  void TearDown() override {
    GatewayTest::TearDown();
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }
  void SetEnv(const std::string& name, const std::string& value) {
    const char* old = getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    setenv(name.c_str(), value.c_str(), 1);
  }
  void Start() {
    StartGateway();
    Grant grant;
    grant.fs_read = {"**"};
    grant.fs_write = {"**"};
    client_ = Client(RegisterPlugin("t8.writer", grant), "t8.writer");
  }
  std::string Do(const std::string& op, const std::vector<std::string>& args) {
    auto r = client_->Call(op, args);
    if (!r) return "transport: " + r.error().ToString();
    return r->ok ? "ok" : r->ErrorText();
  }
  static bool Denied(const std::string& r) { return r.rfind("denied: ", 0) == 0; }

  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
  std::unique_ptr<ipc::GatewayClient> client_;
};

TEST_F(T8GatewayTrustState, NoRouteIntoAnvilsStateOrConfig) {
  SetEnv("XDG_STATE_HOME", workspace_ + "/state");
  SetEnv("XDG_CONFIG_HOME", workspace_ + "/cfg");
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(*ws_ / "state/anvil") + " " +
                  ShellQuote(*ws_ / "cfg/anvil/trusted-keys")),
            0);
  WriteFile(*ws_ / "state/anvil/grants.json", "{\"version\": 3, \"grants\": []}");
  Start();
  std::string r = Do("fs.write", {"state/anvil/grants.json", "{\"version\": 3}"});
  EXPECT_TRUE(Denied(r)) << r;
  EXPECT_NE(r.find("trust state"), std::string::npos) << r;
  EXPECT_NE(r.find("fix:"), std::string::npos) << r;
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"fs.write", "cfg/anvil/trusted-keys/evil.pub", "key"},
           {"fs.write", "CFG/Anvil/trusted-keys/evil.pub", "key", "1"},  // a folding file system
           {"fs.write", "state/anvil/new/x", "x", "1"},
           {"fs.mkdir", "state/anvil/audit", "0"},
           {"fs.mkdir", "cfg/anvil/rules", "1"},
           {"fs.remove", "state/anvil/grants.json", "0"},
           {"fs.remove", "state/anvil", "1"},
           {"fs.remove", "state", "1"},
           {"fs.rename", "state/anvil", "state/old"},
           {"fs.rename", "state", "state-old"},
           {"fs.rename", "cfg", "cfg-old"},
       }) {
    std::vector<std::string> call(args.begin() + 1, args.end());
    r = Do(args[0], call);
    EXPECT_TRUE(Denied(r)) << args[0] << " " << args[1] << ": " << r;
  }
  // A tree made elsewhere and moved where the state would be.
  ASSERT_EQ(Do("fs.write", {"evil/anvil/grants.json", "{}", "1"}), "ok");
  ASSERT_EQ(Shell("rm -rf " + ShellQuote(*ws_ / "cfg")), 0);
  r = Do("fs.rename", {"evil", "cfg"});
  EXPECT_TRUE(Denied(r)) << r;
  EXPECT_EQ(Do("fs.rename", {"evil", "evil2"}), "ok");
  EXPECT_EQ(ReadFile(*ws_ / "state/anvil/grants.json"), "{\"version\": 3, \"grants\": []}");
  EXPECT_FALSE(Exists(*ws_ / "cfg"));
  // The benign neighbours: other files beside the trust state, in the same parents.
  EXPECT_EQ(Do("fs.write", {"state/other/x.txt", "x", "1"}), "ok");
  EXPECT_EQ(Do("fs.write", {"state/anvil-notes.txt", "x"}), "ok");
  EXPECT_EQ(Do("fs.rename", {"state/anvil-notes.txt", "state/notes.txt"}), "ok");
  EXPECT_EQ(Do("fs.remove", {"state/other", "1"}), "ok");
  EXPECT_EQ(Do("fs.write", {"README.md", "x"}), "ok");
}

void WriteLuaPlugin(const std::string& dir, const std::string& id, const std::string& permissions,
                    const std::string& code) {
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(dir)), 0);
  WriteFile(dir + "/anvil-plugin.toml", "id = \"" + id +
                                            "\"\nversion = \"1.0.0\"\nruntime = \"lua\"\n"
                                            "entry = \"main.lua\"\n\n[permissions]\n" +
                                            permissions);
  WriteFile(dir + "/main.lua", code);
}

// `anvil run`, end to end, with the user's home as the workspace: plugin A (fs.write = ["**"])
// rewrites the grant store so that B's stored grant covers other code. Before the fix the write
// went through.
TEST(T8RunTrustState, APluginCannotRewriteTheGrantStoreInAHomeWorkspace) {
  TempDir home("anvil-t8-trust-home");
  auto anvil = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {AnvilBin(), "run", "--workspace", home.path()});
    RunOptions o;
    o.env = {"PATH=/usr/bin:/bin", "HOME=" + home.path()};
    return testing::Run(args, o);
  };
  WriteLuaPlugin(home / "tools/b", "t8.b", "", "anvil.command('x', function() return 'b' end)\n");
  WriteLuaPlugin(home / "tools/a", "t8.a", "fs.read = [\"**\"]\nfs.write = [\"**\"]\n",
                 "anvil.command('x', function()\n"
                 "  local store = '.local/state/anvil/grants.json'\n"
                 "  local text = sys.fs.read(store)\n"
                 "  local ok, err = pcall(sys.fs.write, store, text .. ' ')\n"
                 "  local ok2 = pcall(sys.fs.rename, '.local/state', '.local/state-old')\n"
                 "  local ok3 = pcall(sys.fs.write, '.config/anvil/trusted-keys/k.pub', 'k',\n"
                 "                    {parents = true})\n"
                 "  sys.fs.write('.local/share/a-notes.txt', 'ordinary', {parents = true})\n"
                 "  return (ok and 'wrote' or tostring(err)) .. ' ' .. tostring(ok2) .. ' ' ..\n"
                 "         tostring(ok3)\n"
                 "end)\n");
  auto b = anvil({"--approve", home / "tools/b", "x"});
  ASSERT_EQ(b.status, 0) << b.err;
  const std::string store = ReadFile(home / ".local/state/anvil/grants.json");
  ASSERT_FALSE(store.empty());
  auto a = anvil({"--approve", home / "tools/a", "x"});
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_NE(a.out.find("denied"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("trust state"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find(" false false"), std::string::npos) << a.out;
  EXPECT_TRUE(Exists(home / ".local/state/anvil/grants.json"));
  EXPECT_FALSE(Exists(home / ".local/state-old"));
  EXPECT_FALSE(Exists(home / ".config/anvil/trusted-keys/k.pub"));
  // The benign neighbour: A's ordinary write elsewhere in the home.
  EXPECT_EQ(ReadFile(home / ".local/share/a-notes.txt"), "ordinary");
  b = anvil({home / "tools/b", "x"});
  EXPECT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(b.out, "b\n");
}

}  // namespace
}  // namespace t8_gateway_trust_state_test
}  // namespace anvil::testing
