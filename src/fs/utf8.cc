#include "fs/utf8.h"

namespace anvil::fs_internal {
namespace {

constexpr bool InRange(unsigned char b, unsigned char lo, unsigned char hi) {
  return b >= lo && b <= hi;
}

}  // namespace

std::size_t DecodeUtf8(std::string_view text, std::size_t pos, char32_t* code_point) {
  if (pos >= text.size()) return 0;
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[pos + i]); };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) {
    *code_point = b0;
    return 1;
  }
  std::size_t len = 0;
  // The allowed range of the second byte carries the strictness: it excludes overlongs
  // (E0 80..9F, F0 80..8F), surrogates (ED A0..BF) and values above U+10FFFF (F4 90..BF).
  unsigned char lo = 0x80, hi = 0xbf;
  if (InRange(b0, 0xc2, 0xdf)) {
    len = 2;
  } else if (b0 == 0xe0) {
    len = 3;
    lo = 0xa0;
  } else if (b0 == 0xed) {
    len = 3;
    hi = 0x9f;
  } else if (InRange(b0, 0xe1, 0xef)) {
    len = 3;
  } else if (b0 == 0xf0) {
    len = 4;
    lo = 0x90;
  } else if (b0 == 0xf4) {
    len = 4;
    hi = 0x8f;
  } else if (InRange(b0, 0xf1, 0xf3)) {
    len = 4;
  } else {
    return 0;  // 80..C1 (continuation or overlong 2-byte lead), F5..FF
  }
  if (text.size() - pos < len) return 0;
  if (!InRange(byte(1), lo, hi)) return 0;
  for (std::size_t i = 2; i < len; ++i) {
    if (!InRange(byte(i), 0x80, 0xbf)) return 0;
  }
  char32_t c = b0 & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
  for (std::size_t i = 1; i < len; ++i) c = (c << 6) | (byte(i) & 0x3f);
  *code_point = c;
  return len;
}

}  // namespace anvil::fs_internal
