// WorkspaceRoot::FindBeneath and RemoveTree: bounded walks of a directory tree by file
// descriptors. Each level is opened with openat(O_NOFOLLOW | O_DIRECTORY) relative to its
// parent's descriptor, so a walk never follows a symlink and never resolves a path twice; it
// holds one descriptor per level (at most max_depth + 1).
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/syscalls.h"
#include "fs/workspace_path.h"
#include "fs/workspace_root.h"

namespace anvil {
namespace {

using DirHandle = std::unique_ptr<DIR, int (*)(DIR*)>;

// DIR stream over a duplicate of `fd` (fdopendir takes ownership of what it is given).
Result<DirHandle> OpenStream(int fd, const std::string& where) {
  const int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return SysFail("io", "walk " + QuotePathForMessage(where));
  DirHandle dir(::fdopendir(dup), &::closedir);
  if (!dir) {
    const int err = errno;
    ::close(dup);
    return SysFail("io", "walk " + QuotePathForMessage(where), err);
  }
  return dir;
}

// The mount id of `name` in directory `fd` ("" for `fd` itself), never following a symlink. A
// kernel that cannot say (before Linux 5.8) is an error: a walk that cannot tell a mount point
// from a directory does not go on.
Result<std::uint64_t> MountIdAt(int fd, const char* name, const std::string& where) {
  struct statx sx {};
  const int flags = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (name[0] == '\0' ? AT_EMPTY_PATH : 0);
  if (::statx(fd, name, flags, STATX_MNT_ID, &sx) != 0) {
    return SysFail("io", "walk " + QuotePathForMessage(where));
  }
  if ((sx.stx_mask & STATX_MNT_ID) == 0) {
    return Fail("io", "walk " + QuotePathForMessage(where) +
                          ": this kernel does not tell mount points apart (statx STATX_MNT_ID)");
  }
  return static_cast<std::uint64_t>(sx.stx_mnt_id);
}

// "denied" when directory `name` in `fd` is on another mount than `parent_mount`.
Status SameMount(int fd, const char* name, std::uint64_t parent_mount, const std::string& where) {
  ANVIL_TRY(id, MountIdAt(fd, name, where));
  if (*id != parent_mount) {
    return Fail("denied", "is a mount point: " + QuotePathForMessage(where) +
                              " (what is mounted there is not the workspace's to move or remove)");
  }
  return Ok();
}

struct Level {
  UniqueFd fd;
  DirHandle stream{nullptr, &::closedir};
  std::string path;  // relative to the walk's start ("" for the start itself)
};

// What RemoveTree shares across its levels.
struct RemoveWalk {
  const std::function<bool(std::string_view name)>& refuse;
  std::size_t entries_left;
  std::size_t max_depth;
  const std::string& top;   // the normalized path being removed, for messages
  std::uint64_t mount = 0;  // the mount the whole tree must be on
};

// Removes everything inside the directory open at `fd` (`path`: relative to the workspace),
// depth first. The names of a level are read before any is removed, so removing does not
// disturb the directory stream.
Status EmptyDirectory(int fd, const std::string& path, std::size_t depth, RemoveWalk& walk) {
  std::vector<std::string> names;
  {
    ANVIL_TRY(stream, OpenStream(fd, path));
    while (true) {
      errno = 0;
      const dirent* entry = ::readdir(stream->get());
      if (entry == nullptr) {
        if (errno != 0) return SysFail("io", "walk " + QuotePathForMessage(path));
        break;
      }
      const std::string_view name(entry->d_name);
      if (name == "." || name == "..") continue;
      if (walk.entries_left == 0) {
        return Fail("limit", "too many entries beneath " + QuotePathForMessage(walk.top));
      }
      --walk.entries_left;
      if (walk.refuse(name)) {
        return Fail("denied", "fs.write: directory holds protected " +
                                  QuotePathForMessage(path + "/" + std::string(name)) + ": " +
                                  QuotePathForMessage(walk.top));
      }
      names.emplace_back(name);
    }
  }
  for (const std::string& name : names) {
    const std::string child_path = path + "/" + name;
    struct stat st {};
    if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;  // gone already
      return SysFail("io", "walk " + QuotePathForMessage(child_path));
    }
    if (S_ISDIR(st.st_mode)) {
      if (depth + 1 > walk.max_depth) {
        return Fail("limit", "more than " + std::to_string(walk.max_depth) + " levels beneath " +
                                 QuotePathForMessage(walk.top));
      }
      UniqueFd child(
          ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
      if (!child) {
        const int err = errno;
        return Fail(err == EACCES || err == EPERM ? Code::kDenied : Code::kIo,
                    "cannot look inside " + QuotePathForMessage(child_path), err);
      }
      // Never into another mount: emptying a mount point would delete what is mounted there.
      ANVIL_RETURN_IF_ERROR(SameMount(child.Get(), "", walk.mount, child_path));
      ANVIL_RETURN_IF_ERROR(EmptyDirectory(child.Get(), child_path, depth + 1, walk));
      if (::unlinkat(fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
        const int err = errno;
        if (err == EBUSY)
          return Fail("denied", "is a mount point: " + QuotePathForMessage(child_path), err);
        return SysFail(err == EACCES || err == EPERM ? Code::kDenied : Code::kIo,
                       "remove " + QuotePathForMessage(child_path), err);
      }
    } else if (::unlinkat(fd, name.c_str(), 0) != 0 && errno != ENOENT) {
      const int err = errno;
      return SysFail(err == EACCES || err == EPERM ? Code::kDenied : Code::kIo,
                     "remove " + QuotePathForMessage(child_path), err);
    }
  }
  return Ok();
}

}  // namespace

Status WorkspaceRoot::RemoveTree(std::string_view path,
                                 const std::function<bool(std::string_view name)>& refuse,
                                 std::size_t max_entries, std::size_t max_depth) const {
  ANVIL_TRY(norm, NormalizeWorkspacePath(path, RootPolicy::kReject));
  ANVIL_TRY(parent, OpenParentForMutation(*norm));
  const std::string name(SplitParent(*norm).second);
  UniqueFd dir(::openat(parent->Get(), name.c_str(),
                        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!dir) {
    // Not a directory (a file, a symlink: removed as itself), or not there.
    const int err = errno;
    if (err == ENOTDIR || err == ELOOP) return Remove(*norm);
    if (err == ENOENT) return Fail("not_found", QuotePathForMessage(*norm), err);
    return SysFail(err == EACCES || err == EPERM ? Code::kDenied : Code::kIo,
                   "open " + QuotePathForMessage(*norm), err);
  }
  ANVIL_TRY(parent_mount, MountIdAt(parent->Get(), "", *norm));
  ANVIL_RETURN_IF_ERROR(SameMount(dir.Get(), "", *parent_mount, *norm));
  RemoveWalk walk{refuse, max_entries, max_depth, *norm, *parent_mount};
  ANVIL_RETURN_IF_ERROR(EmptyDirectory(dir.Get(), *norm, 0, walk));
  dir.Reset();
  if (::unlinkat(parent->Get(), name.c_str(), AT_REMOVEDIR) != 0) {
    const int err = errno;
    if (err == EBUSY) return Fail("denied", "is a mount point: " + QuotePathForMessage(*norm), err);
    if (err == ENOTEMPTY || err == EEXIST) {
      return Fail("io", "directory changed while it was removed: " + QuotePathForMessage(*norm),
                  err);
    }
    return SysFail(err == EACCES || err == EPERM ? Code::kDenied : Code::kIo,
                   "remove " + QuotePathForMessage(*norm), err);
  }
  return Ok();
}

Result<std::optional<std::string>> WorkspaceRoot::FindBeneath(
    std::string_view dir,
    const std::function<bool(std::string_view name, std::string_view path)>& match,
    std::size_t max_entries, std::size_t max_depth) const {
  ANVIL_TRY(norm, NormalizeWorkspacePath(dir, RootPolicy::kAllow));
  // No symlink anywhere on the way, the last component included: a symlink is moved (or
  // removed) as itself and holds nothing.
  auto start = OpenBeneath(*norm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK,
                           BaseResolve() | RESOLVE_NO_SYMLINKS);
  if (!start) {
    const int err = start.error().sys_errno;
    if (err == ENOTDIR || err == ELOOP) {
      // Not a directory, or a symlink: only when the final component is the reason. An earlier
      // component that is a symlink is refused like every mutation's parent.
      struct stat st {};
      const std::string parent(SplitParent(*norm).first);
      auto parent_fd =
          OpenBeneath(parent, O_PATH | O_DIRECTORY, BaseResolve() | RESOLVE_NO_SYMLINKS);
      const std::string name(SplitParent(*norm).second);
      if (parent_fd && ::fstatat(parent_fd->Get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          !S_ISDIR(st.st_mode)) {
        return std::optional<std::string>();
      }
    }
    return tl::unexpected(start.error());
  }
  // The tree's mount: that of `dir`'s parent (the workspace root's own for the root), so that
  // `dir` being a mount point refuses too.
  std::uint64_t mount = 0;
  {
    const std::string parent(SplitParent(*norm).first);
    ANVIL_TRY(parent_fd, *norm == "." ? OpenBeneath(".", O_PATH | O_DIRECTORY, BaseResolve())
                                      : OpenBeneath(parent, O_PATH | O_DIRECTORY,
                                                    BaseResolve() | RESOLVE_NO_SYMLINKS));
    ANVIL_TRY(id, MountIdAt(parent_fd->Get(), "", *norm));
    mount = *id;
    if (*norm != ".") {
      ANVIL_RETURN_IF_ERROR(SameMount(start->Get(), "", mount, *norm));
    }
  }
  std::vector<Level> stack;
  {
    ANVIL_TRY(stream, OpenStream(start->Get(), *norm));
    stack.push_back(Level{std::move(*start), std::move(*stream), ""});
  }
  std::size_t seen = 0;
  while (!stack.empty()) {
    Level& level = stack.back();
    errno = 0;
    const dirent* entry = ::readdir(level.stream.get());
    if (entry == nullptr) {
      if (errno != 0) {
        return SysFail("io", "walk " + QuotePathForMessage(*norm + "/" + level.path));
      }
      stack.pop_back();
      continue;
    }
    const std::string_view name(entry->d_name);
    if (name == "." || name == "..") continue;
    if (++seen > max_entries) {
      return Fail("limit", "more than " + std::to_string(max_entries) + " entries beneath " +
                               QuotePathForMessage(*norm));
    }
    std::string path =
        level.path.empty() ? std::string(name) : level.path + "/" + std::string(name);
    if (match(name, path)) return std::optional<std::string>(std::move(path));
    bool is_dir = entry->d_type == DT_DIR;
    if (entry->d_type == DT_UNKNOWN) {
      // Some filesystems do not fill d_type; ask without following the entry.
      struct stat st {};
      if (::fstatat(level.fd.Get(), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        return SysFail("io", "walk " + QuotePathForMessage(*norm + "/" + path));
      }
      is_dir = S_ISDIR(st.st_mode);
    }
    if (!is_dir) continue;
    if (stack.size() > max_depth) {
      return Fail("limit", "more than " + std::to_string(max_depth) + " levels beneath " +
                               QuotePathForMessage(*norm));
    }
    UniqueFd child(::openat(level.fd.Get(), entry->d_name,
                            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!child) {
      const int err = errno;
      return Fail(err == EACCES || err == EPERM ? Code::kDenied : Code::kIo,
                  "cannot look inside " + QuotePathForMessage(*norm + "/" + path), err);
    }
    ANVIL_RETURN_IF_ERROR(SameMount(child.Get(), "", mount, *norm + "/" + path));
    ANVIL_TRY(stream, OpenStream(child.Get(), *norm + "/" + path));
    stack.push_back(Level{std::move(child), std::move(*stream), std::move(path)});
  }
  return std::optional<std::string>();
}

}  // namespace anvil
