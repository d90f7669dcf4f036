// The CPU-time equivalent of a plugin host's instruction budget, shared by the host and the
// trusted side. The instruction count reaches only the VM's own loop: a builtin's C loop (a Lua
// pattern match, a QuickJS Array method on a huge array-like) runs none, so a command could
// spend all of its wall-clock deadline in CPU whatever its instruction budget. Two stops bound
// the CPU time of one command to this equivalent:
//  - the host, from the VM (the count hook, the interrupt poll): once the command's thread has
//    used the budget's CPU time, the instruction budget is spent (same error);
//  - the trusted side, from outside, for a VM still inside one builtin: once the host has used
//    the budget plus a grace, it is killed the way the deadline kills it, and the command ends
//    with the instruction budget's `limit:` code.
// Pure: CpuWatch says when CPU time must be read next and whether it is over.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>

namespace anvil::ipc {

// The host's instruction budget when none is given (anvil-plugin-host --instructions).
inline constexpr uint64_t kDefaultInstructionBudget = 200'000'000;
// CPU time per budgeted instruction: above what a VM instruction costs in any build, so a
// command that stays within its instructions is not stopped by this (the default budget is
// 10 s, the default deadline).
inline constexpr std::chrono::nanoseconds kCpuPerInstruction{50};
// At least this much, for a small instruction budget: builtins may do real work.
inline constexpr std::chrono::milliseconds kMinCpuBudget{1000};
// The trusted side's stop comes this much CPU time after the host's own.
inline constexpr std::chrono::milliseconds kCpuStopGrace{500};

constexpr std::chrono::nanoseconds CpuBudgetFor(uint64_t instructions) {
  constexpr uint64_t kMax = uint64_t{1} << 62;  // saturate (nanoseconds fit an int64)
  const auto per = static_cast<uint64_t>(kCpuPerInstruction.count());
  const uint64_t ns = instructions > kMax / per ? kMax : instructions * per;
  const std::chrono::nanoseconds budget{static_cast<int64_t>(ns)};
  return budget < kMinCpuBudget ? std::chrono::nanoseconds(kMinCpuBudget) : budget;
}

// One command's CPU watch. The CPU time used cannot grow faster than the wall clock, so it
// need not be read (a system call) until as much wall time has passed as there is budget left.
class CpuWatch {
 public:
  using Clock = std::chrono::steady_clock;
  CpuWatch() = default;
  CpuWatch(std::chrono::nanoseconds budget, Clock::time_point wall_start,
           std::chrono::nanoseconds cpu_start)
      : budget_(budget), cpu_start_(cpu_start), check_at_(At(wall_start, budget)) {}

  // When the CPU time must be read next.
  Clock::time_point check_at() const { return check_at_; }
  bool Due(Clock::time_point now) const { return now >= check_at_; }
  // The CPU time read at `now`: true when the budget is spent; else the next check is set.
  bool Over(Clock::time_point now, std::chrono::nanoseconds cpu_now) {
    const auto used = cpu_now - cpu_start_;
    if (used >= budget_) return true;
    check_at_ = At(now, budget_ - used);
    return false;
  }
  std::chrono::nanoseconds used(std::chrono::nanoseconds cpu_now) const {
    return cpu_now - cpu_start_;
  }
  std::chrono::nanoseconds budget() const { return budget_; }

 private:
  static Clock::time_point At(Clock::time_point from, std::chrono::nanoseconds left) {
    if (left >= Clock::time_point::max() - from) return Clock::time_point::max();
    return from + std::chrono::duration_cast<Clock::duration>(left);
  }
  std::chrono::nanoseconds budget_{0};
  std::chrono::nanoseconds cpu_start_{0};
  Clock::time_point check_at_ = Clock::time_point::max();
};

// The calling thread's CPU time (the host's VM runs on one thread).
inline std::chrono::nanoseconds ThreadCpuTime() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

}  // namespace anvil::ipc
