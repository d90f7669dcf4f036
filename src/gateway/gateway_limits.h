// The gateway's caps: frame and payload sizes, connections and their admission (admission.h),
// requests in flight and queued, output buffering, per-registration rates, worker threads.
#pragma once

#include <cstdint>

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
  // Per plugin id for the whole session (registration.h, WriteBudget): bytes fs.write writes,
  // files and directories fs.write and fs.mkdir make.
  uint64_t plugin_write_bytes = 4ull << 30;
  uint64_t plugin_new_entries = 100000;
  uint32_t worker_threads = 2;
};

}  // namespace anvil::gateway
