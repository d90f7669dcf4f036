// anvil-gateway: the per-session policy enforcement point (T1, T5, T6). It is *not* the
// sandbox: it decides, performs the mediated operation, and logs. One per session.
//
// Channels:
//   control — a socketpair end inherited from the trusted side (fd given by --control-fd):
//             register/revoke capability tokens, cancel, status, shutdown (JSON frames).
//   plugins — a listening Unix socket, 0600 in a 0700 per-session runtime directory. The
//             trusted side connects and hands the connected socket to a plugin host.
// Identity of every request: SO_PEERCRED uid at accept, kernel-attested sender pid/uid of
// every byte (SCM_CREDENTIALS), the capability token (constant-time), the plugin id and the
// workspace — all must match the registration.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/capped_log.h"
#include "common/result.h"
#include "gateway/exec_request.h"
#include "gateway/gateway_limits.h"
#include "gateway/net_fetch_op.h"
#include "ipc/write_usage.h"

namespace anvil::gateway {

struct GatewayOptions {
  std::string workspace;    // the workspace root (a symlink is resolved once and pinned)
  std::string runtime_dir;  // created 0700; default $XDG_RUNTIME_DIR/anvil/<session>
  std::string session_id;   // default: random
  std::string audit_log;    // JSON lines; empty = <runtime_dir>/audit.jsonl
  // The audit log's cap (common/capped_log.h): past it the oldest lines are dropped.
  uint64_t audit_log_max_bytes = kDefaultLogMaxBytes;
  int control_fd = -1;  // required
  // The supervisor's pending-writes journal (fs/pending_writes.h); -1: none.
  int pending_writes_fd = -1;
  // The session's write usage table (ipc/write_usage.h), which `anvil serve` keeps across the
  // gateways it starts; -1: none (the counts live and die with this gateway).
  int write_usage_fd = -1;
  // Set by RunGateway, not a flag: that table, mapped.
  ipc::WriteUsageTable* write_usage = nullptr;
  bool no_symlinks = false;  // RESOLVE_NO_SYMLINKS hardening
  bool allow_hardlinked_reads = false;
  bool harden = true;  // Landlock + seccomp + no_new_privs on itself after start-up
  // No plugin of this session may write (its grant has no fs.write): every write op is refused
  // here too, and the workspace's git metadata is never scanned for what git runs from it.
  bool no_fs_write = false;
  // Set by RunGateway, not a flag: where Anvil's trust state lies in the workspace
  // (policy/trust_state_paths.h), refused to every write op.
  std::vector<std::string> trust_state_paths;
  GatewayLimits limits;
  // sys.exec: anvil-exec-runner's path (empty: sys.exec is refused), and its limits.
  std::string exec_runner;
  ExecLimits exec_limits;
  std::string exec_fail_layer_for_testing;  // test-only builds: make the runner fail this layer
  std::string exec_unavailable;             // set by RunGateway: why sys.exec is refused
  pid_t trusted_pid = 0;  // set by RunGateway: the control channel's peer (SO_PEERCRED)
  NetFetchOptions net;    // sys.net.fetch: limits and the --unsafe-test-* options
  // Test-only builds: an answer read on an I/O thread waits this long before it is queued for
  // sending (a revocation then lands while the read is in flight).
  uint32_t inline_answer_delay_ms_for_testing = 0;
  // Test-only builds: the I/O threads' epoll_wait fails (EBADF) once this many connection
  // events have been taken (0: never), the event taken last unserved.
  uint32_t io_wait_fail_after_for_testing = 0;
  // Test-only builds: an I/O thread that re-armed a connection it served waits this long before
  // it lets go of it (the peer's next request then arrives while it is still owned).
  uint32_t rearm_delay_ms_for_testing = 0;
};

// Runs until shutdown or until the control channel closes (the trusted side died). Returns
// the process exit status.
int RunGateway(const GatewayOptions& options);

// anvil-gateway's main (src/cmd/anvil_gateway.cc): its flags, then RunGateway.
int GatewayMain(int argc, char** argv);

}  // namespace anvil::gateway
