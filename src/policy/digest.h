// SHA-256 as Anvil pins things with it (manifest hashes keying grants, anvil.lock): lower-case
// hex, 64 digits. One spelling only, so a hash compares equal as a string or not at all.
#pragma once

#include <string>
#include <string_view>

namespace anvil {

// Lower-case hex SHA-256 of `bytes` (libsodium). Returns "" only if the library fails; ""
// never equals a stored hash, because every stored hash passes IsSha256Hex, so such a failure
// can only refuse, never match.
std::string Sha256Hex(std::string_view bytes);

// Exactly 64 lower-case hex digits.
bool IsSha256Hex(std::string_view text);

}  // namespace anvil
