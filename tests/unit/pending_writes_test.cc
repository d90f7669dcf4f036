// The pure parts of the pending-writes journal: which names a sweep may remove, and which slot
// bytes name anything at all.
#include "fs/pending_writes.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace anvil {
namespace pending_writes_test {
namespace {

TEST(PendingWrites, OnlyTheTemporaryPatternIsATemporaryName) {
  struct Row {
    std::string name;
    bool temp;
  } rows[] = {
      {".anvil-tmp-0123456789abcdef", true},
      {".anvil-tmp-ffffffffffffffff", true},
      {".anvil-tmp-0123456789ABCDEF", false},
      {".anvil-tmp-0123456789abcde", false},
      {".anvil-tmp-0123456789abcdef0", false},
      {".anvil-tmp-0123456789abcdeg", false},
      {"anvil-tmp-0123456789abcdef", false},
      {"main.c", false},
      {"", false},
      {".anvil-tmp-", false},
  };
  for (const auto& row : rows) EXPECT_EQ(IsWorkspaceTempName(row.name), row.temp) << row.name;
}

TEST(PendingWrites, ASlotNamesAParentAndATemporaryOrNothing) {
  const std::string t = ".anvil-tmp-0123456789abcdef";
  using Parsed = std::optional<std::pair<std::string, std::string>>;
  struct Row {
    std::string bytes;
    Parsed want;
  } rows[] = {
      {EncodePendingSlot(t), Parsed({"", t})},
      {EncodePendingSlot("a/b/" + t), Parsed({"a/b", t})},
      {EncodePendingSlot("a/b/" + t) + std::string(100, '\0'), Parsed({"a/b", t})},
      {EncodePendingSlot("../" + t), std::nullopt},
      {EncodePendingSlot("/etc/" + t), std::nullopt},
      {EncodePendingSlot("a/./" + t), std::nullopt},
      {EncodePendingSlot("a//" + t), std::nullopt},
      {EncodePendingSlot("a/" + t + "/"), std::nullopt},
      {EncodePendingSlot("a/main.c"), std::nullopt},
      {EncodePendingSlot(""), std::nullopt},
      {EncodePendingSlot(std::string("a\0b/", 4) + t), std::nullopt},
      {EncodePendingSlot("a/" + t).substr(0, 10), std::nullopt},              // length past the end
      {std::string(1, '\0') + EncodePendingSlot(t).substr(1), std::nullopt},  // cleared
      {"ANV", std::nullopt},
      {"", std::nullopt},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(ParsePendingSlot(row.bytes), row.want) << row.bytes;
  }
}

class SweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/anvil-sweep-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    ws_ = pattern;
    auto journal = PendingWrites::CreateJournal();
    ASSERT_TRUE(journal);
    journal_ = std::move(*journal);
  }
  void TearDown() override { std::filesystem::remove_all(ws_); }

  void Record(std::size_t slot, const std::string& name) {
    const std::string bytes = EncodePendingSlot(name);
    ASSERT_EQ(::pwrite(journal_.Get(), bytes.data(), bytes.size(),
                       static_cast<off_t>(slot * kPendingSlotBytes)),
              static_cast<ssize_t>(bytes.size()));
    UniqueFd made(::open((ws_ + "/" + name).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
    ASSERT_TRUE(made);
  }
  bool Exists(const std::string& name) { return std::filesystem::exists(ws_ + "/" + name); }
  off_t Size() {
    struct stat st {};
    EXPECT_EQ(::fstat(journal_.Get(), &st), 0);
    return st.st_size;
  }

  std::string ws_;
  UniqueFd journal_;
};

TEST_F(SweepTest, RecordedTemporariesAreRemovedAndTheJournalEmptied) {
  Record(0, ".anvil-tmp-0000000000000001");
  Record(3, ".anvil-tmp-0000000000000002");
  std::size_t slots = 0;
  auto removed = SweepPendingWrites(journal_.Get(), ws_, &slots);
  ASSERT_TRUE(removed) << removed.error().ToString();
  EXPECT_EQ(*removed, 2u);
  EXPECT_EQ(slots, 4u);
  EXPECT_FALSE(Exists(".anvil-tmp-0000000000000001"));
  EXPECT_EQ(Size(), 0);
}

// The attack: a compromised gateway ftruncates its journal (fd 4) to 2^62 bytes, and the sweep
// the session runs inline when the gateway stops reads zeros for ever. It reads at most
// kMaxPendingSlots slots; what lies past them is garbage, skipped and truncated away.
TEST_F(SweepTest, AHugeSparseJournalIsReadOnlyUpToTheSlotBound) {
  Record(0, ".anvil-tmp-0000000000000001");
  Record(kMaxPendingSlots + 10, ".anvil-tmp-0000000000000002");
  ASSERT_EQ(::ftruncate(journal_.Get(), off_t{1} << 62), 0);
  std::size_t slots = 0;
  auto removed = SweepPendingWrites(journal_.Get(), ws_, &slots);
  ASSERT_TRUE(removed) << removed.error().ToString();
  EXPECT_EQ(slots, kMaxPendingSlots);
  EXPECT_EQ(*removed, 1u);
  EXPECT_FALSE(Exists(".anvil-tmp-0000000000000001"));
  EXPECT_TRUE(Exists(".anvil-tmp-0000000000000002"));  // beyond the bound: never swept
  EXPECT_EQ(Size(), 0);
}

TEST_F(SweepTest, AWriterCannotHoldASlotPastTheBound) {
  auto dup = UniqueFd(::fcntl(journal_.Get(), F_DUPFD_CLOEXEC, 0));
  PendingWrites writes(std::move(dup));
  std::vector<PendingWrites::Slot> held;
  for (std::size_t i = 0; i < kMaxPendingSlots; ++i) held.push_back(writes.Claim());
  EXPECT_TRUE(held.back().Set(".anvil-tmp-0000000000000001"));
  PendingWrites::Slot extra = writes.Claim();
  const Status s = extra.Set(".anvil-tmp-0000000000000002");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, "limit");
  // Releasing it writes nothing past the bound: the journal stays within what a sweep reads.
  extra = PendingWrites::Slot();
  struct stat st {};
  ASSERT_EQ(::fstat(journal_.Get(), &st), 0);
  EXPECT_LE(static_cast<std::size_t>(st.st_size), kMaxPendingSlots * kPendingSlotBytes);
}

}  // namespace
}  // namespace pending_writes_test
}  // namespace anvil
