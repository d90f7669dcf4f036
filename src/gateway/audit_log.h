// The session audit log: one JSON line per decision (T1-T6 "every denial is an audit line with
// its reason"). Each gateway thread formats its lines into a buffer of its own (no lock on the
// request path) and writes that buffer with one O_APPEND write per event-loop turn, before the
// turn's replies are sent: a plugin never sees an answer whose decision is not in the log, and
// a crash loses at most the turn in progress.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"

namespace anvil::gateway {

struct AuditEntry {
  std::string plugin;
  std::string op;
  std::string target;
  std::string verdict;  // "allow", "deny", "error", "busy", "cancelled"
  std::string code;     // stable code for non-allow verdicts ("denied", "invalid", ...)
  std::string reason;
  uint64_t bytes = 0;
  uint64_t duration_us = 0;
  uint64_t request_id = 0;
};

class AuditLog {
 public:
  // Opens `path` for appending (created 0600). An empty path discards entries.
  static Result<AuditLog*> Open(const std::string& path, const std::string& session);
  // Appends the entry's line to `buffer`, a buffer owned by the calling thread.
  void Format(const AuditEntry& entry, std::string& buffer) const;
  // Writes `buffer` to the log and clears it. Any thread: the file is opened O_APPEND, so each
  // write(2) lands whole after whatever the other threads wrote, never inside one of their lines.
  void Write(std::string& buffer) const;

 private:
  AuditLog(UniqueFd fd, std::string session) : fd_(std::move(fd)), session_(std::move(session)) {}
  UniqueFd fd_;
  std::string session_;
};

}  // namespace anvil::gateway
