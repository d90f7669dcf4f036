// One plugin session on the trusted side: a gateway for the workspace and one host for one
// plugin, started with the plugin's grant. Used by `anvil run` (and by `anvil serve` per plugin).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "policy/grant.h"
#include "policy/manifest.h"
#include "session/gateway_process.h"
#include "session/host_process.h"

namespace anvil::session {

// ${XDG_STATE_HOME:-$HOME/.local/state}/anvil/audit/<sha256(workspace)[:16]>.jsonl (dir 0700).
Result<std::string> AuditLogPath(const std::string& workspace);

struct PluginSessionConfig {
  std::string workspace;  // canonical
  std::string plugin_dir;
  Manifest manifest;
  Grant grant;
  std::vector<std::string> gateway_args;  // extra flags (test-only options, limits)
  std::vector<std::string> host_args;
  UnsafeNetTestOptions unsafe_net_test = {};  // `anvil run` / `anvil serve` test-only flags
  std::string settings_json = "{}";  // Anvil.toml settings for the plugin (data, no authority)
  std::map<std::string, std::string> pinned_files = {};  // CheckLock's result (HostConfig)
  bool gateway_in_process = false;  // GatewayConfig::in_process: `anvil run`'s one run
};

class PluginSession {
 public:
  static Result<std::unique_ptr<PluginSession>> Start(const PluginSessionConfig& config);
  ~PluginSession();

  Result<std::vector<std::string>> Commands(std::chrono::milliseconds deadline);
  Result<std::string> Run(const std::string& command, const std::string& args_json,
                          std::chrono::milliseconds deadline, const EditorHandler& editor,
                          const LogHandler& log);
  // Stops the host and the gateway (the host's token revoked, then the gateway shut down,
  // without waiting in between), and waits for both; explicit (the destructor only backs it
  // up).
  Status Stop();

  GatewayProcess& gateway() { return *gateway_; }
  HostProcess* host() { return host_.get(); }

 private:
  PluginSession() = default;
  std::unique_ptr<GatewayProcess> gateway_;
  std::unique_ptr<HostProcess> host_;
};

}  // namespace anvil::session
