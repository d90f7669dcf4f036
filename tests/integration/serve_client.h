// Test client of `anvil serve`: starts the real binary with pipes on stdin/stdout, speaks
// JSON-RPC 2.0 with LSP framing, and answers the server's own requests (workspace/applyEdit,
// anvil/consent) through a callback. Every read is bounded, so a hung server fails the test
// instead of hanging it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {

using nlohmann::json;

// One plugin directory written by a test: manifest + main.lua / main.js.
void WritePlugin(const std::string& dir, const std::string& id, const std::string& runtime,
                 const std::string& permissions, const std::string& code);

class ServeClient {
 public:
  // `args` follow `anvil serve`; `state_dir` becomes XDG_STATE_HOME (grants, audit log);
  // `extra_env` is added to its environment (NAME=VALUE).
  ServeClient(const std::vector<std::string>& args, const std::string& state_dir,
              const std::vector<std::string>& extra_env = {});
  ~ServeClient();
  ServeClient(const ServeClient&) = delete;
  ServeClient& operator=(const ServeClient&) = delete;

  pid_t pid() const { return pid_; }
  void SendRaw(const std::string& bytes);
  void Send(const json& message);
  static std::string Frame(const std::string& body);
  // The next message, or nullopt at EOF / after `limit`.
  std::optional<json> Read(std::chrono::milliseconds limit = std::chrono::seconds(20));
  // Sends a request and reads until its response; notifications and server requests seen on
  // the way are kept in `seen` (server requests are answered by `on_request`).
  json Request(const std::string& method, json params = json::object(),
               std::chrono::milliseconds limit = std::chrono::seconds(20));
  json SendRequest(const std::string& method, json params);  // returns the id used
  json ReadResponse(const json& id, std::chrono::milliseconds limit = std::chrono::seconds(20));
  void Notify(const std::string& method, json params = json::object());
  // initialize with versioned-edit capabilities (and utf-8 positions when asked); `extra` is
  // merged into the client capabilities (JSON merge patch).
  json Initialize(bool utf8 = false, const json& extra = json::object());
  // shutdown + exit; returns the exit status.
  std::optional<int> ShutdownAndExit();
  void CloseInput();
  std::optional<int> Wait(std::chrono::milliseconds limit = std::chrono::seconds(20));

  // Answers a server → client request; default: applyEdit applied, consent denied, approve
  // refused ("never"). It may return NoReply() (the request stays unanswered) or
  // ErrorReply(...) (a JSON-RPC error is sent instead of a result).
  std::function<json(const json& request)> on_request;
  static json NoReply() { return {{"$no_reply", true}}; }
  static json ErrorReply(int code, const std::string& message) {
    return {{"$error", {{"code", code}, {"message", message}}}};
  }
  std::vector<json> seen;  // notifications and server requests, in order
  std::vector<json> Seen(const std::string& method) const;

 private:
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1;
  std::string buffer_;
  int64_t next_id_ = 1000;
  bool reaped_ = false;
};

// A workspace (src/a.c with a TODO, notes/), a state dir (grants, audit log) and a directory
// for the test's own plugins; Start runs `anvil serve` on them.
class ServeTestBase : public ::testing::Test {
 protected:
  void SetUp() override;
  std::unique_ptr<ServeClient> Start(std::vector<std::string> args,
                                     const std::vector<std::string>& extra_env = {});
  // Start with --approve and one plugin, initialize, wait until the plugin is ready.
  std::unique_ptr<ServeClient> StartReady(const std::string& plugin_dir, const std::string& id,
                                          std::vector<std::string> extra = {});
  std::string Uri(const std::string& rel) const { return "file://" + ws_.path() + "/" + rel; }
  static std::string Examples() { return std::string(ANVIL_SOURCE_DIR) + "/examples/plugins"; }

  TempDir ws_{"anvil-serve-ws"};
  TempDir state_{"anvil-serve-state"};
  TempDir plugins_{"anvil-serve-plugins"};
};

// The anvil/listPlugins entry of `id` (null when absent).
json PluginInfo(ServeClient& c, const std::string& id);
// Polls until the plugin reaches `state` (bounded).
bool WaitForPluginState(ServeClient& c, const std::string& id, const std::string& state);
// The host pid of `id` from anvil/status, or -1.
pid_t HostPid(ServeClient& c, const std::string& id);

// Helpers over /proc for leak checks.
size_t OpenFdCount(pid_t pid);
size_t RssKiB(pid_t pid);
// Direct children of `pid` and whether any is a zombie.
std::vector<pid_t> ChildrenOf(pid_t pid);
bool HasZombieChild(pid_t pid);

}  // namespace anvil::testing
