#include "linux/protected_placeholders.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>

#include "common/syscalls.h"
#include "linux/owner_write.h"

namespace anvil {
namespace {

bool SameInode(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// The directory `name` beneath `parent` is still the one `dir` refers to.
bool StillNamed(int parent, const std::string& name, int dir) {
  struct stat by_name {
  }, by_fd{};
  return ::fstatat(parent, name.c_str(), &by_name, AT_SYMLINK_NOFOLLOW) == 0 &&
         ::fstat(dir, &by_fd) == 0 && SameInode(by_name, by_fd);
}

}  // namespace

Result<ProtectedPlaceholders> ProtectedPlaceholders::Create(
    const std::vector<PlaceholderSpec>& specs) {
  ProtectedPlaceholders out;
  // Placeholders that could not be made (a parent the caller cannot write): what a later spec
  // would make inside one cannot be made either, by the caller or the command.
  std::set<std::string> not_made;
  for (const auto& spec : specs) {
    const std::string& root = spec.parent;
    const std::string& name = spec.name;
    if (not_made.count(root)) {
      not_made.insert(root + "/" + name);
      continue;
    }
    UniqueFd parent(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!parent) return SysFail("sandbox", "open writable root " + root);
    {
      const std::string path = root + "/" + name;
      bool created = false;
      // A few rounds: another run may create or remove the placeholder between our steps.
      for (int round = 0;; ++round) {
        if (round == 8) return Fail("sandbox", "cannot settle the read-only placeholder " + path);
        // O_NONBLOCK: a FIFO of that name is opened without waiting for a writer (and then
        // left to the view, as anything but a directory or regular file).
        UniqueFd dir(::openat(parent.Get(), name.c_str(),
                              O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
        if (!dir) {
          if (errno == ELOOP) break;  // a symlink: the view decides
          // Only to be locked, not made: what the caller cannot open is no placeholder of a run
          // of its own (they are the caller's), so there is no lock to take; the view binds it.
          if (!spec.create) break;
          if (errno != ENOENT) return SysFail("sandbox", "open " + path);
          const int err = MakeMarkedPlaceholder(parent.Get(), name, spec.directory, 0755);
          if (err == 0) {
            created = true;
            continue;  // open and lock it like an existing one
          }
          errno = err;
          if (errno == EEXIST) continue;
          if (errno == EACCES || errno == EPERM || errno == EROFS) {
            not_made.insert(path);
            break;
          }
          return SysFail("sandbox", "create the read-only placeholder " + path);
        }
        struct stat st {};
        if (::fstat(dir.Get(), &st) != 0) return SysFail("sandbox", "stat " + path);
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) break;  // the view decides
        // Blocks only while a finishing run holds it exclusively to remove it; then the name
        // is gone and the next round makes a new one.
        if (::flock(dir.Get(), LOCK_SH) != 0) return SysFail("sandbox", "lock " + path);
        if (!StillNamed(parent.Get(), name, dir.Get())) continue;
        // Best effort: where the filesystem has no user xattrs, a placeholder this run cannot
        // remove (another run still held it) stays behind, empty.
        const bool marked = ::fgetxattr(dir.Get(), kPlaceholderXattr, nullptr, 0) >= 0;
        UniqueFd parent_dup(::fcntl(parent.Get(), F_DUPFD_CLOEXEC, 0));
        if (!parent_dup) return SysFail("sandbox", "dup");
        out.held_.push_back({std::move(parent_dup), std::move(dir), root, name, created,
                             created || marked, S_ISDIR(st.st_mode)});
        break;
      }
    }
  }
  return out;
}

ProtectedPlaceholders::~ProtectedPlaceholders() {
  // The last first: a placeholder made inside another (a directory on the way) goes before it.
  for (auto it = held_.rbegin(); it != held_.rend(); ++it) {
    auto& h = *it;
    if (!h.placeholder) continue;
    // Another run still binds it when it holds its shared lock: leave it to that run.
    if (::flock(h.dir.Get(), LOCK_EX | LOCK_NB) != 0) continue;
    // The command may have taken the owner's permissions off the parent (chmod 0 .): given
    // back for the removal, and set again after it.
    const OwnerAccess access(h.parent.Get());
    if (!StillNamed(h.parent.Get(), h.name, h.dir.Get())) continue;
    if (h.directory) {
      // Fails (ENOTEMPTY) when someone outside the sandbox put something in it meanwhile,
      // e.g. the user ran `git init`: then it is theirs and stays.
      (void)::unlinkat(h.parent.Get(), h.name.c_str(), AT_REMOVEDIR);
    } else {
      // A file placeholder written to from outside meanwhile is the writer's and stays.
      struct stat st {};
      if (::fstat(h.dir.Get(), &st) == 0 && st.st_size == 0) {
        (void)::unlinkat(h.parent.Get(), h.name.c_str(), 0);
      }
    }
  }
}

int MakeMarkedPlaceholder(int parent, const std::string& name, bool directory, mode_t dir_mode) {
  // A private name nobody can guess ahead (one taken already would read as the name taken).
  uint64_t nonce = 0;
  if (::getrandom(&nonce, sizeof nonce, 0) != static_cast<ssize_t>(sizeof nonce)) return errno;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(nonce));
  const std::string temp = ".anvil-placeholder." + std::string(hex);
  auto make = [&](const std::string& at) -> int {
    if (directory) {
      if (::mkdirat(parent, at.c_str(), dir_mode) != 0) return errno;
      UniqueFd dir(::openat(parent, at.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (dir) (void)::fsetxattr(dir.Get(), kPlaceholderXattr, "1", 1, 0);
      return 0;
    }
    UniqueFd file(
        ::openat(parent, at.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!file) return errno;
    // Marked while still writable (a user xattr needs write permission), then made read-only:
    // nothing runs or includes an empty, non-executable file.
    (void)::fsetxattr(file.Get(), kPlaceholderXattr, "1", 1, 0);
    (void)::fchmod(file.Get(), 0444);
    return 0;
  };
  if (int err = make(temp); err != 0) return err;
  if (::syscall(SYS_renameat2, parent, temp.c_str(), parent, name.c_str(), RENAME_NOREPLACE) == 0)
    return 0;
  const int err = errno;
  (void)::unlinkat(parent, temp.c_str(), directory ? AT_REMOVEDIR : 0);
  if (err == EINVAL) return make(name);  // no RENAME_NOREPLACE on this filesystem
  return err;
}

std::vector<std::string> ProtectedPlaceholders::Created() const {
  std::vector<std::string> paths;
  for (const auto& h : held_) {
    if (h.created) paths.push_back(h.root + "/" + h.name);
  }
  return paths;
}

}  // namespace anvil
