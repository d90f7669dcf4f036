// `anvil serve --trace FILE`: every JSON-RPC message in both directions, one JSON line each
// ({"time", "dir": "in"|"out", "message"}), for client authors. The file is the user's own
// debugging aid, not a security log: it is opened without following a symlink, must be a
// regular file of the caller's, is 0600, and a failed write turns tracing off (with one warning)
// instead of breaking the session.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/unique_fd.h"

namespace anvil::session {

// Opens (creating 0600, or appending to) the trace file. Refuses a symlink as the last component
// (O_NOFOLLOW), anything but a regular file (a FIFO would block the session; opened
// non-blocking to find out), and a file another user owns; an existing file's mode is set to
// 0600. Errors name the file and the fix.
Result<UniqueFd> OpenRpcTrace(const std::string& path);

// One trace line, newline-terminated: {"time":"2026-05-01T12:00:00.123456Z","dir":"in",
// "message":{...}}. `message` is the JSON-RPC message as parsed (in) or sent (out); an input that
// was not JSON is recorded as {"error": text} instead.
std::string RpcTraceLine(std::chrono::system_clock::time_point time, std::string_view dir,
                         const nlohmann::json& message, bool is_error = false);

// RFC 3339 UTC with microseconds.
std::string Rfc3339Micros(std::chrono::system_clock::time_point time);

class RpcTrace {
 public:
  RpcTrace() = default;
  explicit RpcTrace(UniqueFd fd) : fd_(std::move(fd)) {}
  bool active() const { return static_cast<bool>(fd_); }
  // Appends one line. On a failed write the trace is closed and `false` returned once (the
  // caller warns); the session itself never sees the failure.
  bool Record(std::string_view dir, const nlohmann::json& message, bool is_error = false);

 private:
  UniqueFd fd_;
};

}  // namespace anvil::session
