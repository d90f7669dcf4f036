// Executes one plugin request against the workspace, after identity has been established:
// checks the grant, performs the operation, and describes the decision for the audit log.
// What every op takes and how it is checked comes from its OpSpec (policy/plugin_api.h): the
// number of fields, which are workspace paths (normalized, then checked against the op's
// fs.read or fs.write grant before its handler runs), the audit target. The handlers here do
// only what is particular to their op.
// Runs on worker threads; everything it touches is immutable or thread-safe.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/audit_log.h"
#include "gateway/gateway.h"
#include "gateway/net_fetch_op.h"
#include "ipc/frame.h"
#include "policy/grant.h"

namespace anvil {
class ExecReadPlanner;
class GitRunGuard;
class WorkspaceRoot;
}  // namespace anvil

namespace anvil::gateway {

class ExecBroker;

class WriteBudget;  // registration.h

struct DispatchContext {
  const WorkspaceRoot* root;
  const GatewayLimits* limits;
  const ExecBroker* exec;                 // null: sys.exec is not available
  const std::atomic<bool>* cancelled;     // the request's cancel flag (long operations poll it)
  const std::string* exec_unavailable;    // why, when `exec` is null
  NetService* net = nullptr;              // "net.fetch"; null: sys.net is refused
  ExecReadPlanner* read_plans = nullptr;  // with `exec`: what of the workspace the tool sees
  // What git runs from the workspace, refused to fs.write ops (linux/git_run_guard.h); null: not
  // checked (unit tests of dispatch alone; the gateway sets it unless no_fs_write).
  GitRunGuard* git_run = nullptr;
  // --no-fs-write: every fs.write op is refused, whatever the grant says.
  bool no_fs_write = false;
  // Anvil's trust state inside the workspace, refused to fs.write ops whatever the grant
  // (policy/trust_state_paths.h); null: none checked (unit tests of dispatch alone).
  const std::vector<std::string>* trust_state = nullptr;
  // The plugin's WriteBudget (registration.h), taken from by fs.write and fs.mkdir; null: none
  // (unit tests of dispatch alone).
  WriteBudget* writes = nullptr;
};

// Fills `audit` (op, target, verdict, code, reason, bytes) and returns the response.
ipc::Response Dispatch(const DispatchContext& context, const Grant& grant,
                       const ipc::Request& request, AuditEntry& audit);

// True when `op` may be answered on the gateway's event loop (its OpSpec: read-only, short).
bool RunsInline(std::string_view op);

}  // namespace anvil::gateway
