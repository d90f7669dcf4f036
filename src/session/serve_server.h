// `anvil serve`'s one class, private to the files that implement it (RunServe in
// serve_session.h is the API). Each file holds one concern:
//   serve_peer.cc            the JSON-RPC peer: output (Send, Reply, Notify, SendRequest, ...),
//                            input (framing, the message checks) and routing to the methods
//   serve_session.cc         the session's own methods: initialize, shutdown, anvil/listPlugins,
//                            anvil/status, anvil/requestConsent, anvil/runCommand, anvil/reload,
//                            $/cancelRequest; RunServe
//   serve_plugins.cc         plugin supervision: the gateway and the hosts, their crashes and
//                            restarts (the decision: restart_policy.h), the T7 reload, the
//                            plugins' editor.* requests and commands in flight, file watching
//   serve_exec.cc            anvil/exec: each a child `anvil exec --ask-fd 3`
//   lsp/serve_documents.cc   textDocument/didOpen, didChange, didClose; the buffers plugins
//                            read and edit (workspace/applyEdit)
//   lsp/serve_commands.cc    workspace/executeCommand and its dynamic registration (the diff:
//                            lsp/command_registration.h)
//   serve_loop.cc            the poll loop, its timers, stopping everything
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/ask_protocol.h"
#include "common/result.h"
#include "common/unique_fd.h"
#include "fs/workspace_root.h"
#include "ipc/cpu_budget.h"
#include "ipc/write_usage.h"
#include "linux/git_run_guard.h"
#include "policy/display_text.h"
#include "policy/grant.h"
#include "policy/grant_store.h"
#include "session/gateway_process.h"
#include "session/gateway_serves.h"
#include "session/host_process.h"
#include "session/lsp/command_registration.h"
#include "session/lsp/text_document.h"
#include "session/lsp_framing.h"
#include "session/plugin_admission.h"
#include "session/plugin_catalog.h"
#include "session/rpc_trace.h"
#include "session/serve_session.h"

