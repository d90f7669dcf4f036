// Per-plugin capability tokens (T5): 256 random bits issued by the trusted side, registered
// with the gateway together with the host's pid and uid, compared in constant time.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace anvil::ipc {

inline constexpr size_t kTokenBytes = 32;

class CapabilityToken {
 public:
  static Result<CapabilityToken> Generate();  // getrandom(2)
  static Result<CapabilityToken> FromHex(std::string_view hex);
  const std::string& bytes() const { return bytes_; }  // raw, kTokenBytes long
  std::string Hex() const;

 private:
  explicit CapabilityToken(std::string bytes) : bytes_(std::move(bytes)) {}
  std::string bytes_;
};

// Time independent of where the inputs differ (length differences still return early: the
// length of a token is not a secret).
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace anvil::ipc
