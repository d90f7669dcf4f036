// The session's write usage table (ipc/write_usage.h) and the gateway's WriteBudget over one of
// its slots: what one mapping charges, every other mapping of the descriptor sees, so a gateway
// started again goes on from what the one before it charged; a descriptor that is not a sealed
// table of whole slots is refused.
#include "ipc/write_usage.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gateway/registration.h"

namespace anvil {
namespace write_usage_test {
namespace {

TEST(WriteUsageTable, ABudgetGoesOnFromWhatAnotherMappingCharged) {
  auto table = ipc::WriteUsageTable::Create(2);
  ASSERT_TRUE(table) << table.error().ToString();
  EXPECT_EQ(table->slots(), 2u);
  EXPECT_EQ(table->slot(2), nullptr);
  {
    // The first gateway: 3 entries and 100 bytes, then one call over the cap, refused.
    auto first = ipc::WriteUsageTable::Map(UniqueFd(::fcntl(table->fd(), F_DUPFD_CLOEXEC, 0)));
    ASSERT_TRUE(first) << first.error().ToString();
    gateway::WriteBudget budget(1000, 4, first->slot(0));
    EXPECT_TRUE(budget.Take(100, 3));
    EXPECT_FALSE(budget.Take(0, 2));
  }
  EXPECT_EQ(table->Read(0).bytes, 100u);
  EXPECT_EQ(table->Read(0).entries, 3u);
  // The next gateway, on the same table: one entry left, and the other slot untouched.
  auto second = ipc::WriteUsageTable::Map(UniqueFd(::fcntl(table->fd(), F_DUPFD_CLOEXEC, 0)));
  ASSERT_TRUE(second);
  gateway::WriteBudget again(1000, 4, second->slot(0));
  EXPECT_TRUE(again.Take(0, 1));
  auto over = again.Take(0, 1);
  ASSERT_FALSE(over);
  EXPECT_NE(over.error().message.find("its cap of 4 files and directories"), std::string::npos);
  again.GiveBack(0, 1);
  EXPECT_EQ(table->Read(0).entries, 3u);
  gateway::WriteBudget other(1000, 4, second->slot(1));
  EXPECT_TRUE(other.Take(1000, 4));
  EXPECT_EQ(table->Read(0).bytes, 100u);
}

TEST(WriteUsageTable, OnlyASealedTableOfWholeSlotsIsMapped) {
  UniqueFd plain(::memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  ASSERT_TRUE(plain);
  ASSERT_EQ(::ftruncate(plain.Get(), sizeof(ipc::WriteUsageSlot)), 0);
  EXPECT_FALSE(ipc::WriteUsageTable::Map(std::move(plain))) << "not sealed: it could shrink";
  UniqueFd odd(::memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  ASSERT_EQ(::ftruncate(odd.Get(), sizeof(ipc::WriteUsageSlot) + 1), 0);
  ASSERT_EQ(::fcntl(odd.Get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  EXPECT_FALSE(ipc::WriteUsageTable::Map(std::move(odd)));
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  ::close(p[1]);
  EXPECT_FALSE(ipc::WriteUsageTable::Map(UniqueFd(p[0])));
  // Its own: sealed, so no mapper can resize it.
  auto table = ipc::WriteUsageTable::Create(1);
  ASSERT_TRUE(table);
  EXPECT_NE(::ftruncate(table->fd(), 0), 0);
}

}  // namespace
}  // namespace write_usage_test
}  // namespace anvil
