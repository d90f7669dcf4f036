#include "gateway/audit_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <nlohmann/json.hpp>

namespace anvil::gateway {

Result<AuditLog*> AuditLog::Open(const std::string& path, const std::string& session,
                                 uint64_t max_bytes) {
  UniqueFd fd;
  if (!path.empty()) {
    // Read and write: dropping older lines (AppendCappedLines) reads what it keeps.
    fd.Reset(::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) return SysFail("io", "open audit log " + path);
  }
  return new AuditLog(std::move(fd), session, max_bytes);
}

namespace {

// Appends `text` as a JSON string. Targets and reasons come from plugins: anything but printable
// ASCII (control characters, invalid UTF-8, C1 controls, bidi overrides) goes through
// nlohmann::json's own escaping, so that the bytes written are exactly what it writes.
void PutString(std::string& out, std::string_view text) {
  std::string cut;
  if (text.size() > kMaxAuditFieldBytes) {
    size_t end = kMaxAuditFieldBytes;
    // Back to the start of a UTF-8 character (a continuation byte is 10xxxxxx).
    for (int i = 0; i < 3 && end > 0 && (static_cast<unsigned char>(text[end]) & 0xc0) == 0x80;
         ++i) {
      --end;
    }
    cut.assign(text.substr(0, end));
    cut += " ... (cut: " + std::to_string(text.size()) + " bytes in all)";
    text = cut;
  }
  bool plain = true;
  for (unsigned char ch : text) plain = plain && ch >= 0x20 && ch < 0x7f;
  if (!plain) {
    out += nlohmann::json(std::string(text))
               .dump(-1, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace);
    return;
  }
  out += '"';
  for (char ch : text) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  out += '"';
}

void PutKey(std::string& out, std::string_view key) {
  out += out.size() == 1 ? "\"" : ",\"";
  out += key;
  out += "\":";
}

void PutNumber(std::string& out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

}  // namespace

std::string FormatAuditLine(const AuditEntry& e, std::string_view session, double time) {
  std::string out;
  out.reserve(192 + std::min(e.target.size(), kMaxAuditFieldBytes) +
              std::min(e.reason.size(), kMaxAuditFieldBytes) + e.plugin.size());
  out += '{';
  // Sorted, as nlohmann::json's objects keep their keys.
  PutKey(out, "bytes");
  PutNumber(out, e.bytes);
  if (!e.code.empty()) {
    PutKey(out, "code");
    PutString(out, e.code);
  }
  PutKey(out, "duration_us");
  PutNumber(out, e.duration_us);
  PutKey(out, "id");
  PutNumber(out, e.request_id);
  PutKey(out, "op");
  PutString(out, e.op);
  PutKey(out, "plugin");
  PutString(out, e.plugin);
  if (!e.reason.empty()) {
    PutKey(out, "reason");
    PutString(out, e.reason);
  }
  PutKey(out, "session");
  PutString(out, session);
  PutKey(out, "target");
  PutString(out, e.target);
  PutKey(out, "time");
  // The shortest form that reads back as the same double, as nlohmann::json writes it.
  out += nlohmann::json(time).dump();
  PutKey(out, "verdict");
  PutString(out, e.verdict);
  out += '}';
  return out;
}

std::string AuditLog::Line(const AuditEntry& e) const {
  auto now = std::chrono::system_clock::now();
  double ts = std::chrono::duration<double>(now.time_since_epoch()).count();
  return FormatAuditLine(e, session_, ts);
}

void AuditLog::Append(std::string_view line) {
  std::lock_guard lock(mutex_);
  pending_ += line;
  pending_ += '\n';
}

void AuditLog::Record(const AuditEntry& e) { Append(Line(e)); }

void AuditLog::Flush() {
  // The write happens outside `mutex_`: a thread recording a line (under the gateway's
  // connection lock, in order with a revocation) never waits for the disk. `write_mutex_` keeps
  // the batches in the order they were taken. Once this returns, every line recorded before it
  // was called has been written (the control channel's replies rely on it).
  std::unique_lock writing(write_mutex_);
  WritePending(writing);
}

void AuditLog::FlushOrHandOff() {
  std::unique_lock writing(write_mutex_, std::try_to_lock);
  if (!writing.owns_lock()) {
    // Left to the writer only while what waits is small: a writer held up (the file's lock held
    // by a reader, a slow disk) makes the others wait for it again instead of growing the
    // buffer, and what a crash can lose stays bounded.
    {
      std::lock_guard lock(mutex_);
      if (pending_.size() < kMaxHandedOffBytes) return;
    }
    writing.lock();
  }
  WritePending(writing);
}

void AuditLog::WritePending(std::unique_lock<std::mutex>& writing) {
  while (true) {
    while (true) {
      {
        std::lock_guard lock(mutex_);
        if (pending_.empty()) break;
        writing_.swap(pending_);
      }
      if (fd_) {
        (void)AppendCappedLines(fd_.Get(), writing_, max_bytes_);
      }
      // A burst's buffer gives its memory back; an ordinary one is reused.
      if (writing_.capacity() > (1u << 20)) {
        std::string().swap(writing_);
      } else {
        writing_.clear();
      }
    }
    writing.unlock();
    // A thread that recorded lines and found this one writing left them to it (FlushOrHandOff),
    // possibly after the look above: looked for once more now that it is free to take the lock.
    {
      std::lock_guard lock(mutex_);
      if (pending_.empty()) return;
    }
    if (!writing.try_lock()) return;  // taken: its holder writes them
  }
}

}  // namespace anvil::gateway
