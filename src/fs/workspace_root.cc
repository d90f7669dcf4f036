// One thing: WorkspaceRoot's operations (workspace_root.h), every one made beneath the one root
// fd, and the helpers they share (errors naming the path, temporary names for atomic writes).
// Its bounded tree walk is workspace_walk.cc.
#include "fs/workspace_root.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <memory>

#include "common/fd_io.h"
#include "common/syscalls.h"
#include "fs/pending_writes.h"
#include "fs/workspace_path.h"

namespace anvil {
namespace {

// openat2 returns EAGAIN when a rename or mount anywhere on the system raced with a ".."
// (from a symlink target) under RESOLVE_BENEATH: the kernel could not prove the walk stayed
// beneath the root. That is a retry, never a file error; a bound keeps a hostile process that
// renames in a tight loop from pinning a gateway thread forever.
constexpr int kMaxResolveAttempts = 64;
constexpr int kMaxTempNameAttempts = 16;

std::string Q(std::string_view path) { return QuotePathForMessage(path); }

// Maps the errno of a resolution or *at call to the stable codes of INTERFACES.md.
tl::unexpected<Error> PathError(int err, std::string_view path, std::uint64_t resolve = 0) {
  switch (err) {
    case ENOENT:
      return Fail("not_found", Q(path), err);
    case EXDEV:
      // RESOLVE_BENEATH: an absolute symlink, or a ".." that would climb above the root.
      return Fail("denied", "path escapes the workspace: " + Q(path), err);
    case ELOOP:
      if (resolve & RESOLVE_NO_SYMLINKS) {
        return Fail("denied", "path goes through a symlink, which is not followed here: " + Q(path),
                    err);
      }
      // RESOLVE_NO_MAGICLINKS (/proc/<pid>/root, /proc/<pid>/fd/N: jumps that ignore the root),
      // or a symlink loop.
      return Fail("denied", "path escapes the workspace: " + Q(path), err);
    case ENOTDIR:
      return Fail("invalid", "a component of the path is not a directory: " + Q(path), err);
    case EISDIR:
      return Fail("invalid", "is a directory: " + Q(path), err);
    case EACCES:
    case EPERM:
      return Fail("denied", "permission denied by the filesystem: " + Q(path), err);
    case ENAMETOOLONG:
      return Fail("invalid", "name too long: " + Q(path), err);
    case EMFILE:
    case ENFILE:
      return Fail("limit", "out of file descriptors", err);
    case ENXIO:
      return Fail("invalid", "not a regular file: " + Q(path), err);
    case ENOSPC:
    case EDQUOT:
      return Fail("limit", "no space left for " + Q(path), err);
    case EROFS:
      return Fail("denied", "read-only filesystem: " + Q(path), err);
    case ENOSYS:
      return Fail("sandbox", "openat2 is not available; workspace files cannot be served safely",
                  err);
    default:
      return SysFail("io", Q(path), err);
  }
}

FileType TypeOf(mode_t mode) {
  if (S_ISREG(mode)) return FileType::kFile;
  if (S_ISDIR(mode)) return FileType::kDir;
  if (S_ISLNK(mode)) return FileType::kSymlink;
  return FileType::kOther;
}

Result<std::string> ReadFdLink(int fd) {
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  std::string buf(PATH_MAX + 1, '\0');
  const ssize_t n = ::readlink(link.c_str(), buf.data(), buf.size());
  if (n < 0) return SysFail("denied", "cannot verify where a path leads (readlink " + link + ")");
  if (static_cast<std::size_t>(n) >= buf.size()) {
    return Fail("denied", "cannot verify where a path leads (name too long)");
  }
  buf.resize(static_cast<std::size_t>(n));
  return buf;
}

long OpenAt2(int dirfd, const std::string& path, std::uint64_t flags, std::uint64_t mode,
             std::uint64_t resolve) {
  struct open_how how {};
  how.flags = flags;
  how.mode = mode;
  how.resolve = resolve;
  return ::syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof how);
}

Result<std::string> RandomTempName() {
  unsigned char bytes[8];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    return SysFail("io", "getrandom");
  }
  std::string name(kWorkspaceTempPrefix);
  for (unsigned char b : bytes) {
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", b);
    name += hex;
  }
  return name;
}

