// The gateway's event loop and what a plugin's request goes through: one thread polls the
// plugin socket and its connections (transport.h), the control channel (control_channel.h),
// the hosts' pidfds and the job queue's eventfd (job_queue.h). A request frame is admitted
// (admission.h), metered (the registration's rate buckets), then answered on the loop when its
// op is cheap, or queued for a worker.
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"
#include "fs/exec_read_plan.h"
#include "fs/workspace_root.h"
#include "gateway/audit_log.h"
#include "gateway/control_channel.h"
#include "gateway/exec_broker.h"
#include "gateway/gateway.h"
#include "gateway/job_queue.h"
#include "gateway/net_fetch_op.h"
#include "gateway/transport.h"
#include "ipc/frame.h"
#include "linux/git_run_guard.h"

namespace anvil::gateway {

class Server {
 public:
  // `git_run`: what git runs from the workspace (linux/git_run_guard.h); not owned, outlives the
  // server.
  Server(const GatewayOptions& options, WorkspaceRoot root, AuditLog* audit, const ExecBroker* exec,
         std::unique_ptr<NetFetchService> net, GitRunGuard* git_run);

  // Makes the epoll set, the plugin socket at `socket_path` and the job queue's eventfd.
  Status Start(const std::string& socket_path);
  // Starts the workers (call after hardening), then serves until the control channel closes.
  int Loop();

 private:
  void HandleFrame(uint64_t id, Connection& c, const ipc::Frame& frame);
  void HandleRequest(uint64_t id, Connection& c, ipc::Request request);
  void HandleWake();
  void Deny(Connection& c, const ipc::Request& r, const std::string& plugin,
            const Refusal& refusal);
  DispatchContext Context();

  GatewayOptions options_;
  WorkspaceRoot root_;
  AuditLog* audit_;
  const ExecBroker* exec_;      // null: sys.exec unavailable in this gateway
  ExecReadPlanner read_plans_;  // what of the workspace a sys.exec tool sees (per call, cached)
  std::unique_ptr<NetFetchService> net_;
  GitRunGuard* git_run_;
  UniqueFd epoll_;
  JobQueue queue_;
  Transport transport_;
  ControlChannel control_;
};

}  // namespace anvil::gateway
