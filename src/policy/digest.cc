#include "policy/digest.h"

#include <sodium.h>

#include <algorithm>

namespace anvil {

std::string Sha256Hex(std::string_view bytes) {
  // libsodium's SHA-256 is portable C with no run-time dispatch: it needs no sodium_init(),
  // so it also works where a process can no longer call getrandom(2).
  unsigned char digest[crypto_hash_sha256_BYTES];
  const unsigned int length = crypto_hash_sha256_BYTES;
  if (crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(bytes.data()),
                         bytes.size()) != 0) {
    return {};
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0x0f];
  }
  return out;
}

bool IsSha256Hex(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace anvil
