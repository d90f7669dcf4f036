// The JSON-RPC 2.0 peer of `anvil serve` (LSP base-protocol framing on the session's stdin and
// stdout): what goes out (answers, notifications, the session's own requests and the handlers
// of their answers), what comes in (framing, the message checks) and which method handles it.
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

#include "common/fd_io.h"
#include "session/serve_server.h"

namespace anvil::session::serve {

// ---- output ---------------------------------------------------------------------------------

void Server::Send(const json& message) {
  if (out_closed_) return;
  Trace("out", message);
  std::string frame = EncodeLspMessage(message);
  if (!fd_io::WriteAll(o_.out_fd, frame, fd_io::Wait::NoWait())) {
    // The editor is gone: nobody can see answers any more; stop everything.
    out_closed_ = true;
    exit_ = true;
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
  // A grant revoked before this message was sent is honoured before it is handled, even when
  // the message came in one read with an earlier one (the loop looks at the store's watch only
  // between reads).
  if (grant_store_followed_) CheckGrantStore();
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
  if (method == "anvil/listPlugins") return Reply(id, ListPluginsJson());
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

}  // namespace anvil::session::serve
