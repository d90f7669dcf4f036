#include "fs/pending_writes.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fs/workspace_path.h"

namespace anvil {
namespace {

// A slot: the magic, the path's length as 4 little-endian bytes, the path. A cleared slot starts
// with a zero byte; a half-written one (impossible for one pwrite within a page, but cheap to
// reject) fails the length check.
constexpr std::string_view kMagic = "ANVT";
constexpr std::size_t kHeader = 8;

bool IsLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

}  // namespace

bool IsWorkspaceTempName(std::string_view name) {
  if (name.size() != kWorkspaceTempPrefix.size() + 16) return false;
  if (name.substr(0, kWorkspaceTempPrefix.size()) != kWorkspaceTempPrefix) return false;
  for (char c : name.substr(kWorkspaceTempPrefix.size())) {
    if (!IsLowerHex(c)) return false;
  }
  return true;
}

std::string EncodePendingSlot(std::string_view relative_path) {
  std::string out(kMagic);
  const auto n = static_cast<std::uint32_t>(relative_path.size());
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out.append(relative_path);
  return out;
}

std::optional<std::pair<std::string, std::string>> ParsePendingSlot(std::string_view slot) {
  if (slot.size() < kHeader || slot.substr(0, kMagic.size()) != kMagic) return std::nullopt;
  std::uint32_t n = 0;
  for (int i = 0; i < 4; ++i) {
    n |= static_cast<std::uint32_t>(static_cast<unsigned char>(slot[kMagic.size() + i])) << (8 * i);
  }
  if (n == 0 || n > slot.size() - kHeader) return std::nullopt;
  const std::string_view path = slot.substr(kHeader, n);
  // The same validation as every plugin path: no "..", no absolute path, no NUL, text.
  auto norm = NormalizeWorkspacePath(path, RootPolicy::kReject);
  if (!norm || *norm != path) return std::nullopt;
  const auto slash = path.rfind('/');
  std::string parent = slash == std::string_view::npos ? "" : std::string(path.substr(0, slash));
  std::string name(slash == std::string_view::npos ? path : path.substr(slash + 1));
  if (!IsWorkspaceTempName(name)) return std::nullopt;
  return std::make_pair(std::move(parent), std::move(name));
}

Result<UniqueFd> PendingWrites::CreateJournal() {
  // Close-on-exec: the supervisor hands it to the one writer on a chosen descriptor number
  // (dup2 clears the flag there) and to nothing else it starts.
  UniqueFd fd(static_cast<int>(::syscall(SYS_memfd_create, "anvil-pending-writes", MFD_CLOEXEC)));
  if (!fd) return SysFail("internal", "memfd_create for the pending-writes journal");
  return fd;
}

PendingWrites::Slot& PendingWrites::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    if (owner_ != nullptr) owner_->Release(index_);
    owner_ = other.owner_;
    index_ = other.index_;
    other.owner_ = nullptr;
  }
  return *this;
}

PendingWrites::Slot::~Slot() {
  if (owner_ != nullptr) owner_->Release(index_);
}

Status PendingWrites::Slot::Set(std::string_view relative_path) {
  if (owner_ == nullptr) return Ok();
  if (relative_path.size() > kPendingSlotBytes - kHeader) {
    return Fail("invalid", "path too long to record a temporary file beside it");
  }
  return owner_->WriteSlot(index_, EncodePendingSlot(relative_path));
}

PendingWrites::Slot PendingWrites::Claim() {
  std::lock_guard<std::mutex> lock(mu_);
  for (std::size_t i = 0; i < busy_.size(); ++i) {
    if (!busy_[i]) {
      busy_[i] = true;
      return Slot(this, i);
    }
  }
  busy_.push_back(true);
  return Slot(this, busy_.size() - 1);
}

Status PendingWrites::WriteSlot(std::size_t index, std::string_view bytes) {
  // A slot past the bound would never be swept: the write fails instead of leaving a name.
  if (index >= kMaxPendingSlots) {
    return Fail("limit", "more than " + std::to_string(kMaxPendingSlots) +
                             " writes in flight at once (fix: write fewer files concurrently)");
  }
  const off_t at = static_cast<off_t>(index * kPendingSlotBytes);
  while (true) {
    const ssize_t n = ::pwrite(journal_.Get(), bytes.data(), bytes.size(), at);
    if (n == static_cast<ssize_t>(bytes.size())) return Ok();
    if (n < 0 && errno == EINTR) continue;
    return SysFail("io", "cannot record a temporary file's name in the pending-writes journal");
  }
}

void PendingWrites::Release(std::size_t index) {
  // Clearing is best effort: a slot left set names a file that is already gone (renamed or
  // removed), which the sweep skips.
  // A slot past the bound was never written (WriteSlot refused it): clearing it would grow
  // the journal past what the sweep reads.
  if (index < kMaxPendingSlots) {
    const char zero = 0;
    ssize_t ignored =
        ::pwrite(journal_.Get(), &zero, 1, static_cast<off_t>(index * kPendingSlotBytes));
    (void)ignored;
  }
  std::lock_guard<std::mutex> lock(mu_);
  busy_[index] = false;
}

Result<std::size_t> SweepPendingWrites(int journal, const std::string& workspace,
                                       std::size_t* slots_read) {
  if (slots_read != nullptr) *slots_read = 0;
  struct stat st {};
  if (::fstat(journal, &st) != 0) return SysFail("internal", "fstat pending-writes journal");
  if (st.st_size <= 0) return std::size_t{0};
  UniqueFd root(::open(workspace.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return SysFail("io", "open workspace " + QuotePathForMessage(workspace));
  std::size_t removed = 0;
  std::string slot(kPendingSlotBytes, '\0');
  // The size comes from the writer, which may be compromised: never more than the bound.
  constexpr off_t kMaxBytes = static_cast<off_t>(kMaxPendingSlots * kPendingSlotBytes);
  const off_t end = st.st_size < kMaxBytes ? st.st_size : kMaxBytes;
  for (off_t at = 0; at < end; at += static_cast<off_t>(kPendingSlotBytes)) {
    const ssize_t n = ::pread(journal, slot.data(), slot.size(), at);
    if (n <= 0) break;
    if (slots_read != nullptr) ++*slots_read;
    auto parsed = ParsePendingSlot(std::string_view(slot.data(), static_cast<std::size_t>(n)));
    if (!parsed) continue;
    const auto& [parent, name] = *parsed;
    UniqueFd dir;
    if (parent.empty()) {
      dir.Reset(::fcntl(root.Get(), F_DUPFD_CLOEXEC, 0));
    } else {
      open_how how{};
      how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
      how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
      dir.Reset(
          static_cast<int>(::syscall(SYS_openat2, root.Get(), parent.c_str(), &how, sizeof how)));
    }
    if (!dir) continue;
    struct stat file {};
    if (::fstatat(dir.Get(), name.c_str(), &file, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISREG(file.st_mode)) continue;
    if (::unlinkat(dir.Get(), name.c_str(), 0) == 0) ++removed;
  }
  if (::ftruncate(journal, 0) != 0) return SysFail("internal", "truncate pending-writes journal");
  return removed;
}

}  // namespace anvil
