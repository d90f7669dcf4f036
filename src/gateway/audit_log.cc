#include "gateway/audit_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>

namespace anvil::gateway {

Result<AuditLog*> AuditLog::Open(const std::string& path, const std::string& session) {
  UniqueFd fd;
  if (!path.empty()) {
    fd.Reset(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) return SysFail("io", "open audit log " + path);
  }
  return new AuditLog(std::move(fd), session);
}

void AuditLog::Record(const AuditEntry& e) {
  auto now = std::chrono::system_clock::now();
  double ts = std::chrono::duration<double>(now.time_since_epoch()).count();
  nlohmann::json line = {{"time", ts},       {"session", session_},          {"plugin", e.plugin},
                         {"op", e.op},       {"target", e.target},           {"verdict", e.verdict},
                         {"bytes", e.bytes}, {"duration_us", e.duration_us}, {"id", e.request_id}};
  if (!e.code.empty()) line["code"] = e.code;
  if (!e.reason.empty()) line["reason"] = e.reason;
  // Targets and reasons come from plugins: dump() escapes control characters and replaces
  // invalid UTF-8, so one entry is always exactly one line; ensure_ascii escapes every other
  // non-ASCII character too (C1 controls, bidi overrides), so the file is safe to `cat` or
  // `tail -f` on a terminal.
  std::string text =
      line.dump(-1, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace);
  std::lock_guard lock(mutex_);
  pending_ += text;
  pending_ += '\n';
}

void AuditLog::Flush() {
  std::lock_guard lock(mutex_);
  if (pending_.empty()) return;
  if (fd_) {
    size_t off = 0;
    while (off < pending_.size()) {
      ssize_t n = ::write(fd_.Get(), pending_.data() + off, pending_.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
  }
  pending_.clear();
}

}  // namespace anvil::gateway
