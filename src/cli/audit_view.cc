#include "cli/audit_view.h"

#include <cmath>
#include <cstdio>
#include <ctime>

#include "policy/display_text.h"

namespace anvil::cli {
namespace {

using nlohmann::json;

constexpr char kSinceFix[] =
    " (fix: --since 2026-05-01T12:00:00Z, or relative: --since 30s, 10m, 2h, 7d)";

bool Digits(std::string_view s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

std::optional<double> ParseRfc3339(std::string_view s) {
  int year, month, day, hour, minute, second;
  if (!Digits(s, 0, 4, &year) || s.size() < 20 || s[4] != '-' || !Digits(s, 5, 2, &month) ||
      s[7] != '-' || !Digits(s, 8, 2, &day) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
      !Digits(s, 11, 2, &hour) || s[13] != ':' || !Digits(s, 14, 2, &minute) || s[16] != ':' ||
      !Digits(s, 17, 2, &second)) {
    return std::nullopt;
  }
  static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1 || day > kDays[month - 1] || hour > 23 || minute > 59 ||
      second > 60) {
    return std::nullopt;
  }
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (month == 2 && day == 29 && !leap) return std::nullopt;
  size_t pos = 19;
  double fraction = 0;
  if (pos < s.size() && s[pos] == '.') {
    double scale = 0.1;
    size_t start = ++pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9' && pos - start < 9) {
      fraction += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return std::nullopt;
  }
  int offset = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!Digits(s, pos + 1, 2, &oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !Digits(s, pos + 4, 2, &om) || oh > 23 || om > 59) {
      return std::nullopt;
    }
    offset = (s[pos] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    pos += 6;
  } else {
    return std::nullopt;  // RFC 3339 requires the offset: a bare local time is ambiguous
  }
  if (pos != s.size()) return std::nullopt;
  const int64_t days =
      DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  return static_cast<double>(days * 86400 + hour * 3600 + minute * 60 + second - offset) + fraction;
}

}  // namespace

Result<double> ParseAuditSince(std::string_view text, std::chrono::system_clock::time_point now) {
  if (text.empty()) return Fail("invalid", std::string("--since needs a time") + kSinceFix);
  const double now_s = std::chrono::duration<double>(now.time_since_epoch()).count();
  // Relative: digits and one unit.
  const char unit = text.back();
  if (text.size() >= 2 && text.size() <= 10 &&
      (unit == 's' || unit == 'm' || unit == 'h' || unit == 'd')) {
    int64_t n = 0;
    bool digits = true;
    for (char c : text.substr(0, text.size() - 1)) {
      if (c < '0' || c > '9') {
        digits = false;
        break;
      }
      n = n * 10 + (c - '0');
    }
    if (digits) {
      const int64_t scale = unit == 's' ? 1 : unit == 'm' ? 60 : unit == 'h' ? 3600 : 86400;
      return now_s - static_cast<double>(n * scale);
    }
  }
  if (auto t = ParseRfc3339(text)) return *t;
  return Fail("invalid", "--since " + SanitizeForDisplay(text, 64) +
                             " is neither an RFC 3339 time nor a relative one" + kSinceFix);
}

// A string field, "" when absent or of another type (a hand-edited or damaged log).
static std::string Str(const json& entry, const char* key) {
  auto it = entry.find(key);
  return it != entry.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool IsHousekeeping(const json& entry) {
  if (Str(entry, "verdict") != "allow") return false;
  const std::string op = Str(entry, "op");
  return op == "register" || op == "revoke" || op == "hello" || op == "connect" || op == "ping";
}

bool AuditMatches(const json& entry, const AuditFilter& f) {
  if (!entry.is_object()) return false;
  if (!f.all && IsHousekeeping(entry)) return false;
  if (f.plugin && Str(entry, "plugin") != *f.plugin) return false;
  if (f.denied && Str(entry, "verdict") != "deny") return false;
  if (f.since) {
    auto it = entry.find("time");
    if (it == entry.end() || !it->is_number() || it->get<double>() < *f.since) return false;
  }
  return true;
}

std::string FormatAuditLine(const json& j) {
  std::string when = "?";
  if (auto it = j.find("time"); it != j.end() && it->is_number()) {
    const double t = it->get<double>();
    if (std::isfinite(t) && t >= 0 && t < 253402300800.0) {  // before year 10000
      std::time_t secs = static_cast<std::time_t>(t);
      int ms = static_cast<int>((t - static_cast<double>(secs)) * 1000);
      std::tm tm{};
      gmtime_r(&secs, &tm);
      char buf[96];
      std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
      when = buf;
    }
  }
  // Every field came from a plugin or the file itself: shown sanitized, whatever its type (a
  // hand-edited or damaged log must not stop the listing, nor reach the terminal).
  auto field = [&](const char* key, size_t max) {
    auto it = j.find(key);
    if (it == j.end()) return std::string();
    return SanitizeForDisplay(it->is_string()
                                  ? it->get_ref<const std::string&>()
                                  : it->dump(-1, ' ', false, json::error_handler_t::replace),
                              max);
  };
  std::string verdict = field("verdict", 16);
  std::string out = when + "  " + (verdict.empty() ? "?" : verdict) + "\t" + field("plugin", 200) +
                    "\t" + field("op", 64) + "\t" + field("target", 200);
  if (j.contains("reason")) out += "\t" + field("reason", 300);
  return out;
}

}  // namespace anvil::cli
