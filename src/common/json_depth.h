// JSON from another process or a damaged file, parsed with its nesting bounded. nlohmann's parser
// keeps its own stack and takes any depth, but dump() and every recursive walk do not: a value
// of a million nested arrays (a compromised plugin host's result, an editor's JSON-RPC message,
// a line of a damaged audit log) parses fine and then overflows the stack of the process that
// prints or forwards it. Every trusted process parses such text through ParseBoundedJson, so
// nothing deeper than kMaxJsonNesting is ever held as a value.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

namespace anvil {

// Arrays and objects inside one another, counted from the outermost (1). Far above what an
// honest peer sends (plugin values stop at 64 in Lua and at the VM's stack in JS) and far
// below what the recursive routines' stacks can take.
inline constexpr std::size_t kMaxJsonNesting = 512;

// Whether `text` opens more than `max` arrays/objects inside one another. Brackets inside
// strings do not count (escapes followed). A linear scan without allocation; for text that is
// not JSON the answer is meaningless but the call is safe.
bool JsonNestsDeeperThan(std::string_view text, std::size_t max);

// nlohmann::json::parse without exceptions, except that text nested deeper than `max` is
// refused like text that is not JSON: the result is discarded (is_discarded()). `too_deep`,
// when given, says that this was the reason.
nlohmann::json ParseBoundedJson(std::string_view text, bool* too_deep = nullptr,
                                std::size_t max = kMaxJsonNesting);

}  // namespace anvil
