// A log file that several processes append whole lines to (the workspace's audit log: the
// gateway, `anvil exec` and the network proxy), kept under a size cap like logrotate's size
// policy, in place: the file keeps its name and every writer its descriptor, so no writer needs
// the right to create or rename files next to it (the hardened gateway has none).
//
// Every append takes an exclusive flock(2) of the file, waiting for it a bounded time only: any
// reader can take that lock, so one held longer is appended past (whole lines, none dropped). When
// the file would grow past the cap, its older lines are dropped first: what stays is the newest
// part of the file up to half the cap, from the start of a line, behind one marker line that says
// how many bytes were dropped
// ({"bytes":N,"op":"log.compacted","reason":...,"time":T,"verdict":"info"}). Then the new lines
// are appended whole. A line is never cut: a batch is written in pieces at line boundaries, and
// one line longer than half the cap is written whole (the file is then over the cap by at most
// that line until the next append). A crash in the middle of dropping leaves the kept lines, then
// some older ones again; never a record cut short by the cap.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/result.h"

namespace anvil {

// The workspace audit log's cap (`anvil-gateway --audit-log-max-bytes`, the same for `anvil
// exec` and the proxy): 32 MiB, of which at least the newest 16 MiB stay after a drop.
inline constexpr uint64_t kDefaultLogMaxBytes = uint64_t{32} << 20;
// The smallest cap: a line of the audit log is at most about 200 KiB (kMaxAuditFieldBytes per
// field, escaped).
inline constexpr uint64_t kMinLogMaxBytes = uint64_t{1} << 20;

// Appends `lines` (each ending in '\n'; a missing last newline is added) to `fd`, which must be
// open for reading and writing with O_APPEND, keeping the file under `max_bytes` as above.
// `max_bytes` below kMinLogMaxBytes counts as kMinLogMaxBytes. Errors: the failed syscall.
Status AppendCappedLines(int fd, std::string_view lines, uint64_t max_bytes = kDefaultLogMaxBytes);

}  // namespace anvil
