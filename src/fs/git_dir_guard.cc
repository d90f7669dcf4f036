// The git-dir predicate and the plugin guard's decision (pure), and the thin probes that gather
// its facts beneath the workspace root (WorkspaceRoot::ProbeGitDirs, GitEntryKind,
// FindGitDirBeneath).
#include "fs/git_dir_guard.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "fs/path_glob.h"
#include "fs/protected_names.h"
#include "fs/workspace_path.h"
#include "fs/workspace_root.h"

namespace anvil {
namespace {

std::string Q(std::string_view path) { return QuotePathForMessage(path); }

bool Counts(GitDirEntryKind kind, bool searchable) {
  switch (kind) {
    case GitDirEntryKind::kSymlink:  // followed by git; where it leads is not looked at
    case GitDirEntryKind::kExecFile:
      return true;
    case GitDirEntryKind::kFile:
      return !searchable;  // HEAD and commondir are read; objects and refs must pass X_OK
    case GitDirEntryKind::kDir:
      return searchable;  // a directory HEAD cannot be read as a ref
    case GitDirEntryKind::kOther:
      // A FIFO, socket or device: git's access(X_OK) takes one with an x bit as objects or refs,
      // and it opens one as HEAD or commondir. Over-matching only judges more.
      return true;
    case GitDirEntryKind::kMissing:
      return false;
  }
  return false;
}

constexpr std::string_view kShape = "(HEAD, objects/, refs/)";
constexpr std::string_view kWhy =
    "git run there would use its config and hooks, which is code run on the host";

}  // namespace

bool IsGitDirShape(const GitDirNames& n) {
  if (!Counts(n.head, false)) return false;
  if (Counts(n.commondir, false)) return true;
  return Counts(n.objects, true) && Counts(n.refs, true);
}

GitDirName ClassifyGitDirName(std::string_view name, bool folds_case) {
  // Without folding a long name is none of git's; with it the length is judged after the fold,
  // which drops code points (a "HEAD" padded with ignorable ones is "HEAD" to such a directory).
  if (!folds_case && name.size() > 64) return GitDirName::kNone;
  const std::string folded = folds_case ? FoldNameForLookup(name) : std::string();
  auto is = [&](std::string_view exact, std::string_view lower) {
    return folds_case ? folded == lower : name == exact;
  };
  if (is("HEAD", "head")) return GitDirName::kHead;
  if (is("objects", "objects")) return GitDirName::kObjects;
  if (is("refs", "refs")) return GitDirName::kRefs;
  if (is("commondir", "commondir")) return GitDirName::kCommonDir;
  return GitDirName::kNone;
}

GitDirNames WithEntry(GitDirNames names, std::string_view name, GitDirEntryKind kind,
                      bool folds_case) {
  switch (ClassifyGitDirName(name, folds_case)) {
    case GitDirName::kHead:
      names.head = kind;
      break;
    case GitDirName::kObjects:
      names.objects = kind;
      break;
    case GitDirName::kRefs:
      names.refs = kind;
      break;
    case GitDirName::kCommonDir:
      names.commondir = kind;
      break;
    case GitDirName::kNone:
      break;
  }
  return names;
}

GitDirNames WithListedEntry(GitDirNames names, std::string_view name, GitDirEntryKind kind,
                            bool folds_case) {
  GitDirNames next = WithEntry(names, name, kind, folds_case);
  if (Counts(names.head, false)) next.head = names.head;
  if (Counts(names.objects, true)) next.objects = names.objects;
  if (Counts(names.refs, true)) next.refs = names.refs;
  if (Counts(names.commondir, false)) next.commondir = names.commondir;
  return next;
}

Status DecideGitDirMutation(const GitDirMutation& m) {
  for (const GitDirProbe& probe : m.dirs) {
    if (!IsGitDirShape(probe.names)) continue;
    return Fail("denied", m.op + ": " + Q(probe.dir) + " is a git directory " +
                              std::string(kShape) + ": " + std::string(kWhy) +
                              "; nothing in it is made, written, moved or removed by a plugin "
                              "(fix: change it yourself, outside the plugin)");
  }
  if (m.name.empty() || m.dirs.empty() || !m.made_in_last) return Ok();
  const GitDirProbe& last = m.dirs.back();
  if (ClassifyGitDirName(m.name, last.folds_case) == GitDirName::kNone) return Ok();
  if (!IsGitDirShape(WithEntry(last.names, m.name, m.kind, last.folds_case))) return Ok();
  return Fail("denied", m.op + " would make " + Q(last.dir) + " a git directory " +
                            std::string(kShape) + ": " + std::string(kWhy) +
                            "; fix: use another name or another directory (HEAD beside objects/ "
                            "and refs/, or HEAD beside commondir, is what git looks for)");
}

Error GitDirInTreeError(std::string_view op, std::string_view top, std::string_view found) {
  const std::string where = found.empty() ? Q(top) : Q(top) + "/" + Q(found);
  return Error{"denied",
               std::string(op) + ": " + Q(top) + " " + (found.empty() ? "is" : "holds") +
                   " a git directory " + (found.empty() ? "" : where + " ") + std::string(kShape) +
                   ": " + std::string(kWhy) +
                   "; a plugin does not move or remove it (fix: do it yourself, outside the "
                   "plugin)",
               0};
}

// ---- the probes ------------------------------------------------------------------------------

namespace {

// File systems whose lookups are case-sensitive unless a directory carries the casefold flag
// (FS_CASEFOLD_FL, which FS_IOC_GETFLAGS reports). Any other (vfat, exfat, NTFS, SMB, FUSE, NFS,
// ZFS with casesensitivity=insensitive, ...) is taken to fold: over-matching only refuses more.
bool CaseSensitiveFs(long magic) {
  switch (static_cast<unsigned long>(magic)) {
    case 0xEF53UL:      // ext2/3/4
    case 0x58465342UL:  // xfs
    case 0x9123683EUL:  // btrfs
    case 0x01021994UL:  // tmpfs
    case 0xF2F52010UL:  // f2fs
    case 0x794C7630UL:  // overlayfs
    case 0x858458F6UL:  // ramfs
    case 0xCA451A4EUL:  // bcachefs
      return true;
    default:
      return false;
  }
}

bool FoldsCase(int dir_fd) {
  struct statfs fs {};
  if (::fstatfs(dir_fd, &fs) != 0) return true;
  if (!CaseSensitiveFs(static_cast<long>(fs.f_type))) return true;
  int flags = 0;
  if (::ioctl(dir_fd, FS_IOC_GETFLAGS, &flags) != 0) return false;  // no flags: no casefold
  constexpr int kCasefold = 0x40000000;                             // FS_CASEFOLD_FL
  return (flags & kCasefold) != 0;
}

Result<GitDirEntryKind> KindAt(int dir_fd, const char* name, std::string_view where) {
  struct stat st {};
  if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return GitDirEntryKind::kMissing;
    return SysFail(errno == EACCES ? Code::kDenied : Code::kIo,
                   "cannot look for git's names in " + Q(where));
  }
  if (S_ISREG(st.st_mode)) {
    return (st.st_mode & 0111) != 0 ? GitDirEntryKind::kExecFile : GitDirEntryKind::kFile;
  }
  if (S_ISDIR(st.st_mode)) return GitDirEntryKind::kDir;
  if (S_ISLNK(st.st_mode)) return GitDirEntryKind::kSymlink;
  return GitDirEntryKind::kOther;
}

// Looks the four names up in the directory (as git does: the directory's own lookup, so a
// case-folding directory finds "head" for HEAD).
Result<GitDirNames> NamesAt(int dir_fd, std::string_view where) {
  GitDirNames n;
  ANVIL_TRY(head, KindAt(dir_fd, "HEAD", where));
  n.head = *head;
  ANVIL_TRY(objects, KindAt(dir_fd, "objects", where));
  n.objects = *objects;
  ANVIL_TRY(refs, KindAt(dir_fd, "refs", where));
  n.refs = *refs;
  ANVIL_TRY(commondir, KindAt(dir_fd, "commondir", where));
  n.commondir = *commondir;
  return n;
}

UniqueFd OpenChildDir(int dir_fd, const std::string& name) {
  return UniqueFd(
      ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
}

std::string JoinRel(std::string_view dir, std::string_view name) {
  if (dir.empty() || dir == ".") return std::string(name);
  return std::string(dir) + "/" + std::string(name);
}

struct TreeWalk {
  std::size_t entries_left;
  std::size_t max_depth;
  std::string top;  // for messages
};

// `rel`: the path of the directory open at `fd`, relative to the walk's start ("" for it).
Result<std::optional<std::string>> FindGitDirIn(int fd, const std::string& rel, std::size_t depth,
                                                TreeWalk& walk) {
  const std::string where = JoinRel(walk.top, rel);
  ANVIL_TRY(names, NamesAt(fd, where));
  if (IsGitDirShape(*names)) return std::optional<std::string>(rel);
  std::vector<std::string> subdirs;
  {
    const int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) return SysFail("io", "walk " + Q(where));
    std::unique_ptr<DIR, int (*)(DIR*)> dir(::fdopendir(dup), &::closedir);
    if (!dir) {
      const int err = errno;
      ::close(dup);
      return SysFail("io", "walk " + Q(where), err);
    }
    while (true) {
      errno = 0;
      const dirent* entry = ::readdir(dir.get());
      if (entry == nullptr) {
        if (errno != 0) return SysFail("io", "walk " + Q(where));
        break;
      }
      const std::string_view name(entry->d_name);
      if (name == "." || name == "..") continue;
      if (walk.entries_left == 0) {
        return Fail("limit", "too many entries beneath " + Q(walk.top));
      }
      --walk.entries_left;
      bool is_dir = entry->d_type == DT_DIR;
      if (entry->d_type == DT_UNKNOWN) {
        struct stat st {};
        if (::fstatat(fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
          return SysFail("io", "walk " + Q(JoinRel(where, name)));
        }
        is_dir = S_ISDIR(st.st_mode);
      }
      if (is_dir) subdirs.emplace_back(name);
    }
  }
  for (const std::string& name : subdirs) {
    const std::string child_rel = rel.empty() ? name : rel + "/" + name;
    if (depth + 1 > walk.max_depth) {
      return Fail("limit",
                  "more than " + std::to_string(walk.max_depth) + " levels beneath " + Q(walk.top));
    }
    UniqueFd child = OpenChildDir(fd, name);
    if (!child) {
      if (errno == ENOENT) continue;  // gone meanwhile: holds nothing
      const int err = errno;
      return Fail(err == EACCES || err == EPERM ? Code::kDenied : Code::kIo,
                  "cannot look inside " + Q(JoinRel(walk.top, child_rel)), err);
    }
    auto found = FindGitDirIn(child.Get(), child_rel, depth + 1, walk);
    if (!found || *found) return found;
  }
  return std::optional<std::string>();
}

}  // namespace

Result<WorkspaceRoot::GitDirWay> WorkspaceRoot::ProbeGitDirs(std::string_view dir) const {
  ANVIL_TRY(norm, NormalizeWorkspacePath(dir, RootPolicy::kAllow));
  ANVIL_TRY(root, OpenBeneath(kWorkspaceRootPath, O_RDONLY | O_DIRECTORY | O_NONBLOCK,
                              BaseResolve() | RESOLVE_NO_SYMLINKS));
  GitDirWay way;
  UniqueFd current = std::move(*root);
  std::string path(kWorkspaceRootPath);
  std::size_t start = 0;
  while (true) {
    ANVIL_TRY(names, NamesAt(current.Get(), path));
    way.dirs.push_back(GitDirProbe{path, *names, FoldsCase(current.Get())});
    if (*norm == kWorkspaceRootPath || start == std::string::npos) break;
    const std::size_t slash = norm->find('/', start);
    const std::string name =
        norm->substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    UniqueFd next = OpenChildDir(current.Get(), name);
    if (!next) {
      // Missing, a symlink or not a directory: the op's own resolution refuses or creates it.
      if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) {
        way.complete = false;
        break;
      }
      const int err = errno;
      return Fail(err == EACCES || err == EPERM ? Code::kDenied : Code::kIo,
                  "cannot look inside " + Q(JoinRel(path, name)), err);
    }
    path = JoinRel(path, name);
    current = std::move(next);
    start = slash == std::string::npos ? std::string::npos : slash + 1;
  }
  return way;
}

