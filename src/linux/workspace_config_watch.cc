#include "linux/workspace_config_watch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/syscalls.h"
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

Result<WorkspaceConfigWatch> WorkspaceConfigWatch::Start(const std::string& workspace) {
  WorkspaceConfigWatch watch;
  watch.workspace_ = workspace;
  watch.dir_ = UniqueFd(::open(workspace.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!watch.dir_) return SysFail("sandbox", "open the workspace " + workspace);
  auto before = Look(watch.dir_.Get(), std::string(kWorkspaceConfigName));
  if (!before) return tl::unexpected(before.error());
  watch.before_ = *before;
  return watch;
}

std::optional<ConfigQuarantine> WorkspaceConfigWatch::CheckAfterRun() const {
  const std::string name(kWorkspaceConfigName);
  ConfigQuarantine q;
  q.path = workspace_ + "/" + name;
  auto after = Look(dir_.Get(), name);
  if (!after) {
    // Cannot tell what is there: say so rather than keep quiet.
    q.reason = "it could not be looked at after the sandboxed command ran";
    q.failure = after.error().message;
    return q;
  }
  auto why = WorkspaceConfigChange(before_, *after);
  if (!why) return std::nullopt;
  q.reason = *why;
  for (int attempt = 1; attempt <= kConfigQuarantineAttempts; ++attempt) {
    const std::string to = ConfigQuarantineName(name, attempt);
    if (syscall(SYS_renameat2, dir_.Get(), name.c_str(), dir_.Get(), to.c_str(),
                RENAME_NOREPLACE) == 0) {
      q.moved_to = workspace_ + "/" + to;
      return q;
    }
    if (errno == ENOENT) {
      // Gone meanwhile (another run's check moved it): nothing to move, if nothing came back.
      if (auto now = Look(dir_.Get(), name); now && now->kind == ConfigEntryKind::kMissing) {
        return std::nullopt;
      }
    }
    if (errno != EEXIST) {
      q.failure = std::string("rename: ") + std::strerror(errno);
      return q;
    }
  }
  q.failure =
      "every name up to " + ConfigQuarantineName(name, kConfigQuarantineAttempts) + " is taken";
  return q;
}

}  // namespace anvil
