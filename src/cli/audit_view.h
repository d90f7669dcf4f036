// `anvil audit`: which lines of the audit log to show and how (pure; run_command.cc reads the
// file). The log is written by the gateway (gateway/audit_log.cc), one JSON object a line,
// with plugin-supplied targets and reasons: everything shown is sanitized.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace anvil::cli {

struct AuditFilter {
  std::optional<std::string> plugin;  // --plugin ID: this plugin id only
  std::optional<double> since;        // --since: entries at or after (seconds since the epoch)
  bool denied = false;                // --denied: verdict "deny" only
  bool all = false;                   // --all: housekeeping lines too
};

// --since's value: RFC 3339 ("2026-05-01T12:00:00Z", "...12:00:00.5+02:00", a space for the T)
// or relative to `now` ("90s", "10m", "2h", "7d"). Errors say what was wrong and `fix:`.
Result<double> ParseAuditSince(std::string_view text, std::chrono::system_clock::time_point now);

// The session's own bookkeeping rather than a plugin's doing: a host registered or revoked,
// a connection accepted, hello, ping, each allowed. Their denials are never housekeeping.
bool IsHousekeeping(const nlohmann::json& entry);

bool AuditMatches(const nlohmann::json& entry, const AuditFilter& filter);

// One line for people: "2026-05-01T12:00:00.123Z  deny  plugin  op  target  reason", without
// the newline; every plugin-supplied field sanitized.
std::string FormatAuditLine(const nlohmann::json& entry);

}  // namespace anvil::cli
