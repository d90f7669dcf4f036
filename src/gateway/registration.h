// A capability token the trusted side registered over the control channel, and the meters that
// bound what its plugin may ask for. Shared by the control channel (which makes and revokes
// them), the transport (a connection is bound to one by hello) and the job queue.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"
#include "fs/workspace_root.h"
#include "gateway/admission.h"
#include "ipc/write_usage.h"
#include "policy/grant.h"

namespace anvil::gateway {

using Clock = std::chrono::steady_clock;

// Token bucket: `rate` per second, burst of one second's worth.
class TokenBucket {
 public:
  explicit TokenBucket(uint64_t rate) : rate_(static_cast<double>(rate)), tokens_(rate_) {}
  bool Take(double amount) {
    Refill();
    if (tokens_ < amount) return false;
    tokens_ -= amount;
    return true;
  }
  // Charges what was already served (a read's reply): the balance may go negative, and the
  // plugin's next requests wait until it has been paid back.
  void Charge(double amount) {
    Refill();
    tokens_ -= amount;
  }
  // Settles a reservation taken with Take (admission.h, QuotaReservation) against what was
  // served: the unused part is given back (never past a full bucket), the excess charged.
  void Settle(double reserved, double used) {
    Refill();
    tokens_ = std::min(rate_, tokens_ + reserved - used);
  }
  double capacity() const { return rate_; }

 private:
  void Refill() {
    auto now = Clock::now();
    tokens_ = std::min(rate_, tokens_ + rate_ * std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }
  double rate_;
  double tokens_;
  Clock::time_point last_ = Clock::now();
};

// What one plugin may add to the workspace in a session: the bytes its fs.write calls write and
// the entries (files, directories) its fs.write and fs.mkdir calls make. Kept per plugin id, not
// per registration, so a host that `anvil serve` starts again (after a crash, a deadline kill, a
// reload) goes on from what the plugin already used; and counted in the session's
// ipc::WriteUsageTable when the trusted side passed one, so a gateway started again (a widening,
// a crash, a kill -9) does too: what a call takes is charged there before it writes. Any thread.
class WriteBudget {
 public:
  // Counts kept here, for this gateway's life.
  WriteBudget(uint64_t max_bytes, uint64_t max_entries)
      : max_bytes_(max_bytes), max_entries_(max_entries), used_(&own_) {}
  // Counts kept in `used`, a slot of the session's table that outlives this gateway.
  WriteBudget(uint64_t max_bytes, uint64_t max_entries, ipc::WriteUsageSlot* used)
      : max_bytes_(max_bytes), max_entries_(max_entries), used_(used) {}
  WriteBudget(const WriteBudget&) = delete;
  WriteBudget& operator=(const WriteBudget&) = delete;
  // Takes both or neither; "limit" naming the cap when either would pass it.
  Status Take(uint64_t bytes, uint64_t entries) {
    if (!TakeFrom(used_->bytes, bytes, max_bytes_)) {
      return Fail("limit", "the plugin has written its cap of " + std::to_string(max_bytes_) +
                               " bytes for this session (fix: start a new session)");
    }
    if (!TakeFrom(used_->entries, entries, max_entries_)) {
      std::atomic_ref<uint64_t>(used_->bytes).fetch_sub(bytes);
      return Fail("limit", "the plugin has made its cap of " + std::to_string(max_entries_) +
                               " files and directories for this session (fix: start a new "
                               "session)");
    }
    return Ok();
  }
  // Gives back what a call took but did not write.
  void GiveBack(uint64_t bytes, uint64_t entries) {
    std::atomic_ref<uint64_t>(used_->bytes).fetch_sub(bytes);
    std::atomic_ref<uint64_t>(used_->entries).fetch_sub(entries);
  }
  // Counts what a call made beyond what it took (SettleWriteCharge), even past the cap: it is
  // made already, and the plugin's next call that would make or write anything is refused.
  void Charge(uint64_t bytes, uint64_t entries) {
    std::atomic_ref<uint64_t>(used_->bytes).fetch_add(bytes);
    std::atomic_ref<uint64_t>(used_->entries).fetch_add(entries);
  }

 private:
  static bool TakeFrom(uint64_t& counter, uint64_t n, uint64_t max) {
    std::atomic_ref<uint64_t> used(counter);
    uint64_t now = used.load();
    do {
      if (n > max || now > max - n) return false;
    } while (!used.compare_exchange_weak(now, now + n));
    return true;
  }
  const uint64_t max_bytes_, max_entries_;
  ipc::WriteUsageSlot own_;
  ipc::WriteUsageSlot* const used_;
};

// What an fs.write's charge becomes once the write says what it did. It took `bytes` and
// `charged_entries` (1 when the name looked missing before the write) from the budget. Data not
// in place gives everything back; data in place keeps its bytes whatever failed after it (a
// failed fsync of the directory: the file is there); its entry follows the rename's own verdict
// (WriteOutcome::created), not the look before it, which a concurrent rename or removal can
// make wrong.
struct WriteSettlement {
  uint64_t give_back_bytes = 0;
  uint64_t give_back_entries = 0;
  uint64_t more_entries = 0;  // charged with WriteBudget::Charge
};
inline WriteSettlement SettleWriteCharge(uint64_t bytes, uint64_t charged_entries,
                                         const WriteOutcome& did) {
  if (!did.placed) return {bytes, charged_entries, 0};
  const uint64_t made = did.created ? 1 : 0;
  return {0, charged_entries > made ? charged_entries - made : 0,
          made > charged_entries ? made - charged_entries : 0};
}

struct Registration {
  std::string token;  // raw bytes
  ExpectedHost host;  // plugin, pid, uid, workspace: what admission checks the token's user against
  Grant grant;
  UniqueFd pidfd;  // closes when the host exits: the token is revoked then
  TokenBucket requests{0};
  TokenBucket bytes{0};
  std::shared_ptr<WriteBudget> writes;  // shared by every registration of the plugin id
};

}  // namespace anvil::gateway
