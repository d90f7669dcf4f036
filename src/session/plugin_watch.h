// Which file changes in a plugin directory are changes of the plugin (`anvil run --watch`,
// `anvil serve`'s reload on change): what the host reads (the entry and lib/'s modules) and what
// the session checks before it (the manifest and its signature). Editors' swap, backup and
// probe files beside them (".main.lua.swp", "main.lua~", vim's "4913") are not, so that typing
// in an editor does not restart the plugin every few seconds. Pure.
#pragma once

#include <string_view>

namespace anvil::session {

// `in_lib`: the event is in the plugin's lib/ directory, else in the plugin directory itself.
// `name`: the file's name as inotify reports it (empty for an event on the directory itself,
// which counts: the directory was moved or deleted).
bool IsPluginFileChange(bool in_lib, std::string_view name);

}  // namespace anvil::session
