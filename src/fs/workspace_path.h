// Validation of a plugin-supplied workspace path (threat model T1), done as a pure function
// BEFORE any syscall sees the path. A path that passes has exactly one spelling: relative,
// '/'-separated, no empty, "." or ".." components, strict UTF-8 without control characters,
// within PATH_MAX/NAME_MAX. Because nothing is rewritten, the string the grant globs are checked
// against is byte for byte the string openat2 resolves — there is no second interpretation for
// an attacker to exploit.
#pragma once

#include <climits>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/result.h"

namespace anvil {

// The normalized name of the workspace root itself (what openat2 resolves relative to the root
// fd, and what only all-"**" grants match).
inline constexpr std::string_view kWorkspaceRootPath = ".";

// PATH_MAX counts the terminating NUL; NAME_MAX does not.
inline constexpr std::size_t kMaxWorkspacePathBytes = PATH_MAX - 1;
inline constexpr std::size_t kMaxPathComponentBytes = NAME_MAX;

enum class RootPolicy {
  kReject,  // the path must name something beneath the root (write, mkdir, remove, rename)
  kAllow,   // "." names the root itself (list, stat)
};

// Returns the normalized path (the input itself when valid; "." for the root under kAllow) or
// an "invalid" error whose message says what was wrong. Rejected: empty path, absolute path,
// empty components ("a//b", trailing "/"), "." and ".." components, NUL, bytes that are not
// strict UTF-8 (overlong forms, surrogates, code points above U+10FFFF, truncated or stray
// bytes), C0/C1 control characters and DEL, bidirectional formatting characters, a path over
// kMaxWorkspacePathBytes or a component over kMaxPathComponentBytes.
Result<std::string> NormalizeWorkspacePath(std::string_view raw,
                                           RootPolicy root = RootPolicy::kReject);

// One plain file name (no '/'), under the same rules as a path component.
Status ValidatePathComponent(std::string_view name);

// Strict UTF-8 (RFC 3629): no overlong encodings, no surrogates, nothing above U+10FFFF.
bool IsValidUtf8(std::string_view text);
// The offset of the first byte where `text` stops being strict UTF-8; nullopt when it is.
std::optional<std::size_t> FirstInvalidUtf8Byte(std::string_view text);

// Splits a normalized, non-root path into (parent, final name); the parent is "." when the
// path has a single component.
std::pair<std::string_view, std::string_view> SplitParent(std::string_view normalized);

// A printable rendering of an untrusted path for error messages and audit lines: printable
// ASCII as is, every other byte as \xNN, truncated to a bounded length. Stops a hostile name from
// injecting escape sequences into the user's terminal or forging audit lines.
std::string QuotePathForMessage(std::string_view raw);

}  // namespace anvil
