// TOML plumbing shared by the manifest, lockfile and workspace-config parsers. Internal to
// src/policy: the public headers never expose toml++ types, so callers (and the host, which
// must stay small) do not compile or link the TOML parser.
//
// toml++ 3.3 reports syntax errors by throwing toml::parse_error; ParseToml is the one place
// that catches, so no exception leaves a parser and every failure is a Result.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

// toml++ 3.3 checks some of its own parser invariants with TOML_ASSERT_ASSUME, and one of them
// does not hold for hostile input: a table header whose key starts with a character that is not
// a key character ("[\x]") aborts a debug build (assert) and, under clang with NDEBUG, reaches
// __builtin_assume(false), i.e. undefined behaviour. The parser's ordinary error handling right
// after that check reports the input correctly, so compile the assertions out in every build
// type: NDEBUG is lifted for the include so TOML_ASSERT_ASSUME expands to TOML_ASSERT (our no-op)
// rather than to an assumption. Include toml++ only through this header, so every translation
// unit sees the same definitions.
#pragma push_macro("NDEBUG")
#undef NDEBUG
#define TOML_ASSERT(expr) static_cast<void>(0)
#include <toml++/toml.h>
#pragma pop_macro("NDEBUG")

#include "common/result.h"

namespace anvil::policy_internal {

// Parses `text` as TOML, refusing inputs over `max_bytes` before the parser sees them (a huge
// untrusted file must not cost unbounded memory). Errors: "invalid: <source>:<line>:<col>: ...".
Result<toml::table> ParseToml(std::string_view text, std::string_view source_name,
                              std::size_t max_bytes);

// "<source>:<line>:<col>" for a node or key; "<source>:1:1" when toml++ recorded no position
// (implicit tables), so every message still names a line.
std::string Where(std::string_view source_name, const toml::source_region& region);

// "<source>:<line>" — the shorter form used for Anvil.toml messages.
std::string WhereLine(std::string_view source_name, const toml::source_region& region);

// The region to report for a key/value pair: the key's own position when known, else the
// value's.
const toml::source_region& RegionOf(const toml::key& key, const toml::node& value);

// "string", "integer", "table", ... for "must be a string, not an integer" messages.
std::string_view TypeName(const toml::node& node);

// An error in the stable shape "invalid: <where>: <what> (fix: <fix>)".
tl::unexpected<Error> InvalidAt(const std::string& where, std::string_view what,
                                std::string_view fix);

// A bounded, escaped rendering of untrusted text for error messages ('...' quoted): control
// characters, escape sequences and bidi overrides are shown as \xNN instead of acting on the
// user's terminal.
std::string Quoted(std::string_view untrusted);

}  // namespace anvil::policy_internal
