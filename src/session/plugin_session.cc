#include "session/plugin_session.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "linux/helper_executable.h"
#include "policy/digest.h"

namespace anvil::session {

Result<std::string> AuditLogPath(const std::string& workspace) {
  std::string base;
  const char* state = std::getenv("XDG_STATE_HOME");
  if (state && state[0] == '/') {
    base = state;
  } else {
    const char* home = std::getenv("HOME");
    if (!home || home[0] != '/') return Fail("invalid", "neither XDG_STATE_HOME nor HOME is set");
    base = std::string(home) + "/.local/state";
  }
  std::string dir = base + "/anvil/audit";
  std::string partial;
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos == dir.size() || dir[pos] == '/') {
      partial = dir.substr(0, pos);
      if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
        return SysFail("io", "mkdir " + partial);
      }
    }
  }
  return dir + "/" + Sha256Hex(workspace).substr(0, 16) + ".jsonl";
}

Result<std::unique_ptr<PluginSession>> PluginSession::Start(const PluginSessionConfig& config) {
  std::unique_ptr<PluginSession> s(new PluginSession());
  ANVIL_TRY(audit, AuditLogPath(config.workspace));
  ANVIL_TRY(gateway_exe, FindHelper("anvil-gateway"));
  ANVIL_TRY(host_exe, FindHelper("anvil-plugin-host"));
  GatewayConfig gw{gateway_exe->path, config.workspace, {"--audit-log", *audit}};
  gw.unsafe_net_test = config.unsafe_net_test;
  gw.extra_args.insert(gw.extra_args.end(), config.gateway_args.begin(), config.gateway_args.end());
  ANVIL_TRY(gateway, GatewayProcess::Start(gw));
  s->gateway_ = std::move(*gateway);
  HostConfig host{
      host_exe->path,        config.plugin_dir,  std::string(ToString(config.manifest.runtime)),
      config.manifest.entry, config.manifest.id, config.host_args};
  host.settings_json = config.settings_json;
  host.pinned_files = config.pinned_files;
  auto h = HostProcess::Start(host, *s->gateway_, config.grant);
  if (!h) {
    (void)s->gateway_->Stop();
    return tl::unexpected(h.error());
  }
  s->host_ = std::move(*h);
  return s;
}

PluginSession::~PluginSession() { (void)Stop(); }

Result<std::vector<std::string>> PluginSession::Commands(std::chrono::milliseconds deadline) {
  if (!host_) return Fail("internal", "no plugin host");
  return host_->Describe(deadline);
}

Result<std::string> PluginSession::Run(const std::string& command, const std::string& args_json,
                                       std::chrono::milliseconds deadline,
                                       const EditorHandler& editor, const LogHandler& log) {
  if (!host_) return Fail("internal", "no plugin host");
  return host_->Run(command, args_json, deadline, editor, log);
}

Status PluginSession::Stop() {
  Status result = Ok();
  if (host_) {
    if (auto s = host_->Stop(); !s) result = tl::unexpected(s.error());
    host_.reset();
  }
  if (gateway_) {
    if (auto s = gateway_->Stop(); !s && result) result = tl::unexpected(s.error());
    gateway_.reset();
  }
  return result;
}

}  // namespace anvil::session
