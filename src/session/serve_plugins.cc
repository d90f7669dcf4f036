// Plugin supervision in `anvil serve`: the gateway and one host per admitted plugin, started,
// watched, restarted after a crash (when: restart_policy.h) or failed, reloaded (T7, and when
// a watched plugin's files change); the host's events: its load, the command it runs, its
// editor.* requests.
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "common/fd_io.h"
#include "common/json_depth.h"
#include "ipc/plugin_trace.h"
#include "linux/helper_executable.h"
#include "session/gateway_serves.h"
#include "session/plugin_admission.h"
#include "session/plugin_session.h"
#include "session/plugin_watch.h"
#include "session/restart_policy.h"
#include "session/serve_server.h"

namespace anvil::session::serve {

using namespace std::chrono_literals;

// ---- the gateway ----------------------------------------------------------------------------

Status Server::StartGateway() {
  ANVIL_TRY(audit, AuditLogPath(o_.workspace));
  auto exe = FindHelper(GatewayExecutableFor(gateway_serves_));
  if (!exe) {
    gateway_error_ = exe.error().ToString();
    return tl::unexpected(exe.error());
  }
  GatewayConfig config{exe->path, o_.workspace, {"--audit-log", *audit}};
  config.write_usage_fd = write_usage_ ? write_usage_->fd() : -1;
  config.extra_args.insert(config.extra_args.end(), o_.gateway_args.begin(), o_.gateway_args.end());
  // Last, so that nothing before turns back on what no admitted plugin needs.
  for (std::string& arg : GatewayArgsFor(gateway_serves_)) config.extra_args.push_back(arg);
  auto gateway = GatewayProcess::Start(config);
  if (!gateway) {
    gateway_error_ = gateway.error().ToString();
    return tl::unexpected(gateway.error());
  }
  gateway_ = std::move(*gateway);
  gateway_error_.clear();
  return Ok();
}

void Server::OnGatewayExited() {
  LogMessage(kMessageError, "Anvil: the policy gateway stopped unexpectedly; restarting it");
  StopHosts(Error{"crashed", "the policy gateway stopped during the command; it was stopped", 0},
            "gateway restart");
  (void)gateway_->Stop(0);
  gateway_.reset();
  // No delay: every host waits for it.
  RestartDecision decision = DecideRestart(std::move(gateway_crashes_), Clock::now(),
                                           {o_.max_gateway_restarts, o_.restart_window, 0ms});
  gateway_crashes_ = std::move(decision.crashes);
  Status started =
      Fail("crashed", "the policy gateway stopped " + std::to_string(gateway_crashes_.size()) +
                          " times in " + std::to_string(o_.restart_window.count()) + " s");
  if (decision.action == RestartDecision::Action::kRestart) {
    started = StartGateway();
    if (started) ++gateway_restarts_;
  }
  RestartHosts(started);
}

void Server::WidenGateway(const Plugin& p) {
  const GatewayServes need = ServesFor(*p.grant);
  std::string what;
  if (need.fs_write && !gateway_serves_.fs_write) what = "fs.write";
  if (need.exec && !gateway_serves_.exec) what += what.empty() ? "exec" : " and exec";
  if (need.net && !gateway_serves_.net) what += what.empty() ? "net" : " and net";
  LogMessage(kMessageInfo, "Anvil: restarting the policy gateway to serve the " + what +
                               " of plugin " + p.entry.id);
  StopHosts(Error{"cancelled",
                  "the policy gateway restarted to serve the " + what + " of plugin " + p.entry.id +
                      "; run the command again",
                  0},
            "gateway widened");
  (void)gateway_->Stop();
  gateway_.reset();
  gateway_serves_ = Union(gateway_serves_, need);
  ++gateway_widenings_;
  RestartHosts(StartGateway());
}

std::optional<uint32_t> Server::WriteUsageSlotFor(const std::string& plugin_id) {
  if (!write_usage_) return std::nullopt;
  if (auto it = write_usage_slots_.find(plugin_id); it != write_usage_slots_.end()) {
    return it->second;
  }
  // One slot per plugin of the session, made at initialize; the id of a plugin that ran never
  // changes (a reload that changes it is refused), so a new id is only one never started.
  const auto next = static_cast<uint32_t>(write_usage_slots_.size());
  if (next >= write_usage_->slots()) return std::nullopt;
  write_usage_slots_.emplace(plugin_id, next);
  return next;
}

void Server::StopHosts(const Error& why, const std::string& reason) {
  for (auto& p : plugins_) {
    if (p->running) {
      RunRequest r = std::move(*p->running);
      p->running.reset();
      FailRun(p->entry.id, r, why);
    }
    TerminateHost(*p, reason);
  }
}

void Server::RestartHosts(const Status& gateway_started) {
  if (!gateway_started) {
    gateway_error_ = gateway_started.error().ToString();
    for (auto& p : plugins_) {
      if (p->state == PluginState::kStarting || p->state == PluginState::kReady) {
        SetFailed(*p, "no policy gateway: " + gateway_error_);
      }
    }
    return;
  }
  for (auto& p : plugins_) {
    if (p->grant && (p->state == PluginState::kStarting || p->state == PluginState::kReady)) {
      p->restart_at.reset();
      StartHost(*p);
    }
  }
}
// ---- hosts ----------------------------------------------------------------------------------

Admission Server::AdmitNow(const Plugin& p, bool auto_approve) {
  auto store = GrantStore::Open();
  if (!store) {
    Admission failed;
    failed.verdict = AdmissionVerdict::kFailed;
    failed.error = store.error();
    return failed;
  }
  const Manifest& m = *p.entry.manifest;
  // The catalog checked the entry file when it loaded the manifest.
  const AdmissionRequest request{o_.workspace, p.entry.dir, o_.require_signed,
                                 /*entry_checked=*/true};
  Admission admission = AdmitPlugin(request, m, *store);
  if (admission.verdict == AdmissionVerdict::kNeedsConsent && o_.approve && auto_approve) {
    (void)ApproveAdmission(request, m, *store, admission);
  }
  return admission;
}

void Server::ApplyAdmission(Plugin& p, Admission admission) {
  p.grant.reset();
  p.fresh_admission = false;
  p.not_admitted =
      admission.verdict == AdmissionVerdict::kAdmitted
          ? AdmissionLoss{}
          : DescribeAdmissionLoss(p.entry.id, p.entry.dir, admission, p.admitted_before);
  p.pinned_files = std::move(admission.pinned_files);
  p.signer = admission.signer;
  p.previous = admission.lookup.previous;
  p.copy = admission.lookup.copy;
  p.other_copy = admission.lookup.other_copy;
  p.copy_of = admission.lookup.copy_of;
  switch (admission.verdict) {
    case AdmissionVerdict::kRefused:
      // The files are not what they claim to be (lock mismatch, bad signature).
      p.state = PluginState::kRefused;
      p.detail = admission.error->ToString();
      return;
    case AdmissionVerdict::kFailed:
      p.state = PluginState::kFailed;
      p.detail = admission.error->ToString();
      return;
    case AdmissionVerdict::kNeedsConsent:
      p.state = PluginState::kNeedsConsent;
      p.detail = p.not_admitted.message;
      return;
    case AdmissionVerdict::kAdmitted:
      p.admitted_before = true;
      p.detail.clear();
      p.grant = admission.grant;
      p.fresh_admission = true;
      p.state = PluginState::kStarting;
      return;
  }
}

// Decides what an enabled plugin needs before it can start: a valid manifest, a matching lock
// and a grant for this exact manifest hash. Leaves kStarting when it can start.
void Server::ResolvePluginGrant(Plugin& p, bool auto_approve) {
  p.grant.reset();
  p.fresh_admission = false;
  if (p.entry.error || !p.entry.manifest) {
    p.state = PluginState::kInvalid;
    p.not_admitted = {"unavailable", "manifest invalid",
                      "plugin " + p.entry.id + " is invalid: " +
                          (p.entry.error ? p.entry.error->ToString() : "no manifest") +
                          " (fix it, then anvil/reload)"};
    return;
  }
  if (!p.entry.enabled) {
    p.state = PluginState::kDisabled;
    p.not_admitted = {"unavailable", "disabled", "plugin " + p.entry.id + " is not enabled"};
    return;
  }
  ApplyAdmission(p, AdmitNow(p, auto_approve));
}

void Server::AdmissionLost(Plugin& p) {
  // The reason is the check that refused it now (a lock, a signature, code not approved, a
  // revoked grant), never a guess.
  const AdmissionLoss& loss = p.not_admitted;
  TerminateHost(p, loss.reason);
  p.restart_at.reset();
  LogMessage(kMessageWarning,
             "Anvil: plugin " + p.entry.id + " stopped: " + SanitizeForDisplay(loss.message, 2000));
  const Error e{ErrorCode::FromWire(loss.code), loss.message, 0};
  if (p.running) {
    RunRequest r = std::move(*p.running);
    p.running.reset();
    FailRun(p.entry.id, r, e);
  }
  while (!p.queue.empty()) {
    FailRun(p.entry.id, p.queue.front(), e);
    p.queue.pop_front();
  }
  for (const auto& w : std::exchange(p.reload_waiters, {})) Complete(w, PluginJson(p));
}

void Server::StartHost(Plugin& p) {
  if (!gateway_) return SetFailed(p, "no policy gateway: " + gateway_error_);
  // Each token is minted from an admission of its own. A restart (after a crash, a deadline or
  // CPU kill, a gateway restart or widening) runs the checks again, as the first start did: a
  // grant revoked since, or a lock, signature or unchecked subtree that now refuses the plugin,
  // is never carried over from the host it replaces. --approve approved what the session
  // started with, not what the store holds now.
  if (!p.fresh_admission) {
    ResolvePluginGrant(p, /*auto_approve=*/false);
    if (p.state != PluginState::kStarting) return AdmissionLost(p);
  }
  if (!Covers(gateway_serves_, ServesFor(*p.grant))) {
    // A plugin admitted after the gateway started (consent, reload) needs what it was started
    // without: a new gateway serves it, its scan of what git runs made before its first write.
    // That restart starts every host again, this one included (from this admission).
    p.state = PluginState::kStarting;
    return WidenGateway(p);
  }
  const Manifest& m = *p.entry.manifest;
  auto exe = FindHelper("anvil-plugin-host");
  if (!exe) return SetFailed(p, "the plugin host did not start: " + exe.error().ToString());
  HostConfig config{
      exe->path, p.entry.dir, std::string(anvil::ToString(m.runtime)),
      m.entry,   m.id,        {"--deadline-ms", std::to_string(o_.command_timeout.count())}};
  config.extra_args.insert(config.extra_args.end(), o_.host_args.begin(), o_.host_args.end());
  // Data for the plugin only: the grant passed below comes from the grant store, never from here.
  config.settings_json =
      workspace_config_.SettingsFor(m.id).dump(-1, ' ', false, json::error_handler_t::replace);
  config.pinned_files = p.pinned_files;
  config.write_usage_slot = WriteUsageSlotFor(m.id);
  if (write_usage_ && !config.write_usage_slot) {
    // Its writes could not be counted across gateways: it does not run.
    return SetFailed(p, "plugin " + m.id +
                            " has no place in this session's count of writes (its id is new "
                            "since the session started); fix: start a new session");
  }
  p.fresh_admission = false;  // this token uses it up
  auto host = HostProcess::Start(config, *gateway_, *p.grant);
  if (!host) return SetFailed(p, "the plugin host did not start: " + host.error().ToString());
  p.host = std::move(*host);
  ++p.generation;
  p.channel_closed = p.stderr_closed = false;
  p.commands.clear();
  auto call = p.host->Send("host.describe", {});
  if (!call) {
    TerminateHost(p, "start failed");
    return SetFailed(p, "the plugin host did not start: " + call.error().ToString());
  }
  p.describe_call = *call;
  p.describe_deadline = Clock::now() + o_.command_timeout;
  p.describe_cpu.reset();
  if (auto cpu = p.host->CpuTime()) p.describe_cpu.emplace(p.host->cpu_stop(), Clock::now(), *cpu);
  p.state = PluginState::kStarting;
}

void Server::TerminateHost(Plugin& p, const std::string& reason) {
  if (p.host) {
    (void)p.host->Kill(reason);
    p.host.reset();
  }
  ++p.generation;
}

void Server::KillAndRestart(Plugin& p, const std::string& reason) {
  TerminateHost(p, reason);
  p.state = PluginState::kStarting;
  StartHost(p);
}

void Server::SetFailed(Plugin& p, const std::string& detail) {
  p.state = PluginState::kFailed;
  p.detail = detail;
  if (p.running) {
    FailRun(p.entry.id, *p.running, Error{"unavailable", detail, 0});
    p.running.reset();
  }
  while (!p.queue.empty()) {
    FailRun(p.entry.id, p.queue.front(),
            Error{"unavailable", "plugin " + p.entry.id + " failed: " + detail, 0});
    p.queue.pop_front();
  }
  for (const auto& w : std::exchange(p.reload_waiters, {})) Complete(w, PluginJson(p));
}

void Server::HostCrashed(Plugin& p, const std::string& why) {
  std::string text = why;
  if (p.host) {
    p.host->DrainStderr();
    std::string err = p.host->stderr_text();
    while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
    if (p.host->exit_status() >= 0)
      text += " (status " + std::to_string(p.host->exit_status()) + ")";
    if (!err.empty()) text += ": " + err;
  }
  TerminateHost(p, "host crashed");
  LogMessage(kMessageWarning, "Anvil: the host of plugin " + p.entry.id +
                                  " stopped: " + SanitizeForDisplay(text, 1000));
  if (p.running) {
    RunRequest r = std::move(*p.running);
    p.running.reset();
    FailRun(p.entry.id, r, Error{"crashed", "the plugin host stopped unexpectedly: " + text, 0});
  }
  const auto now = Clock::now();
  // Restarts 50, 100, 200 ms ... after the crash.
  RestartDecision decision =
      DecideRestart(std::move(p.crashes), now, {o_.max_host_restarts, o_.restart_window, 50ms});
  p.crashes = std::move(decision.crashes);
  if (decision.action == RestartDecision::Action::kFail) {
    return SetFailed(p, "the plugin host crashed " + std::to_string(p.crashes.size()) +
                            " times in " + std::to_string(o_.restart_window.count()) +
                            " s; reload it to try again");
  }
  ++p.restarts;
  p.state = PluginState::kStarting;
  p.detail = "restarting after a crash";
  p.restart_at = now + decision.delay;
}

void Server::OnHostReadable(Plugin& p) {
  bool closed = false;
  auto events = p.host->ReadEvents(&closed);
  if (!events) return HostCrashed(p, events.error().message);
  const uint64_t generation = p.generation;
  for (auto& e : *events) {
    if (p.generation != generation || !p.host) return;
    switch (e.kind) {
      case HostProcess::Event::Kind::kResponse:
        if (p.state == PluginState::kStarting && e.response.id == p.describe_call) {
          OnDescribed(p, e.response);
        } else if (p.running && p.running->host_call == e.response.id) {
          OnRunDone(p, e.response);
        }
        break;
      case HostProcess::Event::Kind::kLog:
        if (e.request.args.size() == 2 && p.log_rate.Allow(kLogBurst)) {
          LogMessage(kMessageLog,
                     PluginText(p.entry.id,
                                SanitizeForDisplay(e.request.args[0], 8) + ": " + e.request.args[1],
                                kLogMaxCodePoints));
        }
        break;
      case HostProcess::Event::Kind::kRequest:
        HandleHostRequest(p, e.request);
        break;
    }
  }
  if (closed && p.generation == generation) p.channel_closed = true;
}

void Server::OnDescribed(Plugin& p, const ipc::Response& r) {
  if (!r.ok) {
    // A load error: the host exits after saying so. Not a crash, so no restart loop.
    TerminateHost(p, "load failed");
    const Error e = r.ToError();
    const std::string detail = "the plugin did not load: " + e.ToString();
    if (auto trace = ipc::DecodePluginTrace(e.trace)) {
      p.load_trace = ipc::PluginTraceJson(*trace);
      LogMessage(kMessageWarning, "[" + p.entry.id + "] " + SanitizeForDisplay(detail, 2000) +
                                      "\n" + ipc::FormatPluginTrace(*trace));
    }
    return SetFailed(p, detail);
  }
  p.load_trace = nullptr;
  p.commands = r.fields;
  p.state = PluginState::kReady;
  p.detail.clear();
  for (const auto& w : std::exchange(p.reload_waiters, {})) Complete(w, PluginJson(p));
  DispatchNext(p);
}

void Server::OnRunDone(Plugin& p, const ipc::Response& r) {
  RunRequest run = std::move(*p.running);
  p.running.reset();
  if (run.cancelled) {
    Progress(run, {{"kind", "end"}, {"message", "cancelled"}});
    CompleteError(run.id, kRequestCancelled, "cancelled: request cancelled",
                  {{"code", "cancelled"}, {"plugin", p.entry.id}, {"killed", false}});
  } else if (!r.ok && r.fields.size() >= 2 &&
             IsHostDeadlineStop(r.fields[0], r.fields[1], Clock::now(), run.deadline)) {
    // The host keeps a deadline of the same length (lua_budget.cc, js_budget.cc), counted from
    // when it got the command, and on a loaded machine it can answer before this loop sees its
    // own: the command is past its deadline either way and ends the same way, with a fresh host
    // for the next one. Judged by this loop's clock: plugin code can raise the same error, and
    // that one (like a fetch's "timeout") is the command's own and keeps its host.
    KillAndRestart(p, "timeout");
    FailRun(
        p.entry.id, run,
        Error{"timeout", "command passed its wall-clock deadline; the plugin host was killed", 0});
    return;
  } else if (!r.ok) {
    FailRun(p.entry.id, run, r.ToError());
  } else {
    // Bounded: a result nested a million deep would overflow the stack when sent on.
    bool too_deep = false;
    json value = r.fields.size() == 1 ? ParseBoundedJson(r.fields[0], &too_deep) : json();
    if (too_deep) {
      FailRun(p.entry.id, run,
              Error{"limit",
                    "the command's result is nested deeper than " +
                        std::to_string(kMaxJsonNesting) + " levels",
                    0});
    } else if (r.fields.size() != 1 || value.is_discarded()) {
      FailRun(p.entry.id, run, Error{"error", "the plugin host returned a malformed result", 0});
    } else {
      Progress(run, {{"kind", "end"}, {"message", "done"}});
      Complete(run.id, run.bare_result ? std::move(value) : json{{"value", std::move(value)}});
    }
  }
  DispatchNext(p);
}

void Server::DispatchNext(Plugin& p) {
  while (p.state == PluginState::kReady && !p.running && !p.queue.empty() && p.host) {
    RunRequest r = std::move(p.queue.front());
    p.queue.pop_front();
    if (std::find(p.commands.begin(), p.commands.end(), r.command) == p.commands.end()) {
      FailRun(
          p.entry.id, r,
          Error{"not_found", "plugin " + p.entry.id + " has no command '" + r.command + "'", 0});
      continue;
    }
    // Taken before sending: the host's deadline, counted from when it reads the command, is
    // never earlier than this one (IsHostDeadlineStop relies on it).
    const auto sent = Clock::now();
    auto call = p.host->Send("command.run", {r.command, r.args_json});
    if (!call) {
      p.queue.push_front(std::move(r));
      return HostCrashed(p, "the host channel failed: " + call.error().message);
    }
    r.host_call = *call;
    r.deadline = sent + o_.command_timeout;
    if (auto cpu = p.host->CpuTime()) r.cpu.emplace(p.host->cpu_stop(), Clock::now(), *cpu);
    Progress(r, {{"kind", "report"}, {"message", "running"}});
    p.running = std::move(r);
  }
}

void Server::HandleHostRequest(Plugin& p, const ipc::Request& req) {
  auto answer_error = [&](const std::string& code, const std::string& text) {
    (void)p.host->Answer(ipc::Response::Error(req.id, code, text));
  };
  if (p.running && p.running->cancelled) return answer_error("cancelled", "request cancelled");
  if (!p.grant) return answer_error("denied", "no grant");
  if (req.op == "editor.notify" && req.args.size() == 1) {
    if (p.notify_rate.Allow(kNotifyBurst)) {
      Notify("window/showMessage",
             {{"type", kMessageInfo},
              {"message", PluginText(p.entry.id, req.args[0], kNotifyMaxCodePoints)},
              {"anvil", {{"source", "plugin"}, {"plugin", p.entry.id}}}});
    } else if (!p.notify_rate.warned) {
      p.notify_rate.warned = true;
      LogMessage(kMessageWarning, "Anvil: dropping notifications of plugin " + p.entry.id +
                                      " (more than 10 in 10 s)");
    }
    (void)p.host->Answer({req.id, true, {}});
    return;
  }
  if (req.op == "editor.buffer.get" && req.args.size() == 1) return HandleBufferGet(p, req);
  if (req.op == "editor.buffer.edit" && req.args.size() == 3) return HandleBufferEdit(p, req);
  answer_error("invalid", "unknown editor request " + SanitizeForDisplay(req.op, 64));
}

// ---- reload and watching --------------------------------------------------------------------

void Server::ReloadPlugin(Plugin& plugin, std::optional<json> waiter, bool auto_approve) {
  plugin.files_changed_reload_at.reset();
  // T7, in order. (1) Stop new requests: this loop runs nothing else until the old host is
  // gone, and the plugin leaves "ready", so a request arriving before the new host is up is
  // queued for the new host, never sent to the old one.
  plugin.state = PluginState::kStarting;
  // (2) Cancel in-flight ids: the editor hears "cancelled (reload)" for the running command.
  if (plugin.running) {
    RunRequest r = std::move(*plugin.running);
    plugin.running.reset();
    Progress(r, {{"kind", "end"}, {"message", "cancelled: plugin reloading"}});
    CompleteError(r.id, kRequestCancelled, "cancelled: plugin reloading",
                  {{"code", "cancelled"}, {"reason", "reload"}, {"plugin", plugin.entry.id}});
  }
  // (3)-(5) Cancel its gateway requests (audited cancelled_by_reload), kill the process group,
  // wait for the exit, revoke the token: HostProcess::Kill, explicitly.
  TerminateHost(plugin, "reload");
  ++plugin.reloads;
  plugin.crashes.clear();
  plugin.restart_at.reset();
  // The plugin may have changed on disk: that is what a reload is for. So may its settings; an
  // Anvil.toml that no longer parses keeps the settings the session started with.
  if (auto config = LoadWorkspaceConfig(o_.workspace); config) {
    workspace_config_.settings = std::move(config->settings);
  } else {
    LogMessage(kMessageWarning,
               "Anvil: " + config.error().ToString() + " (plugin settings unchanged)");
  }
  auto manifest = LoadManifest(plugin.entry.dir);
  if (!manifest) {
    plugin.entry.manifest.reset();
    plugin.entry.error = manifest.error();
  } else if (manifest->id != plugin.entry.id &&
             (plugin.entry.manifest || write_usage_slots_.contains(plugin.entry.id))) {
    // Refused also after a manifest that did not load, once the plugin ran under its id: its
    // session counts (writes) are kept by id.
    plugin.entry.error = Error{"invalid",
                               "the plugin id changed from " + plugin.entry.id + " to " +
                                   manifest->id + "; start a new session",
                               0};
  } else if (manifest->id != plugin.entry.id &&
             std::any_of(plugins_.begin(), plugins_.end(), [&](const auto& other) {
               return other.get() != &plugin && other->entry.id == manifest->id;
             })) {
    plugin.entry.error = Error{"invalid",
                               "the plugin id " + manifest->id +
                                   " is already another plugin's in this session; give it an "
                                   "id of its own",
                               0};
  } else {
    plugin.entry.manifest = std::move(*manifest);
    plugin.entry.id = plugin.entry.manifest->id;
    plugin.entry.error.reset();
  }
  plugin.detail.clear();
  plugin.grant.reset();
  ResolvePluginGrant(plugin, auto_approve);
  WatchPluginFiles(plugin);  // a lib/ made since is watched from now on
  if (plugin.state != PluginState::kStarting) {
    while (!plugin.queue.empty()) {
      FailRun(
          plugin.entry.id, plugin.queue.front(),
          Error{"unavailable", "plugin " + plugin.entry.id + " is " + ToString(plugin.state), 0});
      plugin.queue.pop_front();
    }
    if (waiter) Complete(*waiter, PluginJson(plugin));
    return;
  }
  // (6)-(7) A new host with a new token; the answer waits for it to load.
  if (waiter) plugin.reload_waiters.push_back(*waiter);
  StartHost(plugin);
}

void Server::WatchPluginFiles(Plugin& p) {
  if (!o_.watch_plugin_dirs || p.entry.enabled_by != "command line" || p.entry.dir.empty()) return;
  if (!plugin_watch_) {
    plugin_watch_.Reset(inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
    if (!plugin_watch_) {
      LogMessage(kMessageWarning, std::string("Anvil: cannot watch plugin files (inotify: ") +
                                      std::strerror(errno) + "); use anvil/reload");
      return;
    }
  }
  constexpr uint32_t kMask =
      IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB | IN_ONLYDIR;
  // Exactly what the host reads: the directory (manifest, entry) and lib/.
  for (const bool lib : {false, true}) {
    const std::string dir = lib ? p.entry.dir + "/lib" : p.entry.dir;
    const int wd = inotify_add_watch(plugin_watch_.Get(), dir.c_str(), kMask);
    if (wd >= 0) watched_dirs_[wd] = {&p, lib};
  }
}

void Server::OnPluginFilesChanged() {
  const auto at = Clock::now() + o_.watch_debounce;
  fd_io::ForEachInotifyEvent(plugin_watch_.Get(), [&](const inotify_event& e) {
    auto it = watched_dirs_.find(e.wd);
    if (it == watched_dirs_.end()) return;
    if (e.mask & IN_IGNORED) {
      watched_dirs_.erase(it);  // the directory is gone; a reload adds it again
      return;
    }
    const auto [plugin, in_lib] = it->second;
    if (!IsPluginFileChange(in_lib, e.len > 0 ? std::string_view(e.name) : "")) return;
    // Each change pushes the reload back: an editor's save is several events.
    plugin->files_changed_reload_at = at;
  });
}

// ---- the grant store ------------------------------------------------------------------------

void Server::WatchGrantStore() {
  grant_store_followed_ = true;
  grant_poll_at_ = Clock::now() + kGrantPollInterval;
  if (grant_watch_wd_ >= 0) inotify_rm_watch(grant_watch_.Get(), grant_watch_wd_);
  grant_watch_wd_ = -1;
  const auto unwatched = [&](const std::string& why) {
    if (grant_unwatched_warned_) return;
    grant_unwatched_warned_ = true;
    LogMessage(kMessageWarning,
               "Anvil: cannot watch the grant store" +
                   (grant_dir_.empty() ? std::string() : " " + grant_dir_) + " (" + why +
                   "): it is read again before each message and every second instead");
  };
  // The path, not the store: a store that cannot be opened now (a torn file, a directory not
  // made yet) is watched all the same, so that what is granted there later is watched too.
  if (grant_dir_.empty()) {
    auto path = GrantStore::DefaultPath();
    if (!path) return unwatched(path.error().ToString());
    const std::size_t slash = path->rfind('/');
    grant_dir_ = slash == 0 ? "/" : path->substr(0, slash);
    grant_file_ = path->substr(slash + 1);
  }
  if (!grant_watch_) {
    grant_watch_.Reset(inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
    if (!grant_watch_) return unwatched(std::string("inotify: ") + std::strerror(errno));
  }
  // The directory, not the file: the store is replaced by a rename (grant_store.h). While the
  // directory does not exist, its nearest existing parent is watched for the next name on the
  // way; once that is made the watch moves down (OnGrantStoreChanged).
  constexpr uint32_t kSelf = IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
  constexpr uint32_t kStore =
      kSelf | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB;
  constexpr uint32_t kParent = kSelf | IN_CREATE | IN_MOVED_TO;
  std::string dir = grant_dir_, next;
  for (;;) {
    const int wd =
        inotify_add_watch(grant_watch_.Get(), dir.c_str(), next.empty() ? kStore : kParent);
    if (wd < 0 && (errno == ENOENT || errno == ENOTDIR) && dir != "/") {
      const std::size_t slash = dir.rfind('/');
      next = dir.substr(slash + 1);
      dir = slash == 0 ? "/" : dir.substr(0, slash);
      continue;
    }
    if (wd < 0) return unwatched(std::strerror(errno));
    grant_watch_wd_ = wd;
    // Made between the failed watch below and this one: watch further down.
    struct stat st {};
    if (!next.empty() && ::stat((dir == "/" ? "/" + next : dir + "/" + next).c_str(), &st) == 0 &&
        S_ISDIR(st.st_mode)) {
      inotify_rm_watch(grant_watch_.Get(), wd);
      grant_watch_wd_ = -1;
      dir = grant_dir_;
      next.clear();
      continue;
    }
    break;
  }
  grant_watch_next_ = next;
  grant_unwatched_warned_ = false;
}

bool Server::GrantStoreWatched() const { return grant_watch_ && grant_watch_wd_ >= 0; }

void Server::CheckGrantStore() {
  if (GrantStoreWatched()) return OnGrantStoreChanged();
  // Not watched: looked at again now, fail closed (a revocation is never missed), and the watch
  // tried again.
  WatchGrantStore();
  grant_poll_at_ = Clock::now() + kGrantPollInterval;
  RecheckGrants();
}

void Server::OnGrantStoreChanged() {
  bool changed = false, rewatch = false;
  if (grant_watch_) {
    fd_io::ForEachInotifyEvent(grant_watch_.Get(), [&](const inotify_event& e) {
      if (e.mask & IN_Q_OVERFLOW) changed = true;  // events were lost: look again
      if (e.wd != grant_watch_wd_) return;
      const std::string_view name = e.len > 0 ? std::string_view(e.name) : std::string_view();
      if (e.mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
        // The directory went away or moved: its path is watched afresh below.
        changed = rewatch = true;
      } else if (!grant_watch_next_.empty()) {
        // A parent: the next directory on the way to the store was made.
        if (name == grant_watch_next_) changed = rewatch = true;
      } else if (name == grant_file_) {
        changed = true;
      }
    });
  }
  // Watched afresh before the recheck, which may take long (a host started again, a gateway
  // widened): a change meanwhile is then an event, not missed.
  if (rewatch || !GrantStoreWatched()) {
    WatchGrantStore();
    changed = true;
  }
  if (changed) RecheckGrants();
}

void Server::RecheckGrants() {
  for (auto& pp : plugins_) {
    Plugin& p = *pp;
    if (!p.grant || !p.entry.manifest) continue;
    Admission admission = AdmitNow(p, /*auto_approve=*/false);
    // The same grant for the same code: the host goes on. An approval of other code for it
    // (the plugin's code changed and the new code was approved) replaced the approval of the
    // code the host runs: it is started again on the new pins.
    const bool admitted = admission.verdict == AdmissionVerdict::kAdmitted;
    const bool same_grant = admitted && admission.grant == p.grant;
    if (same_grant && admission.pinned_files == p.pinned_files) continue;
    const bool live = p.state == PluginState::kStarting || p.state == PluginState::kReady;
    // A failed plugin that is still granted waits for anvil/reload as before.
    if (!live && admitted) continue;
    const AdmissionLoss loss =
        !admitted ? DescribeAdmissionLoss(p.entry.id, p.entry.dir, admission, /*ran=*/true)
        : same_grant
            ? AdmissionLoss{"", "code approval changed",
                            "the approval of plugin " + p.entry.id + " is now for other code"}
            : AdmissionLoss{"", "grant changed", "the grant of plugin " + p.entry.id + " changed"};
    // T7's order, as at a reload: its gateway requests cancelled, the group killed and waited
    // for, the token revoked; the command in flight answered once.
    if (p.running) {
      RunRequest r = std::move(*p.running);
      p.running.reset();
      FailRun(p.entry.id, r,
              Error{"denied", loss.message + " (while the command ran: its host was stopped)", 0});
    }
    TerminateHost(p, loss.reason);
    ApplyAdmission(p, std::move(admission));
    if (live && p.state == PluginState::kStarting) {
      // Narrowed, otherwise changed, or approved for other code: a new host, a new token, the
      // new grant and pins.
      LogMessage(kMessageInfo, "Anvil: " + loss.message + ": its host was restarted with it");
      p.restart_at.reset();
      StartHost(p);
    } else {
      AdmissionLost(p);
    }
  }
}

}  // namespace anvil::session::serve
