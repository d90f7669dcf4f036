// Which changes of a plugin directory restart a watched plugin.
#include "session/plugin_watch.h"

#include <gtest/gtest.h>

namespace anvil::session {
namespace plugin_watch_test {
namespace {

TEST(PluginWatchTest, ThePluginsFilesCountEditorsTemporariesDoNot) {
  struct Case {
    bool in_lib;
    const char* name;
    bool counts;
  } cases[] = {
      {false, "main.lua", true},
      {false, "main.js", true},
      {false, "anvil-plugin.toml", true},
      {false, "anvil-plugin.toml.sig", true},
      {false, "lib", true},
      {false, "", true},  // the directory itself
      {true, "util.lua", true},
      {true, "util.js", true},
      {true, "", true},
      {false, ".main.lua.swp", false},
      {false, "main.lua~", false},
      {false, "4913", false},
      {false, "README.md", false},
      {false, ".anvil-plugin.toml.tmp", false},
      {true, "notes.txt", false},
      {true, ".util.lua.swp", false},
      {true, "lib", false},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(IsPluginFileChange(c.in_lib, c.name), c.counts) << c.in_lib << " " << c.name;
  }
}

}  // namespace
}  // namespace plugin_watch_test
}  // namespace anvil::session
