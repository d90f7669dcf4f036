// The trusted side's handle on one anvil-plugin-host: starts it in its own process group with
// a fresh capability token registered with the gateway (bound to the host's pid), talks to it
// over the session channel, enforces the wall-clock deadline per command (kill the group,
// cancel its gateway requests, revoke its token), and stops it explicitly.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "ipc/capability_token.h"
#include "ipc/frame.h"
#include "policy/grant.h"
#include "session/gateway_process.h"

namespace anvil::session {

struct HostConfig {
  std::string binary;  // anvil-plugin-host
  std::string plugin_dir;
  std::string runtime;  // "lua" or "js"
  std::string entry;
  std::string plugin_id;
  // Other flags of anvil-plugin-host: limits, test hooks. Never --instructions (below).
  std::vector<std::string> extra_args;
  // The plugin's settings from Anvil.toml (WorkspaceConfig::SettingsFor): untrusted data,
  // handed to the host after the token on the handoff channel, never argv or environment, and
  // never read by anything that decides permissions or sandbox options.
  std::string settings_json = "{}";
  // anvil.lock's verified files (relative path -> SHA-256 hex; CheckLock), handed over with
  // the token. Non-empty: the host hashes every file it reads and runs nothing unless each is
  // one of these, byte for byte. Empty: the plugin is not pinned.
  std::map<std::string, std::string> pinned_files = {};
  // The host's instruction budget (its --instructions), which the CPU-time stop is derived
  // from; unset: the host's default, ipc::kDefaultInstructionBudget.
  std::optional<uint64_t> instructions = std::nullopt;
  // The slot of the session's write usage table (ipc/write_usage.h) the gateway counts the
  // plugin's writes in; unset: the gateway counts them itself.
  std::optional<uint32_t> write_usage_slot = std::nullopt;
};

// Bound on the settings handed to one host (Anvil.toml itself is at most 256 KiB; JSON escaping
// can grow it).
inline constexpr std::size_t kMaxSettingsJsonBytes = 1u << 20;

// Answers the host's editor.* requests; logs arrive separately.
using EditorHandler = std::function<Result<std::vector<std::string>>(
    const std::string& op, const std::vector<std::string>& args)>;
using LogHandler = std::function<void(const std::string& level, const std::string& text)>;

class HostProcess {
 public:
  // Spawn, then Attach.
  static Result<std::unique_ptr<HostProcess>> Start(const HostConfig& config,
                                                    GatewayProcess& gateway, const Grant& grant);
  // Starts the process, which waits for its handoff before it touches anything of the plugin:
  // so it can start while `gateway` is still starting (`anvil run`), its exec and start-up beside
  // the gateway's. Nothing of the gateway is used until Attach.
  static Result<std::unique_ptr<HostProcess>> Spawn(const HostConfig& config,
                                                    GatewayProcess& gateway);
  // The same before the gateway exists (its exec and start-up, the longest of a session's, first
  // of all): `workspace` is the one the gateway is asked to serve; SetGateway before Attach.
  static Result<std::unique_ptr<HostProcess>> Spawn(const HostConfig& config,
                                                    const std::string& workspace);
  void SetGateway(GatewayProcess& gateway) { gateway_ = &gateway; }
  // Once the gateway is ready: registers the token for this host's pid, then hands over the
  // token, pins and settings with a connection to the gateway (SCM_RIGHTS). Killed on failure.
  Status Attach(const Grant& grant);
  ~HostProcess();

  // The commands the plugin registered (errors if the plugin failed to load).
  Result<std::vector<std::string>> Describe(std::chrono::milliseconds deadline);
  // Runs one command; past `deadline` the host's process group is killed (code "timeout").
  Result<std::string> Run(const std::string& command, const std::string& args_json,
                          std::chrono::milliseconds deadline, const EditorHandler& editor,
                          const LogHandler& log);
  // T7 order: cancels the plugin's in-flight gateway requests (audited with `reason`; "reload"
  // is recorded as cancelled_by_reload), kills the whole process group, waits for the host to
  // exit, revokes its token. Explicit: the destructor only backs it up.
  Status Kill(const std::string& reason);
  // Closes the session channel and waits for a clean exit (then kills). Returns exit status.
  Result<int> Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(1000));
  // For the end of the whole session (PluginSession::Stop): closes the session channel (the
  // host exits on EOF) and revokes the token at once, neither waiting for the exit; Stop then
  // only waits (and kills after its grace).
  void BeginStop();

  // ---- Non-blocking use, for an event loop (anvil serve) ----
  // What the host sent: the answer to one of our requests, or one of its own requests
  // (editor.*; answer it with Answer) or a log line.
  struct Event {
    enum class Kind { kResponse, kRequest, kLog } kind = Kind::kResponse;
    ipc::Response response;
    ipc::Request request;  // kRequest: op/args/id; kLog: args = {level, text}
  };
  // Sends a request; its answer arrives as a kResponse event with the returned id.
  Result<uint64_t> Send(const std::string& op, std::vector<std::string> args);
  // Reads whatever is there without blocking and decodes it. Sets *closed at EOF. An error
  // (malformed frame) means the host must be killed.
  Result<std::vector<Event>> ReadEvents(bool* closed);
  Status Answer(const ipc::Response& response);
  // Reaps the host if it has exited (pidfd readable); true when it is gone.
  bool ReapIfExited();
  void DrainStderr();

  int session_fd() const { return session_.Get(); }
  int pidfd() const { return pidfd_.Get(); }
  int stderr_fd() const { return stderr_fd_.Get(); }
  int exit_status() const { return exit_status_; }
  // The CPU time the host has used so far (nullopt once it is gone), and the CPU time after
  // which a command is stopped from outside: the host's instruction budget's equivalent plus a
  // grace (ipc/cpu_budget.h), for a VM stuck inside one builtin.
  std::optional<std::chrono::nanoseconds> CpuTime() const;
  std::chrono::nanoseconds cpu_stop() const { return cpu_stop_; }
  // The error of a command stopped at cpu_stop(): the instruction budget's code, "limit".
  // `what` used the CPU time: the command, or the plugin's load.
  Error CpuStopError(std::string_view what = "the command") const;
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  const std::string& stderr_text() const { return stderr_; }

 private:
  explicit HostProcess(ipc::CapabilityToken token) : token_(std::move(token)) {}
  Result<ipc::Response> Call(const std::string& op, std::vector<std::string> args,
                             std::chrono::milliseconds deadline, const EditorHandler* editor,
                             const LogHandler* log);
  Status Reap(int timeout_ms);

  GatewayProcess* gateway_ = nullptr;  // set before Attach; attached_ implies it
  bool attached_ = false;              // registered: Kill cancels and revokes with the gateway
  bool revoked_ = false;               // BeginStop revoked the token already
  UniqueFd token_write_;               // until Attach: the handoff channel
  std::string handoff_;                // until Attach: token, pins, settings
  std::string plugin_id_;
  std::optional<uint32_t> write_usage_slot_;
  ipc::CapabilityToken token_;
  pid_t pid_ = -1;
  UniqueFd pidfd_;
  UniqueFd session_;
  UniqueFd stderr_fd_;
  std::string stderr_;
  int exit_status_ = -1;
  ipc::FrameReader reader_;
  uint64_t next_id_ = 1;
  std::chrono::nanoseconds cpu_stop_{0};
};

}  // namespace anvil::session
