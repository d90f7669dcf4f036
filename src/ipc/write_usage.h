// The plugins' write usage of one `anvil serve` session (threat model T6: what a plugin may add
// to the workspace per session): one slot per plugin id, counting the bytes its fs.write calls
// wrote and the files and directories its fs.write and fs.mkdir calls made. The memory is the
// trusted side's — a sealed memfd it makes once per session — and each gateway it starts maps
// it (--write-usage-fd) and charges a slot in place, before the write it pays for. So a gateway
// that is replaced (a restart to serve more, a crash, a kill -9) loses nothing it charged: the
// next one, given the same descriptor, goes on from the same counts. The gateway's WriteBudget
// (gateway/registration.h) decides; this only holds the numbers.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "common/result.h"
#include "common/unique_fd.h"

namespace anvil::ipc {

// One plugin's counts. Shared between processes: every access goes through std::atomic_ref,
// which is address-free only when lock-free.
struct alignas(8) WriteUsageSlot {
  uint64_t bytes = 0;
  uint64_t entries = 0;
};
static_assert(std::atomic_ref<uint64_t>::is_always_lock_free,
              "write usage is shared between processes: its atomics must be lock-free");

struct WriteUsage {
  uint64_t bytes = 0;
  uint64_t entries = 0;
};

class WriteUsageTable {
 public:
  // A table of `slots` zeroed slots in a new memfd, sealed against resizing (no process that
  // maps it can shrink it under another into SIGBUS). The descriptor is close-on-exec; the
  // gateway's launcher passes it on.
  static Result<WriteUsageTable> Create(std::size_t slots);
  // Maps the table an inherited descriptor holds: a sealed memfd of whole slots ("invalid"
  // otherwise). Takes the descriptor.
  static Result<WriteUsageTable> Map(UniqueFd fd);

  WriteUsageTable(WriteUsageTable&& other) noexcept;
  WriteUsageTable& operator=(WriteUsageTable&& other) noexcept;
  WriteUsageTable(const WriteUsageTable&) = delete;
  WriteUsageTable& operator=(const WriteUsageTable&) = delete;
  ~WriteUsageTable();

  std::size_t slots() const { return slots_; }
  int fd() const { return fd_.Get(); }
  // Null past the end.
  WriteUsageSlot* slot(std::size_t index) const {
    return index < slots_ ? &slots_at_[index] : nullptr;
  }
  WriteUsage Read(std::size_t index) const;

 private:
  WriteUsageTable(UniqueFd fd, WriteUsageSlot* at, std::size_t slots)
      : fd_(std::move(fd)), slots_at_(at), slots_(slots) {}
  UniqueFd fd_;
  WriteUsageSlot* slots_at_ = nullptr;
  std::size_t slots_ = 0;
};

}  // namespace anvil::ipc
