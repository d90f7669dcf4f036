// Shared helpers of the libFuzzer targets: an invariant check that aborts (so libFuzzer records
// the input as a crash), and a splitter for targets that take several strings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace anvil::fuzz {

// An invariant of the parser under test failed: print what and abort.
[[noreturn]] inline void InvariantFailed(const char* what, std::string_view detail) {
  std::fprintf(stderr, "INVARIANT FAILED: %s: %.*s\n", what, static_cast<int>(detail.size()),
               detail.data());
  std::abort();
}

inline void Require(bool ok, const char* what, std::string_view detail = {}) {
  if (!ok) InvariantFailed(what, detail);
}

inline std::string_view AsView(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits on `separator`; at most `max_parts` parts (the last keeps the rest, separators
// included).
inline std::vector<std::string> Split(std::string_view text, char separator,
                                      size_t max_parts = 1024) {
  std::vector<std::string> parts;
  while (parts.size() + 1 < max_parts) {
    size_t at = text.find(separator);
    if (at == std::string_view::npos) break;
    parts.emplace_back(text.substr(0, at));
    text.remove_prefix(at + 1);
  }
  parts.emplace_back(text);
  return parts;
}

}  // namespace anvil::fuzz
