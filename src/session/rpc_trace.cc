#include "session/rpc_trace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "common/fd_io.h"

namespace anvil::session {

using nlohmann::json;

Result<UniqueFd> OpenRpcTrace(const std::string& path) {
  if (path.empty()) return Fail("invalid", "--trace needs a file (fix: --trace /tmp/anvil.trace)");
  // O_NONBLOCK: opening a FIFO for writing would otherwise wait for a reader, forever.
  UniqueFd fd(::open(path.c_str(),
                     O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
                     0600));
  if (!fd) {
    if (errno == ENXIO) {  // a FIFO without a reader (O_NONBLOCK): not a file to trace into
      return Fail("invalid", "trace file " + path + " is not a regular file (fix: name a file)");
    }
    if (errno == ELOOP) {
      return Fail(
          "invalid",
          "trace file " + path + " is a symlink; it is never followed (fix: name the file itself)",
          ELOOP);
    }
    return SysFail("io", "open trace file " + path + " (fix: name a writable file)");
  }
  struct stat st {};
  if (::fstat(fd.Get(), &st) != 0) return SysFail("io", "stat trace file " + path);
  if (!S_ISREG(st.st_mode)) {
    return Fail("invalid", "trace file " + path + " is not a regular file (fix: name a file)");
  }
  if (st.st_uid != ::geteuid()) {
    return Fail("denied", "trace file " + path + " belongs to another user (fix: name a new file)");
  }
  // An existing file keeps what it had; it becomes the caller's alone.
  if ((st.st_mode & 07777) != 0600 && ::fchmod(fd.Get(), 0600) != 0) {
    return SysFail("io", "chmod 0600 trace file " + path);
  }
  const int flags = ::fcntl(fd.Get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.Get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return SysFail("io", "trace file " + path);
  }
  return fd;
}

std::string Rfc3339Micros(std::chrono::system_clock::time_point time) {
  using namespace std::chrono;
  const auto us = duration_cast<microseconds>(time.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(us / 1000000);
  long frac = static_cast<long>(us % 1000000);
  if (frac < 0) {
    frac += 1000000;
    --secs;
  }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[128];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
  return buf;
}

std::string RpcTraceLine(std::chrono::system_clock::time_point time, std::string_view dir,
                         const json& message, bool is_error) {
  json line = {{"time", Rfc3339Micros(time)}, {"dir", dir}};
  line[is_error ? "error" : "message"] = message;
  // One line whatever the message holds: dump escapes every control character, and invalid
  // UTF-8 becomes U+FFFD instead of an exception.
  return line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

bool RpcTrace::Record(std::string_view dir, const json& message, bool is_error) {
  if (!fd_) return true;
  const std::string line = RpcTraceLine(std::chrono::system_clock::now(), dir, message, is_error);
  // Where this line starts: a write that fails half way (a full disk) is cut back to it, so
  // the file never ends in half a line.
  struct stat st {};
  const bool sized = ::fstat(fd_.Get(), &st) == 0;
  if (auto r = fd_io::WriteAll(fd_.Get(), line, fd_io::Wait::NoWait()); !r) {
    if (sized && r.done > 0) (void)::ftruncate(fd_.Get(), st.st_size);
    fd_.Reset();
    return false;
  }
  return true;
}

}  // namespace anvil::session