Status WorkspaceRoot::CheckGitDirs(std::string_view op, std::string_view target,
                                   GitDirEntryKind made) const {
  if (IsProtectedPath(target)) return Ok();
  const auto [parent, name] = SplitParent(target);
  ANVIL_TRY(way, ProbeGitDirs(parent));
  GitDirMutation m;
  m.op = std::string(op);
  m.dirs = std::move(way->dirs);
  if (made != GitDirEntryKind::kMissing) {
    m.name = std::string(name);
    m.kind = made;
  }
  m.made_in_last = way->complete;
  return DecideGitDirMutation(m);
}

Result<GitDirEntryKind> WorkspaceRoot::GitEntryKind(std::string_view path) const {
  ANVIL_TRY(norm, NormalizeWorkspacePath(path, RootPolicy::kReject));
  const auto [parent, name] = SplitParent(*norm);
  auto dir = OpenBeneath(parent, O_PATH | O_DIRECTORY, BaseResolve() | RESOLVE_NO_SYMLINKS);
  if (!dir) {
    // Nothing there: the op's own resolution of the same parent reports why.
    const int err = dir.error().sys_errno;
    if (err == ENOENT || err == ENOTDIR || err == ELOOP) return GitDirEntryKind::kMissing;
    return tl::unexpected(dir.error());
  }
  return KindAt(dir->Get(), std::string(name).c_str(), *norm);
}

Result<std::optional<std::string>> WorkspaceRoot::FindGitDirBeneath(std::string_view dir,
                                                                    std::size_t max_entries,
                                                                    std::size_t max_depth) const {
  ANVIL_TRY(norm, NormalizeWorkspacePath(dir, RootPolicy::kAllow));
  auto start = OpenBeneath(*norm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK,
                           BaseResolve() | RESOLVE_NO_SYMLINKS);
  if (!start) {
    const int err = start.error().sys_errno;
    // A file or a symlink holds no directory; a missing one is the op's own error to report.
    if (err == ENOTDIR || err == ELOOP || err == ENOENT) return std::optional<std::string>();
    return tl::unexpected(start.error());
  }
  TreeWalk walk{max_entries, max_depth, *norm};
  return FindGitDirIn(start->Get(), "", 0, walk);
}

}  // namespace anvil
