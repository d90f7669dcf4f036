// `anvil plugin inspect`/`approve` refuse a manifest that could never run (an entry the host
// could not open, a program outside the executable table) before anyone approves it, with the
// line, the column and a fix; `anvil plugin revoke` says what it revoked.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace plugin_command_test {
namespace {

class PluginCommand : public ::testing::Test {
 protected:
  void Manifest(const std::string& permissions, const std::string& entry = "main.lua") {
    WriteFile(plugin_ / "anvil-plugin.toml",
              "id = \"test.cli\"\nversion = \"1.0.0\"\nruntime = \"lua\"\nentry = \"" + entry +
                  "\"\n\n[permissions]\n" + permissions);
  }
  RunResult Plugin(const std::string& sub, const std::string& arg) {
    RunOptions o;
    o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path()};
    return testing::Run({AnvilBin(), "plugin", sub, "--workspace", ws_.path(), arg}, o);
  }
  bool Granted() {
    RunOptions o;
    o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path()};
    return testing::Run({AnvilBin(), "plugin", "list", "--workspace", ws_.path()}, o)
               .out.find("test.cli") != std::string::npos;
  }
  // Both subcommands refuse with exactly `message` after "anvil plugin: ", and nothing is granted.
  void ExpectRefused(const std::string& message) {
    for (const char* sub : {"inspect", "approve"}) {
      SCOPED_TRACE(sub);
      auto r = Plugin(sub, plugin_.path());
      EXPECT_EQ(r.status, 2) << r.out << r.err;
      EXPECT_EQ(r.err, "anvil plugin: " + message + "\n");
      EXPECT_EQ(r.out, "");
    }
    EXPECT_FALSE(Granted());
  }
  std::string Where(int line, int col) const {
    return plugin_.path() + "/anvil-plugin.toml:" + std::to_string(line) + ":" +
           std::to_string(col) + ": ";
  }
  TempDir ws_{"anvil-plugin-cli-ws"};
  TempDir plugin_{"anvil-plugin-cli"};
  TempDir state_{"anvil-plugin-cli-state"};
};

TEST_F(PluginCommand, MissingEntryIsRefusedBeforeApproval) {
  Manifest("fs.read = [\"**\"]\n");
  ExpectRefused("invalid: " + Where(4, 9) +
                "entry 'main.lua' does not exist in the plugin directory (fix: create it, or point "
                "entry at the plugin's main .lua file)");
}

TEST_F(PluginCommand, SymlinkedEntryIsRefusedBeforeApproval) {
  Manifest("fs.read = [\"**\"]\n");
  TempDir elsewhere("anvil-plugin-cli-elsewhere");
  WriteFile(elsewhere / "main.lua", "anvil.command('x', function() return 1 end)");
  ASSERT_EQ(::symlink((elsewhere / "main.lua").c_str(), (plugin_ / "main.lua").c_str()), 0);
  ExpectRefused("invalid: " + Where(4, 9) +
                "entry 'main.lua' is a symbolic link or goes through one (fix: put the file itself "
                "in the plugin directory: plugin files are read without following links)");
}

TEST_F(PluginCommand, EntryThroughALinkedDirectoryIsRefusedBeforeApproval) {
  Manifest("fs.read = [\"**\"]\n", "src/main.lua");
  TempDir elsewhere("anvil-plugin-cli-elsewhere");
  WriteFile(elsewhere / "main.lua", "anvil.command('x', function() return 1 end)");
  ASSERT_EQ(::symlink(elsewhere.path().c_str(), (plugin_ / "src").c_str()), 0);
  ExpectRefused("invalid: " + Where(4, 9) +
                "entry 'src/main.lua' is a symbolic link or goes through one (fix: put the file "
                "itself in the plugin directory: plugin files are read without following links)");
}

TEST_F(PluginCommand, ExecOutsideTheTableIsRefusedBeforeApproval) {
  Manifest("fs.read = [\"**\"]\nexec = [\"rg\", \"bash\"]\n");
  WriteFile(plugin_ / "main.lua", "anvil.command('x', function() return 1 end)");
  ExpectRefused("invalid: " + Where(8, 15) +
                "exec[1]: executable 'bash' is not in Anvil's executable table (fix: remove it, or "
                "use one of rg, fd; docs/exec-policy.md describes them)");
}

