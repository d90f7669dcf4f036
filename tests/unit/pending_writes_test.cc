// The pure parts of the pending-writes journal: which names a sweep may remove, and which slot
// bytes name anything at all.
#include "fs/pending_writes.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace anvil {
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

}  // namespace
}  // namespace anvil
