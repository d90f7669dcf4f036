// Editor-support files for plugin authors, generated from the plugin API description
// (policy/plugin_api.h), so they say exactly what the runtimes bind:
//   - anvil.d.ts: TypeScript declarations of the JS API (a jsconfig.json with checkJs picks it
//     up; `tsc --noEmit` type-checks a plugin against it);
//   - a LuaLS `---@meta` file of the Lua API (.luarc.json points lua-language-server at it).
// Pure text: `anvil plugin new` and `anvil plugin types` write them into a plugin directory.
#pragma once

#include <string>

#include "policy/plugin_api.h"

namespace anvil {

std::string RenderTypeScriptDeclarations(const PluginApiDescription& api);
std::string RenderLuaMeta(const PluginApiDescription& api);

// A type expression in each language. Record and alias names are qualified: `Anvil.FsEntry`
// (TypeScript, `in_namespace` false) and `anvil.FsEntry` (LuaLS).
std::string TypeScriptType(const ApiType& type, bool in_namespace);
std::string LuaType(const ApiType& type);

}  // namespace anvil
