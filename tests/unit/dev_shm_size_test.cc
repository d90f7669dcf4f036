// The size of the sandbox's /dev/shm (linux/memory_cgroup.h, DevShmSize): half of the memory
// the sandbox has, as the kernel sizes a tmpfs (64 MiB without a ceiling); what `--limit shm`
// asks; never unbounded. The
// end-to-end half (writes up to the size work, past it ENOSPC) is
// tests/security/t6_sandbox_resources_test.cc.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>

#include "linux/memory_cgroup.h"

namespace anvil {
namespace dev_shm_size_test {
namespace {

constexpr uint64_t kMiB = 1ULL << 20;
constexpr uint64_t kGiB = 1ULL << 30;

TEST(DevShmSize, HalfOfTheMemoryTheSandboxHas) {
  struct Row {
    const char* name;
    std::optional<uint64_t> asked;
    uint64_t ceiling;
    uint64_t physical;
    uint64_t expected;
  };
  const Row rows[] = {
      // The default ceiling (half of 16 GiB): a quarter of the machine, far past Docker's 64 MiB.
      {"default ceiling", std::nullopt, 8 * kGiB, 16 * kGiB, 4 * kGiB},
      {"--limit mem=2G", std::nullopt, 2 * kGiB, 16 * kGiB, 1 * kGiB},
      {"--limit mem=128M", std::nullopt, 128 * kMiB, 16 * kGiB, 64 * kMiB},
      // No ceiling (--limit mem=unlimited, or no memory cgroup for this caller): the size is the
      // only bound, per sandbox, so a fixed one (two sandboxes at half the machine each would
      // take all of it).
      {"no ceiling", std::nullopt, 0, 16 * kGiB, kFallbackDevShmSize},
      // A ceiling above the machine's memory bounds nothing: the machine's memory does.
      {"--limit mem=64G on 16 GiB", std::nullopt, 64 * kGiB, 16 * kGiB, 8 * kGiB},
      // The machine's memory unknown: the ceiling alone.
      {"ceiling, memory unknown", std::nullopt, 2 * kGiB, 0, 1 * kGiB},
      {"nothing known", std::nullopt, 0, 0, kFallbackDevShmSize},
      // Never 0, which a tmpfs takes as no bound.
      {"one byte of memory", std::nullopt, 1, 16 * kGiB, 1},
      // --limit shm: as asked, whatever the ceiling (which still holds the pages).
      {"--limit shm=16G", 16 * kGiB, 2 * kGiB, 16 * kGiB, 16 * kGiB},
      {"--limit shm=32M", 32 * kMiB, 0, 16 * kGiB, 32 * kMiB},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(DevShmSize(row.asked, row.ceiling, row.physical), row.expected) << row.name;
  }
}

TEST(DevShmSize, TheDefaultCeilingIsHalfTheMachine) {
  const uint64_t physical = PhysicalMemory();
  ASSERT_GT(physical, 0u);
  EXPECT_EQ(DefaultMemoryCeiling(), physical / 2);
  EXPECT_EQ(DevShmSize(std::nullopt, DefaultMemoryCeiling(), physical), physical / 4);
  EXPECT_EQ(DevShmSize(std::nullopt, 0, physical), kFallbackDevShmSize);
}

}  // namespace
}  // namespace dev_shm_size_test
}  // namespace anvil
