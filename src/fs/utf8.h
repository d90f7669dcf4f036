// Strict UTF-8 decoding shared by path validation and glob matching. Internal to src/fs.
#pragma once

#include <cstddef>
#include <string_view>

namespace anvil::fs_internal {

// Decodes the code point starting at text[pos]. Returns its length in bytes (1..4) and stores it
// in *code_point, or returns 0 when the bytes there are not strict UTF-8 (RFC 3629): overlong
// forms, UTF-16 surrogates, values above U+10FFFF, truncated sequences and stray continuation
// bytes are all rejected. Overlongs matter because "\xc0\xae" would otherwise be a second
// spelling of '.', and a second spelling is how a check and a use disagree.
std::size_t DecodeUtf8(std::string_view text, std::size_t pos, char32_t* code_point);

// C0 controls, DEL and C1 controls: terminal escape injection and audit-line forgery.
constexpr bool IsControl(char32_t c) { return c < 0x20 || (c >= 0x7f && c <= 0x9f); }

// Bidirectional formatting characters ("Trojan Source"): a name containing U+202E can display
// as a different, harmless-looking path in a permission prompt or an audit line.
constexpr bool IsBidiControl(char32_t c) {
  return c == 0x061c || c == 0x200e || c == 0x200f || (c >= 0x202a && c <= 0x202e) ||
         (c >= 0x2066 && c <= 0x2069);
}

}  // namespace anvil::fs_internal
