#include "fs/file_facts.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <memory>
#include <thread>
#include <utility>

#include "fs/file_io.h"
#include "fs/workspace_path.h"

namespace anvil {

Result<UniqueFd> OpenDirectory(const std::string& path, DirOpen how) {
  int flags = O_DIRECTORY | O_CLOEXEC;
  switch (how) {
    case DirOpen::kPath:
      flags |= O_PATH;
      break;
    case DirOpen::kRead:
      flags |= O_RDONLY;
      break;
    case DirOpen::kReadNoFollow:
      flags |= O_RDONLY | O_NOFOLLOW;
      break;
  }
  UniqueFd fd(::open(path.c_str(), flags));
  if (!fd) return SysFail("io", "open " + QuotePathForMessage(path));
  return fd;
}

Result<UniqueFd> OpenDirectoryOr(const std::string& path, DirOpen how, const std::string& what) {
  auto fd = OpenDirectory(path, how);
  if (!fd) {
    const int e = fd.error().sys_errno;
    return SysFail(e == ENOENT ? Code::kNotFound : Code::kIo, what, e);
  }
  return fd;
}

Result<UniqueFd> OpenFileForRead(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) return SysFail("io", "open " + QuotePathForMessage(path));
  return fd;
}

Result<UniqueFd> OpenDirectoryAtNoFollow(int dir_fd, const std::string& name) {
  UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return SysFail("io", "open " + QuotePathForMessage(name));
  return fd;
}

Result<UniqueFd> OpenBeneathNoSymlinks(int dir_fd, const std::string& path, bool path_only) {
  open_how how{};
  // O_PATH without O_NOFOLLOW: RESOLVE_NO_SYMLINKS makes a symlink anywhere on the path, the
  // last component included, fail with ELOOP (O_NOFOLLOW would open the link itself).
  how.flags = path_only ? O_PATH | O_CLOEXEC : O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  long fd = -1;
  do {
    // EAGAIN: the kernel saw a concurrent rename and wants a retry, not a failure.
    fd = ::syscall(SYS_openat2, dir_fd, path.c_str(), &how, sizeof(how));
  } while (fd < 0 && errno == EAGAIN);
  if (fd < 0) return SysFail("io", "open " + QuotePathForMessage(path));
  return UniqueFd(static_cast<int>(fd));
}

namespace {

OwnerFacts OwnerOf(const struct stat& st) {
  return OwnerFacts{static_cast<std::uint32_t>(st.st_uid), static_cast<std::uint32_t>(::geteuid()),
                    (st.st_mode & (S_IWGRP | S_IWOTH)) != 0};
}

}  // namespace

std::string ObjectIdentity(int fd) {
  struct statx sx {};
  if (::statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_BTIME, &sx) != 0 ||
      (sx.stx_mask & STATX_INO) == 0) {
    return "";
  }
  std::string id = "ino:" + std::to_string(sx.stx_ino);
  bool unique = false;
  if ((sx.stx_mask & STATX_BTIME) != 0) {
    id += ",btime:" + std::to_string(sx.stx_btime.tv_sec) + "." +
          std::to_string(sx.stx_btime.tv_nsec);
    unique = true;
  }
  // Declared long-sized; ext4 and btrfs store an int in it. Only compared for equality.
  long generation = 0;
  if (::ioctl(fd, FS_IOC_GETVERSION, &generation) == 0) {
    id += ",gen:" + std::to_string(static_cast<unsigned long>(generation));
    unique = true;
  }
  return unique ? id : "";
}

Result<OwnerFacts> OwnerOfFd(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return SysFail("io", "fstat " + QuotePathForMessage(path));
  return OwnerOf(st);
}

Result<std::string> ReadRegularFileNoFollowOwned(int dir_fd, const std::string& name,
                                                 std::size_t max_bytes, OwnerFacts& owner) {
  struct stat st {};
  auto text = ReadRegularFileNoFollow(dir_fd, name, max_bytes, &st);
  if (text) owner = OwnerOf(st);
  return text;
}

Result<FileKind> KindAtNoFollow(int dir_fd, const std::string& name) {
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return FileKind::kMissing;
    return SysFail("io", "stat " + QuotePathForMessage(name));
  }
  if (S_ISREG(st.st_mode)) return FileKind::kRegular;
  if (S_ISDIR(st.st_mode)) return FileKind::kDirectory;
  if (S_ISLNK(st.st_mode)) return FileKind::kSymlink;
  return FileKind::kOther;
}

