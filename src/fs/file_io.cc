#include "fs/file_io.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/fd_io.h"
#include "common/unique_fd.h"
#include "fs/workspace_path.h"

namespace anvil {
namespace {

// Removes the temporary file unless the rename consumed it, so no error path leaves debris
// (or a half-written file) next to the real one.
class TempFileGuard {
 public:
  TempFileGuard(int dir_fd, std::string name) : dir_fd_(dir_fd), name_(std::move(name)) {}
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;
  ~TempFileGuard() {
    if (armed_) ::unlinkat(dir_fd_, name_.c_str(), 0);
  }
  void Disarm() { armed_ = false; }

 private:
  int dir_fd_;
  std::string name_;
  bool armed_ = true;
};

std::string RandomSuffix() {
  unsigned char bytes[8] = {};
  ssize_t got = -1;
  do {
    got = ::getrandom(bytes, sizeof(bytes), 0);
  } while (got < 0 && errno == EINTR);
  std::string out;
  char hex[3];
  for (unsigned char b : bytes) {
    std::snprintf(hex, sizeof(hex), "%02x", b);
    out += hex;
  }
  // getrandom cannot really fail for 8 bytes after boot; if it did, the pid still makes the
  // name unique among cooperating writers, and O_EXCL refuses any collision.
  return std::to_string(::getpid()) + "." + out;
}

Status WriteAll(int fd, std::string_view bytes, const std::string& what) {
  if (!fd_io::WriteAll(fd, bytes, fd_io::Wait::NoWait())) return SysFail("io", "write " + what);
  return Ok();
}

}  // namespace

Result<std::string> ReadRegularFileNoFollow(int dir_fd, const std::string& name,
                                            std::size_t max_bytes, struct stat* st_out) {
  const std::string shown = QuotePathForMessage(name);
  // O_NONBLOCK: opening a FIFO planted under the expected name must not block forever; the
  // S_ISREG check below then refuses it.
  UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) {
    if (errno == ENOENT) return SysFail("not_found", shown);
    if (errno == ELOOP) return Fail("denied", shown + " is a symbolic link; refusing to follow it");
    return SysFail("io", "open " + shown);
  }
  return ReadRegularFileFromFd(fd.Get(), shown, max_bytes, st_out);
}

Result<std::string> ReadRegularFileFromFd(int fd, const std::string& shown, std::size_t max_bytes,
                                          struct stat* st_out) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return SysFail("io", "fstat " + shown);
  if (!S_ISREG(st.st_mode)) return Fail("invalid", shown + " is not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    return Fail("limit", shown + " is larger than " + std::to_string(max_bytes) + " bytes");
  }
  std::string data;
  data.resize(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  // Read one byte past the stat size: a file that grows while being read is caught by the cap
  // below instead of being silently truncated to its old size.
  char extra = 0;
  while (true) {
    char* dst = got < data.size() ? data.data() + got : &extra;
    const std::size_t want = got < data.size() ? data.size() - got : 1;
    const ssize_t n = ::read(fd, dst, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      return SysFail("io", "read " + shown);
    }
    if (n == 0) break;
    if (got >= data.size()) {
      return Fail("io", shown + " changed size while being read; try again");
    }
    got += static_cast<std::size_t>(n);
  }
  data.resize(got);
  if (st_out != nullptr) *st_out = st;
  return data;
}

Status WriteFileAtomically(int dir_fd, const std::string& name, std::string_view bytes,
                           mode_t mode) {
  const std::string temp = "." + name + ".tmp." + RandomSuffix();
  UniqueFd fd(
      ::openat(dir_fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode));
  if (!fd) return SysFail("io", "create temporary file for " + QuotePathForMessage(name));
  TempFileGuard guard(dir_fd, temp);
  // The umask may have removed bits, never added them; set the exact mode so a permissive umask
  // elsewhere cannot matter and the result is what the caller asked for.
  if (::fchmod(fd.Get(), mode) != 0) return SysFail("io", "fchmod " + temp);
  ANVIL_RETURN_IF_ERROR(WriteAll(fd.Get(), bytes, temp));
  if (::fsync(fd.Get()) != 0) return SysFail("io", "fsync " + temp);
  if (::renameat(dir_fd, temp.c_str(), dir_fd, name.c_str()) != 0) {
    return SysFail("io", "rename " + temp + " over " + QuotePathForMessage(name));
  }
  guard.Disarm();
  // The rename is durable only once the directory entry is: without this a power loss can
  // bring back the old file (or none) after we reported success.
  if (::fsync(dir_fd) != 0) return SysFail("io", "fsync directory of " + QuotePathForMessage(name));
  return Ok();
}

std::string PasswdHome() {
  struct passwd pw {};
  struct passwd* result = nullptr;
  std::vector<char> buffer(16384);
  if (::getpwuid_r(::geteuid(), &pw, buffer.data(), buffer.size(), &result) != 0 ||
      result == nullptr || pw.pw_dir == nullptr || pw.pw_dir[0] != '/') {
    return "";
  }
  return pw.pw_dir;
}

std::string AnvilUserHome() {
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return home;
  return PasswdHome();
}

}  // namespace anvil
