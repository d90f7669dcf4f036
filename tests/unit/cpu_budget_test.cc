// The CPU-time equivalent of a plugin host's instruction budget (ipc/cpu_budget.h): the budget
// for an instruction count, and the watch that reads CPU time only when it could be over.
#include "ipc/cpu_budget.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace anvil::ipc {
namespace cpu_budget_test {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

TEST(CpuBudget, ScalesWithInstructionsWithAFloorAndSaturates) {
  struct Case {
    uint64_t instructions;
    nanoseconds budget;
  } cases[] = {
      {0, milliseconds(1000)},
      {1'000'000, milliseconds(1000)},
      {kDefaultInstructionBudget, milliseconds(10000)},  // the default deadline
      {1'000'000'000, milliseconds(50000)},
      {UINT64_MAX, nanoseconds(int64_t{1} << 62)},
      {UINT64_MAX / 2, nanoseconds(int64_t{1} << 62)},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(CpuBudgetFor(c.instructions), c.budget) << c.instructions;
  }
}

TEST(CpuWatch, ReadsOnlyWhenTheBudgetCouldBeSpentAndSaysWhenItIs) {
  const auto t0 = CpuWatch::Clock::time_point{} + std::chrono::hours(1);
  CpuWatch w(milliseconds(100), t0, milliseconds(7));
  // CPU time grows no faster than the wall clock: no read before 100 ms have passed.
  EXPECT_FALSE(w.Due(t0 + milliseconds(99)));
  EXPECT_TRUE(w.Due(t0 + milliseconds(100)));
  // 40 ms used after 100 ms (the thread waited): next read when 60 ms more could be used.
  EXPECT_FALSE(w.Over(t0 + milliseconds(100), milliseconds(47)));
  EXPECT_EQ(w.check_at(), t0 + milliseconds(160));
  EXPECT_FALSE(w.Due(t0 + milliseconds(159)));
  // All of it used: over.
  EXPECT_TRUE(w.Over(t0 + milliseconds(160), milliseconds(107)));
  EXPECT_EQ(w.used(milliseconds(107)), milliseconds(100));
  // A budget too large to reach never comes due.
  CpuWatch never(CpuBudgetFor(UINT64_MAX), t0, nanoseconds(0));
  EXPECT_FALSE(never.Due(t0 + std::chrono::hours(24 * 365)));
  // Default-made: never due.
  EXPECT_FALSE(CpuWatch().Due(t0));
}

}  // namespace
}  // namespace cpu_budget_test
}  // namespace anvil::ipc
