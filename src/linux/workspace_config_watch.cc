#include "linux/workspace_config_watch.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "common/syscalls.h"
#include "linux/open_beneath.h"
#include "linux/owner_write.h"
#include "policy/workspace_config.h"

namespace anvil {

Result<ConfigEntry> WorkspaceConfigWatch::Look(int dir, const std::string& name) {
  struct statx sx {};
  if (::statx(dir, name.c_str(), AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_INO | STATX_CTIME, &sx) !=
      0) {
    if (errno == ENOENT) return ConfigEntry{};
    return SysFail("sandbox", "look at " + name);
  }
  ConfigEntry e;
  e.kind = S_ISREG(sx.stx_mode)   ? ConfigEntryKind::kFile
           : S_ISDIR(sx.stx_mode) ? ConfigEntryKind::kDir
           : S_ISLNK(sx.stx_mode) ? ConfigEntryKind::kSymlink
                                  : ConfigEntryKind::kOther;
  e.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
  e.ino = sx.stx_ino;
  e.ctime_sec = sx.stx_ctime.tv_sec;
  e.ctime_nsec = sx.stx_ctime.tv_nsec;
  return e;
}

bool WorkspaceConfigWatch::OtherLockHeld(int dir, int64_t except) {
  if (dir < 0) return true;
  // [0, except) and [except + 1, end of file); a length of 0 reaches the end.
  const std::pair<int64_t, int64_t> ranges[] = {{0, except}, {except + 1, 0}};
  for (const auto& [start, len] : ranges) {
    if (start == 0 && len == 0) continue;  // nothing below byte 0
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = start;
    fl.l_len = len;
    if (::fcntl(dir, F_OFD_GETLK, &fl) != 0) return true;
    if (fl.l_type != F_UNLCK) return true;
  }
  return false;
}

bool WorkspaceConfigWatch::LockByte(int dir, int64_t offset) {
  struct flock fl {};
  fl.l_type = F_RDLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = offset;
  fl.l_len = 1;
  return dir >= 0 && ::fcntl(dir, F_OFD_SETLK, &fl) == 0;
}

Result<WorkspaceConfigWatch> WorkspaceConfigWatch::Start(const std::string& workspace) {
  WorkspaceConfigWatch watch;
  watch.workspace_ = workspace;
  watch.dir_ = UniqueFd(::open(workspace.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!watch.dir_) return SysFail("sandbox", "open the workspace " + workspace);
  const std::string name(kWorkspaceConfigName);
  // Not readable: no lock to probe or take (the run is strict).
  watch.lock_ = UniqueFd(::openat(watch.dir_.Get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  // The probes bracket the look that records the entry; the first needs the offset the entry
  // would lock, so a look before it too (another entry by the record: strict).
  ANVIL_TRY(probe, Look(watch.dir_.Get(), name));
  bool seen = probe->kind != ConfigEntryKind::kMissing &&
              OtherLockHeld(watch.lock_.Get(), ConfigWatchLockOffset(*probe, false));
  ANVIL_TRY(before, Look(watch.dir_.Get(), name));
  if (before->kind != ConfigEntryKind::kMissing && !seen) {
    seen = OtherLockHeld(watch.lock_.Get(), ConfigWatchLockOffset(*before, false));
  }
  watch.before_ = *before;
  watch.strict_ = ConfigWatchIsStrict(*probe, *before, seen);
  // Published before the command starts, held until after the check. Where it cannot be taken
  // the probes of other runs fail too, and they are strict.
  LockByte(watch.lock_.Get(), ConfigWatchLockOffset(watch.before_, watch.strict_));
  return watch;
}

std::optional<ConfigQuarantine> WorkspaceConfigWatch::CheckAfterRun() {
  // The lock goes once the check is done, whatever it found.
  struct Release {
    UniqueFd& fd;
    ~Release() { fd.Reset(); }
  } release{lock_};
  const std::string name(kWorkspaceConfigName);
  ConfigQuarantine q;
  q.path = workspace_ + "/" + name;
  // The command may have taken the owner's permissions off the workspace (chmod 0 .): given
  // back for the check, and set again after it.
  const OwnerAccess access(dir_.Get());
  auto after = Look(dir_.Get(), name);
  if (!after) {
    // Cannot tell what is there: say so rather than keep quiet.
    q.reason = "it could not be looked at after the sandboxed command ran";
    q.failure = after.error().message;
    return q;
  }
  auto why = distrusted_.empty() || after->kind == ConfigEntryKind::kMissing
                 ? WorkspaceConfigChange(before_, *after, strict_)
                 : std::optional<std::string>(distrusted_);
  if (!why) return std::nullopt;
  q.reason = *why;
  if (!MoveConfigAside(dir_.Get(), workspace_, name, q)) return std::nullopt;
  return q;
}

bool MoveConfigAside(int dir, const std::string& dir_path, const std::string& name,
                     ConfigQuarantine& q) {
  // The numbered names first; when the command took them all, names it cannot guess.
  for (int attempt = 1; attempt <= kConfigQuarantineAttempts + kConfigQuarantineGuesses;
       ++attempt) {
    std::string to = ConfigQuarantineName(name, attempt);
    if (attempt > kConfigQuarantineAttempts) {
      uint64_t nonce = 0;
      if (::getrandom(&nonce, sizeof nonce, 0) != static_cast<ssize_t>(sizeof nonce)) break;
      char hex[17];
      std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(nonce));
      to = ConfigQuarantineName(name, 1) + "-" + hex;
    }
    if (syscall(SYS_renameat2, dir, name.c_str(), dir, to.c_str(), RENAME_NOREPLACE) == 0) {
      q.moved_to = dir_path + "/" + to;
      return true;
    }
    if (errno == ENOENT) {
      // Gone meanwhile (another run's check moved it): nothing to move, if nothing came back.
      if (auto now = WorkspaceConfigWatch::Look(dir, name);
          now && now->kind == ConfigEntryKind::kMissing) {
        return false;
      }
    }
    if (errno != EEXIST) {
      q.failure = std::string("rename: ") + std::strerror(errno);
      return true;
    }
  }
  q.failure = "every name up to " + ConfigQuarantineName(name, kConfigQuarantineAttempts) +
              " is taken, and no other could be had";
  return true;
}

std::vector<ConfigQuarantine> QuarantineProtectedNames(
    const std::vector<ProtectedNameMove>& moves) {
  std::vector<ConfigQuarantine> out;
  for (const ProtectedNameMove& m : moves) {
    const auto slash = m.path.rfind('/');
    const std::string parent = m.path.substr(0, slash);
    const std::string name = m.path.substr(slash + 1);
    ConfigQuarantine q;
    q.path = m.path;
    q.kind = m.kind;
    q.reason = m.reason.empty() ? "it did not exist when the sandboxed command started" : m.reason;
    // Beneath its root, whatever a concurrent run's command made of the way down.
    auto dir = OpenBeneath(m.root, parent == m.root ? "." : parent.substr(m.root.size() + 1));
    if (!dir || !*dir) {
      q.failure = dir ? "its directory is not there any more" : dir.error().message;
      out.push_back(std::move(q));
      continue;
    }
    // A same-user command may have taken the owner's write permission off its directory.
    const OwnerAccess access(dir->Get());
    auto now = WorkspaceConfigWatch::Look(dir->Get(), name);
    if (!now) {
      q.failure = now.error().message;
      out.push_back(std::move(q));
      continue;
    }
    if (now->kind == ConfigEntryKind::kMissing) continue;  // gone since the walk
    if (MoveConfigAside(dir->Get(), parent, name, q)) out.push_back(std::move(q));
  }
  return out;
}

}  // namespace anvil
