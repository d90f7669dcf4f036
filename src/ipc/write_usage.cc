#include "ipc/write_usage.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

namespace anvil::ipc {

namespace {

constexpr std::size_t kMaxSlots = 1u << 16;
constexpr unsigned kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

Result<WriteUsageSlot*> MapShared(int fd, std::size_t bytes) {
  void* at = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (at == MAP_FAILED) return SysFail("internal", "mmap write usage table");
  return static_cast<WriteUsageSlot*>(at);
}

}  // namespace

Result<WriteUsageTable> WriteUsageTable::Create(std::size_t slots) {
  if (slots == 0 || slots > kMaxSlots) return Fail("invalid", "write usage table size");
  UniqueFd fd(::memfd_create("anvil-write-usage", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return SysFail("internal", "memfd_create write usage table");
  const std::size_t bytes = slots * sizeof(WriteUsageSlot);
  if (::ftruncate(fd.Get(), static_cast<off_t>(bytes)) != 0) {
    return SysFail("internal", "ftruncate write usage table");
  }
  if (::fcntl(fd.Get(), F_ADD_SEALS, kSeals) != 0) {
    return SysFail("internal", "seal write usage table");
  }
  ANVIL_TRY(at, MapShared(fd.Get(), bytes));
  return WriteUsageTable(std::move(fd), *at, slots);
}

Result<WriteUsageTable> WriteUsageTable::Map(UniqueFd fd) {
  struct stat st {};
  if (!fd || ::fstat(fd.Get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Fail("invalid", "the write usage descriptor is not an open memfd");
  }
  const int seals = ::fcntl(fd.Get(), F_GET_SEALS);
  if (seals < 0 || (static_cast<unsigned>(seals) & (F_SEAL_SHRINK | F_SEAL_GROW)) !=
                       (F_SEAL_SHRINK | F_SEAL_GROW)) {
    return Fail("invalid", "the write usage table is not sealed against resizing");
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size == 0 || size % sizeof(WriteUsageSlot) != 0 ||
      size / sizeof(WriteUsageSlot) > kMaxSlots) {
    return Fail("invalid", "the write usage table has a size of no whole number of slots");
  }
  ANVIL_TRY(at, MapShared(fd.Get(), size));
  return WriteUsageTable(std::move(fd), *at, size / sizeof(WriteUsageSlot));
}

WriteUsageTable::WriteUsageTable(WriteUsageTable&& other) noexcept
    : fd_(std::move(other.fd_)),
      slots_at_(std::exchange(other.slots_at_, nullptr)),
      slots_(std::exchange(other.slots_, 0)) {}

WriteUsageTable& WriteUsageTable::operator=(WriteUsageTable&& other) noexcept {
  if (this != &other) {
    if (slots_at_ != nullptr) ::munmap(slots_at_, slots_ * sizeof(WriteUsageSlot));
    fd_ = std::move(other.fd_);
    slots_at_ = std::exchange(other.slots_at_, nullptr);
    slots_ = std::exchange(other.slots_, 0);
  }
  return *this;
}

WriteUsageTable::~WriteUsageTable() {
  if (slots_at_ != nullptr) ::munmap(slots_at_, slots_ * sizeof(WriteUsageSlot));
}

WriteUsage WriteUsageTable::Read(std::size_t index) const {
  WriteUsageSlot* s = slot(index);
  if (s == nullptr) return {};
  return {std::atomic_ref<uint64_t>(s->bytes).load(), std::atomic_ref<uint64_t>(s->entries).load()};
}

}  // namespace anvil::ipc