namespace anvil::session::serve {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// JSON-RPC 2.0 and LSP error codes.
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kServerNotInitialized = -32002;
inline constexpr int kRequestCancelled = -32800;
inline constexpr int kRequestFailed = -32803;

// window/showMessage and window/logMessage types.
inline constexpr int kMessageError = 1, kMessageWarning = 2, kMessageInfo = 3, kMessageLog = 4;

// What a plugin can put in front of the user (threat model asset "user attention").
inline constexpr std::size_t kNotifyMaxCodePoints = 500;
inline constexpr std::size_t kLogMaxCodePoints = 2000;
inline constexpr int kNotifyBurst = 10;  // per plugin per 10 s; more are dropped (one warning)
inline constexpr int kLogBurst = 200;

inline std::string Key(const json& id) { return id.dump(); }

// "[plugin.id] text": attributed, one line, escape sequences and controls removed, capped.
// Anvil's own words never travel this way (consent is its own request), so a plugin cannot
// dress a notification up as an Anvil prompt.
inline std::string PluginText(const std::string& plugin, std::string_view text, std::size_t max) {
  return "[" + plugin + "] " + SanitizeForDisplay(text, max);
}

// A member of nested objects, or nullptr.
inline const json* Find(const json& j, std::initializer_list<const char*> path) {
  const json* at = &j;
  for (const char* key : path) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

inline bool IsTrue(const json* j) { return j && j->is_boolean() && j->get<bool>(); }

struct RunRequest {
  json id;
  std::string command;
  std::string args_json;
  json progress_token;       // null: the client asked for no progress
  bool bare_result = false;  // workspace/executeCommand: the result is the value itself
  uint64_t host_call = 0;
  bool cancelled = false;
  Clock::time_point deadline{}, kill_at{};
  // The CPU stop from outside (ipc/cpu_budget.h): the host is killed at it, as at the deadline.
  std::optional<ipc::CpuWatch> cpu;
};

enum class PluginState {
  kDisabled,      // installed, not enabled for this workspace
  kInvalid,       // the manifest does not load
  kNotFound,      // Anvil.toml enables an id no trusted path has
  kRefused,       // anvil.lock does not match
  kNeedsConsent,  // no grant for this manifest hash
  kStarting,      // a host is loading (or restarting after a crash)
  kReady,
  kFailed,  // failed to load, or crashed too often: reload to try again
};

const char* ToString(PluginState s);

struct RateWindow {
  Clock::time_point start{};
  int count = 0;
  bool warned = false;
  bool Allow(int burst) {
    auto now = Clock::now();
    if (now - start > std::chrono::seconds(10)) {
      start = now;
      count = 0;
      warned = false;
    }
    return ++count <= burst;
  }
};

struct Plugin {
  PluginEntry entry;
  PluginState state = PluginState::kDisabled;
  std::string detail;
  // Set only by an admission (ApplyAdmission): what the grant store held for this manifest and
  // copy when the checks of plugin_admission.h last ran.
  std::optional<Grant> grant;
  // That admission has not had a token minted from it yet. Each host gets a new token, and each
  // token is minted from an admission of its own (StartHost): a restart never reuses the
  // grant, lock or signature verdict an earlier host was started with.
  bool fresh_admission = false;
  std::map<std::string, std::string> pinned_files;  // anvil.lock's files for the host (CheckLock)
  // An admission gave it a grant in this session (so a grant missing now was revoked).
  bool admitted_before = false;
  // Why the last admission did not admit it (DescribeAdmissionLoss); empty when it did.
  AdmissionLoss not_admitted;
  std::optional<Grant> previous;
  // The copy of the plugin the grant is looked up (and approved) for, and, when the stored
  // grant was for another copy, which (LookupGrant).
  PluginCopy copy;
  std::optional<std::string> other_copy;
  std::optional<std::string> copy_of;
  std::unique_ptr<HostProcess> host;
  uint64_t generation = 0;  // bumps whenever the host changes: stale events are ignored
  bool channel_closed = false, stderr_closed = false;
  uint64_t describe_call = 0;
  Clock::time_point describe_deadline{};
  // The CPU stop from outside while the host loads the plugin's code (its top level runs under
  // the same budget as a command, and a builtin there counts no instruction either).
  std::optional<ipc::CpuWatch> describe_cpu;
  std::vector<std::string> commands;
  std::optional<RunRequest> running;  // a host runs one command at a time
  std::deque<RunRequest> queue;
  std::vector<json> reload_waiters;
  std::deque<Clock::time_point> crashes;
  std::optional<Clock::time_point> restart_at;
  int restarts = 0, reloads = 0;
  bool consent_pending = false;
  std::string signer;  // the trusted key that signed the manifest; empty when unsigned
  RateWindow notify_rate, log_rate;
  json load_trace;  // where the last load failed (PluginTraceJson), null otherwise
  // Its files changed (a watched --plugin-dir plugin): reload once they are quiet until then.
  std::optional<Clock::time_point> files_changed_reload_at;
};

// One anvil/exec: a child `anvil exec --ask-fd 3` in its own process group. Its questions come
// on `ask` (agent/ask_protocol.h) and go to the editor as anvil/approve; its stdout and stderr
// are kept up to kExecOutputCapBytes each; the answer is sent once its pidfd says it exited.
struct ExecJob {
  uint64_t serial = 0;  // never reused: an answer arriving for a finished job finds nothing
  json id;
  json progress_token;
  pid_t pid = -1;
  UniqueFd pidfd, ask, out, err;
  agent::LineSplitter lines{agent::kMaxAskMessageBytes};
  std::string stdout_text, stderr_text;
  bool stdout_truncated = false, stderr_truncated = false;
  std::optional<json> report;
  std::string protocol_error;  // the child broke the ask-fd protocol: it was killed
  bool asking = false;         // an anvil/approve is out
  bool cancelled = false, killed = false;
  Clock::time_point kill_at{};
};

using ResponseHandler = std::function<void(const json* result, const json* error)>;

class Server {
 public:
  explicit Server(const ServeOptions& o)
      : o_(o), reader_(o.max_message_bytes), trace_(UniqueFd(o.trace_fd)) {}
  int Run();  // serve_loop.cc

 private:
  // ---- the JSON-RPC peer (serve_peer.cc) ----
  void Send(const json& message);
  void Reply(const json& id, json result);
  void ReplyError(const json& id, int code, const std::string& message, json data = nullptr);
  // Long-lived requests are answered through these: exactly once, whatever happens.
  void Complete(const json& id, json result);
  void CompleteError(const json& id, int code, const std::string& message, json data = nullptr);
  void Notify(const std::string& method, json params);
  void SendRequest(const std::string& method, json params, ResponseHandler handler);
  void LogMessage(int type, const std::string& text);
  // --trace: a failed write stops the trace, says so once, and changes nothing else.
  void Trace(std::string_view dir, const json& message, bool is_error = false) {
    if (trace_.active() && !trace_.Record(dir, message, is_error)) {
      LogMessage(kMessageWarning, "Anvil: --trace stopped: writing the trace file failed");
    }
  }
  void ReadInput();
  void HandleMessage(const json& msg);
  void HandleResponse(const json& msg);
  void HandleRequest(const json& id, const std::string& method, const json& params);
  void HandleNotification(const std::string& method, const json& params);

  // ---- the session's methods (serve_session.cc) ----
  void Initialize(const json& id, const json& params);
  void MaybeFinishInitialize();
  void Shutdown(const json& id);
  json ListPluginsJson() const;
  json PluginJson(const Plugin& p) const;
  json StatusJson() const;
  Result<Plugin*> PluginParam(const json& params);
  void RequestConsent(const json& id, const json& params);
  void RunCommand(const json& id, const json& params, bool bare_result = false);
  void Reload(const json& id, const json& params);
  void CancelRequest(const json& params);
  void FailRun(const std::string& plugin, const RunRequest& r, const Error& e);
  void Progress(const RunRequest& r, json value);

  // ---- plugin supervision (serve_plugins.cc) ----
  Status StartGateway();  // serving gateway_serves_
  void OnGatewayExited();
  // Restarts the gateway to serve what `p`'s grant needs as well (gateway_serves.h).
  void WidenGateway(const Plugin& p);
  // The gateway is going: fails each command in flight with `why`, stops every host.
  void StopHosts(const Error& why, const std::string& reason);
  // After a gateway restart: a new host for each plugin that had one or was about to, or, when
  // the gateway did not start, each of them failed.
  void RestartHosts(const Status& gateway_started);
  // The admission checks (plugin_admission.h) for `p` as its files and the grant store are now;
  // `auto_approve`: whether --approve may approve a manifest without a grant.
  Admission AdmitNow(const Plugin& p, bool auto_approve);
  // Records an admission's verdict in `p` (state, grant, pins); kStarting when it may start.
  void ApplyAdmission(Plugin& p, Admission admission);
  void ResolvePluginGrant(Plugin& p, bool auto_approve = true);
  // A plugin that no longer passes its admission (a revoked or narrowed grant, a lock or
  // signature that no longer matches): its host is gone; its commands are failed, the client is
  // told, and it stays in the state anvil/reload would give it.
  void AdmissionLost(Plugin& p);
  void StartHost(Plugin& p);
  void TerminateHost(Plugin& p, const std::string& reason);
  void KillAndRestart(Plugin& p, const std::string& reason);
  void SetFailed(Plugin& p, const std::string& detail);
  void HostCrashed(Plugin& p, const std::string& why);
  void OnHostReadable(Plugin& p);
  void OnDescribed(Plugin& p, const ipc::Response& r);
  void OnRunDone(Plugin& p, const ipc::Response& r);
  void DispatchNext(Plugin& p);
  void HandleHostRequest(Plugin& p, const ipc::Request& req);
  // The T7 reload, for anvil/reload (`waiter`: answered once the new host loaded) and for a
  // change of the plugin's files (no waiter). `auto_approve`: whether --approve may approve a
  // manifest that asks for more (an explicit reload: yes; a file change: no, the user approved
  // what they started with, not what the files became).
  void ReloadPlugin(Plugin& plugin, std::optional<json> waiter, bool auto_approve);
  // Watching --plugin-dir plugins' files (their directory and lib/).
  void WatchPluginFiles(Plugin& p);
  void OnPluginFilesChanged();
  // Watching the grant store (inotify on its directory): a grant revoked or changed while the
  // session runs (`anvil plugin revoke`, another approval) stops the hosts started with it.
  // When neither it nor any parent can be watched (no inotify, EACCES), the store is read again
  // before each client message and every kGrantPollInterval (CheckGrantStore, RunTimers).
  void WatchGrantStore();
  bool GrantStoreWatched() const;
  void OnGrantStoreChanged();
  // Before each client message: the watch's events, or, unwatched, a recheck.
  void CheckGrantStore();
  // Runs the admission of every plugin holding a grant again; a host whose grant is gone or
  // changed is killed (its token revoked) and started again only from the new admission.
  void RecheckGrants();

  // ---- anvil/exec (serve_exec.cc) ----
  void Exec(const json& id, const json& params);
  ExecJob* FindExec(uint64_t serial);
  void OnExecAsk(ExecJob& job);
  void OnExecOutput(ExecJob& job, bool is_stderr);
  void OnExecQuestion(ExecJob& job, const agent::AskMessage& message);
  void KillExec(ExecJob& job);
  void OnExecExited(ExecJob& job);
  // $/cancelRequest of an anvil/exec (`key`: Key(id)); false when no such exec is running.
  bool CancelExec(const std::string& key);

  // ---- LSP text documents (lsp/serve_documents.cc) ----
  void DidOpen(const json& params);
  void DidChange(const json& params);
  void DidClose(const json& params);
  Result<const TextDocument*> BufferFor(const Plugin& p, const std::string& uri_or_path,
                                        bool for_edit) const;
  void HandleBufferGet(Plugin& p, const ipc::Request& req);
  void HandleBufferEdit(Plugin& p, const ipc::Request& req);

  // ---- LSP workspace/executeCommand (lsp/serve_commands.cc) ----
  void ExecuteCommand(const json& id, const json& params);
  json ExecuteCommandList() const;
  void SyncCommandRegistrations();

  // ---- the loop (serve_loop.cc) ----
  void RunTimers();
  int TimeoutMs() const;
  void PollOnce();
  void StopAll();

  const ServeOptions& o_;
  LspReader reader_;
  RpcTrace trace_;
  UniqueFd plugin_watch_;  // inotify, when a --plugin-dir plugin is watched
  // watch descriptor -> its plugin, and whether it is the plugin's lib/
  std::map<int, std::pair<Plugin*, bool>> watched_dirs_;
  // inotify on the grant store's directory (WatchGrantStore); the file's name in it.
  UniqueFd grant_watch_;
  int grant_watch_wd_ = -1;
  std::string grant_dir_, grant_file_;
  // Set while the store's directory does not exist: the name below the watched parent on the
  // way to it.
  std::string grant_watch_next_;
  bool grant_unwatched_warned_ = false;
  bool grant_store_followed_ = false;  // WatchGrantStore was called: the session follows it
  // Unwatched: when the store is read again next (RunTimers).
  Clock::time_point grant_poll_at_{};
  static constexpr std::chrono::seconds kGrantPollInterval{1};
  bool initialized_ = false, shutdown_requested_ = false, exit_ = false;
  // The initialize answer waits (bounded) for the first hosts to load, so that it can list
  // their commands in executeCommandProvider.
  std::optional<json> pending_initialize_id_;
  json pending_initialize_result_;
  Clock::time_point initialize_deadline_{};
  bool stdin_closed_ = false, out_closed_ = false;
  PositionEncoding encoding_ = PositionEncoding::kUtf16;
  bool versioned_edits_ = false;
  // Commands of plugins that become ready after initialize (consent given later, reload) reach
  // a client that supports it through client/registerCapability; a plugin that stops or loses a
  // command has its registration withdrawn (client/unregisterCapability). The static list of
  // the initialize answer cannot change.
  bool dynamic_commands_ = false, client_initialized_ = false;
  std::set<std::string> static_commands_;
  std::vector<CommandRegistration> command_registrations_;
  int64_t next_registration_ = 1;
  BufferStore buffers_;
  // The workspace as sys.fs.read resolves it, for what a buffer's name leads to (BufferFor);
  // opened at the first buffer request.
  mutable std::optional<WorkspaceRoot> buffer_root_;
  // What git runs from the workspace (linux/git_run_guard.h), refused to editor.buffer.edit as
  // the gateway refuses it to fs writes; scanned at the first edit, then kept current.
  mutable std::unique_ptr<GitRunGuard> git_run_;
  // Where Anvil's trust state lies in the workspace (policy/trust_state_paths.h), refused to
  // editor.buffer.edit as the gateway refuses it to fs writes; found at the first edit.
  mutable std::optional<std::vector<std::string>> trust_state_;
  std::unique_ptr<GatewayProcess> gateway_;
  // What each plugin wrote this session (T6's per-session write caps), in memory this process
  // owns and every gateway it starts maps: a gateway replaced for any reason, kill -9 included,
  // hands on everything it charged. A slot per plugin id (WriteUsageSlotFor).
  std::optional<ipc::WriteUsageTable> write_usage_;
  std::map<std::string, uint32_t> write_usage_slots_;
  std::optional<uint32_t> WriteUsageSlotFor(const std::string& plugin_id);
  // What the gateway serves: what the grants of the plugins admitted at initialize need, widened
  // (a restart) when one admitted later needs more; never narrowed during a session.
  GatewayServes gateway_serves_;
  std::deque<Clock::time_point> gateway_crashes_;
  int gateway_restarts_ = 0, gateway_widenings_ = 0;
  std::string gateway_error_;
  std::vector<std::unique_ptr<Plugin>> plugins_;
  std::vector<std::string> missing_;
  std::optional<Error> workspace_config_error_;
  WorkspaceConfig workspace_config_;  // Anvil.toml: enables and settings, no authority
  std::map<int64_t, ResponseHandler> outgoing_;
  int64_t next_out_id_ = 1;
  std::set<std::string> open_requests_;
  UniqueFd signal_read_, signal_write_;
  std::vector<std::unique_ptr<ExecJob>> execs_;
  uint64_t next_exec_serial_ = 1;
};

}  // namespace anvil::session::serve