// Benign neighbour of the refusals above: a complete plugin is inspected and approved, and
// revoking it says exactly what the plugin may no longer do.
TEST_F(PluginCommand, CompletePluginIsApprovedAndRevokeSaysWhatWasRevoked) {
  Manifest("fs.read = [\"src/**\"]\nexec = [\"rg\"]\n");
  WriteFile(plugin_ / "main.lua", "anvil.command('x', function() return 1 end)");
  auto inspect = Plugin("inspect", plugin_.path());
  ASSERT_EQ(inspect.status, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("granted:  no"), std::string::npos) << inspect.out;
  auto approve = Plugin("approve", plugin_.path());
  ASSERT_EQ(approve.status, 0) << approve.err;
  EXPECT_TRUE(Granted());

  auto revoke = Plugin("revoke", "test.cli");
  ASSERT_EQ(revoke.status, 0) << revoke.err;
  const auto lines = Lines(revoke.out);
  ASSERT_FALSE(lines.empty()) << "revoke printed nothing";
  EXPECT_TRUE(lines[0].starts_with("revoked test.cli in " + ws_.path() + " (manifest "))
      << revoke.out;
  EXPECT_TRUE(lines[0].ends_with("); it may no longer:")) << revoke.out;
  EXPECT_NE(revoke.out.find("\"src/**\""), std::string::npos) << revoke.out;
  EXPECT_NE(revoke.out.find("rg"), std::string::npos) << revoke.out;
  EXPECT_EQ(lines.back(),
            "A running `anvil serve` of this workspace stops the plugin now; nothing starts it "
            "again without a new approval.")
      << revoke.out;
  EXPECT_FALSE(Granted());

  auto again = Plugin("revoke", "test.cli");
  EXPECT_EQ(again.status, 1);
  EXPECT_EQ(again.out, "");
  EXPECT_NE(again.err.find("not_found: no grant for plugin"), std::string::npos) << again.err;
}

// Review s12: the approve command inspect suggests was the shell word escaped again for display
// (backslashes doubled, control bytes as \xHH, cut past a cap): pasted, it named another
// directory. It is one word a shell reads back as the plugin's directory, with nothing in it a
// terminal acts on.
TEST_F(PluginCommand, TheSuggestedApproveCommandNamesThisDirectory) {
  const std::vector<std::pair<std::string, std::string>> dirs = {
      {"backslash", "a\\b\\x1b"},
      {"newline", "a\nb"},
      {"substitution", "$(x)`y`;z"},
      {"long", std::string(200, 'd') + "/" + std::string(200, 'e')},
  };
  for (const auto& [what, name] : dirs) {
    const std::string dir = plugin_ / name;
    ASSERT_EQ(testing::Run({"/bin/mkdir", "-p", dir}).status, 0) << what;
    WriteFile(dir + "/anvil-plugin.toml",
              "id = \"test.cli\"\nversion = \"1.0.0\"\nruntime = \"lua\"\nentry = "
              "\"main.lua\"\n\n[permissions]\n");
    WriteFile(dir + "/main.lua", "anvil.command('x', function() return 1 end)");
    auto inspect = Plugin("inspect", dir);
    ASSERT_EQ(inspect.status, 0) << what << ": " << inspect.err;
    const std::string lead = "\n  anvil plugin approve --sha256 ";
    const auto at = inspect.out.find(lead);
    ASSERT_NE(at, std::string::npos) << what << ": " << inspect.out;
    const auto line_end = inspect.out.find('\n', at + lead.size());
    ASSERT_NE(line_end, std::string::npos) << what;
    const std::string rest = inspect.out.substr(at + lead.size(), line_end - at - lead.size());
    const auto space = rest.find(' ');
    ASSERT_NE(space, std::string::npos) << what << ": " << rest;
    const std::string word = rest.substr(space + 1);
    for (char c : word) {
      EXPECT_TRUE(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) << what << ": " << word;
    }
    // What bash passes for it is the directory.
    auto back = testing::Run({"/bin/bash", "-c", "printf %s " + word});
    EXPECT_EQ(back.status, 0) << what << ": " << word;
    EXPECT_EQ(back.out, dir) << what << ": " << word;
  }
}

}  // namespace
}  // namespace plugin_command_test
}  // namespace anvil::testing
