// `anvil run` with signed manifests (T8): `anvil plugin keygen|sign|trust-key|untrust-key`,
// and the refusals a tampered or foreign signature earns. Every refusal is checked next to
// the honest run that still works, and nothing of a refused plugin runs.
#include <gtest/gtest.h>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace run_signed_test {
namespace {

class AnvilRunSigned : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(plugin_ / "anvil-plugin.toml",
              "id = \"test.signed\"\nversion = \"1.0.0\"\nruntime = \"lua\"\nentry = "
              "\"main.lua\"\n\n[permissions]\nfs.write = [\"notes/**\"]\n");
    WriteFile(plugin_ / "main.lua",
              "sys.fs.write('notes/loaded.txt', 'x')\n"
              "anvil.command('x', function() return 'ran' end)");
    ASSERT_EQ(Shell("mkdir -p '" + ws_.path() + "/notes'"), 0);
    ASSERT_EQ(Anvil({"plugin", "keygen", keys_.path() + "/alice"}).status, 0);
    ASSERT_EQ(Anvil({"plugin", "keygen", keys_.path() + "/mallory"}).status, 0);
  }
  RunResult Anvil(std::vector<std::string> args) {
    args.insert(args.begin(), AnvilBin());
    RunOptions o;
    o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path(),
             "XDG_CONFIG_HOME=" + config_.path()};
    return testing::Run(args, o);
  }
  RunResult RunPlugin(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"run", "--workspace", ws_.path(), "--approve"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {plugin_.path(), "x"});
    return Anvil(args);
  }
  RunResult Sign(const std::string& key) {
    return Anvil({"plugin", "sign", "--key", keys_.path() + "/" + key, plugin_.path()});
  }
  bool Loaded() { return Exists(ws_ / "notes/loaded.txt"); }
  TempDir ws_{"anvil-sig-ws"};
  TempDir plugin_{"anvil-sig-plugin"};
  TempDir state_{"anvil-sig-state"};
  TempDir config_{"anvil-sig-config"};
  TempDir keys_{"anvil-sig-keys"};
};

TEST_F(AnvilRunSigned, ValidSignatureRunsAndInspectNamesTheSigner) {
  ASSERT_EQ(Anvil({"plugin", "trust-key", "alice", keys_.path() + "/alice.pub"}).status, 0);
  ASSERT_EQ(Sign("alice").status, 0);
  auto r = RunPlugin({"--require-signed"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "ran\n");
  auto inspect = Anvil({"plugin", "inspect", "--workspace", ws_.path(), plugin_.path()});
  EXPECT_EQ(inspect.status, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("signed:   signed by alice"), std::string::npos) << inspect.out;
}

TEST_F(AnvilRunSigned, UnsignedRunsUnlessSignaturesAreRequired) {
  auto r = RunPlugin();
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(Shell("rm -f '" + ws_.path() + "/notes/loaded.txt'"), 0);
  r = RunPlugin({"--require-signed"});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("anvil-plugin.toml.sig: missing"), std::string::npos) << r.err;
  EXPECT_FALSE(Loaded());
}

TEST_F(AnvilRunSigned, ManifestChangedAfterSigningIsRefused) {
  ASSERT_EQ(Anvil({"plugin", "trust-key", "alice", keys_.path() + "/alice.pub"}).status, 0);
  ASSERT_EQ(Sign("alice").status, 0);
  ASSERT_EQ(RunPlugin().status, 0);
  ASSERT_EQ(Shell("rm -f '" + ws_.path() + "/notes/loaded.txt'"), 0);
  // The update widens its request but keeps the old signature.
  WriteFile(plugin_ / "anvil-plugin.toml",
            "id = \"test.signed\"\nversion = \"1.0.0\"\nruntime = \"lua\"\nentry = "
            "\"main.lua\"\n\n[permissions]\nfs.write = [\"notes/**\"]\nfs.read = [\"**\"]\n");
  auto r = RunPlugin();  // even without --require-signed: a signature present is checked
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("denied"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("anvil-plugin.toml.sig"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("does not match"), std::string::npos) << r.err;
  EXPECT_FALSE(Loaded());
  // Re-signed by the author: runs again.
  ASSERT_EQ(Sign("alice").status, 0);
  EXPECT_EQ(RunPlugin().status, 0);
}

TEST_F(AnvilRunSigned, SignatureByAnUntrustedKeyOrGarbageIsRefused) {
  ASSERT_EQ(Anvil({"plugin", "trust-key", "alice", keys_.path() + "/alice.pub"}).status, 0);
  ASSERT_EQ(Sign("mallory").status, 0);
  auto r = RunPlugin();
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("a key you do not trust"), std::string::npos) << r.err;
  EXPECT_FALSE(Loaded());
  WriteFile(plugin_ / "anvil-plugin.toml.sig", "ed25519 garbage\n");
  r = RunPlugin();
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("invalid: "), std::string::npos) << r.err;
  EXPECT_FALSE(Loaded());
  // Trusting mallory (the user's own decision) makes the same signature good.
  ASSERT_EQ(Sign("mallory").status, 0);
  ASSERT_EQ(Anvil({"plugin", "trust-key", "mallory", keys_.path() + "/mallory.pub"}).status, 0);
  EXPECT_EQ(RunPlugin().status, 0);
  ASSERT_EQ(Anvil({"plugin", "untrust-key", "mallory"}).status, 0);
  EXPECT_EQ(RunPlugin().status, 3);
}

TEST_F(AnvilRunSigned, KeysInTheWorkspaceOrPluginDirAreNeverTrusted) {
  ASSERT_EQ(Sign("mallory").status, 0);
  // An attacker controls the repository and the plugin: they plant "trusted keys" everywhere
  // they can write, in the layout of the real directory.
  for (const std::string& dir :
       {ws_.path() + "/.anvil/trusted-keys", ws_.path() + "/trusted-keys",
        plugin_.path() + "/trusted-keys", ws_.path() + "/.config/anvil/trusted-keys"}) {
    ASSERT_EQ(Shell("mkdir -p '" + dir + "' && cp '" + keys_.path() + "/mallory.pub' '" + dir +
                    "/mallory.pub'"),
              0);
  }
  auto r = RunPlugin();
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("a key you do not trust"), std::string::npos) << r.err;
  EXPECT_FALSE(Loaded());
  // The same key in the user's own config directory is trusted.
  ASSERT_EQ(Anvil({"plugin", "trust-key", "mallory", keys_.path() + "/mallory.pub"}).status, 0);
  EXPECT_EQ(RunPlugin().status, 0);
}

TEST_F(AnvilRunSigned, KeygenNeverOverwritesAKey) {
  auto r = Anvil({"plugin", "keygen", keys_.path() + "/alice"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("io: create"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace run_signed_test
}  // namespace anvil::testing
