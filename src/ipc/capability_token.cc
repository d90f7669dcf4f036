#include "ipc/capability_token.h"

#include <sys/random.h>

#include <cerrno>

namespace anvil::ipc {

Result<CapabilityToken> CapabilityToken::Generate() {
  std::string bytes(kTokenBytes, '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t n = getrandom(bytes.data() + got, bytes.size() - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return SysFail("internal", "getrandom");
    }
    got += static_cast<size_t>(n);
  }
  return CapabilityToken(std::move(bytes));
}

Result<CapabilityToken> CapabilityToken::FromHex(std::string_view hex) {
  if (hex.size() != 2 * kTokenBytes) return Fail("invalid", "token must be 64 hex digits");
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string bytes(kTokenBytes, '\0');
  for (size_t i = 0; i < kTokenBytes; ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return Fail("invalid", "token must be lower-case hex");
    bytes[i] = static_cast<char>(hi << 4 | lo);
  }
  return CapabilityToken(std::move(bytes));
}

std::string CapabilityToken::Hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes_.size() * 2);
  for (unsigned char c : bytes_) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  volatile unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = diff | static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

}  // namespace anvil::ipc
