// The trusted side's handle on one anvil-plugin-host: starts it in its own process group with
// a fresh capability token registered with the gateway (bound to the host's pid), talks to it
// over the session channel, enforces the wall-clock deadline per command (kill the group,
// cancel its gateway requests, revoke its token), and stops it explicitly.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "ipc/capability_token.h"
#include "ipc/frame.h"
#include "policy/grant.h"
#include "session/gateway_process.h"

namespace anvil::session {

struct HostConfig {
  std::string binary;       // anvil-plugin-host
  std::string plugin_dir;
  std::string runtime;      // "lua" or "js"
  std::string entry;
  std::string plugin_id;
  std::vector<std::string> extra_args;  // limits, test hooks
};

// Answers the host's editor.* requests; logs arrive separately.
using EditorHandler =
    std::function<Result<std::vector<std::string>>(const std::string& op,
                                                    const std::vector<std::string>& args)>;
using LogHandler = std::function<void(const std::string& level, const std::string& text)>;

class HostProcess {
 public:
  static Result<std::unique_ptr<HostProcess>> Start(const HostConfig& config,
                                                    GatewayProcess& gateway, const Grant& grant);
  ~HostProcess();

  // The commands the plugin registered (errors if the plugin failed to load).
  Result<std::vector<std::string>> Describe(std::chrono::milliseconds deadline);
  // Runs one command; past `deadline` the host's process group is killed (code "timeout").
  Result<std::string> Run(const std::string& command, const std::string& args_json,
                          std::chrono::milliseconds deadline, const EditorHandler& editor,
                          const LogHandler& log);
  // Kills the whole process group, waits for it, cancels and revokes at the gateway.
  Status Kill(const std::string& reason);
  // Closes the session channel and waits for a clean exit (then kills). Returns exit status.
  Result<int> Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(1000));

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  const std::string& stderr_text() const { return stderr_; }

 private:
  HostProcess(GatewayProcess& gateway, ipc::CapabilityToken token)
      : gateway_(gateway), token_(std::move(token)) {}
  Result<ipc::Response> Call(const std::string& op, std::vector<std::string> args,
                             std::chrono::milliseconds deadline, const EditorHandler* editor,
                             const LogHandler* log);
  Status Reap(int timeout_ms);
  void DrainStderr();

  GatewayProcess& gateway_;
  std::string plugin_id_;
  ipc::CapabilityToken token_;
  pid_t pid_ = -1;
  UniqueFd pidfd_;
  UniqueFd session_;
  UniqueFd stderr_fd_;
  std::string stderr_;
  int exit_status_ = -1;
  ipc::FrameReader reader_;
  uint64_t next_id_ = 1;
};

}  // namespace anvil::session
