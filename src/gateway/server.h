// The gateway's event loops and what a plugin's request goes through: the main loop polls the
// plugin socket (accepting connections, transport.h), the control channel (control_channel.h),
// the hosts' pidfds and the job queue's eventfd (job_queue.h); I/O threads, one per CPU the
// gateway may run on (a few at most), poll the connections, each served by one thread at a
// time. A request frame is admitted (admission.h), metered (the registration's rate buckets),
// then answered by the I/O thread when its op is cheap, or queued for a worker. What the threads
// share is under the transport's mutex (transport.h), held for every main-loop event and for a
// request's admission, never while a request reads the workspace or an answer is sent.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

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
         std::unique_ptr<NetService> net, GitRunGuard* git_run);

  // Makes the epoll set, the plugin socket at `socket_path` and the job queue's eventfd.
  Status Start(const std::string& socket_path);
  // Starts the workers (call after hardening), then serves until the control channel closes.
  int Loop();

 private:
  // An I/O thread: serves the connections' events until Loop ends.
  void IoLoop();
  bool InjectedWaitFailure(uint64_t id);
  // An I/O thread's epoll_wait failed with `err`: said on stderr, and the main loop woken to
  // stop the gateway (Loop then returns 1).
  void IoThreadFailed(int err);
  // On the thread that owns `c`, without the transport's mutex; false when `c` was closed.
  bool HandleFrame(uint64_t id, Connection& c, const ipc::Frame& frame);
  bool HandleRequest(uint64_t id, Connection& c, ipc::Request request);
  void HandleWake();
  void Deny(Connection& c, const ipc::Request& r, const std::string& plugin,
            const Refusal& refusal);
  DispatchContext Context();

  GatewayOptions options_;
  AnswerCaps answer_caps_;  // what the byte quota reserves per op (admission.h)
  WorkspaceRoot root_;
  AuditLog* audit_;
  const ExecBroker* exec_;      // null: sys.exec unavailable in this gateway
  ExecReadPlanner read_plans_;  // what of the workspace a sys.exec tool sees (per call, cached)
  std::unique_ptr<NetService> net_;
  GitRunGuard* git_run_;
  UniqueFd epoll_;
  UniqueFd conn_epoll_;  // the connections, polled by the I/O threads
  UniqueFd stop_;        // an eventfd in conn_epoll_: readable once the I/O threads are to stop
  UniqueFd io_failed_;   // an eventfd in epoll_: readable once an I/O thread has failed
  UniqueFd signals_;     // a signalfd in epoll_ for the stop signals (SIGTERM, SIGINT, SIGHUP)
  std::string socket_path_;
  // After a stop signal, how long the in-flight work has before the gateway exits regardless.
  static constexpr std::chrono::seconds kStopGrace{2};
  // The most events an I/O thread serves back to back before it writes their audit lines.
  static constexpr uint32_t kEventsPerAuditWrite = 16;
  std::atomic<bool> io_failed_said_{false};
  uint32_t io_thread_count_ = 1;
  std::vector<std::thread> io_threads_;
  std::atomic<uint32_t> io_events_taken_{0};     // for io_wait_fail_after_for_testing
  std::atomic<uint32_t> io_threads_waiting_{0};  // I/O threads waiting for their next event
  JobQueue queue_;
  Transport transport_;
  ControlChannel control_;
};

}  // namespace anvil::gateway
