// What `anvil plugin new` writes (cli/plugin_scaffold.h), checked without touching the disk: the
// manifest parses and names the entry, the entry is the runtime's, the test script is
// executable, and the editor files are the ones generated from the plugin API description.
#include "cli/plugin_scaffold.h"

#include <gtest/gtest.h>

#include <map>

#include "policy/manifest.h"
#include "policy/plugin_api.h"
#include "policy/plugin_api_stubs.h"

namespace anvil::cli {
namespace plugin_scaffold_test {
namespace {

std::map<std::string, ScaffoldFile> ByPath(const std::vector<ScaffoldFile>& files) {
  std::map<std::string, ScaffoldFile> out;
  for (const auto& f : files) EXPECT_TRUE(out.emplace(f.path, f).second) << f.path << " twice";
  return out;
}

TEST(PluginScaffold, IsAWorkingPluginInEachRuntime) {
  for (PluginRuntime runtime : {PluginRuntime::kLua, PluginRuntime::kJs}) {
    for (const std::string id : {"me.word-count", "hello", "a.b_c.d-e"}) {
      SCOPED_TRACE(std::string(ToString(runtime)) + " " + id);
      auto files = ByPath(PluginScaffold(id, runtime));
      ASSERT_TRUE(files.contains("anvil-plugin.toml"));
      auto manifest = ParseManifest(files["anvil-plugin.toml"].contents, "anvil-plugin.toml");
      ASSERT_TRUE(manifest) << manifest.error().ToString();
      EXPECT_EQ(manifest->id, id);
      EXPECT_EQ(manifest->runtime, runtime);
      EXPECT_EQ(manifest->name, DefaultPluginDirName(id));
      ASSERT_TRUE(files.contains(manifest->entry)) << manifest->entry;
      EXPECT_NE(files[manifest->entry].contents.find("anvil.command(\"hello\""), std::string::npos);
      EXPECT_EQ(manifest->requested.fs_read, std::vector<std::string>{"src/**"});
      EXPECT_TRUE(manifest->requested.fs_write.empty());
      EXPECT_TRUE(manifest->requested.exec.empty());
      EXPECT_TRUE(manifest->requested.net_hosts.empty());
      // The test the author runs, and the workspace it runs on.
      EXPECT_EQ(files["test/run.sh"].mode, 0755u);
      EXPECT_TRUE(files["test/run.sh"].contents.starts_with("#!/bin/sh\n"));
      EXPECT_NE(files["test/cases.sh"].contents.find("expect \"hello from " + id +
                                                     ": src/hello.txt has 2 lines\" hello"),
                std::string::npos);
      EXPECT_EQ(files["test/fixture/src/hello.txt"].contents,
                "hello from the fixture\nsecond line\n");
      EXPECT_TRUE(files.contains("test/fixture/private.txt"));
      EXPECT_NE(files["README.md"].contents.find("# " + id + "\n"), std::string::npos);
      for (const auto& [path, f] : files) {
        EXPECT_EQ(f.contents.find("@ID@"), std::string::npos) << path;
        EXPECT_EQ(f.contents.find("@NAME@"), std::string::npos) << path;
        EXPECT_EQ(f.contents.find("@EXT@"), std::string::npos) << path;
        EXPECT_EQ(f.contents.find("@EDITOR_ROWS@"), std::string::npos) << path;
        EXPECT_FALSE(path.starts_with("/") || path.find("..") != std::string::npos) << path;
      }
    }
  }
}

TEST(PluginScaffold, EditorFilesAreGeneratedFromTheApiDescription) {
  auto lua = ByPath(PluginScaffold("me.x", PluginRuntime::kLua));
  EXPECT_EQ(lua["types/anvil.lua"].contents, RenderLuaMeta(PluginApi()));
  EXPECT_NE(lua[".luarc.json"].contents.find("\"workspace.library\": [\"types\"]"),
            std::string::npos);
  EXPECT_FALSE(lua.contains("anvil.d.ts"));
  auto js = ByPath(PluginScaffold("me.x", PluginRuntime::kJs));
  EXPECT_EQ(js["anvil.d.ts"].contents, RenderTypeScriptDeclarations(PluginApi()));
  EXPECT_NE(js["jsconfig.json"].contents.find("\"checkJs\": true"), std::string::npos);
  EXPECT_NE(js["jsconfig.json"].contents.find("\"anvil.d.ts\""), std::string::npos);
  EXPECT_FALSE(js.contains("types/anvil.lua"));
  EXPECT_EQ(EditorSupportFiles(PluginRuntime::kJs).front().path, "anvil.d.ts");
  EXPECT_EQ(EditorSupportFiles(PluginRuntime::kLua).front().path, "types/anvil.lua");
}

TEST(PluginScaffold, DefaultDirectoryIsTheIdsLastPart) {
  EXPECT_EQ(DefaultPluginDirName("me.word-count"), "word-count");
  EXPECT_EQ(DefaultPluginDirName("solo"), "solo");
  EXPECT_EQ(DefaultPluginDirName("a.b.c"), "c");
  EXPECT_EQ(DefaultPluginDirName("a.b.."), "b");
}

}  // namespace
}  // namespace plugin_scaffold_test
}  // namespace anvil::cli
