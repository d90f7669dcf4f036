// The session audit log: one JSON line per decision (T1-T6 "every denial is an audit line with
// its reason"). Lines are buffered and written in batches, one append each: the main loop's
// once per turn, an I/O thread's once it is about to wait or after a few events in a row
// (server.h), so a burst costs one syscall; a thread that finds another one writing leaves its
// lines to that one while less than kMaxHandedOffBytes wait. A crash loses what is not written
// yet: the batches in progress, answers to plugins (denials too) already sent; an answer on the
// control channel is sent only after the lines recorded before it. The file is kept
// under a cap (common/capped_log.h: the newest lines stay, a marker line tells how much was
// dropped), so a plugin making many small allowed calls cannot grow it without bound.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "common/capped_log.h"
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

// The most bytes of one string field a line keeps. The op, the target and the reason come from
// plugins (as sent, or quoted in an error): a field longer than this is cut on a character
// boundary and ends with " ... (cut: N bytes in all)", so that a request refused on sight cannot
// write megabytes to the log. A workspace path (at most 4095 bytes) is never cut.
inline constexpr size_t kMaxAuditFieldBytes = 8192;

// One entry as its line (without the newline): a JSON object with the keys in sorted order, every
// string escaped as nlohmann::json's dump(ensure_ascii, replace) escapes it (control characters,
// every non-ASCII character as \uXXXX, invalid UTF-8 as U+FFFD), so the file is plain ASCII and
// one entry is always one line. Strings of printable ASCII, the common case, are copied without
// building a JSON value.
std::string FormatAuditLine(const AuditEntry& entry, std::string_view session, double time);

class AuditLog {
 public:
  // Opens `path` for appending (created 0600). An empty path discards entries. The file is
  // kept under `max_bytes` (AppendCappedLines).
  static Result<AuditLog*> Open(const std::string& path, const std::string& session,
                                uint64_t max_bytes = kDefaultLogMaxBytes);
  // Appends the entry's line to what the next Flush writes (any thread; never waits for a write).
  void Record(const AuditEntry& entry);
  // Record in two steps: the line (stamped now) made where no lock is held, appended later
  // where its order matters.
  std::string Line(const AuditEntry& entry) const;
  void Append(std::string_view line);
  // Writes what was recorded so far; batches leave in the order they were recorded.
  void Flush();
  // Flush, unless another thread is writing and less than kMaxHandedOffBytes wait: that thread
  // then writes these lines too before it lets go (what an I/O thread does once it is about to
  // wait, so that it never waits for another's write while that write keeps up).
  void FlushOrHandOff();
  static constexpr size_t kMaxHandedOffBytes = 1u << 20;

 private:
  AuditLog(UniqueFd fd, std::string session, uint64_t max_bytes)
      : fd_(std::move(fd)), session_(std::move(session)), max_bytes_(max_bytes) {}
  // Writes what is pending until nothing is, then lets go of write_mutex_ (held); takes it
  // again when lines came meanwhile from a thread that handed them off, and it is free.
  void WritePending(std::unique_lock<std::mutex>& writing);
  std::mutex mutex_;        // pending_
  std::mutex write_mutex_;  // writing_ and the order of writes; taken before mutex_
  UniqueFd fd_;
  std::string session_;
  uint64_t max_bytes_;
  std::string pending_;  // recorded, not yet taken by Flush
  std::string writing_;  // the batch Flush is writing
};

}  // namespace anvil::gateway
