#include "gateway/job_queue.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

namespace anvil::gateway {

bool JobQueue::Open() {
  wake_.Reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  return static_cast<bool>(wake_);
}

void JobQueue::Start(uint32_t workers, uint32_t exec_workers) {
  for (uint32_t i = 0; i < workers; ++i) workers_.emplace_back([this] { Worker(false); });
  for (uint32_t i = 0; i < exec_workers; ++i) workers_.emplace_back([this] { Worker(true); });
}

void JobQueue::WaitRunning() {
  std::unique_lock lock(queue_mu_);
  workers_cv_.wait(lock, [this] { return workers_running_ == workers_.size(); });
}

std::optional<std::string> JobQueue::Push(const std::shared_ptr<Job>& job, bool exec) {
  {
    std::lock_guard lock(queue_mu_);
    if (queue_.size() + exec_queue_.size() >= max_queued_) {
      return "gateway is at its concurrency limit";
    }
    if (exec && exec_queue_.size() >= max_exec_) return "sys.exec is at its concurrency limit";
    (exec ? exec_queue_ : queue_).push_back(job);
  }
  (exec ? exec_cv_ : queue_cv_).notify_one();
  return std::nullopt;
}

std::vector<Completion> JobQueue::TakeCompletions() {
  uint64_t count;
  ssize_t ignored = ::read(wake_.Get(), &count, sizeof(count));
  (void)ignored;
  std::vector<Completion> done;
  std::lock_guard lock(done_mu_);
  done.swap(done_);
  return done;
}

size_t JobQueue::Queued() {
  std::lock_guard lock(queue_mu_);
  return queue_.size();
}

void JobQueue::Stop() {
  {
    std::lock_guard lock(queue_mu_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  exec_cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void JobQueue::Worker(bool exec) {
  DispatchContext context = context_;
  auto& queue = exec ? exec_queue_ : queue_;
  auto& cv = exec ? exec_cv_ : queue_cv_;
  {
    std::lock_guard lock(queue_mu_);
    ++workers_running_;
  }
  workers_cv_.notify_all();
  while (true) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(queue_mu_);
      cv.wait(lock, [&] { return stopping_ || !queue.empty(); });
      if (stopping_ && queue.empty()) return;
      job = std::move(queue.front());
      queue.pop_front();
    }
    context.cancelled = &job->cancelled;
    context.writes = job->registration->writes.get();
    AuditEntry audit;
    audit.plugin = job->registration->host.plugin;
    audit.request_id = job->request.id;
    audit.op = job->request.op;
    ipc::Response response;
    auto start = Clock::now();
    if (job->cancelled.load(std::memory_order_acquire)) {
      response = ipc::Response::Error(job->request.id, "cancelled", job->cancel_reason);
      audit.verdict = "cancelled";
      audit.code = "cancelled";
      audit.reason = job->cancel_reason;
      if (!job->request.args.empty()) audit.target = job->request.args[0];
    } else {
      response = Dispatch(context, job->registration->grant, job->request, audit);
      if (job->cancelled.load(std::memory_order_acquire)) {
        // Finished anyway, but the caller was told it is cancelled: never answer twice.
        response = ipc::Response::Error(job->request.id, "cancelled", job->cancel_reason);
        audit.verdict = "cancelled";
        audit.reason = job->cancel_reason;
      }
    }
    audit.duration_us = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count());
    audit_->Record(audit);
    {
      std::lock_guard lock(done_mu_);
      done_.push_back(
          {job->conn_id, job->request.id, ipc::EncodeResponse(response), job->reserved_bytes});
    }
    uint64_t one = 1;
    ssize_t ignored = ::write(wake_.Get(), &one, sizeof(one));
    (void)ignored;
  }
}

}  // namespace anvil::gateway
