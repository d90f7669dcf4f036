// anvil-plugin-host: runs exactly one plugin. Reads the plugin's files, locks itself down
// (host/lockdown.h), then serves the trusted side's requests on the session channel and
// reaches the workspace only through the gateway channel it was handed.
//
// Session channel (frames of ipc/frame.h, both directions):
//   trusted side -> host:  "host.describe" -> [command names...]
//                          "command.run" [name, args JSON] -> [result JSON]
//   host -> trusted side:  "editor.notify" [text], "editor.buffer.get" [uri],
//                          "editor.buffer.edit" [uri, version, edits JSON] (answered);
//                          "log" [level, text] with request id 0 (never answered)
// A load failure is reported as the answer to the first request ("error: ...") and the host
// exits after it.
#pragma once

#include <string>

#include "host/lockdown.h"
#include "host/runtime.h"

namespace anvil::host {

struct HostOptions {
  std::string plugin_dir;
  std::string runtime;  // "lua" or "js"
  std::string entry;    // relative to plugin_dir
  std::string plugin_id;
  std::string workspace;
  int gateway_fd = -1;
  int session_fd = -1;
  // The capability token arrives here, then the plugin's settings (Anvil.toml, as a JSON
  // object): "<token hex>\n<settings JSON>" up to EOF. Never argv or environment.
  int token_fd = -1;
  RuntimeLimits limits;
  LockdownOptions lockdown;
  std::string test_attack_after_lockdown;  // test hook: "open", "socket", "execve", ...
};

int RunPluginHost(const HostOptions& options);

}  // namespace anvil::host
