#include "session/plugin_session.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "linux/helper_executable.h"
#include "policy/digest.h"
#include "session/gateway_serves.h"

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
  // The one that can fetch only when this plugin may (session/gateway_serves.h).
  ANVIL_TRY(gateway_exe, FindHelper(GatewayExecutableFor(ServesFor(config.grant))));
  ANVIL_TRY(host_exe, FindHelper("anvil-plugin-host"));
  GatewayConfig gw{gateway_exe->path, config.workspace, {"--audit-log", *audit}};
  gw.unsafe_net_test = config.unsafe_net_test;
  gw.in_process = config.gateway_in_process;
  gw.extra_args.insert(gw.extra_args.end(), config.gateway_args.begin(), config.gateway_args.end());
  HostConfig host{
      host_exe->path,        config.plugin_dir,  std::string(ToString(config.manifest.runtime)),
      config.manifest.entry, config.manifest.id, config.host_args};
  host.settings_json = config.settings_json;
  host.pinned_files = config.pinned_files;
  // The host first: its exec and start-up (a fresh program's, the longest of the session's) run
  // beside the gateway's. It waits for its handoff, which Attach sends once the gateway is
  // ready and the host is registered; nothing of the plugin is read before it.
  auto h = HostProcess::Spawn(host, config.workspace);
  if (!h) return tl::unexpected(h.error());
  auto gateway = GatewayProcess::Launch(gw);
  if (!gateway) {
    (void)(*h)->Kill("gateway did not start");
    return tl::unexpected(gateway.error());
  }
  s->gateway_ = std::move(*gateway);
  (*h)->SetGateway(*s->gateway_);
  if (auto ready = s->gateway_->WaitReady(); !ready) {
    (void)(*h)->Kill("gateway did not start");
    return tl::unexpected(ready.error());
  }
  // The host says hello with the workspace it was started with; should the gateway serve it
  // under another (canonical) name, that host is replaced by one started with this name.
  if (s->gateway_->workspace() != s->gateway_->workspace_requested()) {
    (void)(*h)->Kill("workspace renamed");
    h = HostProcess::Spawn(host, *s->gateway_);
    if (!h) {
      (void)s->gateway_->Stop();
      return tl::unexpected(h.error());
    }
  }
  if (auto attached = (*h)->Attach(config.grant); !attached) {
    (void)s->gateway_->Stop();
    return tl::unexpected(attached.error());
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
  // The whole session ends: the host is told (EOF) and its token revoked, and the gateway told
  // to shut down after that revocation, all at once; then both exits are waited for, the
  // host's first (killed after its grace, as before), so the two wind down side by side.
  if (host_) host_->BeginStop();
  if (gateway_) gateway_->BeginShutdown();
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