Status WriteAll(int fd, std::string_view data, std::string_view path) {
  if (auto r = fd_io::WriteAll(fd, data, fd_io::Wait::NoWait()); !r) {
    return PathError(r.error, path);
  }
  return Ok();
}

// Unlinks a named temporary file unless it was renamed into place: an error path never leaves a
// half-written file behind under a name we chose.
class TempNameGuard {
 public:
  TempNameGuard(int dir, std::string name) : dir_(dir), name_(std::move(name)) {}
  TempNameGuard(const TempNameGuard&) = delete;
  TempNameGuard& operator=(const TempNameGuard&) = delete;
  ~TempNameGuard() {
    if (!name_.empty()) ::unlinkat(dir_, name_.c_str(), 0);
  }
  const std::string& name() const { return name_; }
  void Disarm() { name_.clear(); }

 private:
  int dir_;
  std::string name_;
};

// Puts the temporary file `temp` in `dir` at `name` and records in `did` what that did: the
// syscalls of DecidePlacement and RenameOverMadeTheName. A failure leaves `temp` where it was, for
// the caller's guard to remove.
Status PlaceFile(int dir, const std::string& temp, const std::string& name, bool existed,
                 std::string_view norm, WriteOutcome& did) {
  int err = 0;
  if (::syscall(SYS_renameat2, dir, temp.c_str(), dir, name.c_str(), RENAME_NOREPLACE) != 0) {
    err = errno;
  }
  const Placement next = DecidePlacement(err, existed);
  if (!next.done && !next.rename_over) return PathError(err, norm);
  bool created = next.created;
  if (next.rename_over) {
    UniqueFd was;
    struct stat before {};
    if (next.watch_replaced) {
      was = UniqueFd(::openat(dir, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
      if (was && ::fstat(was.Get(), &before) != 0) was.Reset();
    }
    if (::renameat(dir, temp.c_str(), dir, name.c_str()) != 0) return PathError(errno, norm);
    if (next.watch_replaced) {
      struct stat after {};
      const bool found = was && ::fstat(was.Get(), &after) == 0;
      created = RenameOverMadeTheName(found, before.st_nlink, after.st_nlink);
    }
  }
  did = {true, created};
  return Ok();
}

// Gives the anonymous O_TMPFILE inode a unique temporary name in `dir`. AT_EMPTY_PATH needs
// CAP_DAC_READ_SEARCH; the /proc/self/fd form is the documented unprivileged way and only ever
// names our own fd.
// The slot records the name before it exists (see pending_writes.h).
std::string TempRelativePath(std::string_view parent, std::string_view name) {
  // SplitParent names the workspace root ".": the journal records a bare name there.
  if (parent.empty() || parent == ".") return std::string(name);
  return std::string(parent) + "/" + std::string(name);
}

Result<std::string> LinkTempFile(int file, int dir, std::string_view path, std::string_view parent,
                                 PendingWrites::Slot& slot) {
  for (int attempt = 0; attempt < kMaxTempNameAttempts; ++attempt) {
    ANVIL_TRY(name, RandomTempName());
    ANVIL_RETURN_IF_ERROR(slot.Set(TempRelativePath(parent, *name)));
    if (::linkat(file, "", dir, name->c_str(), AT_EMPTY_PATH) == 0) return name;
    int err = errno;
    if (err == ENOENT || err == EPERM) {
      const std::string self = "/proc/self/fd/" + std::to_string(file);
      if (::linkat(AT_FDCWD, self.c_str(), dir, name->c_str(), AT_SYMLINK_FOLLOW) == 0) return name;
      err = errno;
    }
    if (err != EEXIST) return PathError(err, path);
  }
  return Fail("io", "could not pick a unique temporary name beside " + Q(path));
}

// A uniquely named O_EXCL temporary (filesystems without O_TMPFILE). O_EXCL|O_NOFOLLOW: a planted
// file or symlink at the chosen name is never opened or followed.
Result<UniqueFd> CreateNamedTemp(int dir, std::string_view path, std::string_view parent,
                                 PendingWrites::Slot& slot, std::string* name_out) {
  for (int attempt = 0; attempt < kMaxTempNameAttempts; ++attempt) {
    ANVIL_TRY(name, RandomTempName());
    ANVIL_RETURN_IF_ERROR(slot.Set(TempRelativePath(parent, *name)));
    const int fd = ::openat(dir, name->c_str(),
                            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0666);
    if (fd >= 0) {
      *name_out = std::move(*name);
      return UniqueFd(fd);
    }
    if (errno != EEXIST) return PathError(errno, path);
  }
  return Fail("io", "could not pick a unique temporary name beside " + Q(path));
}

}  // namespace

Placement DecidePlacement(int noreplace_errno, bool existed) {
  switch (noreplace_errno) {
    case 0:
      return {true, false, false, true};
    case EEXIST:
      return {false, true, true, false};
    case EINVAL:
    case ENOSYS:
      return {false, true, false, !existed};
    default:
      return {};
  }
}

bool RenameOverMadeTheName(bool found, std::uint64_t links_before, std::uint64_t links_after) {
  return !found || links_after >= links_before;
}

std::string_view ToString(FileType type) {
  switch (type) {
    case FileType::kFile:
      return "file";
    case FileType::kDir:
      return "dir";
    case FileType::kSymlink:
      return "symlink";
    case FileType::kOther:
      return "other";
  }
  return "other";
}

Result<WorkspaceRoot> WorkspaceRoot::Open(const std::string& path,
                                          const WorkspaceOptions& options) {
  if (path.empty()) return Fail("invalid", "empty workspace root");
  if (options.max_read_bytes == 0 || options.max_write_bytes == 0 ||
      options.max_list_entries == 0) {
    return Fail("invalid", "workspace size caps must be positive");
  }
  // The only name resolution of the root in the whole session: a root that is a symlink is
  // followed here, and from now on the session holds the directory itself, so swapping that
  // link later cannot move the session somewhere else.
  UniqueFd root(::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) {
    const int err = errno;
    if (err == ENOENT) return Fail("not_found", "workspace root " + Q(path), err);
    if (err == ENOTDIR)
      return Fail("invalid", "workspace root is not a directory: " + Q(path), err);
    return SysFail("invalid", "cannot open workspace root " + Q(path), err);
  }
  struct stat st {
  }, slash{};
  if (::fstat(root.Get(), &st) != 0) return SysFail("io", "fstat workspace root");
  if (::stat("/", &slash) == 0 && st.st_dev == slash.st_dev && st.st_ino == slash.st_ino) {
    // RESOLVE_BENEATH the filesystem root confines nothing.
    return Fail("invalid", "the filesystem root cannot be a workspace");
  }
  // Fail closed on kernels without openat2 (< 5.6) rather than fall back to a check-then-open
  // that symlink races defeat.
  const long probe = OpenAt2(root.Get(), ".", O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                             RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
  if (probe < 0) {
    const int err = errno;
    if (err == ENOSYS || err == EINVAL || err == E2BIG) {
      return Fail("sandbox",
                  "openat2 with RESOLVE_BENEATH is not available; refusing to serve "
                  "workspace files without it",
                  err);
    }
    return SysFail("io", "openat2 probe of the workspace root", err);
  }
  ::close(static_cast<int>(probe));
  auto resolved = ReadFdLink(root.Get());
  std::string display = resolved ? *resolved : path;
  return WorkspaceRoot(std::move(root), std::move(display), options);
}

std::uint64_t WorkspaceRoot::BaseResolve() const {
  std::uint64_t resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  if (options_.no_symlinks) resolve |= RESOLVE_NO_SYMLINKS;
  return resolve;
}

Result<UniqueFd> WorkspaceRoot::OpenBeneath(std::string_view normalized, std::uint64_t flags,
                                            std::uint64_t resolve) const {
  const std::string path(normalized);
  for (int attempt = 0; attempt < kMaxResolveAttempts; ++attempt) {
    const long fd = OpenAt2(root_.Get(), path, flags | O_CLOEXEC, 0, resolve);
    if (fd >= 0) return UniqueFd(static_cast<int>(fd));
    if (errno == EAGAIN || errno == EINTR) continue;
    return PathError(errno, normalized, resolve);
  }
  return Fail("busy",
              "the workspace kept changing while resolving " + Q(normalized) + "; try again");
}

Result<std::string> WorkspaceRoot::ResolvedPathOf(int fd) const {
  ANVIL_TRY(root, ReadFdLink(root_.Get()));
  ANVIL_TRY(target, ReadFdLink(fd));
  struct stat st {};
  // A deleted object's link text ends in " (deleted)" and no longer names it.
  if (::fstat(fd, &st) != 0 || st.st_nlink == 0) {
    return Fail("denied", "cannot verify where a path leads (object was removed)");
  }
  std::string rel;
  if (*target == *root) {
    rel = std::string(kWorkspaceRootPath);
  } else if (target->size() > root->size() + 1 && target->compare(0, root->size(), *root) == 0 &&
             (*target)[root->size()] == '/') {
    rel = target->substr(root->size() + 1);
  } else {
    return Fail("denied", "cannot verify where a path leads (outside the workspace root)");
  }
  auto norm = NormalizeWorkspacePath(rel, RootPolicy::kAllow);
  if (!norm) return Fail("denied", "a symlink leads to a name that is not a valid workspace path");
  return *norm;
}

Result<UniqueFd> WorkspaceRoot::OpenChecked(std::string_view normalized, std::uint64_t flags,
                                            const ResolvedPathCheck& check) const {
  if (!check || options_.no_symlinks) return OpenBeneath(normalized, flags, BaseResolve());
  // Common case first: with no symlink on the way the requested name is the resolved name, and
  // the caller already checked it.
  auto direct = OpenBeneath(normalized, flags, BaseResolve() | RESOLVE_NO_SYMLINKS);
  if (direct || direct.error().sys_errno != ELOOP) return direct;
  ANVIL_TRY(fd, OpenBeneath(normalized, flags, BaseResolve()));
  // Grants are globs over names; a symlink inside the workspace ("docs/l -> ../.env") would
  // carry a "docs/**" grant to another name. Check the name of what was actually opened.
  ANVIL_TRY(resolved, ResolvedPathOf(fd->Get()));
  if (!check(*resolved)) {
    return Fail("denied",
                "symlink leads outside the grant: " + Q(normalized) + " -> " + Q(*resolved));
  }
  return fd;
}

Result<UniqueFd> WorkspaceRoot::OpenParentForMutation(std::string_view normalized) const {
  // Never through a symlink, whatever the options: a write via "notes/l -> ../.git/hooks" would
  // escape both the grant (checked on "notes/...") and the protected-name rule. O_RDONLY rather
  // than O_PATH so the directory can be fsynced after the rename.
  const std::string_view parent = SplitParent(normalized).first;
  auto dir = OpenBeneath(parent, O_RDONLY | O_DIRECTORY, BaseResolve() | RESOLVE_NO_SYMLINKS);
  if (!dir) {
    Error e = dir.error();
    // Name the path the caller asked for, not only its parent.
    if (e.code == "not_found") e.message = Q(normalized);
    return tl::unexpected(std::move(e));
  }
  return dir;
}

Result<std::string> WorkspaceRoot::Read(std::string_view path,
                                        const ResolvedPathCheck& check) const {
  ANVIL_TRY(norm, NormalizeWorkspacePath(path, RootPolicy::kReject));
  // O_NONBLOCK: opening a FIFO planted in the workspace would otherwise block this thread until
  // a writer appears. O_NOCTTY: a tty device must never become our controlling terminal.
  ANVIL_TRY(fd, OpenChecked(*norm, O_RDONLY | O_NONBLOCK | O_NOCTTY, check));
  // Everything below inspects and reads the object this fd refers to; the name is never
  // resolved again, so swapping it now changes nothing.
  struct stat st {};
  if (::fstat(fd->Get(), &st) != 0) return SysFail("io", "fstat " + Q(*norm));
  if (S_ISDIR(st.st_mode)) return Fail("invalid", "is a directory: " + Q(*norm));
  if (!S_ISREG(st.st_mode)) return Fail("invalid", "not a regular file: " + Q(*norm));
  if (st.st_nlink > 1 && !options_.allow_hardlinked_reads) {
    // Another name of this inode may live outside the workspace (a hard link to ~/.ssh/id_*).
    return Fail("denied",
                "file has " + std::to_string(st.st_nlink) +
                    " hard links and may be shared with a file outside the workspace: " + Q(*norm));
  }
  const std::uint64_t cap = options_.max_read_bytes;
  if (static_cast<std::uint64_t>(st.st_size) > cap) {
    return Fail("limit", "file over " + std::to_string(cap) + " bytes: " + Q(*norm));
  }
  // Read straight into the answer. A file of known size is read up to that size and no
  // further: bytes appended after the fstat are not part of this read, as if it had happened an
  // instant earlier (and no read is spent only to see the end). One that shrank meanwhile ends
  // at its end; one whose size says nothing (0) is read to its end. Either way the cap holds on
  // what is actually read.
  const std::size_t known = static_cast<std::size_t>(st.st_size);
  std::string data;
  std::size_t have = 0;
  while (known == 0 || have < known) {
    const std::size_t room = known > 0 ? known - have : 64 * 1024;
    data.resize(have + room);
    const ssize_t n = ::read(fd->Get(), data.data() + have, room);
    if (n < 0) {
      if (errno == EINTR) continue;
      return SysFail("io", "read " + Q(*norm));
    }
    if (n == 0) break;
    have += static_cast<std::size_t>(n);
    if (have > cap) {
      return Fail("limit", "file over " + std::to_string(cap) + " bytes: " + Q(*norm));
    }
  }
  data.resize(have);
  return data;
}

Result<WorkspaceRoot::Resolved> WorkspaceRoot::Resolve(std::string_view path) const {
  ANVIL_TRY(norm, NormalizeWorkspacePath(path, RootPolicy::kAllow));
  Resolved out;
  out.path = *norm;
  ANVIL_TRY(fd, OpenChecked(*norm, O_PATH, [&out](std::string_view resolved) {
              out.path = std::string(resolved);
              return true;
            }));
  struct stat st {};
  if (::fstat(fd->Get(), &st) != 0) return SysFail("io", "fstat " + Q(*norm));
  out.type = TypeOf(st.st_mode);
  out.nlink = static_cast<std::uint64_t>(st.st_nlink);
  return out;
}

Status WorkspaceRoot::Write(std::string_view path, std::string_view data,
                            WriteOutcome* outcome) const {
  WriteOutcome unused;
  WriteOutcome& did = outcome != nullptr ? *outcome : unused;
  did = {};
  ANVIL_TRY(norm, NormalizeWorkspacePath(path, RootPolicy::kReject));
  if (data.size() > options_.max_write_bytes) {
    return Fail("limit",
                "write over " + std::to_string(options_.max_write_bytes) + " bytes: " + Q(*norm));
  }
  ANVIL_TRY(dir, OpenParentForMutation(*norm));
  const std::string name(SplitParent(*norm).second);

  // Look at what the final name is now, without following it. This is policy, not the safety
  // of the write: the rename below replaces the name whatever it has become by then.
  struct stat old {};
  if (::fstatat(dir->Get(), name.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(old.st_mode)) return Fail("invalid", "is a directory: " + Q(*norm));
    if (S_ISREG(old.st_mode) && old.st_nlink > 1) {
      return Fail("denied", "file has " + std::to_string(old.st_nlink) +
                                " hard links; refusing to write it: " + Q(*norm));
    }
    if (!S_ISREG(old.st_mode) && !S_ISLNK(old.st_mode)) {
      return Fail("invalid", "not a regular file: " + Q(*norm));
    }
  } else if (errno != ENOENT) {
    return PathError(errno, *norm);
  }
  const bool keep_mode = S_ISREG(old.st_mode);
  const bool existed = old.st_mode != 0;

  // Declared before the guards below so that it is cleared only after they have removed the
  // temporary name: a slot is never empty while the name it covers exists.
  PendingWrites::Slot slot;
  if (options_.pending_writes != nullptr) slot = options_.pending_writes->Claim();
  const std::string_view parent = SplitParent(*norm).first;

  // Prefer an anonymous O_TMPFILE: a writer killed mid-write leaves nothing at all behind.
  UniqueFd file(::openat(dir->Get(), ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666));
  std::string temp_name;
  if (!file) {
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
      return PathError(errno, *norm);
    }
    ANVIL_TRY(named, CreateNamedTemp(dir->Get(), *norm, parent, slot, &temp_name));
    file = std::move(*named);
  }
  TempNameGuard guard(dir->Get(), temp_name);  // empty name: nothing to clean up yet

  ANVIL_RETURN_IF_ERROR(WriteAll(file.Get(), data, *norm));
  // Keep a replaced file's permission bits (an executable script stays executable) but never
  // set-id or sticky bits. Nothing of a previous symlink is kept.
  if (keep_mode && ::fchmod(file.Get(), old.st_mode & 0777) != 0) {
    return SysFail("io", "fchmod " + Q(*norm));
  }
  // Data on disk before the name points at it: after a crash the name holds old or new content.
  if (::fsync(file.Get()) != 0) return SysFail("io", "fsync " + Q(*norm));

  if (temp_name.empty()) {
    ANVIL_TRY(linked, LinkTempFile(file.Get(), dir->Get(), *norm, parent, slot));
    temp_name = *linked;
  }
  TempNameGuard linked_guard(dir->Get(), temp_name);
  guard.Disarm();
  // Renaming replaces the final name atomically and never follows it: a symlink planted there
  // is replaced, not written through. The first rename only makes the name (RENAME_NOREPLACE),
  // so whether the write made it is what the step that put the data there found, not the look
  // above, which a concurrent rename or removal of the name can have made wrong.
  ANVIL_RETURN_IF_ERROR(PlaceFile(dir->Get(), temp_name, name, existed, *norm, did));
  linked_guard.Disarm();
  if (::fsync(dir->Get()) != 0) return SysFail("io", "fsync directory of " + Q(*norm));
  return Ok();
}

Result<DirListing> WorkspaceRoot::List(std::string_view dir_path,
                                       const ResolvedPathCheck& check) const {
  ANVIL_TRY(norm, NormalizeWorkspacePath(dir_path, RootPolicy::kAllow));
  ANVIL_TRY(fd, OpenChecked(*norm, O_RDONLY | O_DIRECTORY | O_NONBLOCK, check));
  // fdopendir takes ownership of the descriptor it is given, so hand it a duplicate and keep the
  // UniqueFd's ownership simple.
  const int dup = ::fcntl(fd->Get(), F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return PathError(errno, *norm);
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::fdopendir(dup), &::closedir);
  if (!dir) {
    const int err = errno;
    ::close(dup);
    return PathError(err, *norm);
  }
  DirListing listing;
  std::size_t seen = 0;
  while (true) {
    errno = 0;
    const dirent* entry = ::readdir(dir.get());
    if (entry == nullptr) {
      if (errno != 0) return SysFail("io", "readdir " + Q(*norm));
      break;
    }
    const std::string_view name(entry->d_name);
    if (name == "." || name == "..") continue;
    // Counted before anything else so a directory with millions of entries costs at most
    // max_list_entries iterations of work and memory.
    if (++seen > options_.max_list_entries) {
      return Fail("limit", "directory has more than " + std::to_string(options_.max_list_entries) +
                               " entries: " + Q(*norm));
    }
    if (!ValidatePathComponent(name)) {
      ++listing.omitted;
      continue;
    }
    FileType type = FileType::kOther;
    switch (entry->d_type) {
      case DT_REG:
        type = FileType::kFile;
        break;
      case DT_DIR:
        type = FileType::kDir;
        break;
      case DT_LNK:
        type = FileType::kSymlink;
        break;
      case DT_UNKNOWN: {
        // Some filesystems do not fill d_type; ask without following the entry.
        struct stat st {};
        if (::fstatat(fd->Get(), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
          type = TypeOf(st.st_mode);
        }
        break;
      }
      default:
        break;
    }
    listing.entries.push_back(DirEntry{std::string(name), type});
  }
  std::sort(listing.entries.begin(), listing.entries.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return listing;
}

Result<FileInfo> WorkspaceRoot::Stat(std::string_view path, const ResolvedPathCheck& check) const {
  ANVIL_TRY(norm, NormalizeWorkspacePath(path, RootPolicy::kAllow));
  // O_PATH|O_NOFOLLOW: the final symlink itself is opened (and reported), even under
  // RESOLVE_NO_SYMLINKS; nothing is read, so no FIFO or device is ever opened for real.
  ANVIL_TRY(fd, OpenChecked(*norm, O_PATH | O_NOFOLLOW, check));
  struct stat st {};
  if (::fstat(fd->Get(), &st) != 0) return SysFail("io", "fstat " + Q(*norm));
  FileInfo info;
  info.type = TypeOf(st.st_mode);
  info.size = static_cast<std::uint64_t>(st.st_size);
  info.mtime_sec = st.st_mtim.tv_sec;
  info.mtime_nsec = st.st_mtim.tv_nsec;
  return info;
}

Status WorkspaceRoot::Mkdir(std::string_view path) const {
  ANVIL_TRY(norm, NormalizeWorkspacePath(path, RootPolicy::kReject));
  ANVIL_TRY(dir, OpenParentForMutation(*norm));
  const std::string name(SplitParent(*norm).second);
  if (::mkdirat(dir->Get(), name.c_str(), 0777) != 0) {
    if (errno == EEXIST) return Fail("invalid", "already exists: " + Q(*norm), errno);
    return PathError(errno, *norm);
  }
  return Ok();
}

Status WorkspaceRoot::MakeDirs(
    std::string_view path, const std::function<Status(std::string_view dir)>& may_create) const {
  ANVIL_TRY(norm, NormalizeWorkspacePath(path, RootPolicy::kReject));
  // Each prefix in turn, its parent opened without symlinks: what exists is looked at without
  // following it, what is missing is made. A name another process makes in between is looked
  // at again, never trusted blindly.
  for (std::size_t end = 0; end != std::string::npos;) {
    end = norm->find('/', end + 1);
    const std::string prefix = norm->substr(0, end);
    ANVIL_TRY(dir, OpenParentForMutation(prefix));
    const std::string name(SplitParent(prefix).second);
    for (int attempt = 0;; ++attempt) {
      struct stat st {};
      if (::fstatat(dir->Get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISDIR(st.st_mode)) break;
        if (S_ISLNK(st.st_mode)) {
          return Fail("denied",
                      "path goes through a symlink, which is not followed here: " + Q(prefix));
        }
        if (prefix == *norm)
          return Fail("invalid", "already exists and is not a directory: " + Q(prefix), EEXIST);
        return Fail("invalid", "a component of the path is not a directory: " + Q(prefix), ENOTDIR);
      }
      if (errno != ENOENT) return PathError(errno, prefix);
      if (attempt > 0) return Fail("io", "cannot create " + Q(prefix) + ": it keeps changing");
      ANVIL_RETURN_IF_ERROR(may_create(prefix));
      if (::mkdirat(dir->Get(), name.c_str(), 0777) == 0) break;
      if (errno != EEXIST) return PathError(errno, prefix);
    }
  }
  return Ok();
}

Status WorkspaceRoot::Remove(std::string_view path) const {
  ANVIL_TRY(norm, NormalizeWorkspacePath(path, RootPolicy::kReject));
  ANVIL_TRY(dir, OpenParentForMutation(*norm));
  const std::string name(SplitParent(*norm).second);
  // unlinkat never follows the final name: removing a symlink removes the link, not its target.
  if (::unlinkat(dir->Get(), name.c_str(), 0) == 0) return Ok();
  if (errno != EISDIR) return PathError(errno, *norm);
  if (::unlinkat(dir->Get(), name.c_str(), AT_REMOVEDIR) == 0) return Ok();
  if (errno == ENOTEMPTY || errno == EEXIST) {
    return Fail("invalid", "directory not empty: " + Q(*norm), errno);
  }
  if (errno == EBUSY) return Fail("denied", "is a mount point: " + Q(*norm), errno);
  return PathError(errno, *norm);
}

Status WorkspaceRoot::Rename(std::string_view from, std::string_view to, bool replace) const {
  ANVIL_TRY(from_norm, NormalizeWorkspacePath(from, RootPolicy::kReject));
  ANVIL_TRY(to_norm, NormalizeWorkspacePath(to, RootPolicy::kReject));
  ANVIL_TRY(from_dir, OpenParentForMutation(*from_norm));
  ANVIL_TRY(to_dir, OpenParentForMutation(*to_norm));
  const std::string from_name(SplitParent(*from_norm).second);
  const std::string to_name(SplitParent(*to_norm).second);
  // RENAME_NOREPLACE makes "does the destination exist?" part of the atomic rename instead of a
  // separate, raceable check.
  const unsigned flags = replace ? 0 : RENAME_NOREPLACE;
  if (::renameat2(from_dir->Get(), from_name.c_str(), to_dir->Get(), to_name.c_str(), flags) == 0) {
    return Ok();
  }
  const int err = errno;
  const std::string both = Q(*from_norm) + " -> " + Q(*to_norm);
  switch (err) {
    case ENOENT:
      return Fail("not_found", Q(*from_norm), err);
    case EEXIST:
    case ENOTEMPTY:
      return Fail("invalid", "destination exists: " + both, err);
    case EINVAL:
      return Fail("invalid",
                  "cannot rename (a directory into itself, or the filesystem cannot rename "
                  "without replacing): " +
                      both,
                  err);
    // Here EXDEV means two mounts inside the workspace, not an escape.
    case EXDEV:
      return Fail("invalid", "cannot rename across filesystems: " + both, err);
    case EISDIR:
      return Fail("invalid", "destination is a directory: " + both, err);
    case ENOTDIR:
      return Fail("invalid", "destination is not a directory: " + both, err);
    case EBUSY:
      return Fail("denied", "is a mount point: " + both, err);
    default:
      return PathError(err, *from_norm);
  }
}

}  // namespace anvil
