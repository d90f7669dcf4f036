// The trusted side's handle on one anvil-gateway: starts it with one end of a control
// socketpair (no path anyone else could connect to), registers and revokes capability tokens,
// connects plugin sockets to hand to hosts, and stops it. No cleanup relies on the destructor
// alone: Stop() is explicit and reports how the gateway ended (the destructor only backs it up).
#pragma once

#include <sys/types.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "ipc/capability_token.h"
#include "ipc/frame.h"
#include "policy/grant.h"
#include "session/unsafe_net_test_options.h"

namespace anvil::session {

struct GatewayConfig {
  std::string binary;  // path of anvil-gateway
  std::string workspace;
  std::vector<std::string> extra_args;        // limits, --no-symlinks, ...
  UnsafeNetTestOptions unsafe_net_test = {};  // test-only; forwarded as --unsafe-test-* flags
  // The session's write usage table (ipc/write_usage.h), kept by the caller across the gateways
  // it starts, or -1. Passed on as --write-usage-fd.
  int write_usage_fd = -1;
  // Run it in a forked child of this process when this program has it linked in
  // (SetInProcessGateway); `anvil run`'s one-shot session. Its argv then is not in /proc's
  // cmdline, which is the caller's.
  bool in_process = false;
};

// A gateway program whose main this executable has linked in (`anvil` links the offline
// gateway's objects): Launch then runs a config that asks for it (`in_process`) and names that
// program (by file name) in a forked child that calls `main` instead of exec'ing the file — the
// same code, descriptors, signal dispositions and arguments as after the exec, without a second
// program's start (an exec and glibc's start-up, whose CPUID probes trap to the hypervisor on a VM:
// most of a small session's start there). Only while the caller is single-threaded (a fork copies
// one thread: another's locks would stay held in the child); otherwise, and where never set, the
// exec. The program file must still be found (a lone `anvil` without its helpers fails as before).
using GatewayMainFn = int (*)(int argc, char** argv);
void SetInProcessGateway(const char* program_name, GatewayMainFn main);

class GatewayProcess {
 public:
  // Launch, then WaitReady.
  static Result<std::unique_ptr<GatewayProcess>> Start(const GatewayConfig& config);
  // Starts the process; nothing but Stop may be used until WaitReady succeeded.
  static Result<std::unique_ptr<GatewayProcess>> Launch(const GatewayConfig& config);
  // Waits for the gateway's ready event (its socket, session, canonical workspace); stops it
  // on failure.
  Status WaitReady();
  ~GatewayProcess();

  // One control request, one reply ({"ok": true, ...} or {"ok": false, "error": "code: ..."}).
  Result<nlohmann::json> Control(nlohmann::json message);
  // `write_usage_slot`: the slot of the write usage table the plugin's writes are counted in.
  Status Register(const ipc::CapabilityToken& token, const std::string& plugin, pid_t pid,
                  uid_t uid, const Grant& grant,
                  std::optional<uint32_t> write_usage_slot = std::nullopt);
  Status Revoke(const ipc::CapabilityToken& token, const std::string& reason = "revoked");
  // The same, not waiting for the answer: for the end of a session, before BeginShutdown.
  void RevokeNoWait(const ipc::CapabilityToken& token, const std::string& reason);
  // Asks the gateway to shut down and closes the control channel, not waiting; Stop then
  // waits for the exit (and kills after its grace).
  void BeginShutdown();
  Status CancelPlugin(const std::string& plugin, const std::string& reason);
  // A connected socket to hand to a plugin host.
  Result<UniqueFd> Connect() const;
  // Asks the gateway to shut down, waits (then kills after `grace_ms`); returns its status.
  Result<int> Stop(int grace_ms = 2000);

  pid_t pid() const { return pid_; }
  // Readable when the gateway process has exited (crash detection in an event loop).
  int pidfd() const { return pidfd_.Get(); }
  const std::string& socket_path() const { return socket_path_; }
  const std::string& audit_log() const { return audit_log_; }
  const std::string& workspace() const { return workspace_; }
  // The workspace it was started for, before it said which (canonical) one it serves.
  const std::string& workspace_requested() const { return requested_workspace_; }
  const std::string& session_id() const { return session_id_; }

 private:
  GatewayProcess() = default;
  Result<nlohmann::json> ReadControl(int timeout_ms);
  pid_t pid_ = -1;
  UniqueFd pidfd_;
  UniqueFd control_;
  ipc::FrameReader reader_;
  std::string socket_path_, audit_log_, workspace_, session_id_, requested_workspace_;
  UniqueFd journal_;             // pending-writes journal shared with the gateway
  std::string sweep_workspace_;  // where the journal's paths are relative to
  uint64_t seq_ = 1;
};

}  // namespace anvil::session
