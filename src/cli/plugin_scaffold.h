// What `anvil plugin new` writes (pure: names and contents; plugin_new_command.cc writes them).
//
// A new plugin is complete and working: the manifest, an entry with one command (`hello`,
// which reads a workspace file through the gateway), a test the author runs (`sh test/run.sh`:
// each case in test/cases.sh runs a command with `anvil run` on the fixture workspace
// test/fixture, with the real sandbox and grant, and compares what it prints), and editor
// support generated from the plugin API description (policy/plugin_api_stubs.h): anvil.d.ts +
// jsconfig.json for JS, types/anvil.lua (LuaLS ---@meta) + .luarc.json for Lua.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "policy/manifest.h"

namespace anvil::cli {

struct ScaffoldFile {
  std::string path;  // relative to the plugin directory, '/'-separated
  std::string contents;
  mode_t mode = 0644;
  std::string what;  // one line for the listing `anvil plugin new` prints; empty: not listed
};

// Every file of a new plugin with id `id` (already valid: ValidatePluginId).
std::vector<ScaffoldFile> PluginScaffold(const std::string& id, PluginRuntime runtime);

// The editor-support files of `runtime` alone (what `anvil plugin types` writes): the generated
// declarations first, then the editor configuration that points at them.
std::vector<ScaffoldFile> EditorSupportFiles(PluginRuntime runtime);

// The directory `anvil plugin new ID` uses when none is given: the id's last dot-separated part.
std::string DefaultPluginDirName(const std::string& id);

}  // namespace anvil::cli