Result<bool> IsRegularFd(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return SysFail("io", "fstat");
  return S_ISREG(st.st_mode);
}

bool IsExecutableFile(const std::string& absolute_path) {
  struct stat st {};
  if (::stat(absolute_path.c_str(), &st) != 0) return false;
  return S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0;
}

Status ForEachName(int dir_fd, const std::string& what,
                   const std::function<Status(const std::string& name)>& each) {
  // A descriptor of its own for fdopendir, which takes ownership of it: `dir_fd` stays the
  // caller's handle to open the names through.
  const int listing = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* dir = listing >= 0 ? ::fdopendir(listing) : nullptr;
  if (dir == nullptr) {
    const int e = errno;
    if (listing >= 0) ::close(listing);
    return SysFail("io", what, e);
  }
  std::unique_ptr<DIR, int (*)(DIR*)> owned(dir, ::closedir);
  while (true) {
    errno = 0;  // readdir signals an error only through errno
    const dirent* ent = ::readdir(dir);
    if (ent == nullptr) {
      if (errno != 0) return SysFail("io", what);
      return Ok();
    }
    const std::string name = ent->d_name;
    if (name == "." || name == "..") continue;
    ANVIL_RETURN_IF_ERROR(each(name));
  }
}

Status RemoveFileAt(int dir_fd, const std::string& name) {
  if (::unlinkat(dir_fd, name.c_str(), 0) != 0) {
    return SysFail("io", "remove " + QuotePathForMessage(name));
  }
  return Ok();
}

Result<std::string> RealPath(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) {
    return SysFail("io", "resolve " + QuotePathForMessage(path));
  }
  return std::string(resolved);
}

Status MakePrivateDirs(const std::string& dir, const std::string& verb) {
  if (dir.empty()) return Ok();
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    const std::string prefix = dir.substr(0, pos);
    if (prefix.empty()) continue;
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return SysFail("io", verb + QuotePathForMessage(prefix));
    }
  }
  return Ok();
}

Result<DirLock> DirLock::Acquire(int fd, const std::string& what, std::chrono::milliseconds wait) {
  const auto give_up = std::chrono::steady_clock::now() + wait;
  auto pause = std::chrono::milliseconds(1);
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) return SysFail("io", what);
    if (std::chrono::steady_clock::now() >= give_up) {
      return Fail("busy", what + ": another process has held its lock for over " +
                              std::to_string(wait.count()) +
                              " ms (any process that can read the directory can take it: "
                              "look for a command still running there); try again");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
  return DirLock(fd);
}

DirLock::DirLock(DirLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

DirLock::~DirLock() {
  if (fd_ >= 0) ::flock(fd_, LOCK_UN);
}

namespace {

std::string AbsoluteEnv(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] == '/' ? std::string(value) : std::string();
}

}  // namespace

std::string XdgConfigHome() { return AbsoluteEnv("XDG_CONFIG_HOME"); }
std::string XdgStateHome() { return AbsoluteEnv("XDG_STATE_HOME"); }

std::string DeviceNumberText(std::uint64_t dev) {
  return std::to_string(major(dev)) + ":" + std::to_string(minor(dev));
}

bool IsExecutableFileIn(const std::string& dir, const std::string& name) {
  const std::string path = dir + "/" + name;
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         ::faccessat(AT_FDCWD, path.c_str(), X_OK, AT_EACCESS) == 0;
}

std::string CanonicalAsFarAsExists(const std::string& path) {
  if (path.empty() || path[0] != '/') return {};
  std::string existing = path;
  std::string rest;
  while (true) {
    char buf[PATH_MAX];
    if (::realpath(existing.c_str(), buf) != nullptr) {
      std::string out = buf;
      if (!rest.empty()) out += (out == "/" ? "" : "/") + rest;
      return out;
    }
    if (errno != ENOENT && errno != ENOTDIR) return {};
    // A link whose target is missing leads somewhere this cannot say (a directory made there
    // later, inside a writable root, say): unknown, not the link's own path.
    struct stat st {};
    if (::lstat(existing.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) return {};
    while (existing.size() > 1 && existing.back() == '/') existing.pop_back();
    const std::size_t slash = existing.rfind('/');
    const std::string part = existing.substr(slash + 1);
    if (part == "." || part == "..") return {};
    if (!part.empty()) rest = rest.empty() ? part : part + "/" + rest;
    existing = slash == 0 ? "/" : existing.substr(0, slash);
  }
}

}  // namespace anvil
