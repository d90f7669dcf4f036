// ASCII-only case folding for protocol text (host names, header names, DNS labels): unlike
// std::tolower it ignores the locale and never touches bytes >= 0x80.
#pragma once

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

}  // namespace anvil
