// A gateway job cancelled twice (the request's cancel, then its connection closing) keeps the
// first reason: the worker that saw `cancelled` reads it while the second Cancel runs.
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "gateway/job_queue.h"

namespace anvil::gateway {
namespace job_cancel_test {
namespace {

TEST(JobCancel, TheFirstReasonStaysWhileAWorkerReadsIt) {
  for (int round = 0; round < 200; ++round) {
    Job job;
    std::string seen;
    std::thread worker([&] {
      while (!job.cancelled.load(std::memory_order_acquire)) std::this_thread::yield();
      seen = job.cancel_reason;
    });
    job.Cancel("request cancelled");
    job.Cancel("connection closed");
    worker.join();
    EXPECT_EQ(seen, "request cancelled");
    EXPECT_EQ(job.cancel_reason, "request cancelled");
  }
}

TEST(JobCancel, AJobNotCancelledHasNoReason) {
  Job job;
  EXPECT_FALSE(job.cancelled.load());
  EXPECT_TRUE(job.cancel_reason.empty());
}

}  // namespace
}  // namespace job_cancel_test
}  // namespace anvil::gateway
