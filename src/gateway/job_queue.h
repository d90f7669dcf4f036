// The gateway's worker pool: requests that are not answered on the event loop wait here and
// run on worker threads (Dispatch, then the audit line); their answers go back to the loop as
// completions, signalled on an eventfd the loop polls. sys.exec calls last as long as the tool
// runs, so they have a queue and workers of their own: a slow `rg` never holds up sys.fs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "gateway/audit_log.h"
#include "gateway/dispatch.h"
#include "gateway/registration.h"
#include "ipc/frame.h"

namespace anvil::gateway {

struct Job {
  uint64_t conn_id;
  ipc::Request request;
  std::shared_ptr<const Registration> registration;
  double reserved_bytes = 0;  // taken from the byte quota on arrival (admission.h)
  std::atomic<bool> cancelled{false};
  // Written once, by the first Cancel, before `cancelled` is set: a worker that saw `cancelled`
  // reads it while a later Cancel (the request's, then the connection's) may run.
  std::string cancel_reason;
  Clock::time_point queued = Clock::now();

  // The first reason is the one the caller is told; later calls change nothing.
  void Cancel(std::string reason) {
    bool first = false;
    if (!cancel_claimed_.compare_exchange_strong(first, true, std::memory_order_acq_rel)) return;
    cancel_reason = std::move(reason);
    cancelled.store(true, std::memory_order_release);
  }

 private:
  std::atomic<bool> cancel_claimed_{false};
};

// A job's answer, for the event loop to send.
struct Completion {
  uint64_t conn_id;
  uint64_t request_id;
  std::string frame;
  double reserved_bytes = 0;  // the job's, settled against the frame's size
};

class JobQueue {
 public:
  // `context` is what every job is dispatched with (its `cancelled` is set per job).
  // `max_queued`: jobs queued across both queues; `max_exec`: sys.exec calls queued.
  JobQueue(const DispatchContext& context, AuditLog* audit, uint32_t max_queued, uint32_t max_exec)
      : context_(context), audit_(audit), max_queued_(max_queued), max_exec_(max_exec) {}

  // Makes the eventfd that becomes readable when a job completed; false when it cannot.
  bool Open();
  int wake_fd() const { return wake_.Get(); }

  // Starts the workers. Call after the process hardened itself: threads created later
  // inherit Landlock and seccomp; existing ones never get them.
  void Start(uint32_t workers, uint32_t exec_workers);
  // Returns once every worker started runs: the server calls it before it accepts its first
  // connection, so that a worker's start-up never meets what serving can bring (the
  // file-descriptor limit reached, which sanitizer runtimes need a pipe to survive), while the
  // control channel (a registration) is served meanwhile.
  void WaitRunning();

  // Queues `job` (on the sys.exec queue when `exec`), or says why not (a cap is reached).
  std::optional<std::string> Push(const std::shared_ptr<Job>& job, bool exec);

  // What completed since the last call (drains the eventfd).
  std::vector<Completion> TakeCompletions();

  size_t Queued();  // on the plain queue

  // Lets the workers finish what is queued, then joins them.
  void Stop();

 private:
  void Worker(bool exec);

  DispatchContext context_;
  AuditLog* audit_;
  uint32_t max_queued_;
  uint32_t max_exec_;
  UniqueFd wake_;

  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::condition_variable exec_cv_;
  std::deque<std::shared_ptr<Job>> exec_queue_;
  bool stopping_ = false;
  std::mutex done_mu_;
  std::vector<Completion> done_;
  std::vector<std::thread> workers_;
  size_t workers_running_ = 0;  // under queue_mu_; WaitRunning waits for all
  std::condition_variable workers_cv_;
};

}  // namespace anvil::gateway
