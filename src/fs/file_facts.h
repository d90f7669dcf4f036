// The file-system facts and steps the trusted side's decisions in policy/ are made from:
// directories opened (by path, beneath a directory without a link, or the user's own private
// ones made 0700), an opened file's owner, what kind of object a name is, a directory's names,
// an exclusive lock for a read-modify-write, the environment's XDG directories. Each step
// returns its facts or a SysFail error carrying errno (Error::sys_errno), so that the caller in
// policy/ words the refusal and makes no syscall itself.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"

namespace anvil {

// How a directory is opened: O_PATH (a handle to open names beneath), O_RDONLY (also listed,
// fsync'ed, locked), O_RDONLY without following a symlink in its last component.
enum class DirOpen { kPath, kRead, kReadNoFollow };

// Opens the directory `path`; an error is SysFail("io", "open <path>") with its errno.
Result<UniqueFd> OpenDirectory(const std::string& path, DirOpen how);
// The same, the common refusal worded: "not_found" when missing (ENOENT), else "io"; `what`
// names it ("workspace '/w'").
Result<UniqueFd> OpenDirectoryOr(const std::string& path, DirOpen how, const std::string& what);
// The file `path` opened O_RDONLY | O_NONBLOCK (a FIFO is not waited on), following links: a
// user's own file; an error carries errno.
Result<UniqueFd> OpenFileForRead(const std::string& path);
// The directory `name` beneath `dir_fd`, O_RDONLY, not following a symlink.
Result<UniqueFd> OpenDirectoryAtNoFollow(int dir_fd, const std::string& name);

// `path` (relative to `dir_fd`) opened with openat2 beneath `dir_fd`, no symlink on the way
// (ELOOP), nothing outside (EXDEV); EAGAIN from a concurrent rename retried. O_PATH when
// `path_only`, else O_RDONLY | O_NOFOLLOW | O_NONBLOCK. An error carries errno.
Result<UniqueFd> OpenBeneathNoSymlinks(int dir_fd, const std::string& path, bool path_only);

// Which object the opened `fd` is, in a form that a later object at the same path does not
// share: its inode number with its birth time (statx) and its generation (FS_IOC_GETVERSION), as
// far as the file system keeps them, e.g. "ino:12,btime:1700000000.5,gen:99". An inode number
// alone is reused at once (a removed directory's number is the next new one's on ext4), so
// without a birth time or generation the answer is "" (unknown: the same as no other object).
std::string ObjectIdentity(int fd);

// Who owns an opened object, and whether anyone else may write it.
struct OwnerFacts {
  std::uint32_t uid = 0;          // the owner
  std::uint32_t euid = 0;         // this process's effective uid
  bool others_may_write = false;  // group or other write permission
  bool Mine() const { return uid == euid; }
};
// fstat of `fd`; an error is SysFail("io", "fstat <shown path>").
Result<OwnerFacts> OwnerOfFd(int fd, const std::string& path);
// ReadRegularFileNoFollow (fs/file_io.h), with the owner of the very file that was read.
Result<std::string> ReadRegularFileNoFollowOwned(int dir_fd, const std::string& name,
                                                 std::size_t max_bytes, OwnerFacts& owner);

// What `name` beneath `dir_fd` is, not following a symlink. An error (other than a missing
// name) carries errno.
enum class FileKind { kMissing, kRegular, kDirectory, kSymlink, kOther };
Result<FileKind> KindAtNoFollow(int dir_fd, const std::string& name);
// Whether the opened `fd` is a regular file; an error carries errno.
Result<bool> IsRegularFd(int fd);
// A regular file with an execute bit, following symlinks; false when it cannot be stat'ed.
bool IsExecutableFile(const std::string& absolute_path);

// Calls `each` for every name in the directory `dir_fd` ("." and ".." left out), in the
// directory's order, until it returns an error, which is returned. A failure to list is
// SysFail("io", what).
Status ForEachName(int dir_fd, const std::string& what,
                   const std::function<Status(const std::string& name)>& each);

// Removes `name` beneath `dir_fd`; an error carries errno.
Status RemoveFileAt(int dir_fd, const std::string& name);

// realpath(3); an error carries errno.
Result<std::string> RealPath(const std::string& path);

// Creates each missing directory of `dir` with mode 0700 (the user's private state and
// configuration); existing ones are left as they are. A failure is SysFail("io", verb + path).
Status MakePrivateDirs(const std::string& dir, const std::string& verb);

// How long DirLock::Acquire waits: a read-modify-write of a state file ends far sooner.
inline constexpr std::chrono::milliseconds kDirLockWait{10000};

// An exclusive flock on a directory for one read-modify-write cycle; released when destroyed.
class DirLock {
 public:
  // Waits at most `wait`: any process that can open the directory can take its flock (a
  // sandboxed command whose view holds Anvil's state directory read-only), so a lock held longer
  // is "busy", naming `what`, never a wait as long as that process likes. A failure of flock
  // itself is SysFail("io", what).
  static Result<DirLock> Acquire(int fd, const std::string& what,
                                 std::chrono::milliseconds wait = kDirLockWait);
  DirLock(DirLock&& other) noexcept;
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;
  DirLock& operator=(DirLock&&) = delete;
  ~DirLock();

 private:
  explicit DirLock(int fd) : fd_(fd) {}
  int fd_;
};

// $XDG_CONFIG_HOME and $XDG_STATE_HOME when absolute, else "" (XDG: a relative one is invalid
// and ignored; it would resolve against whatever directory Anvil runs in).
std::string XdgConfigHome();
std::string XdgStateHome();

// "major:minor" of a device number.
std::string DeviceNumberText(std::uint64_t dev);

// Whether `dir`/`name` is a regular file this process may execute, following links (what a
// PATH lookup takes: linux/program_exec.h's ResolveProgram).
bool IsExecutableFileIn(const std::string& dir, const std::string& name);

// `path` (absolute) with its links resolved as far as it exists, the missing rest appended:
// where a directory not made yet would be. "" when that cannot be said (a missing part holds
// `.` or `..`, a link on the way leads nowhere yet, or realpath fails on the part that exists
// for another reason than ENOENT).
std::string CanonicalAsFarAsExists(const std::string& path);

}  // namespace anvil
