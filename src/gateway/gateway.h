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

#include "common/result.h"
#include "gateway/exec_broker.h"
#include "gateway/net_fetch_op.h"

namespace anvil::gateway {

struct GatewayLimits {
  uint32_t max_frame_bytes = 16u << 20;
  uint64_t max_read_bytes = 8u << 20;  // sys.fs.read / write payload cap
  uint64_t max_write_bytes = 8u << 20;
  uint32_t max_list_entries = 10000;
  // fs.rename of a directory first looks through its whole tree for protected names: a tree
  // with more entries is refused ("limit") rather than moved unchecked.
  uint32_t max_rename_entries = 100000;
  uint32_t max_connections = 256;
  // Admission (who may hold a connection before it said hello). Every plugin host gets its
  // connection from the trusted side (the process at the other end of the control channel), so
  // that process's connections may use every slot, and when all are taken its new connection
  // replaces the oldest one that never said hello. Any other process of the user may hold at
  // most max_unbound_per_peer such connections, and all of them together max_unbound_others:
  // they can never fill the slots a registered host needs. A connection that has not said
  // hello within hello_timeout_ms is closed.
  uint32_t hello_timeout_ms = 10000;
  uint32_t max_unbound_per_peer = 4;
  uint32_t max_unbound_others = 16;
  uint32_t max_inflight_per_connection = 16;  // beyond: "busy"
  uint32_t max_queued_jobs = 256;             // global; beyond: "busy"
  uint64_t max_output_buffer = 32u << 20;     // per connection; beyond: stop reading (backpressure)
  uint64_t plugin_requests_per_second = 200000;  // per registration (token bucket)
  uint64_t plugin_bytes_per_second = 1ull << 30;
  uint32_t worker_threads = 2;
};

struct GatewayOptions {
  std::string workspace;    // the workspace root (a symlink is resolved once and pinned)
  std::string runtime_dir;  // created 0700; default $XDG_RUNTIME_DIR/anvil/<session>
  std::string session_id;   // default: random
  std::string audit_log;    // JSON lines; empty = <runtime_dir>/audit.jsonl
  int control_fd = -1;      // required
  // The supervisor's pending-writes journal (fs/pending_writes.h); -1: none.
  int pending_writes_fd = -1;
  bool no_symlinks = false;  // RESOLVE_NO_SYMLINKS hardening
  bool allow_hardlinked_reads = false;
  bool harden = true;  // Landlock + seccomp + no_new_privs on itself after start-up
  GatewayLimits limits;
  // sys.exec: anvil-exec-runner's path (empty: sys.exec is refused), and its limits.
  std::string exec_runner;
  ExecLimits exec_limits;
  std::string exec_fail_layer_for_testing;  // test-only builds: make the runner fail this layer
  std::string exec_unavailable;             // set by RunGateway: why sys.exec is refused
  pid_t trusted_pid = 0;  // set by RunGateway: the control channel's peer (SO_PEERCRED)
  NetFetchOptions net;    // sys.net.fetch: limits and the --unsafe-test-* options
};

// Runs until shutdown or until the control channel closes (the trusted side died). Returns
// the process exit status.
int RunGateway(const GatewayOptions& options);

}  // namespace anvil::gateway
