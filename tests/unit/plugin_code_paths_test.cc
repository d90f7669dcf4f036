// policy/plugin_code_paths.h: which writes are writes of plugin code (table-tested, each row
// beside its benign neighbour), and the probe of a real directory.
#include "policy/plugin_code_paths.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace anvil {
namespace plugin_code_paths_test {
namespace {

TEST(PluginCodePaths, ManifestNamesAsFileSystemsFoldThem) {
  struct Row {
    const char* name;
    bool manifest;
  } rows[] = {
      {"anvil-plugin.toml", true},
      {"Anvil-Plugin.TOML", true},
      {"anvil-plugin.toml.", true},
      {"anvil-plugin.toml ", true},
      {"anvil-plugin.\u200ctoml", true},  // HFS+ ignores U+200C
      {"anvil-plugin.toml.sig", false},
      {"anvil-plugin.tom", false},
      {"anvil_plugin.toml", false},
      {"main.lua", false},
      {"", false},
  };
  for (const auto& row : rows) EXPECT_EQ(IsPluginManifestName(row.name), row.manifest) << row.name;
}

TEST(PluginCodePaths, CandidatesAreThePathAndEachDirectoryAboveDeepestFirst) {
  EXPECT_EQ(PluginDirCandidates("tools/b/main.lua"),
            (std::vector<std::string>{"tools/b/main.lua", "tools/b", "tools", "."}));
  EXPECT_EQ(PluginDirCandidates("a"), (std::vector<std::string>{"a", "."}));
  EXPECT_EQ(PluginDirCandidates("."), (std::vector<std::string>{"."}));
}

TEST(PluginCodePaths, TheRefusalNamesThePluginItsDirectoryAndTheWayOut) {
  Error e = PluginCodeRefusal("fs.write", "tools/b/main.lua", "tools/b", "ex.b");
  EXPECT_EQ(e.code, "denied");
  EXPECT_NE(e.message.find("fs.write: "), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("plugin ex.b (in "), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("tools/b"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("fix: edit the plugin's files yourself"), std::string::npos);
  e = PluginCodeRefusal("fs.mkdir", "x", ".", "");
  EXPECT_NE(e.message.find("the plugin in the workspace itself"), std::string::npos) << e.message;
  EXPECT_EQ(PluginIdOfManifest("id = \"ex.b\"\nversion = \"1.0.0\"\nruntime = \"lua\"\n"
                               "entry = \"main.lua\"\n"),
            "ex.b");
  EXPECT_EQ(PluginIdOfManifest("not toml ["), "");
}

TEST(PluginCodePaths, AWriteAtOrBeneathADirectoryHoldingAManifestIsRefused) {
  char pattern[] = "/tmp/plugin-code-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string ws = pattern;
  std::filesystem::create_directories(ws + "/tools/b/lib");
  std::filesystem::create_directories(ws + "/tools/c");
  std::ofstream(ws + "/tools/b/anvil-plugin.toml")
      << "id = \"ex.b\"\nversion = \"1.0.0\"\nruntime = \"lua\"\nentry = \"main.lua\"\n";
  std::ofstream(ws + "/tools/b/main.lua") << "return 1\n";
  std::ofstream(ws + "/tools/c/main.lua") << "return 1\n";
  // A symlinked directory is not followed: the op itself refuses a path through one.
  std::filesystem::create_directory_symlink("b", ws + "/tools/l");
  auto root = WorkspaceRoot::Open(ws);
  ASSERT_TRUE(root) << root.error().ToString();
  struct Row {
    const char* path;
    bool refused;
  } rows[] = {
      {"tools/b/main.lua", true},
      {"tools/b/anvil-plugin.toml", true},
      {"tools/b/lib/x.lua", true},
      {"tools/b/missing/deep/x.lua", true},
      {"tools/b", true},
      {"tools/c/main.lua", false},
      {"tools/c", false},
      {"tools/b-old", false},
      {"tools/notes.txt", false},
      {"tools", false},
      {"missing/deep/file", false},
      {"tools/l/main.lua", false},
  };
  for (const auto& row : rows) {
    auto s = CheckPluginCodeWrite(*root, "fs.write", row.path);
    EXPECT_EQ(!s, row.refused) << row.path;
    if (!s) {
      EXPECT_EQ(s.error().code, "denied") << row.path;
      EXPECT_NE(s.error().message.find("ex.b"), std::string::npos) << s.error().message;
    }
  }
  std::filesystem::remove_all(ws);
}

}  // namespace
}  // namespace plugin_code_paths_test
}  // namespace anvil
