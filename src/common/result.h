// Errors are values: every fallible operation returns Result<T>, carrying a stable code
// (the prefix users and plugins see, e.g. "denied", "invalid", "sandbox") and a message for
// people. No exceptions cross a process boundary or leave a sandbox set-up path.
#pragma once

#include <cerrno>
#include <string>
#include <string_view>
#include <tl/expected.hpp>
#include <utility>

#include "common/error_code.h"

namespace anvil {

struct Error {
  // The code from the closed set (common/error_code.h): a literal is checked at compile time.
  Error(ErrorCode code_, std::string message_, int sys_errno_ = 0, std::string trace_ = {})
      : code(code_.wire()),
        message(std::move(message_)),
        sys_errno(sys_errno_),
        trace(std::move(trace_)) {}

  std::string code;     // stable, machine-readable: "denied", "invalid", "not_found", ...
  std::string message;  // human explanation
  int sys_errno = 0;    // errno of the failed syscall, 0 when not a syscall failure
  // A plugin error's location and stack as JSON text (ipc/plugin_trace.h), made by the plugin
  // host and untrusted; empty for every other error. Not part of ToString().
  std::string trace = {};

  // "code: message" — the format INTERFACES.md promises for every failure.
  std::string ToString() const { return code + ": " + message; }
  // The code, to pass on with another message (Fail(e.error_code(), ...)).
  ErrorCode error_code() const { return ErrorCode::FromWire(code, Code::kInternal); }
};

template <class T>
using Result = tl::expected<T, Error>;
using Status = tl::expected<void, Error>;

inline tl::unexpected<Error> Fail(ErrorCode code, std::string message, int sys_errno = 0) {
  return tl::unexpected<Error>(Error{code, std::move(message), sys_errno});
}

// A failed syscall: message names the operation and the errno text.
tl::unexpected<Error> SysFail(ErrorCode code, std::string_view what, int sys_errno = errno);

inline Status Ok() { return {}; }

// Propagation, for a function that returns a Result or a Status:
//   ANVIL_TRY(fd, OpenSomething());       // declares `fd` (a Result); returns its error if any
//   ANVIL_RETURN_IF_ERROR(DoSomething());  // returns the Status's or Result's error if any
#define ANVIL_TRY(var, expr) \
  auto var = (expr);         \
  if (!var) return tl::unexpected(std::move(var).error())
#define ANVIL_RETURN_IF_ERROR(expr)                            \
  do {                                                         \
    if (auto anvil_status_ = (expr); !anvil_status_) {         \
      return tl::unexpected(std::move(anvil_status_).error()); \
    }                                                          \
  } while (false)

}  // namespace anvil
