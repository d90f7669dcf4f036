// ASCII-only case folding for protocol text (host names, header names, DNS labels): unlike
// std::tolower it ignores the locale and never touches bytes >= 0x80.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace anvil {

inline char AsciiLower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

inline std::string AsciiLower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = AsciiLower(c);
  return out;
}

// Untrusted text for a message a person reads in a terminal: printable ASCII as is, every other
// byte as \xHH (so no escape sequence survives), at most `max_shown` bytes, then "...".
inline std::string PrintableAscii(std::string_view text, std::size_t max_shown = 200) {
  constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < max_shown; ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x7f) {
      out += static_cast<char>(byte);
    } else {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    }
  }
  if (text.size() > max_shown) out += "...";
  return out;
}

}  // namespace anvil
