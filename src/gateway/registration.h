// A capability token the trusted side registered over the control channel, and the meters that
// bound what its plugin may ask for. Shared by the control channel (which makes and revokes
// them), the transport (a connection is bound to one by hello) and the job queue.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

#include "common/unique_fd.h"
#include "gateway/admission.h"
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

struct Registration {
  std::string token;  // raw bytes
  ExpectedHost host;  // plugin, pid, uid, workspace: what admission checks the token's user against
  Grant grant;
  UniqueFd pidfd;  // closes when the host exits: the token is revoked then
  TokenBucket requests{0};
  TokenBucket bytes{0};
};

}  // namespace anvil::gateway
