// `anvil serve` (serve_session.h): RunServe, and the session's own methods — initialize and
// shutdown, the plugin list and status, consent, running a plugin's command (queued per plugin,
// run by serve_plugins.cc), anvil/reload, $/cancelRequest. The rest of the Server: serve_server.h.
#include "session/serve_session.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "ipc/plugin_trace.h"
#include "policy/consent.h"
#include "policy/grant_store.h"
#include "session/serve_server.h"

namespace anvil::session {
namespace serve {

using namespace std::chrono_literals;

const char* ToString(PluginState s) {
  switch (s) {
    case PluginState::kDisabled:
      return "disabled";
    case PluginState::kInvalid:
      return "invalid";
    case PluginState::kNotFound:
      return "not_found";
    case PluginState::kRefused:
      return "refused";
    case PluginState::kNeedsConsent:
      return "needs_consent";
    case PluginState::kStarting:
      return "starting";
    case PluginState::kReady:
      return "ready";
    case PluginState::kFailed:
      return "failed";
  }
  return "?";
}

// ---- methods --------------------------------------------------------------------------------

void Server::Initialize(const json& id, const json& params) {
  if (initialized_) {
    ReplyError(id, kInvalidRequest, "invalid request: initialize was already called");
    return;
  }
  if (const json* encodings = Find(params, {"capabilities", "general", "positionEncodings"});
      encodings && encodings->is_array()) {
    for (const auto& e : *encodings) {
      if (e == "utf-8") encoding_ = PositionEncoding::kUtf8;
    }
  }
  dynamic_commands_ =
      IsTrue(Find(params, {"capabilities", "workspace", "executeCommand", "dynamicRegistration"}));
  versioned_edits_ =
      IsTrue(Find(params, {"capabilities", "workspace", "applyEdit"})) &&
      IsTrue(Find(params, {"capabilities", "workspace", "workspaceEdit", "documentChanges"}));
  Catalog catalog = DiscoverPlugins({o_.workspace, o_.plugin_dirs, o_.search_paths});
  std::vector<std::unique_ptr<Plugin>> plugins;
  for (auto& entry : catalog.plugins) {
    auto p = std::make_unique<Plugin>();
    p->entry = std::move(entry);
    plugins.push_back(std::move(p));
  }
  for (const auto& id_missing : catalog.missing) {
    auto p = std::make_unique<Plugin>();
    p->entry.id = id_missing;
    p->entry.enabled = true;
    p->entry.enabled_by = "Anvil.toml";
    p->state = PluginState::kNotFound;
    p->detail = "Anvil.toml enables " + id_missing + " but no plugin directory provides it";
    plugins.push_back(std::move(p));
  }
  // The grants first: the gateway serves what they need and no more (session/gateway_serves.h).
  // Without fs.write it skips its scan of the workspace for what git runs; without exec it
  // starts no exec broker. A plugin admitted later that needs more widens it (StartHost).
  // Watched before any grant is read: a revocation from now on is an event the loop sees, even
  // one made while the gateway below starts (the first hosts' tokens are minted from these
  // admissions, and the event then takes them back).
  if (!plugins.empty()) WatchGrantStore();
  gateway_serves_ = {};
  for (auto& p : plugins) {
    if (p->state != PluginState::kNotFound) ResolvePluginGrant(*p);
    if (p->grant) gateway_serves_ = Union(gateway_serves_, ServesFor(*p->grant));
  }
  // Before the first gateway, kept past every one: what the plugins write is counted here.
  auto table = ipc::WriteUsageTable::Create(std::max<std::size_t>(plugins.size(), 1));
  if (!table) {
    ReplyError(id, kInternalError, "the policy gateway did not start: " + table.error().ToString());
    return;
  }
  write_usage_ = std::move(*table);
  if (auto s = StartGateway(); !s) {
    ReplyError(id, kInternalError, "the policy gateway did not start: " + s.error().ToString());
    return;
  }
  missing_ = catalog.missing;
  workspace_config_error_ = catalog.workspace_config_error;
  workspace_config_ = catalog.config;
  plugins_ = std::move(plugins);
  for (auto& p : plugins_) WatchPluginFiles(*p);
  initialized_ = true;
  json result = {{"capabilities",
                  {{"positionEncoding", ToString(encoding_)},
                   {"textDocumentSync", {{"openClose", true}, {"change", 2}}}}},
                 {"serverInfo", {{"name", "anvil"}, {"version", "0.1.0"}}},
                 {"anvil",
                  {{"protocolVersion", 1},
                   {"workspace", o_.workspace},
                   {"versionedEdits", versioned_edits_},
                   {"plugins", plugins_.size()}}}};
  if (workspace_config_error_) {
    result["anvil"]["workspaceConfigError"] = workspace_config_error_->ToString();
  }
  if (workspace_config_error_) {
    // Allowed before the initialize answer (LSP: window/logMessage during initialize).
    LogMessage(kMessageWarning,
               "Anvil: " + workspace_config_error_->ToString() + " (no plugin is enabled by it)");
  }
  for (auto& p : plugins_) {
    if (p->grant && p->state == PluginState::kStarting) StartHost(*p);
  }
  open_requests_.insert(Key(id));
  pending_initialize_id_ = id;
  pending_initialize_result_ = std::move(result);
  initialize_deadline_ = Clock::now() + std::min<Clock::duration>(o_.command_timeout, 3s);
  MaybeFinishInitialize();
}

void Server::MaybeFinishInitialize() {
  if (!pending_initialize_id_) return;
  bool loading = false;
  for (const auto& p : plugins_) loading = loading || p->state == PluginState::kStarting;
  if (loading && Clock::now() < initialize_deadline_) return;
  json result = std::move(pending_initialize_result_);
  // Plugins still loading past the bound are not listed; executeCommand still accepts their
  // commands once they are ready (anvil/listPlugins has the current list).
  json commands = ExecuteCommandList();
  for (const auto& c : commands) static_commands_.insert(c.get<std::string>());
  result["capabilities"]["executeCommandProvider"] = {{"commands", std::move(commands)}};
  json id = std::move(*pending_initialize_id_);
  pending_initialize_id_.reset();
  Complete(id, std::move(result));
}

void Server::Shutdown(const json& id) {
  initialize_deadline_ = Clock::now();  // answer a pending initialize first, with what is ready
  MaybeFinishInitialize();
  StopAll();
  shutdown_requested_ = true;
  Reply(id, nullptr);
}

json Server::ListPluginsJson() const {
  json list = json::array();
  for (const auto& p : plugins_) list.push_back(PluginJson(*p));
  json result = {{"plugins", list}, {"missing", missing_}};
  if (workspace_config_error_) {
    result["workspaceConfigError"] = workspace_config_error_->ToString();
  }
  return result;
}

Result<Plugin*> Server::PluginParam(const json& params) {
  if (!params.contains("plugin") || !params["plugin"].is_string()) {
    return Fail("invalid", "params.plugin must be a plugin id (a string)");
  }
  const std::string& want = params["plugin"].get_ref<const std::string&>();
  for (auto& p : plugins_) {
    if (p->entry.id == want) return p.get();
  }
  return Fail("not_found", "no plugin " + SanitizeForDisplay(want, 100) + " in this session");
}

json Server::PluginJson(const Plugin& p) const {
  json j = {{"id", p.entry.id},
            {"dir", p.entry.dir},
            {"enabled", p.entry.enabled},
            {"enabledBy", p.entry.enabled_by},
            {"state", ToString(p.state)},
            {"restarts", p.restarts},
            {"reloads", p.reloads},
            {"pid", p.host && p.host->running() ? json(p.host->pid()) : json(nullptr)},
            {"commands", p.state == PluginState::kReady ? json(p.commands) : json(nullptr)}};
  if (!p.detail.empty()) j["detail"] = SanitizeForDisplay(p.detail, 2000);
  if (p.state == PluginState::kFailed && !p.load_trace.is_null()) j["trace"] = p.load_trace;
  if (p.entry.error) j["detail"] = SanitizeForDisplay(p.entry.error->ToString(), 2000);
  if (p.entry.manifest) {
    const Manifest& m = *p.entry.manifest;
    j["name"] = SanitizeForDisplay(m.name, 100);
    j["version"] = SanitizeForDisplay(m.version, 64);
    j["runtime"] = std::string(anvil::ToString(m.runtime));
    j["manifestSha256"] = m.sha256;
    j["signedBy"] = p.signer.empty() ? json(nullptr) : json(p.signer);
    j["grant"] = {{"state", p.grant ? "granted" : "needs_consent"},
                  {"requested", GrantToJson(m.requested)},
                  {"granted", p.grant ? GrantToJson(*p.grant) : json(nullptr)}};
  }
  return j;
}

json Server::StatusJson() const {
  json plugins = json::array();
  for (const auto& p : plugins_) {
    ipc::WriteUsage writes;
    if (auto slot = write_usage_slots_.find(p->entry.id);
        write_usage_ && slot != write_usage_slots_.end()) {
      writes = write_usage_->Read(slot->second);
    }
    plugins.push_back(
        {{"id", p->entry.id},
         {"state", ToString(p->state)},
         {"pid", p->host && p->host->running() ? json(p->host->pid()) : json(nullptr)},
         {"restarts", p->restarts},
         {"reloads", p->reloads},
         {"queued", p->queue.size()},
         {"running", p->running.has_value()},
         {"writes", {{"bytes", writes.bytes}, {"entries", writes.entries}}}});
  }
  return {{"workspace", o_.workspace},
          {"gateway",
           {{"pid", gateway_ ? json(gateway_->pid()) : json(nullptr)},
            {"restarts", gateway_restarts_},
            {"serves", {{"fsWrite", gateway_serves_.fs_write}, {"exec", gateway_serves_.exec}}},
            {"widenings", gateway_widenings_},
            {"error", gateway_error_}}},
          {"plugins", plugins},
          {"buffers", buffers_.size()},
          {"positionEncoding", ToString(encoding_)}};
}

void Server::RequestConsent(const json& id, const json& params) {
  auto p = PluginParam(params);
  if (!p) return ReplyError(id, kInvalidParams, p.error().ToString());
  Plugin& plugin = **p;
  if (plugin.state != PluginState::kNeedsConsent) {
    return Reply(id, {{"plugin", plugin.entry.id},
                      {"granted", plugin.grant.has_value()},
                      {"state", ToString(plugin.state)}});
  }
  if (plugin.consent_pending) {
    return ReplyError(id, kRequestFailed, "busy: consent for this plugin is already being asked",
                      {{"code", "busy"}, {"plugin", plugin.entry.id}});
  }
  const Manifest& m = *plugin.entry.manifest;
  const std::string text = ConsentText(o_.workspace, m, plugin.previous, plugin.signer,
                                       plugin.other_copy, plugin.entry.dir, plugin.copy_of);
  json request = {{"plugin",
                   {{"id", m.id},
                    {"name", SanitizeForDisplay(m.name, 100)},
                    {"version", SanitizeForDisplay(m.version, 64)},
                    {"runtime", std::string(anvil::ToString(m.runtime))},
                    {"dir", plugin.entry.dir},
                    {"manifestSha256", m.sha256}}},
                  {"workspace", o_.workspace},
                  {"title", "Anvil: allow plugin " + m.id + " to run in this workspace?"},
                  {"text", text},
                  {"signedBy", plugin.signer.empty() ? json(nullptr) : json(plugin.signer)},
                  {"request", GrantToJson(m.requested)},
                  {"previous", plugin.previous ? GrantToJson(*plugin.previous) : json(nullptr)},
                  {"choices", {"approve", "deny"}}};
  open_requests_.insert(Key(id));
  plugin.consent_pending = true;
  Plugin* pp = &plugin;
  std::string sha = m.sha256;
  SendRequest("anvil/consent", request, [this, pp, id, sha](const json* result, const json*) {
    pp->consent_pending = false;
    // Fail closed: only an explicit "approve" for the manifest that was shown grants anything.
    bool approved = result && result->is_object() && result->contains("decision") &&
                    (*result)["decision"] == "approve" && pp->entry.manifest &&
                    pp->entry.manifest->sha256 == sha && pp->state == PluginState::kNeedsConsent;
    if (approved) {
      auto store = GrantStore::Open();
      const Manifest& m = *pp->entry.manifest;
      Status saved = store ? store->Approve(o_.workspace, m.id, m.sha256, m.requested, pp->copy)
                           : Status(tl::unexpected(store.error()));
      if (!saved) {
        CompleteError(id, kRequestFailed, saved.error().ToString(),
                      {{"code", saved.error().code}, {"plugin", m.id}});
        return;
      }
      // The host is started from an admission run now, which finds the grant just stored
      // (StartHost): never from the answer alone.
      pp->state = PluginState::kStarting;
      StartHost(*pp);
    }
    Complete(id, {{"plugin", pp->entry.id},
                  {"granted", approved && pp->grant.has_value()},
                  {"state", ToString(pp->state)}});
  });
}

void Server::RunCommand(const json& id, const json& params, bool bare_result) {
  auto p = PluginParam(params);
  if (!p) {
    return ReplyError(id, kRequestFailed, p.error().ToString(), {{"code", p.error().code}});
  }
  Plugin& plugin = **p;
  if (!params.contains("command") || !params["command"].is_string()) {
    return ReplyError(id, kInvalidParams, "invalid params: params.command must be a string");
  }
  json args = params.contains("arguments") ? params["arguments"] : json::array();
  if (!args.is_array() && !args.is_object()) {
    return ReplyError(id, kInvalidParams,
                      "invalid params: params.arguments must be an array or an object");
  }
  json token = params.contains("workDoneToken") ? params["workDoneToken"] : json(nullptr);
  if (!token.is_null() && !token.is_string() && !token.is_number_integer()) {
    return ReplyError(id, kInvalidParams,
                      "invalid params: workDoneToken must be a string or an integer");
  }
  auto refuse = [&](ErrorCode code, const std::string& text) {
    const std::string wire(code.wire());
    ReplyError(id, kRequestFailed, wire + ": " + SanitizeForDisplay(text, 2000),
               {{"code", wire}, {"plugin", plugin.entry.id}});
  };
  switch (plugin.state) {
    case PluginState::kNeedsConsent:
      // Why: never granted, revoked, other code, a manifest that asks for more.
      return refuse("consent_required", plugin.not_admitted.message.empty()
                                            ? "plugin " + plugin.entry.id +
                                                  " is not granted in this workspace yet (ask with "
                                                  "anvil/requestConsent)"
                                            : plugin.not_admitted.message);
    case PluginState::kDisabled:
      return refuse("unavailable", "plugin " + plugin.entry.id +
                                       " is not enabled (Anvil.toml [plugins] enable, or "
                                       "--plugin-dir)");
    case PluginState::kStarting:
    case PluginState::kReady:
      break;
    default:
      return refuse("unavailable", "plugin " + plugin.entry.id + " is " + ToString(plugin.state) +
                                       (plugin.detail.empty() ? "" : ": " + plugin.detail));
  }
  const std::string command = params["command"].get<std::string>();
  if (plugin.state == PluginState::kReady &&
      std::find(plugin.commands.begin(), plugin.commands.end(), command) == plugin.commands.end()) {
    std::string known;
    for (const auto& c : plugin.commands) known += (known.empty() ? "" : ", ") + c;
    return refuse("not_found", "plugin " + plugin.entry.id + " has no command '" + command +
                                   "' (it has: " + known + ")");
  }
  if (plugin.queue.size() >= o_.max_queued_runs) {
    return refuse("busy", "too many commands queued for plugin " + plugin.entry.id);
  }
  RunRequest r;
  r.id = id;
  r.command = command;
  r.args_json = args.dump(-1, ' ', false, json::error_handler_t::replace);
  r.progress_token = token;
  r.bare_result = bare_result;
  open_requests_.insert(Key(id));
  Progress(r, {{"kind", "begin"},
               {"title", "[" + plugin.entry.id + "] " + SanitizeForDisplay(command, 128)},
               {"cancellable", true},
               {"message",
                plugin.running || plugin.state != PluginState::kReady ? "queued" : "starting"}});
  plugin.queue.push_back(std::move(r));
  DispatchNext(plugin);
}

void Server::Reload(const json& id, const json& params) {
  auto p = PluginParam(params);
  if (!p) {
    return ReplyError(id, kRequestFailed, p.error().ToString(), {{"code", p.error().code}});
  }
  Plugin& plugin = **p;
  if (!plugin.entry.enabled || plugin.state == PluginState::kNotFound) {
    return ReplyError(id, kRequestFailed,
                      "unavailable: plugin " + plugin.entry.id + " is " + ToString(plugin.state),
                      {{"code", "unavailable"}, {"plugin", plugin.entry.id}});
  }
  open_requests_.insert(Key(id));
  ReloadPlugin(plugin, id, /*auto_approve=*/true);
}

void Server::CancelRequest(const json& params) {
  if (!params.contains("id")) return;
  const std::string key = Key(params["id"]);
  if (CancelExec(key)) return;
  for (auto& p : plugins_) {
    for (auto it = p->queue.begin(); it != p->queue.end(); ++it) {
      if (Key(it->id) != key) continue;
      RunRequest r = std::move(*it);
      p->queue.erase(it);
      Progress(r, {{"kind", "end"}, {"message", "cancelled"}});
      CompleteError(r.id, kRequestCancelled, "cancelled: request cancelled before it started",
                    {{"code", "cancelled"}, {"plugin", p->entry.id}});
      return;
    }
    if (p->running && Key(p->running->id) == key && !p->running->cancelled) {
      // Cooperative first: its sys.* calls fail with "cancelled", editor.* calls are refused.
      // A plugin that ignores that is killed when the grace period ends (RunTimers).
      p->running->cancelled = true;
      p->running->kill_at = Clock::now() + o_.cancel_grace;
      if (gateway_) (void)gateway_->CancelPlugin(p->entry.id, "cancelled");
      return;
    }
  }
}

// ---- a command's progress and failure ------------------------------------------------------

void Server::FailRun(const std::string& plugin, const RunRequest& r, const Error& e) {
  Progress(r, {{"kind", "end"}, {"message", e.code}});
  json data = {{"code", e.code}, {"plugin", plugin}};
  std::string message = SanitizeForDisplay(e.ToString(), 4000);
  // A plugin error's location and stack: in the error's data for the client (the message
  // stays what the plugin raised), and in the log.
  if (auto trace = ipc::DecodePluginTrace(e.trace)) {
    data["trace"] = ipc::PluginTraceJson(*trace);
    LogMessage(kMessageLog, "[" + plugin + "] " + message + "\n" + ipc::FormatPluginTrace(*trace));
  }
  CompleteError(r.id, kRequestFailed, message, std::move(data));
}

void Server::Progress(const RunRequest& r, json value) {
  if (r.progress_token.is_null()) return;
  Notify("$/progress", {{"token", r.progress_token}, {"value", std::move(value)}});
}

}  // namespace serve

int RunServe(const ServeOptions& options) {
  serve::Server server(options);
  return server.Run();
}

}  // namespace anvil::session
