// The closed set of Anvil's error codes: the stable prefix of every failure ("denied: ...") that
// users, plugins and scripts see (INTERFACES.md). An Error can only be made with one of them: a
// code written as a literal (Fail("denied", ...), Error{"io", ...}) is checked at compile time,
// so a misspelt or new code fails the build until it is added here and to docs/protocol.md
// ("Error codes"; tests/unit/error_code_test.cc checks the two lists are the same). A code read
// from another process goes through ErrorCode::FromWire.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace anvil {

enum class Code : uint8_t {
  kDenied,
  kInvalid,
  kNotFound,
  kNotExecutable,
  kLimit,
  kTimeout,
  kCancelled,
  kBusy,
  kStale,
  kIo,
  kNet,
  kSandbox,
  kInternal,
  kError,
  kCrashed,
  kUnavailable,
  kConsentRequired,
};

struct CodeName {
  Code code;
  std::string_view wire;
};

// Every code and its wire string, in the order docs/protocol.md lists them.
inline constexpr CodeName kCodeNames[] = {
    {Code::kDenied, "denied"},
    {Code::kInvalid, "invalid"},
    {Code::kNotFound, "not_found"},
    {Code::kNotExecutable, "not_executable"},
    {Code::kLimit, "limit"},
    {Code::kTimeout, "timeout"},
    {Code::kCancelled, "cancelled"},
    {Code::kBusy, "busy"},
    {Code::kStale, "stale"},
    {Code::kIo, "io"},
    {Code::kNet, "net"},
    {Code::kSandbox, "sandbox"},
    {Code::kInternal, "internal"},
    {Code::kError, "error"},
    {Code::kCrashed, "crashed"},
    {Code::kUnavailable, "unavailable"},
    {Code::kConsentRequired, "consent_required"},
};

// The codes a plugin may raise itself and keep: "denied: not yours" thrown from Lua or JS stays
// `denied` (host/lua_runtime.cc, host/js_runtime.cc); any other prefix is part of a plugin
// error's message. In the order the runtimes try them; docs/plugin-api.md lists the same set
// (tests/unit/error_code_test.cc).
inline constexpr Code kPluginCodes[] = {
    Code::kDenied,    Code::kInvalid, Code::kNotFound, Code::kLimit, Code::kTimeout,
    Code::kCancelled, Code::kStale,   Code::kBusy,     Code::kIo,
};

constexpr std::optional<Code> CodeFromWire(std::string_view wire) {
  for (const CodeName& n : kCodeNames) {
    if (n.wire == wire) return n.code;
  }
  return std::nullopt;
}

constexpr std::string_view WireName(Code code) {
  for (const CodeName& n : kCodeNames) {
    if (n.code == code) return n.wire;
  }
  return "internal";
}

// One code as a call site names it. From a literal only at compile time (an unknown literal does
// not compile); from anything read at run time only through FromWire.
class ErrorCode {
 public:
  consteval ErrorCode(const char* wire) : code_(Checked(wire)) {}  // NOLINT: implicit on purpose
  constexpr ErrorCode(Code code) : code_(code) {}                  // NOLINT
  // A code read from another process or a file; unknown text is `fallback`.
  static constexpr ErrorCode FromWire(std::string_view wire, Code fallback = Code::kError) {
    return ErrorCode(CodeFromWire(wire).value_or(fallback));
  }
  constexpr Code code() const { return code_; }
  constexpr std::string_view wire() const { return WireName(code_); }

 private:
  static consteval Code Checked(const char* wire) {
    auto code = CodeFromWire(wire);
    if (!code) UnknownErrorCode();  // not a constant expression: the build fails here
    return *code;
  }
  static void UnknownErrorCode() {}
  Code code_;
};

}  // namespace anvil
