// `anvil mcp`'s server, private to the files that implement it (RunMcpCommand in mcp_command.h
// is the API). Each file holds one concern:
//   mcp_command.cc   RunMcpCommand: --help, the start-up checks, the tools offered (run_command
//                    and the approved plugins' commands), the stop signals
//   mcp_options.cc   argument handling: anvil mcp's flags, and `anvil exec`'s command line for
//                    one call (no I/O but the paths' realpath and stat)
//   mcp_server.cc    the stdio loop: reading lines, routing them, writing whole lines, starting
//                    and reaping the worker thread of each tools/call, elicitation
//   mcp_tools.cc     the tools/call worker: run_command and a plugin's command, from the
//                    arguments to the tool result (the result's text and structure: pure)
//   mcp_child.cc     the sandbox and `anvil run` children: one process group each, output
//                    captured under caps, stopped on cancel or timeout; the report's refusals
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "agent/exec_flow.h"
#include "agent/mcp_protocol.h"
#include "common/result.h"
#include "common/unique_fd.h"
#include "policy/approval.h"

namespace anvil::cli::mcp_server {

using nlohmann::json;
namespace mcp = agent::mcp;

// After SIGTERM, how long a stopped call's process tree gets before SIGKILL.
inline constexpr auto kTermGrace = std::chrono::seconds(2);
// A plugin command's deadline (as `anvil run --timeout`), and the time to list its commands.
inline constexpr int kPluginTimeoutSeconds = 60;
inline constexpr auto kPluginListDeadline = std::chrono::seconds(15);
// Calls running at once, at most: each is a sandbox (or a plugin session) of its own.
inline constexpr std::size_t kMaxRunningCalls = 16;

// mcp_options.cc

std::string Canonical(const std::string& path);

struct McpOptions {
  std::string workspace;  // canonical
  ApprovalMode mode = ApprovalMode::kOnRequest;
  std::vector<std::string> rules_files;
  std::vector<std::string> sandbox_flags;
  std::vector<std::string> plugin_dirs;
  std::vector<std::string> search_paths;
  bool default_path = true;
  bool plugins = true;
  std::string requester = "anvil mcp";  // --requester: who asks, in the audit log
};

Result<McpOptions> ParseMcpArgs(const std::vector<std::string>& args);

// `anvil exec`'s command line for one call.
std::vector<std::string> ExecArgs(const McpOptions& o, const std::string& workdir,
                                  const mcp::RunCommandArgs& call);

// mcp_child.cc

// One child process (`anvil sandbox` or `anvil run`), in a process group of its own.
struct ChildOutcome {
  int status = 125;  // as a shell reports it
  bool spawned = false;
  bool timed_out = false;
  bool cancelled = false;
  std::string report;  // what came on fd 3
  mcp::CappedOutput out{mcp::kOutputHeadBytes, mcp::kOutputTailBytes};
  mcp::CappedOutput err{mcp::kOutputHeadBytes, mcp::kOutputTailBytes};
};

// Runs `self` with argv (argv[0] included) until it and its pipes are done, stopping its process
// group once `cancelled` is set or `timeout` has passed; `progress` is told every few seconds
// that it still runs. With report_fd, fd 3 is a pipe whose bytes land in the outcome's report.
ChildOutcome RunChild(const std::string& self, const std::vector<std::string>& argv,
                      std::chrono::milliseconds timeout, bool report_fd,
                      const std::atomic<bool>& cancelled,
                      const std::function<void(const std::string&)>& progress);

// The sandbox run a child's --report-fd record describes (not started: no record).
agent::SandboxRun FromReport(const ChildOutcome& child);

// mcp_server.cc, mcp_tools.cc

struct Call {
  json id;
  std::optional<json> progress_token;
  std::atomic<bool> cancelled{false};
  std::atomic<bool> done{false};
  bool can_elicit = false;  // the client declared elicitation (as of the call's start)
  double progress = 0;
  std::uint64_t number = 0;
};

struct PluginTool {
  std::string name, plugin_id, plugin_dir, command;
  std::string description;  // the manifest's (untrusted: sanitized where shown)
};

json ToolText(const std::string& text);
json ToolError(const std::string& message);

std::string SelfExe();
inline std::string IdKey(const json& id) { return id.dump(); }

class Server {
 public:
  Server(McpOptions options, std::vector<mcp::ToolDef> tools, std::vector<PluginTool> plugins);

  // SIGTERM, SIGINT and SIGHUP end the server as the end of stdin does (every call's process
  // tree stopped and reaped, then exit 128+N): `signals` is a signalfd for them, blocked in every
  // thread. Without one, only stdin's end stops the server.
  int Serve();
  void SetStopSignals(UniqueFd signals) { signals_ = std::move(signals); }

 private:
  std::string Check(const std::string& tool, const json& arguments) const;
  void Send(const json& message);
  void Progress(Call& call, const std::string& message);

  void Dispatch(mcp::Step step);
  void StartCall(mcp::ToolCall call);
  json RunCommandTool(Call& call, const json& arguments);
  json RunPluginTool(Call& call, const PluginTool& tool, const json& arguments);
  ChildOutcome RunChild(Call& call, const std::vector<std::string>& argv,
                        std::chrono::milliseconds timeout, bool report_fd);
  std::optional<ApprovalAnswer> Elicit(Call& call, const agent::Question& question);
  void ReapFinished();

  friend class McpAsker;

  McpOptions options_;
  std::vector<PluginTool> plugin_tools_;
  mcp::Protocol protocol_;
  agent::AuditSink audit_;
  std::string self_;
  std::mutex out_mu_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool shutting_down_ = false;
  std::map<std::string, std::shared_ptr<Call>> calls_;
  std::vector<std::pair<std::shared_ptr<Call>, std::thread>> threads_;
  std::map<std::string, std::optional<mcp::ClientReply>> pending_;  // our request id -> reply
  std::uint64_t next_request_ = 0;
  std::uint64_t next_call_ = 0;
  UniqueFd signals_;
  int stopped_by_ = 0;
};

// Questions of RunExec go to the client as elicitation/create (or cannot be asked).
class McpAsker final : public agent::Asker {
 public:
  McpAsker(Server& server, Call& call, bool can_ask)
      : server_(server), call_(call), can_ask_(can_ask) {}
  bool CanAsk() const override { return can_ask_; }
  std::optional<ApprovalAnswer> Ask(const agent::Question& question) override {
    if (!can_ask_) return std::nullopt;
    return server_.Elicit(call_, question);
  }

 private:
  Server& server_;
  Call& call_;
  bool can_ask_;
};

}  // namespace anvil::cli::mcp_server
