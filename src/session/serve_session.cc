#include "session/serve_session.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "agent/ask_protocol.h"
#include "common/json_depth.h"
#include "common/unique_fd.h"
#include "fs/path_glob.h"
#include "fs/workspace_path.h"
#include "ipc/plugin_trace.h"
#include "linux/helper_executable.h"
#include "policy/consent.h"
#include "policy/grant_store.h"
#include "policy/shell_words.h"
#include "session/document_uri.h"
#include "session/exec_request.h"
#include "session/gateway_process.h"
#include "session/host_process.h"
#include "session/plugin_admission.h"
#include "session/plugin_catalog.h"
#include "session/plugin_session.h"
#include "session/plugin_watch.h"
#include "session/rpc_trace.h"
#include "session/text_document.h"

namespace anvil::session {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// JSON-RPC 2.0 and LSP error codes.
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;
constexpr int kServerNotInitialized = -32002;
constexpr int kRequestCancelled = -32800;
constexpr int kRequestFailed = -32803;

// window/showMessage and window/logMessage types.
constexpr int kMessageError = 1, kMessageWarning = 2, kMessageInfo = 3, kMessageLog = 4;

// What a plugin can put in front of the user (threat model asset "user attention").
constexpr size_t kNotifyMaxCodePoints = 500;
constexpr size_t kLogMaxCodePoints = 2000;
constexpr int kNotifyBurst = 10;  // per plugin per 10 s; more are dropped (one warning)
constexpr int kLogBurst = 200;

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

extern "C" char** environ;

int g_signal_pipe = -1;
void OnSignal(int sig) {
  char c = static_cast<char>(sig);
  ssize_t ignored = ::write(g_signal_pipe, &c, 1);
  (void)ignored;
}
void OnSigpipe(int) {}  // a handler, not SIG_IGN: exec'd children get the default back

std::string Key(const json& id) { return id.dump(); }

// "[plugin.id] text": attributed, one line, escape sequences and controls removed, capped.
// Anvil's own words never travel this way (consent is its own request), so a plugin cannot
// dress a notification up as an Anvil prompt.
std::string PluginText(const std::string& plugin, std::string_view text, size_t max) {
  return "[" + plugin + "] " + SanitizeForDisplay(text, max);
}

// A member of nested objects, or nullptr.
const json* Find(const json& j, std::initializer_list<const char*> path) {
  const json* at = &j;
  for (const char* key : path) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

bool IsTrue(const json* j) { return j && j->is_boolean() && j->get<bool>(); }

struct RunRequest {
  json id;
  std::string command;
  std::string args_json;
  json progress_token;       // null: the client asked for no progress
  bool bare_result = false;  // workspace/executeCommand: the result is the value itself
  uint64_t host_call = 0;
  bool cancelled = false;
  Clock::time_point deadline{}, kill_at{};
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

struct RateWindow {
  Clock::time_point start{};
  int count = 0;
  bool warned = false;
  bool Allow(int burst) {
    auto now = Clock::now();
    if (now - start > 10s) {
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
  std::optional<Grant> grant;
  std::map<std::string, std::string> pinned_files;  // anvil.lock's files for the host (CheckLock)
  std::optional<Grant> previous;
  // The copy of the plugin the grant is looked up (and approved) for, and, when the stored
  // grant was for another copy, which (LookupGrant).
  PluginCopy copy;
  std::optional<std::string> other_copy;
  std::unique_ptr<HostProcess> host;
  uint64_t generation = 0;  // bumps whenever the host changes: stale events are ignored
  bool channel_closed = false, stderr_closed = false;
  uint64_t describe_call = 0;
  Clock::time_point describe_deadline{};
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
  int Run();

 private:
  // ---- JSON-RPC output ----
  void Send(const json& message);
  void Reply(const json& id, json result);
  void ReplyError(const json& id, int code, const std::string& message, json data = nullptr);
  // Long-lived requests are answered through these: exactly once, whatever happens.
  void Complete(const json& id, json result);
  void CompleteError(const json& id, int code, const std::string& message, json data = nullptr);
  void FailRun(const std::string& plugin, const RunRequest& r, const Error& e);
  void Notify(const std::string& method, json params);
  void SendRequest(const std::string& method, json params, ResponseHandler handler);
  void LogMessage(int type, const std::string& text);
  void Progress(const RunRequest& r, json value);

  // --trace: a failed write stops the trace, says so once, and changes nothing else.
  void Trace(std::string_view dir, const json& message, bool is_error = false) {
    if (trace_.active() && !trace_.Record(dir, message, is_error)) {
      LogMessage(kMessageWarning, "Anvil: --trace stopped: writing the trace file failed");
    }
  }

  // ---- input ----
  void ReadInput();
  void HandleMessage(const json& msg);
  void HandleResponse(const json& msg);
  void HandleRequest(const json& id, const std::string& method, const json& params);
  void HandleNotification(const std::string& method, const json& params);

  // ---- methods ----
  void Initialize(const json& id, const json& params);
  void Shutdown(const json& id);
  void RequestConsent(const json& id, const json& params);
  void RunCommand(const json& id, const json& params, bool bare_result = false);
  void ExecuteCommand(const json& id, const json& params);
  void MaybeFinishInitialize();
  json ExecuteCommandList() const;
  void SyncCommandRegistrations();
  void Reload(const json& id, const json& params);
  // anvil/exec
  void Exec(const json& id, const json& params);
  ExecJob* FindExec(uint64_t serial);
  void OnExecAsk(ExecJob& job);
  void OnExecOutput(ExecJob& job, bool is_stderr);
  void OnExecQuestion(ExecJob& job, const agent::AskMessage& message);
  void KillExec(ExecJob& job);
  void OnExecExited(ExecJob& job);
  // The T7 reload, for anvil/reload (`waiter`: answered once the new host loaded) and for a
  // change of the plugin's files (no waiter). `auto_approve`: whether --approve may approve a
  // manifest that asks for more (an explicit reload: yes; a file change: no, the user approved
  // what they started with, not what the files became).
  void ReloadPlugin(Plugin& plugin, std::optional<json> waiter, bool auto_approve);
  // Watching --plugin-dir plugins' files (their directory and lib/).
  void WatchPluginFiles(Plugin& p);
  void OnPluginFilesChanged();
  void CancelRequest(const json& params);
  void DidOpen(const json& params);
  void DidChange(const json& params);
  void DidClose(const json& params);
  json PluginJson(const Plugin& p) const;
  json StatusJson() const;
  Result<Plugin*> PluginParam(const json& params);

  // ---- lifecycle ----
  Status StartGateway();
  void OnGatewayExited();
  void ResolvePluginGrant(Plugin& p, bool auto_approve = true);
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
  void HandleBufferEdit(Plugin& p, const ipc::Request& req);
  Result<const TextDocument*> BufferFor(const Plugin& p, const std::string& uri_or_path,
                                        bool for_edit) const;
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
  struct CommandRegistration {
    std::string id;
    std::set<std::string> commands;
  };
  std::vector<CommandRegistration> command_registrations_;
  int64_t next_registration_ = 1;
  BufferStore buffers_;
  std::unique_ptr<GatewayProcess> gateway_;
  std::deque<Clock::time_point> gateway_crashes_;
  int gateway_restarts_ = 0;
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

// ---- output ---------------------------------------------------------------------------------

void Server::Send(const json& message) {
  if (out_closed_) return;
  Trace("out", message);
  std::string frame = EncodeLspMessage(message);
  size_t off = 0;
  while (off < frame.size()) {
    ssize_t n = ::write(o_.out_fd, frame.data() + off, frame.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // The editor is gone: nobody can see answers any more; stop everything.
      out_closed_ = true;
      exit_ = true;
      return;
    }
    off += static_cast<size_t>(n);
  }
}

void Server::Reply(const json& id, json result) {
  Send({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}

void Server::ReplyError(const json& id, int code, const std::string& message, json data) {
  json error = {{"code", code}, {"message", message}};
  if (!data.is_null()) error["data"] = std::move(data);
  Send({{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}});
}

void Server::Complete(const json& id, json result) {
  if (open_requests_.erase(Key(id)) == 0) return;  // already answered: never twice
  Reply(id, std::move(result));
}

void Server::CompleteError(const json& id, int code, const std::string& message, json data) {
  if (open_requests_.erase(Key(id)) == 0) return;
  ReplyError(id, code, message, std::move(data));
}

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

void Server::Notify(const std::string& method, json params) {
  Send({{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
}

void Server::SendRequest(const std::string& method, json params, ResponseHandler handler) {
  int64_t id = next_out_id_++;
  outgoing_[id] = std::move(handler);
  Send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
}

void Server::LogMessage(int type, const std::string& text) {
  Notify("window/logMessage", {{"type", type}, {"message", text}});
}

void Server::Progress(const RunRequest& r, json value) {
  if (r.progress_token.is_null()) return;
  Notify("$/progress", {{"token", r.progress_token}, {"value", std::move(value)}});
}

// ---- input ----------------------------------------------------------------------------------

void Server::ReadInput() {
  char buf[65536];
  ssize_t n = ::read(o_.in_fd, buf, sizeof(buf));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    stdin_closed_ = true;
    if (auto e = reader_.AtEof()) ReplyError(nullptr, e->error_code, e->error_text);
    exit_ = true;  // the editor is gone (or closed our input): nothing must outlive it
    return;
  }
  reader_.Append(buf, static_cast<size_t>(n));
  while (!exit_) {
    auto event = reader_.Next();
    if (!event) break;
    if (!event->message) {
      Trace("in", {{"code", event->error_code}, {"message", event->error_text}}, true);
      ReplyError(nullptr, event->error_code, event->error_text);
      continue;
    }
    Trace("in", *event->message);
    try {
      HandleMessage(*event->message);
    } catch (const json::exception& e) {
      // A type mismatch deep in a handler is a bug, not a crash: the request gets an error.
      ReplyError(event->message->is_object() && event->message->contains("id")
                     ? (*event->message)["id"]
                     : json(nullptr),
                 kInternalError, std::string("internal error: ") + e.what());
    }
  }
}

void Server::HandleMessage(const json& msg) {
  if (!msg.is_object()) {
    ReplyError(nullptr, kInvalidRequest,
               msg.is_array() ? "invalid request: batches are not supported"
                              : "invalid request: a message must be a JSON object");
    return;
  }
  json id = nullptr;
  bool has_id = msg.contains("id");
  if (has_id) {
    const json& raw = msg["id"];
    if (raw.is_string() || raw.is_number_integer()) id = raw;
  }
  if (!msg.contains("jsonrpc") || msg["jsonrpc"] != "2.0") {
    ReplyError(id, kInvalidRequest, "invalid request: \"jsonrpc\" must be \"2.0\"");
    return;
  }
  if (!msg.contains("method")) {
    if (has_id && (msg.contains("result") || msg.contains("error"))) {
      HandleResponse(msg);
    } else {
      ReplyError(id, kInvalidRequest, "invalid request: no method");
    }
    return;
  }
  if (!msg["method"].is_string()) {
    ReplyError(id, kInvalidRequest, "invalid request: method must be a string");
    return;
  }
  if (has_id && id.is_null()) {
    ReplyError(nullptr, kInvalidRequest, "invalid request: id must be a string or an integer");
    return;
  }
  const std::string method = msg["method"].get<std::string>();
  json params = msg.contains("params") && !msg["params"].is_null() ? msg["params"] : json::object();
  if (!params.is_object() && !params.is_array()) {
    if (has_id) ReplyError(id, kInvalidRequest, "invalid request: params must be an object");
    return;
  }
  if (has_id) {
    HandleRequest(id, method, params);
  } else {
    HandleNotification(method, params);
  }
}

void Server::HandleResponse(const json& msg) {
  if (!msg["id"].is_number_integer()) return;
  auto it = outgoing_.find(msg["id"].get<int64_t>());
  if (it == outgoing_.end()) return;  // not ours, or answered already
  ResponseHandler handler = std::move(it->second);
  outgoing_.erase(it);
  const json* result = msg.contains("result") ? &msg["result"] : nullptr;
  const json* error = msg.contains("error") ? &msg["error"] : nullptr;
  handler(error ? nullptr : result, error);
}

void Server::HandleRequest(const json& id, const std::string& method, const json& params) {
  if (open_requests_.count(Key(id))) {
    // Answering with this id would look like the answer to the request still in flight.
    ReplyError(nullptr, kInvalidRequest,
               "invalid request: id " + SanitizeForDisplay(Key(id), 100) +
                   " is already used by a request in flight");
    return;
  }
  if (shutdown_requested_) {
    ReplyError(id, kInvalidRequest, "invalid request: the server is shutting down");
    return;
  }
  if (!initialized_ && method != "initialize") {
    ReplyError(id, kServerNotInitialized, "server not initialized: send initialize first");
    return;
  }
  if (!params.is_object()) {
    ReplyError(id, kInvalidParams, "invalid params: params must be an object");
    return;
  }
  if (method == "initialize") return Initialize(id, params);
  if (method == "shutdown") return Shutdown(id);
  if (method == "anvil/listPlugins") {
    json list = json::array();
    for (const auto& p : plugins_) list.push_back(PluginJson(*p));
    json result = {{"plugins", list}, {"missing", missing_}};
    if (workspace_config_error_) {
      result["workspaceConfigError"] = workspace_config_error_->ToString();
    }
    return Reply(id, result);
  }
  if (method == "anvil/status") return Reply(id, StatusJson());
  if (method == "anvil/requestConsent") return RequestConsent(id, params);
  if (method == "anvil/runCommand") return RunCommand(id, params);
  if (method == "workspace/executeCommand") return ExecuteCommand(id, params);
  if (method == "anvil/reload") return Reload(id, params);
  if (method == "anvil/exec") return Exec(id, params);
  ReplyError(id, kMethodNotFound, "method not found: " + SanitizeForDisplay(method, 100));
}

void Server::HandleNotification(const std::string& method, const json& params) {
  if (method == "exit") {
    exit_ = true;
    return;
  }
  if (!initialized_ || !params.is_object()) return;  // notifications cannot be answered
  if (method == "initialized") {
    client_initialized_ = true;
    return SyncCommandRegistrations();
  }
  if (method == "$/cancelRequest") return CancelRequest(params);
  if (method == "textDocument/didOpen") return DidOpen(params);
  if (method == "textDocument/didChange") return DidChange(params);
  if (method == "textDocument/didClose") return DidClose(params);
  // textDocument/didSave, $/setTrace, ...: nothing to do.
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
  if (auto s = StartGateway(); !s) {
    ReplyError(id, kInternalError, "the policy gateway did not start: " + s.error().ToString());
    return;
  }
  Catalog catalog = DiscoverPlugins({o_.workspace, o_.plugin_dirs, o_.search_paths});
  missing_ = catalog.missing;
  workspace_config_error_ = catalog.workspace_config_error;
  workspace_config_ = catalog.config;
  for (auto& entry : catalog.plugins) {
    auto p = std::make_unique<Plugin>();
    p->entry = std::move(entry);
    plugins_.push_back(std::move(p));
  }
  for (const auto& id_missing : catalog.missing) {
    auto p = std::make_unique<Plugin>();
    p->entry.id = id_missing;
    p->entry.enabled = true;
    p->entry.enabled_by = "Anvil.toml";
    p->state = PluginState::kNotFound;
    p->detail = "Anvil.toml enables " + id_missing + " but no plugin directory provides it";
    plugins_.push_back(std::move(p));
  }
  for (auto& p : plugins_) {
    if (p->state != PluginState::kNotFound) ResolvePluginGrant(*p);
    WatchPluginFiles(*p);
  }
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

// "PLUGIN_ID/COMMAND" for every command of every ready plugin: what workspace/executeCommand
// accepts. A plugin id never contains '/', so the first '/' splits it unambiguously.
json Server::ExecuteCommandList() const {
  json commands = json::array();
  for (const auto& p : plugins_) {
    if (p->state != PluginState::kReady) continue;
    for (const auto& c : p->commands) commands.push_back(p->entry.id + "/" + c);
  }
  return commands;
}

void Server::SyncCommandRegistrations() {
  if (!dynamic_commands_ || !client_initialized_ || pending_initialize_id_ || shutdown_requested_) {
    return;
  }
  std::set<std::string> now;
  for (const auto& c : ExecuteCommandList()) now.insert(c.get<std::string>());
  // Withdraw every registration that names a command no longer offered; its other commands are
  // registered again below.
  json gone = json::array();
  std::set<std::string> registered = static_commands_;
  std::vector<CommandRegistration> kept;
  for (auto& r : command_registrations_) {
    bool stale = false;
    for (const auto& c : r.commands) stale = stale || !now.count(c);
    if (stale) {
      gone.push_back({{"id", r.id}, {"method", "workspace/executeCommand"}});
    } else {
      registered.insert(r.commands.begin(), r.commands.end());
      kept.push_back(std::move(r));
    }
  }
  command_registrations_ = std::move(kept);
  // LSP 3.17 spells the array "unregisterations".
  if (!gone.empty()) {
    SendRequest("client/unregisterCapability", {{"unregisterations", gone}},
                [](const json*, const json*) {});
  }
  CommandRegistration added{"anvil-commands-" + std::to_string(next_registration_), {}};
  for (const auto& c : now) {
    if (!registered.count(c)) added.commands.insert(c);
  }
  if (added.commands.empty()) return;
  ++next_registration_;
  json reg = {{"id", added.id},
              {"method", "workspace/executeCommand"},
              {"registerOptions", {{"commands", json(added.commands)}}}};
  SendRequest("client/registerCapability", {{"registrations", json::array({reg})}},
              [](const json*, const json*) {});
  command_registrations_.push_back(std::move(added));
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
    plugins.push_back(
        {{"id", p->entry.id},
         {"state", ToString(p->state)},
         {"pid", p->host && p->host->running() ? json(p->host->pid()) : json(nullptr)},
         {"restarts", p->restarts},
         {"reloads", p->reloads},
         {"queued", p->queue.size()},
         {"running", p->running.has_value()}});
  }
  return {{"workspace", o_.workspace},
          {"gateway",
           {{"pid", gateway_ ? json(gateway_->pid()) : json(nullptr)},
            {"restarts", gateway_restarts_},
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
  const std::string text =
      ConsentText(o_.workspace, m, plugin.previous, plugin.signer, plugin.other_copy);
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
      pp->grant = m.requested;
      pp->state = PluginState::kStarting;
      StartHost(*pp);
    }
    Complete(id, {{"plugin", pp->entry.id}, {"granted", approved}, {"state", ToString(pp->state)}});
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
  auto refuse = [&](const std::string& code, const std::string& text) {
    ReplyError(id, kRequestFailed, code + ": " + SanitizeForDisplay(text, 2000),
               {{"code", code}, {"plugin", plugin.entry.id}});
  };
  switch (plugin.state) {
    case PluginState::kNeedsConsent:
      return refuse("consent_required", "plugin " + plugin.entry.id +
                                            " is not granted in this workspace yet (ask with "
                                            "anvil/requestConsent)");
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

// The standard LSP request, mapped onto anvil/runCommand: command "PLUGIN_ID/COMMAND",
// arguments passed to the plugin as its argument array, the same consent state checks, queue,
// deadline, $/cancelRequest and workDoneToken progress. The answer is the command's value.
void Server::ExecuteCommand(const json& id, const json& params) {
  const json* command = Find(params, {"command"});
  if (!command || !command->is_string()) {
    return ReplyError(id, kInvalidParams, "invalid params: params.command must be a string");
  }
  const std::string& text = command->get_ref<const std::string&>();
  const auto slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == text.size()) {
    return ReplyError(id, kInvalidParams,
                      "invalid params: command must be \"PLUGIN_ID/COMMAND\", got \"" +
                          SanitizeForDisplay(text, 200) + "\"");
  }
  json mapped = {{"plugin", text.substr(0, slash)}, {"command", text.substr(slash + 1)}};
  if (params.contains("arguments")) {
    if (!params["arguments"].is_array()) {
      return ReplyError(id, kInvalidParams, "invalid params: params.arguments must be an array");
    }
    mapped["arguments"] = params["arguments"];
  }
  if (params.contains("workDoneToken")) mapped["workDoneToken"] = params["workDoneToken"];
  RunCommand(id, mapped, /*bare_result=*/true);
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
  } else if (plugin.entry.manifest && manifest->id != plugin.entry.id) {
    plugin.entry.error = Error{"invalid",
                               "the plugin id changed from " + plugin.entry.id + " to " +
                                   manifest->id + "; start a new session",
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
  alignas(inotify_event) char buf[16384];
  const auto at = Clock::now() + o_.watch_debounce;
  while (true) {
    const ssize_t n = ::read(plugin_watch_.Get(), buf, sizeof(buf));
    if (n <= 0) break;
    for (ssize_t off = 0; off + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf + off);
      off += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      auto it = watched_dirs_.find(e->wd);
      if (it == watched_dirs_.end()) continue;
      if (e->mask & IN_IGNORED) {
        watched_dirs_.erase(it);  // the directory is gone; a reload adds it again
        continue;
      }
      const auto [plugin, in_lib] = it->second;
      if (!IsPluginFileChange(in_lib, e->len > 0 ? std::string_view(e->name) : "")) continue;
      // Each change pushes the reload back: an editor's save is several events.
      plugin->files_changed_reload_at = at;
    }
  }
}

// ---- anvil/exec -----------------------------------------------------------------------------

namespace {

std::string CanonicalDir(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return "";
  struct stat st {};
  if (::stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) return "";
  return buf;
}

// The running program: serve starts the same `anvil` for the exec child.
std::string SelfExe() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// Appends what fits under the cap; the rest is counted as dropped.
void Keep(std::string& text, bool& truncated, const char* data, size_t n) {
  const size_t room = kExecOutputCapBytes - std::min(text.size(), kExecOutputCapBytes);
  text.append(data, std::min(room, n));
  if (n > room) truncated = true;
}

}  // namespace

void Server::Exec(const json& id, const json& params) {
  auto call =
      ParseExecParams(params, {o_.workspace, o_.exec_approval, o_.command_timeout}, CanonicalDir);
  if (!call) return ReplyError(id, kInvalidParams, call.error().message);
  if (execs_.size() >= o_.max_exec_jobs) {
    return ReplyError(id, kRequestFailed,
                      "busy: " + std::to_string(o_.max_exec_jobs) +
                          " commands are running already (anvil/exec); wait for one to finish",
                      {{"code", "busy"}});
  }
  const std::string exe = SelfExe();
  if (exe.empty()) {
    return ReplyError(id, kInternalError, "the anvil program could not be found (/proc/self/exe)");
  }
  int sv[2], out[2], err[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return ReplyError(id, kInternalError, std::string("socketpair: ") + std::strerror(errno));
  }
  UniqueFd ask(sv[0]), child_ask(sv[1]);
  if (::pipe2(out, O_CLOEXEC) != 0) {
    return ReplyError(id, kInternalError, std::string("pipe: ") + std::strerror(errno));
  }
  UniqueFd out_r(out[0]), out_w(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) {
    return ReplyError(id, kInternalError, std::string("pipe: ") + std::strerror(errno));
  }
  UniqueFd err_r(err[0]), err_w(err[1]);
  UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null) return ReplyError(id, kInternalError, "/dev/null: " + std::string(strerror(errno)));
  std::vector<std::string> args = {exe};
  args.insert(args.end(), call->exec_args.begin(), call->exec_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return ReplyError(id, kInternalError, std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    // Its own process group: a cancellation kills all of it. Descriptors above a safe floor
    // first, so that none of the dup2 targets is one of the sources.
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    const int a = ::fcntl(child_ask.Get(), F_DUPFD_CLOEXEC, 10);
    const int o = ::fcntl(out_w.Get(), F_DUPFD_CLOEXEC, 10);
    const int e = ::fcntl(err_w.Get(), F_DUPFD_CLOEXEC, 10);
    const int n = ::fcntl(null.Get(), F_DUPFD_CLOEXEC, 10);
    if (a < 0 || o < 0 || e < 0 || n < 0 || ::dup2(n, 0) < 0 || ::dup2(o, 1) < 0 ||
        ::dup2(e, 2) < 0 || ::dup2(a, 3) < 0) {
      ::_exit(125);
    }
    ::execve(argv[0], argv.data(), environ);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: no window in which a kill of the group misses it
  auto job = std::make_unique<ExecJob>();
  job->serial = next_exec_serial_++;
  job->id = id;
  job->progress_token = call->progress_token;
  job->pid = pid;
  job->pidfd.Reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!job->pidfd) {
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return ReplyError(id, kInternalError, std::string("pidfd_open: ") + strerror(errno));
  }
  for (int fd : {ask.Get(), out_r.Get(), err_r.Get()}) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  job->ask = std::move(ask);
  job->out = std::move(out_r);
  job->err = std::move(err_r);
  open_requests_.insert(Key(id));
  if (!job->progress_token.is_null()) {
    Notify("$/progress",
           {{"token", job->progress_token},
            {"value",
             {{"kind", "begin"},
              {"title", "anvil exec " + SanitizeForDisplay(JoinShellWords(call->argv), 120)},
              {"cancellable", true},
              {"message", "running"}}}});
  }
  execs_.push_back(std::move(job));
}

ExecJob* Server::FindExec(uint64_t serial) {
  for (auto& j : execs_) {
    if (j->serial == serial) return j.get();
  }
  return nullptr;
}

void Server::OnExecOutput(ExecJob& job, bool is_stderr) {
  UniqueFd& fd = is_stderr ? job.err : job.out;
  char buf[65536];
  while (fd) {
    const ssize_t n = ::read(fd.Get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      fd.Reset();
      return;
    }
    if (is_stderr) {
      Keep(job.stderr_text, job.stderr_truncated, buf, static_cast<size_t>(n));
    } else {
      Keep(job.stdout_text, job.stdout_truncated, buf, static_cast<size_t>(n));
    }
  }
}

void Server::KillExec(ExecJob& job) {
  if (job.killed) return;
  job.killed = true;
  ::kill(-job.pid, SIGKILL);
}

void Server::OnExecAsk(ExecJob& job) {
  char buf[65536];
  while (job.ask) {
    const ssize_t n = ::read(job.ask.Get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) {
      job.ask.Reset();
      break;
    }
    job.lines.Append(std::string_view(buf, static_cast<size_t>(n)));
    while (job.protocol_error.empty()) {
      auto line = job.lines.Next();
      if (!line) break;
      auto message = agent::ParseAskMessage(*line);
      if (!message) {
        job.protocol_error = message.error().message;
      } else if (message->kind == agent::AskMessage::Kind::kReport) {
        job.report = std::move(message->report);
      } else if (job.asking) {
        job.protocol_error = "a question came before the last one was answered";
      } else {
        OnExecQuestion(job, *message);
      }
    }
    if (job.lines.Overflowed()) job.protocol_error = "an ask-fd line is too long";
    if (!job.protocol_error.empty()) {
      // Fail closed: a child that does not speak the protocol is stopped, nothing it asked is
      // answered.
      job.ask.Reset();
      KillExec(job);
      return;
    }
  }
}

void Server::OnExecQuestion(ExecJob& job, const agent::AskMessage& message) {
  job.asking = true;
  const uint64_t serial = job.serial, question = message.id;
  json choices = message.question["choices"];
  if (!job.progress_token.is_null()) {
    Notify("$/progress", {{"token", job.progress_token},
                          {"value", {{"kind", "report"}, {"message", "waiting for your answer"}}}});
  }
  SendRequest("anvil/approve", ApproveParams(message.question, job.id),
              [this, serial, question, choices](const json* result, const json* error) {
                ExecJob* j = FindExec(serial);
                if (j == nullptr || !j->ask || j->cancelled) return;  // gone meanwhile
                j->asking = false;
                const auto answer = agent::AnswerFromReply(result, error, choices);
                const std::string line = agent::AnswerLine(question, answer) + "\n";
                // The child waits for exactly this line; a short socket write cannot block.
                if (::send(j->ask.Get(), line.data(), line.size(), MSG_NOSIGNAL) !=
                    static_cast<ssize_t>(line.size())) {
                  j->ask.Reset();
                }
              });
}

void Server::OnExecExited(ExecJob& job) {
  // Whatever it wrote before exiting: the last output, the report.
  OnExecOutput(job, false);
  OnExecOutput(job, true);
  if (job.ask) OnExecAsk(job);
  // Nothing of its group may outlive it (the sandbox's own tree dies with it by design; any
  // straggler in the group goes now), killed while the unreaped child still holds the group's id.
  ::kill(-job.pid, SIGKILL);
  int status = 0;
  while (::waitpid(job.pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  auto end = [&](const std::string& message) {
    if (!job.progress_token.is_null()) {
      Notify("$/progress",
             {{"token", job.progress_token}, {"value", {{"kind", "end"}, {"message", message}}}});
    }
  };
  if (job.cancelled) {
    end("cancelled");
    CompleteError(job.id, kRequestCancelled, "cancelled: request cancelled",
                  {{"code", "cancelled"}, {"killed", job.killed}});
  } else if (!job.protocol_error.empty()) {
    end("failed");
    CompleteError(job.id, kRequestFailed,
                  "error: anvil exec broke the ask-fd protocol: " + job.protocol_error,
                  {{"code", "error"}});
  } else if (!job.report) {
    end("failed");
    std::string why = job.stderr_text;
    while (!why.empty() && (why.back() == '\n' || why.back() == '\r')) why.pop_back();
    CompleteError(job.id, kRequestFailed,
                  "error: anvil exec ended without a report (status " + std::to_string(code) + ")" +
                      (why.empty() ? "" : ": " + SanitizeForDisplay(why, 2000)),
                  {{"code", "error"}, {"status", code}});
  } else {
    json result = std::move(*job.report);
    result["stdout"] = std::move(job.stdout_text);
    result["stderr"] = std::move(job.stderr_text);
    result["stdout_truncated"] = job.stdout_truncated;
    result["stderr_truncated"] = job.stderr_truncated;
    result["output_cap_bytes"] = kExecOutputCapBytes;
    end("done");
    Complete(job.id, std::move(result));
  }
}

void Server::CancelRequest(const json& params) {
  if (!params.contains("id")) return;
  const std::string key = Key(params["id"]);
  for (auto& job : execs_) {
    if (Key(job->id) != key || job->cancelled) continue;
    // Its questions end (a question waiting is refused), SIGTERM lets the sandbox take its tree
    // down; a child still there when the grace ends is killed with its group (RunTimers). The
    // answer waits for its exit.
    job->cancelled = true;
    job->ask.Reset();
    ::kill(job->pid, SIGTERM);
    job->kill_at = Clock::now() + o_.cancel_grace;
    return;
  }
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

void Server::DidOpen(const json& params) {
  const json* doc = Find(params, {"textDocument"});
  if (!doc || !doc->is_object() || !doc->contains("uri") || !(*doc)["uri"].is_string() ||
      !doc->contains("text") || !(*doc)["text"].is_string() || !doc->contains("version") ||
      !(*doc)["version"].is_number_integer()) {
    LogMessage(kMessageError, "Anvil: didOpen needs textDocument {uri, version, text}");
    return;
  }
  std::string language;
  if (doc->contains("languageId") && (*doc)["languageId"].is_string()) {
    language = (*doc)["languageId"].get<std::string>();
  }
  if (auto s = buffers_.Open((*doc)["uri"].get<std::string>(), language,
                             (*doc)["version"].get<int64_t>(), (*doc)["text"].get<std::string>());
      !s) {
    LogMessage(kMessageWarning, "Anvil: " + s.error().ToString());
  }
}

void Server::DidChange(const json& params) {
  const json* uri = Find(params, {"textDocument", "uri"});
  const json* version = Find(params, {"textDocument", "version"});
  const json* changes = Find(params, {"contentChanges"});
  if (!uri || !uri->is_string() || !version || !version->is_number_integer() || !changes) {
    LogMessage(kMessageError,
               "Anvil: didChange needs textDocument {uri, version} and contentChanges");
    return;
  }
  if (auto s =
          buffers_.Change(uri->get<std::string>(), version->get<int64_t>(), *changes, encoding_);
      !s) {
    LogMessage(kMessageWarning, "Anvil: " + s.error().ToString());
  }
}

void Server::DidClose(const json& params) {
  const json* uri = Find(params, {"textDocument", "uri"});
  if (uri && uri->is_string()) (void)buffers_.Close(uri->get<std::string>());
}

// ---- lifecycle ------------------------------------------------------------------------------

Status Server::StartGateway() {
  auto audit = AuditLogPath(o_.workspace);
  if (!audit) return tl::unexpected(audit.error());
  auto exe = FindHelper("anvil-gateway");
  if (!exe) {
    gateway_error_ = exe.error().ToString();
    return tl::unexpected(exe.error());
  }
  GatewayConfig config{exe->path, o_.workspace, {"--audit-log", *audit}};
  config.extra_args.insert(config.extra_args.end(), o_.gateway_args.begin(), o_.gateway_args.end());
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
  for (auto& p : plugins_) {
    if (p->running) {
      RunRequest r = std::move(*p->running);
      p->running.reset();
      FailRun(p->entry.id, r,
              Error{"crashed", "the policy gateway stopped during the command; it was stopped", 0});
    }
    TerminateHost(*p, "gateway restart");
  }
  (void)gateway_->Stop(0);
  gateway_.reset();
  auto now = Clock::now();
  gateway_crashes_.push_back(now);
  while (!gateway_crashes_.empty() && now - gateway_crashes_.front() > o_.restart_window) {
    gateway_crashes_.pop_front();
  }
  Status started =
      Fail("crashed", "the policy gateway stopped " + std::to_string(gateway_crashes_.size()) +
                          " times in " + std::to_string(o_.restart_window.count()) + " s");
  if (static_cast<int>(gateway_crashes_.size()) <= o_.max_gateway_restarts) {
    started = StartGateway();
    if (started) ++gateway_restarts_;
  }
  if (!started) {
    gateway_error_ = started.error().ToString();
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

// Decides what an enabled plugin needs before it can start: a valid manifest, a matching lock
// and a grant for this exact manifest hash. Leaves kStarting when it can start.
void Server::ResolvePluginGrant(Plugin& p, bool auto_approve) {
  if (p.entry.error || !p.entry.manifest) {
    p.state = PluginState::kInvalid;
    return;
  }
  if (!p.entry.enabled) {
    p.state = PluginState::kDisabled;
    return;
  }
  const Manifest& m = *p.entry.manifest;
  p.signer.clear();
  auto store = GrantStore::Open();
  if (!store) {
    p.state = PluginState::kFailed;
    p.detail = store.error().ToString();
    return;
  }
  // The catalog checked the entry file when it loaded the manifest.
  const AdmissionRequest request{o_.workspace, p.entry.dir, o_.require_signed,
                                 /*entry_checked=*/true};
  Admission admission = AdmitPlugin(request, m, *store);
  if (admission.verdict == AdmissionVerdict::kNeedsConsent && o_.approve && auto_approve) {
    (void)ApproveAdmission(request, m, *store, admission);
  }
  p.pinned_files = std::move(admission.pinned_files);
  p.signer = admission.signer;
  p.previous = admission.lookup.previous;
  p.copy = admission.lookup.copy;
  p.other_copy = admission.lookup.other_copy;
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
      return;
    case AdmissionVerdict::kAdmitted:
      p.grant = admission.grant;
      p.state = PluginState::kStarting;
      return;
  }
}

void Server::StartHost(Plugin& p) {
  if (!gateway_) return SetFailed(p, "no policy gateway: " + gateway_error_);
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
  auto now = Clock::now();
  p.crashes.push_back(now);
  while (!p.crashes.empty() && now - p.crashes.front() > o_.restart_window) p.crashes.pop_front();
  if (static_cast<int>(p.crashes.size()) > o_.max_host_restarts) {
    return SetFailed(p, "the plugin host crashed " + std::to_string(p.crashes.size()) +
                            " times in " + std::to_string(o_.restart_window.count()) +
                            " s; reload it to try again");
  }
  ++p.restarts;
  p.state = PluginState::kStarting;
  p.detail = "restarting after a crash";
  p.restart_at = now + 50ms * (1 << (p.crashes.size() - 1));  // 50, 100, 200 ms ...
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
    auto call = p.host->Send("command.run", {r.command, r.args_json});
    if (!call) {
      p.queue.push_front(std::move(r));
      return HostCrashed(p, "the host channel failed: " + call.error().message);
    }
    r.host_call = *call;
    r.deadline = Clock::now() + o_.command_timeout;
    Progress(r, {{"kind", "report"}, {"message", "running"}});
    p.running = std::move(r);
  }
}

Result<const TextDocument*> Server::BufferFor(const Plugin& p, const std::string& uri_or_path,
                                              bool for_edit) const {
  const TextDocument* doc = nullptr;
  std::string path;
  if (uri_or_path.find("://") == std::string::npos) {
    // A workspace-relative path: the open buffer of that file.
    auto normalized = NormalizeWorkspacePath(uri_or_path);
    if (!normalized) return tl::unexpected(normalized.error());
    path = *normalized;
    doc = buffers_.FindByPath(path, o_.workspace);
  } else {
    auto rel = WorkspacePathOfUri(uri_or_path, o_.workspace);
    if (!rel) return tl::unexpected(rel.error());
    path = *rel;
    doc = buffers_.Find(uri_or_path);
  }
  if (!GrantAllows(p.grant->fs_read, path, Access::kRead)) {
    return Fail("denied",
                "buffer " + QuotePathForMessage(path) + " is outside the plugin's fs.read grant");
  }
  if (for_edit && IsProtectedPath(path) && !GrantAllows(p.grant->fs_write, path, Access::kWrite)) {
    return Fail("denied", "buffer " + QuotePathForMessage(path) +
                              " is a protected path; editing it needs a literal fs.write grant");
  }
  if (!doc) return Fail("not_found", "no open buffer " + QuotePathForMessage(uri_or_path));
  return doc;
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
  if (req.op == "editor.buffer.get" && req.args.size() == 1) {
    auto doc = BufferFor(p, req.args[0], false);
    if (!doc) return answer_error(doc.error().code, doc.error().message);
    (void)p.host->Answer(
        {req.id, true, {(*doc)->uri, std::to_string((*doc)->version), (*doc)->text}});
    return;
  }
  if (req.op == "editor.buffer.edit" && req.args.size() == 3) return HandleBufferEdit(p, req);
  answer_error("invalid", "unknown editor request " + SanitizeForDisplay(req.op, 64));
}

void Server::HandleBufferEdit(Plugin& p, const ipc::Request& req) {
  auto answer_error = [&](const std::string& code, const std::string& text) {
    (void)p.host->Answer(ipc::Response::Error(req.id, code, text));
  };
  if (!versioned_edits_) {
    return answer_error("denied",
                        "the editor did not announce versioned edits (workspace.applyEdit and "
                        "workspace.workspaceEdit.documentChanges), so no edit can be checked "
                        "against its version");
  }
  auto doc = BufferFor(p, req.args[0], true);
  if (!doc) return answer_error(doc.error().code, doc.error().message);
  const std::string& v = req.args[1];
  char* end = nullptr;
  long long version = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0') return answer_error("invalid", "version must be an integer");
  auto prepared = buffers_.PrepareEdit((*doc)->uri, version, req.args[2], encoding_);
  if (!prepared) return answer_error(prepared.error().code, prepared.error().message);
  json params = {
      {"label",
       "[" + p.entry.id + "] " +
           (p.running ? SanitizeForDisplay(p.running->command, 128) : std::string("edit"))},
      {"edit",
       {{"documentChanges",
         json::array({{{"textDocument", {{"uri", prepared->uri}, {"version", prepared->version}}},
                       {"edits", prepared->lsp_edits}}})}}}};
  Plugin* pp = &p;
  const uint64_t generation = p.generation, host_request = req.id;
  SendRequest("workspace/applyEdit", params,
              [this, pp, generation, host_request, edit = std::move(*prepared)](const json* result,
                                                                                const json* error) {
                bool applied =
                    !error && result && result->is_object() && IsTrue(Find(*result, {"applied"}));
                buffers_.FinishEdit(edit, applied);
                if (pp->generation != generation || !pp->host) return;  // host gone meanwhile
                if (applied) {
                  (void)pp->host->Answer({host_request, true, {}});
                  return;
                }
                std::string why = "the editor answered with an error";
                if (const json* reason = result ? Find(*result, {"failureReason"}) : nullptr;
                    reason && reason->is_string()) {
                  why = SanitizeForDisplay(reason->get<std::string>(), 200);
                } else if (!error) {
                  why = "no reason given";
                }
                (void)pp->host->Answer(ipc::Response::Error(
                    host_request, "stale", "the editor did not apply the edit: " + why));
              });
}

// ---- the loop -------------------------------------------------------------------------------

int Server::TimeoutMs() const {
  std::optional<Clock::time_point> next;
  auto consider = [&](Clock::time_point t) {
    if (!next || t < *next) next = t;
  };
  for (const auto& p : plugins_) {
    if (p->running) consider(p->running->cancelled ? p->running->kill_at : p->running->deadline);
    if (p->state == PluginState::kStarting && p->host) consider(p->describe_deadline);
    if (p->restart_at) consider(*p->restart_at);
    if (p->files_changed_reload_at) consider(*p->files_changed_reload_at);
  }
  if (pending_initialize_id_) consider(initialize_deadline_);
  for (const auto& job : execs_) {
    if (job->cancelled && !job->killed) consider(job->kill_at);
  }
  if (!next) return -1;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*next - Clock::now()).count();
  return ms < 0 ? 0 : static_cast<int>(std::min<int64_t>(ms + 1, 60000));
}

void Server::RunTimers() {
  auto now = Clock::now();
  for (auto& pp : plugins_) {
    Plugin& p = *pp;
    if (p.running && p.running->cancelled && now >= p.running->kill_at) {
      // It ignored the cancellation: kill the group, answer, start a fresh host.
      RunRequest r = std::move(*p.running);
      p.running.reset();
      KillAndRestart(p, "cancelled");
      Progress(r, {{"kind", "end"}, {"message", "cancelled"}});
      CompleteError(r.id, kRequestCancelled,
                    "cancelled: request cancelled; the plugin host was killed",
                    {{"code", "cancelled"}, {"plugin", p.entry.id}, {"killed", true}});
    } else if (p.running && !p.running->cancelled && now >= p.running->deadline) {
      RunRequest r = std::move(*p.running);
      p.running.reset();
      KillAndRestart(p, "timeout");
      FailRun(p.entry.id, r,
              Error{"timeout", "command passed its wall-clock deadline; the plugin host was killed",
                    0});
    }
    if (p.state == PluginState::kStarting && p.host && now >= p.describe_deadline) {
      TerminateHost(p, "timeout");
      SetFailed(p, "timeout: the plugin did not load within its deadline");
    }
    if (p.restart_at && now >= *p.restart_at) {
      p.restart_at.reset();
      if (p.state == PluginState::kStarting && !p.host) StartHost(p);
    }
    if (p.files_changed_reload_at && now >= *p.files_changed_reload_at) {
      p.files_changed_reload_at.reset();
      if (p.entry.enabled && p.state != PluginState::kNotFound) {
        LogMessage(kMessageInfo,
                   "Anvil: the files of plugin " + p.entry.id + " changed: reloading it");
        ReloadPlugin(p, std::nullopt, /*auto_approve=*/false);
      }
    }
  }
  for (auto& job : execs_) {
    if (job->cancelled && !job->killed && now >= job->kill_at) KillExec(*job);
  }
  MaybeFinishInitialize();
}

void Server::PollOnce() {
  enum class What {
    kInput,
    kSignal,
    kGateway,
    kSession,
    kPidfd,
    kStderr,
    kPluginFiles,
    kExecAsk,
    kExecOut,
    kExecErr,
    kExecPidfd
  };
  struct Watch {
    What what;
    Plugin* plugin;
    uint64_t generation;
  };
  std::vector<pollfd> fds;
  std::vector<Watch> watches;
  auto add = [&](int fd, What what, Plugin* p = nullptr) {
    fds.push_back({fd, POLLIN, 0});
    watches.push_back({what, p, p ? p->generation : 0});
  };
  if (!stdin_closed_) add(o_.in_fd, What::kInput);
  add(signal_read_.Get(), What::kSignal);
  if (gateway_ && gateway_->pidfd() >= 0) add(gateway_->pidfd(), What::kGateway);
  if (plugin_watch_) add(plugin_watch_.Get(), What::kPluginFiles);
  for (auto& p : plugins_) {
    if (!p->host || !p->host->running()) continue;
    if (!p->channel_closed) add(p->host->session_fd(), What::kSession, p.get());
    add(p->host->pidfd(), What::kPidfd, p.get());
    if (!p->stderr_closed && p->host->stderr_fd() >= 0) {
      add(p->host->stderr_fd(), What::kStderr, p.get());
    }
  }
  for (auto& job : execs_) {
    const auto at = [&](const UniqueFd& fd, What what) {
      if (!fd) return;
      fds.push_back({fd.Get(), POLLIN, 0});
      watches.push_back({what, nullptr, job->serial});
    };
    at(job->ask, What::kExecAsk);
    at(job->out, What::kExecOut);
    at(job->err, What::kExecErr);
    at(job->pidfd, What::kExecPidfd);
  }
  int n = ::poll(fds.data(), fds.size(), TimeoutMs());
  if (n < 0 && errno != EINTR) {
    std::cerr << "anvil serve: poll failed: " << std::strerror(errno) << "\n";
    exit_ = true;
    return;
  }
  for (size_t i = 0; n > 0 && i < fds.size() && !exit_; ++i) {
    if (!fds[i].revents) continue;
    const Watch& w = watches[i];
    if (w.plugin && (w.plugin->generation != w.generation || !w.plugin->host)) continue;
    switch (w.what) {
      case What::kInput:
        ReadInput();
        break;
      case What::kSignal:
        exit_ = true;
        break;
      case What::kGateway:
        if (gateway_) OnGatewayExited();
        break;
      case What::kSession:
        OnHostReadable(*w.plugin);
        break;
      case What::kPidfd:
        // Whatever it said before exiting comes first (a load error, a last result).
        if (!w.plugin->channel_closed) OnHostReadable(*w.plugin);
        if (w.plugin->generation == w.generation && w.plugin->host &&
            w.plugin->host->ReapIfExited()) {
          HostCrashed(*w.plugin, "the plugin host exited");
        }
        break;
      case What::kPluginFiles:
        OnPluginFilesChanged();
        break;
      case What::kStderr:
        w.plugin->host->DrainStderr();
        if (fds[i].revents & (POLLHUP | POLLERR)) w.plugin->stderr_closed = true;
        break;
      case What::kExecAsk:
      case What::kExecOut:
      case What::kExecErr:
      case What::kExecPidfd: {
        ExecJob* job = FindExec(w.generation);
        if (job == nullptr) break;
        if (w.what == What::kExecAsk) {
          OnExecAsk(*job);
        } else if (w.what == What::kExecPidfd) {
          OnExecExited(*job);
          std::erase_if(execs_, [&](const auto& j) { return j.get() == job; });
        } else {
          OnExecOutput(*job, w.what == What::kExecErr);
        }
        break;
      }
    }
  }
  if (!exit_) RunTimers();
  if (!exit_) SyncCommandRegistrations();
}

void Server::StopAll() {
  for (auto& job : execs_) {
    // The whole group, and its exit waited for: no command outlives the session.
    KillExec(*job);
    while (::waitpid(job->pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    CompleteError(job->id, kRequestFailed, "cancelled: the session is ending",
                  {{"code", "cancelled"}});
  }
  execs_.clear();
  for (auto& p : plugins_) {
    if (p->running) {
      FailRun(p->entry.id, *p->running, Error{"cancelled", "the session is ending", 0});
      p->running.reset();
    }
    while (!p->queue.empty()) {
      FailRun(p->entry.id, p->queue.front(), Error{"cancelled", "the session is ending", 0});
      p->queue.pop_front();
    }
    for (const auto& w : std::exchange(p->reload_waiters, {})) {
      CompleteError(w, kRequestFailed, "cancelled: the session is ending", {{"code", "cancelled"}});
    }
    TerminateHost(*p, "session ended");
    if (p->state == PluginState::kReady || p->state == PluginState::kStarting) {
      p->state = PluginState::kFailed;
      p->detail = "the session ended";
    }
  }
  if (gateway_) {
    (void)gateway_->Stop();
    gateway_.reset();
  }
}

int Server::Run() {
  int sp[2];
  if (::pipe2(sp, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::cerr << "anvil serve: internal: pipe: " << std::strerror(errno) << "\n";
    return 1;
  }
  signal_read_.Reset(sp[0]);
  signal_write_.Reset(sp[1]);
  g_signal_pipe = sp[1];
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &sa, nullptr);
  sa.sa_handler = OnSigpipe;
  sigaction(SIGPIPE, &sa, nullptr);
  while (!exit_) PollOnce();
  // No cleanup left to destructors: every host is killed and reaped, the gateway stopped.
  StopAll();
  return shutdown_requested_ ? 0 : 1;
}

}  // namespace

int RunServe(const ServeOptions& options) {
  Server server(options);
  return server.Run();
}

}  // namespace anvil::session
