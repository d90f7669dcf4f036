// The names of temporary files that a write has given a directory entry but not yet renamed
// into place. WorkspaceRoot::Write prefers an anonymous O_TMPFILE, but the rename that replaces
// the final name atomically needs a name: between linkat and renameat a writer killed with
// SIGKILL would leave `.anvil-tmp-<hex>` in the user's directory. So the writer records the
// temporary's workspace-relative path in a journal before the name exists and clears it once
// the name is gone; the journal is a memfd owned by the process that supervises the writer
// (the session, for the gateway), which sweeps what is recorded after the writer has exited,
// before a new writer starts.
//
// What the sweep removes is bounded by what it checks, not by what the journal says: only a
// regular file whose own name has the temporary pattern, found beneath the workspace without
// following a symlink. A journal scribbled on by a compromised writer can make it remove at most
// such a file, which that writer could have removed itself.
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace anvil {

// `.anvil-tmp-` followed by 16 lowercase hex digits: the only names WorkspaceRoot gives
// temporaries, and the only names a sweep removes.
inline constexpr std::string_view kWorkspaceTempPrefix = ".anvil-tmp-";
bool IsWorkspaceTempName(std::string_view name);

// One journal slot's bytes -> the workspace-relative (parent, name) it records, or nullopt for
// an empty or malformed slot. Pure; the parent is "" for the workspace root.
std::optional<std::pair<std::string, std::string>> ParsePendingSlot(std::string_view slot);
// The bytes of a slot recording `relative_path` (parent "/" name, or a bare name).
std::string EncodePendingSlot(std::string_view relative_path);
inline constexpr std::size_t kPendingSlotBytes = 8192;
// At most this many slots, so at most this many writes in flight at once per writer: far more
// than any gateway's concurrency (its requests are bounded well below it). The sweep reads no
// slot beyond it: a writer could otherwise ftruncate the journal to 2^62 bytes and keep the
// supervisor, which sweeps inline, reading zeros for ever. A journal longer than the bound is
// garbage past it, skipped and then truncated with the rest.
inline constexpr std::size_t kMaxPendingSlots = 4096;

// The writer's side. Thread-safe: each in-flight write holds its own slot.
class PendingWrites {
 public:
  // A new, empty journal for a supervisor to keep and hand to a writer.
  static Result<UniqueFd> CreateJournal();
  explicit PendingWrites(UniqueFd journal) : journal_(std::move(journal)) {}
  PendingWrites(const PendingWrites&) = delete;
  PendingWrites& operator=(const PendingWrites&) = delete;

  // A claimed slot. Set() records a path before the name is created; the destructor clears it
  // (after the caller has renamed or removed the name).
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept { *this = std::move(other); }
    Slot& operator=(Slot&& other) noexcept;
    ~Slot();
    Status Set(std::string_view relative_path);

   private:
    friend class PendingWrites;
    Slot(PendingWrites* owner, std::size_t index) : owner_(owner), index_(index) {}
    PendingWrites* owner_ = nullptr;
    std::size_t index_ = 0;
  };
  Slot Claim();

 private:
  Status WriteSlot(std::size_t index, std::string_view bytes);
  void Release(std::size_t index);

  UniqueFd journal_;
  std::mutex mu_;
  std::vector<bool> busy_;
};

// The supervisor's side, once the writer has exited: removes every recorded temporary still
// present beneath `workspace` and empties the journal. Returns how many were removed; a slot
// that names nothing removable is skipped, never an error. Reads at most kMaxPendingSlots slots
// (how many into `*slots_read` when given), whatever the journal's size.
Result<std::size_t> SweepPendingWrites(int journal, const std::string& workspace,
                                       std::size_t* slots_read = nullptr);

}  // namespace anvil
