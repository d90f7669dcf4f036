#include "session/plugin_watch.h"

namespace anvil::session {

bool IsPluginFileChange(bool in_lib, std::string_view name) {
  if (name.empty()) return true;
  if (name.front() == '.') return false;  // hidden: swap files, editors' temporaries
  auto ends_with = [&](std::string_view suffix) { return name.ends_with(suffix); };
  const bool code = ends_with(".lua") || ends_with(".js");
  if (in_lib) return code;
  return code || name == "lib" || name == "anvil-plugin.toml" || name == "anvil-plugin.toml.sig";
}

}  // namespace anvil::session
