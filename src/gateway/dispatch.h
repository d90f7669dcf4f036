// Executes one plugin request against the workspace, after identity has been established:
// checks the grant, performs the operation, and describes the decision for the audit log.
// Runs on worker threads; everything it touches is immutable or thread-safe.
#pragma once

#include <memory>
#include <string>

#include "gateway/audit_log.h"
#include "gateway/gateway.h"
#include "gateway/net_fetch_op.h"
#include "ipc/frame.h"
#include "policy/grant.h"

namespace anvil {
class WorkspaceRoot;
}

namespace anvil::gateway {

struct DispatchContext {
  const WorkspaceRoot* root;
  const GatewayLimits* limits;
  NetFetchService* net = nullptr;                // "net.fetch"; null: sys.net is refused
  const std::atomic<bool>* cancelled = nullptr;  // the current request's cancel flag
};

// Fills `audit` (op, target, verdict, code, reason, bytes) and returns the response.
ipc::Response Dispatch(const DispatchContext& context, const Grant& grant,
                       const ipc::Request& request, AuditEntry& audit);

}  // namespace anvil::gateway
