#include "fs/workspace_path.h"

#include <cstdio>

#include "fs/utf8.h"

namespace anvil {
namespace {

using fs_internal::DecodeUtf8;
using fs_internal::IsBidiControl;
using fs_internal::IsControl;

constexpr std::size_t kMaxQuotedBytes = 200;

std::string Hex(unsigned char b) {
  char buf[5];
  std::snprintf(buf, sizeof buf, "\\x%02x", b);
  return buf;
}

std::string CodePointName(char32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(c));
  return buf;
}

tl::unexpected<Error> Invalid(std::string_view what, std::string_view raw) {
  return Fail("invalid", std::string(what) + ": " + QuotePathForMessage(raw));
}

// Checks bytes, encoding and characters of a path or a single name (no '/' rules).
Status ValidateCharacters(std::string_view raw) {
  for (std::size_t i = 0; i < raw.size();) {
    char32_t c = 0;
    const std::size_t len = DecodeUtf8(raw, i, &c);
    if (len == 0) {
      // Paths travel as JSON strings, grants match code points, and terminals render them:
      // bytes with no single meaning are refused instead of guessed at.
      return Invalid("path is not valid UTF-8 (at byte " + std::to_string(i) + ")", raw);
    }
    if (c == 0) {
      // C strings stop at NUL: "ok.txt\0../../x" would be checked in full and opened truncated.
      return Invalid("path contains a NUL byte", raw);
    }
    if (IsControl(c)) {
      return Invalid("path contains a control character (" + CodePointName(c) + ")", raw);
    }
    if (IsBidiControl(c)) {
      return Invalid(
          "path contains a bidirectional formatting character (" + CodePointName(c) + ")", raw);
    }
    i += len;
  }
  return Ok();
}

Status ValidateComponentShape(std::string_view component, std::string_view raw) {
  if (component.empty()) {
    // "a//b" and "a/" are accepted by the kernel as other spellings of "a/b" and "a": a second
    // spelling is a second string for a grant glob to disagree about.
    return Invalid("empty path component", raw);
  }
  if (component == ".") return Invalid("'.' component in path", raw);
  if (component == "..") return Invalid("'..' component in path", raw);
  if (component.size() > kMaxPathComponentBytes) {
    return Invalid("path component over " + std::to_string(kMaxPathComponentBytes) + " bytes", raw);
  }
  return Ok();
}

}  // namespace

bool IsValidUtf8(std::string_view text) { return !FirstInvalidUtf8Byte(text).has_value(); }

std::optional<std::size_t> FirstInvalidUtf8Byte(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    // ASCII runs are most text: skip them without decoding.
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    char32_t c = 0;
    const std::size_t len = DecodeUtf8(text, i, &c);
    if (len == 0) return i;
    i += len;
  }
  return std::nullopt;
}

Result<std::string> NormalizeWorkspacePath(std::string_view raw, RootPolicy root) {
  if (raw.empty()) return Fail("invalid", "empty path");
  // Bound the work (and the size of any message) before looking at the bytes.
  if (raw.size() > kMaxWorkspacePathBytes) {
    return Fail("invalid", "path over " + std::to_string(kMaxWorkspacePathBytes) + " bytes");
  }
  if (raw.front() == '/') {
    // An absolute path ignores the root fd entirely (and RESOLVE_BENEATH would refuse it anyway);
    // rejecting it here gives the plugin a clear message and keeps /proc/self/... unnameable.
    return Invalid("absolute path", raw);
  }
  ANVIL_RETURN_IF_ERROR(ValidateCharacters(raw));
  if (raw == kWorkspaceRootPath) {
    if (root == RootPolicy::kAllow) return std::string(kWorkspaceRootPath);
    return Invalid("the workspace root itself is not a valid target", raw);
  }
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = raw.find('/', start);
    const std::string_view component =
        raw.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    ANVIL_RETURN_IF_ERROR(ValidateComponentShape(component, raw));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return std::string(raw);
}

Status ValidatePathComponent(std::string_view name) {
  if (name.find('/') != std::string_view::npos) return Invalid("name contains '/'", name);
  ANVIL_RETURN_IF_ERROR(ValidateComponentShape(name, name));
  return ValidateCharacters(name);
}

std::pair<std::string_view, std::string_view> SplitParent(std::string_view normalized) {
  const std::size_t slash = normalized.rfind('/');
  if (slash == std::string_view::npos) return {kWorkspaceRootPath, normalized};
  return {normalized.substr(0, slash), normalized.substr(slash + 1)};
}

std::string QuotePathForMessage(std::string_view raw) {
  std::string out;
  const bool truncated = raw.size() > kMaxQuotedBytes;
  if (truncated) raw = raw.substr(0, kMaxQuotedBytes);
  for (std::size_t i = 0; i < raw.size();) {
    char32_t c = 0;
    const std::size_t len = DecodeUtf8(raw, i, &c);
    if (len == 0 || IsControl(c) || IsBidiControl(c)) {
      out += Hex(static_cast<unsigned char>(raw[i]));
      ++i;
      continue;
    }
    if (c == '\\') {
      out += "\\\\";  // keeps "\x1b" (four characters in a name) distinct from an escaped byte
    } else {
      out.append(raw.substr(i, len));
    }
    i += len;
  }
  if (truncated) out += "...";
  return out;
}

}  // namespace anvil
