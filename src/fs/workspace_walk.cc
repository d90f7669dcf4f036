// WorkspaceRoot::FindBeneath: a bounded walk of a directory tree by file descriptors. Each level
// is opened with openat(O_NOFOLLOW | O_DIRECTORY) relative to its parent's descriptor, so the
// walk never follows a symlink and never resolves a path twice; it holds one descriptor per
// level (at most max_depth + 1).
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>
#include <vector>

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

struct Level {
  UniqueFd fd;
  DirHandle stream{nullptr, &::closedir};
  std::string path;  // relative to the walk's start ("" for the start itself)
};

}  // namespace

Result<std::optional<std::string>> WorkspaceRoot::FindBeneath(
    std::string_view dir, const std::function<bool(std::string_view name)>& match,
    std::size_t max_entries, std::size_t max_depth) const {
  auto norm = NormalizeWorkspacePath(dir, RootPolicy::kAllow);
  if (!norm) return tl::unexpected(norm.error());
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
  std::vector<Level> stack;
  {
    auto stream = OpenStream(start->Get(), *norm);
    if (!stream) return tl::unexpected(stream.error());
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
    if (match(name)) return std::optional<std::string>(std::move(path));
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
      return Fail(err == EACCES || err == EPERM ? "denied" : "io",
                  "cannot look inside " + QuotePathForMessage(*norm + "/" + path), err);
    }
    auto stream = OpenStream(child.Get(), *norm + "/" + path);
    if (!stream) return tl::unexpected(stream.error());
    stack.push_back(Level{std::move(child), std::move(*stream), std::move(path)});
  }
  return std::optional<std::string>();
}

}  // namespace anvil
