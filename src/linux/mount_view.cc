// The mount view (mount_view.h), one thing: the loop over the mount plan that builds the
// command's file view, each kind of mount it makes, and the check of the view once built.
#include "linux/mount_view.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/syscalls.h"
#include "common/unique_fd.h"
#include "linux/open_beneath.h"
#include "linux/root_remap.h"

namespace anvil {
namespace {

// The new mount API (Linux 5.12+); defined here so the glibc and kernel headers do not clash.
constexpr unsigned kOpenTreeClone = 1;
constexpr unsigned kAtRecursive = 0x8000;
constexpr unsigned kMoveMountFEmptyPath = 0x4;
constexpr unsigned kMoveMountTEmptyPath = 0x40;
constexpr uint64_t kMountAttrRdonly = 0x1;
constexpr uint64_t kMountAttrNosuid = 0x2;
constexpr uint64_t kMountAttrNodev = 0x4;
constexpr uint64_t kMountAttrNoexec = 0x8;
constexpr unsigned kFsopenCloexec = 0x1;
constexpr unsigned kFsconfigSetString = 1;
constexpr unsigned kFsconfigCmdCreate = 6;
constexpr unsigned kFsmountCloexec = 0x1;
struct MountAttr {
  uint64_t attr_set;
  uint64_t attr_clr;
  uint64_t propagation;
  uint64_t userns_fd;
};

const char kStage[] = "/tmp";  // staging tmpfs, mounted over /tmp in our private namespace
const std::string kOld = "/oldroot";
const std::string kNew = "/newroot";
const std::string kIdmapped = "/idmapped";  // root's idmapped trees, staged until EnterView

Status MkdirP(const std::string& path, mode_t mode = 0755) {
  // Usually the parent is there already: one mkdir, not one per component.
  if (::mkdir(path.c_str(), mode) == 0 || errno == EEXIST) return Ok();
  if (errno != ENOENT) return SysFail("sandbox", "mkdir " + path);
  std::string partial;
  size_t pos = 1;
  while (pos <= path.size()) {
    size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    partial = path.substr(0, next);
    if (::mkdir(partial.c_str(), mode) != 0 && errno != EEXIST) {
      return SysFail("sandbox", "mkdir " + partial);
    }
    pos = next + 1;
  }
  return Ok();
}

// Creates the mount point `dst` (a directory, or an empty file for a file mount).
// Anything already at `dst` is left as it is (EEXIST), as a mount point of our own making.
Status EnsureMountpoint(const std::string& dst, bool directory) {
  if (directory) return MkdirP(dst);
  auto create = [&dst] {
    return UniqueFd(
        ::open(dst.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0444));
  };
  UniqueFd f = create();
  if (!f && errno == ENOENT) {
    auto slash = dst.rfind('/');
    ANVIL_RETURN_IF_ERROR(MkdirP(dst.substr(0, slash)));
    f = create();
  }
  if (!f && errno != EEXIST) return SysFail("sandbox", "create mount point " + dst);
  return Ok();
}

// The command's home (FileView::home_base), where Anvil writes its generated files.
std::string g_home_base;
// Where mount points must not be looked up through a symlink: directories that earlier
// sandboxed commands wrote — the command's home and the workspace's kept /tmp
// (FileView::tmp_bind). Empty: nowhere.
std::vector<std::string> g_command_written;

// The workspace's logical path made as a link at the top of the sandbox home or the kept /tmp
// (LinkLogicalWorkspace): the directory held shared while the run lasts, the link's name and
// where it leads; RemoveWorkspaceLink takes it away when the run ends, so that it is not left
// among what tools keep there.
struct WorkspaceLinkHold {
  UniqueFd parent;
  std::string name;
  std::string target;
};
WorkspaceLinkHold g_workspace_link;

// The deepest of g_command_written that holds `view_path` strictly; nullptr: none.
const std::string* CommandWrittenBase(const std::string& view_path) {
  const std::string* best = nullptr;
  for (const auto& base : g_command_written) {
    if (view_path != base && PathIsWithin(view_path, base) &&
        (best == nullptr || base.size() > best->size())) {
      best = &base;
    }
  }
  return best;
}

// The mount point `view_path` (strictly beneath `base`, one of g_command_written) as an O_PATH
// descriptor, each component opened with RESOLVE_NO_SYMLINKS below the base's own mount and,
// with `create`, made when missing (directories 0755, a file mount point an empty 0444 file).
// A bind must never follow a link there to wherever it points: a symlink in the way is
// replaced, an object of the wrong type is an error.
Result<UniqueFd> MountpointBeneath(const std::string& base, const std::string& view_path,
                                   bool directory, bool create) {
  const bool home = base == g_home_base;
  UniqueFd dir(::open((kNew + base).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return SysFail("sandbox", "open " + base);
  const std::string rel = view_path.substr(base == "/" ? 1 : base.size() + 1);
  auto refuse = [&](const std::string& where) {
    const std::string what = home ? "the sandbox home" : "the workspace's kept /tmp";
    return Fail("sandbox", what + " holds something other than a directory at " + where +
                               ", where the view needs a mount point (made by an earlier "
                               "command?); fix: remove it from " +
                               what +
                               " (`anvil sandbox --json -- true` names its path on the host)");
  };
  size_t start = 0;
  while (true) {
    size_t end = rel.find('/', start);
    const bool last = end == std::string::npos;
    const std::string part = rel.substr(start, last ? std::string::npos : end - start);
    const std::string shown = base + "/" + rel.substr(0, last ? rel.size() : end);
    const bool want_dir = !last || directory;
    open_how how{};
    // No O_NOFOLLOW: with O_PATH it would open a trailing symlink itself; RESOLVE_NO_SYMLINKS
    // makes any symlink ELOOP instead.
    how.flags = O_PATH | O_CLOEXEC | (want_dir ? O_DIRECTORY : 0);
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH;
    long fd = syscall(SYS_openat2, dir.Get(), part.c_str(), &how, sizeof(how));
    if (fd < 0 && errno == ELOOP && create) {
      // A symlink an earlier command left where the view needs a mount point: the base is the
      // sandbox's own, so the link goes (unlinkat never follows it) and a directory or file
      // takes its place.
      struct stat st {};
      if (::fstatat(dir.Get(), part.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(st.st_mode) && ::unlinkat(dir.Get(), part.c_str(), 0) == 0) {
        errno = ENOENT;
      } else {
        errno = ELOOP;
      }
    }
    if (fd < 0 && errno == ENOENT && create) {
      if (want_dir) {
        if (::mkdirat(dir.Get(), part.c_str(), 0755) != 0 && errno != EEXIST) {
          return SysFail("sandbox", "mkdir " + shown);
        }
      } else {
        UniqueFd f(::openat(dir.Get(), part.c_str(),
                            O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0444));
        if (!f && errno != EEXIST) return SysFail("sandbox", "create mount point " + shown);
      }
      fd = syscall(SYS_openat2, dir.Get(), part.c_str(), &how, sizeof(how));
    }
    if (fd < 0) {
      if (errno == ELOOP || errno == ENOTDIR) return refuse(shown);
      if (errno == ENOENT && !create) return UniqueFd();
      return SysFail("sandbox", "open mount point " + shown);
    }
    UniqueFd next(static_cast<int>(fd));
    if (last) {
      struct stat st {};
      if (::fstat(next.Get(), &st) != 0) return SysFail("sandbox", "stat " + shown);
      if (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) return refuse(shown);
      return next;
    }
    dir = std::move(next);
    start = end + 1;
  }
}

// The mode of every file Anvil writes into the home, whatever the caller's umask: part of what
// HoldsHomeFile compares, so it must not vary from run to run.
constexpr mode_t kHomeFileMode = 0644;

// Whether `name` in the home (`home`) already is the file Anvil writes there, so that it is not
// written again. Judged on what one descriptor shows, never by name: opened beneath the home
// without following a link (a planted symlink, or one on the way, is not the file), without
// blocking (a FIFO); then a regular file of `owner`, with no name but this one (through another
// the file could be changed behind this check, from outside the view too), Anvil's mode and
// exactly `content`. Anything else is replaced by WriteHomeFile, as when it is missing.
bool HoldsHomeFile(int home, const std::string& name, const std::string& content, uid_t owner) {
  open_how how{};
  how.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH;
  const long fd = syscall(SYS_openat2, home, name.c_str(), &how, sizeof(how));
  if (fd < 0) return false;
  UniqueFd file(static_cast<int>(fd));
  struct stat st {};
  if (::fstat(file.Get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
      st.st_uid != owner || (st.st_mode & 07777) != kHomeFileMode ||
      static_cast<size_t>(st.st_size) != content.size()) {
    return false;
  }
  if (content.empty()) return true;
  // One byte more than the content: a file that grew since the fstat is not it either.
  std::string have(content.size() + 1, '\0');
  size_t got = 0;
  while (got < have.size()) {
    const ssize_t n = ::read(file.Get(), have.data() + got, have.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  return got == content.size() && have.compare(0, got, content) == 0;
}

// A file Anvil writes into the home (`home`, the sandbox home's directory in the view being
// built: FileView::home_gitconfig, home_files), unless it holds that content already
// (HoldsHomeFile): a temporary file beside it under a random name (a name a command could
// guess, it could block with a directory), renamed over the name (renameat replaces the entry
// itself, never what a link there points at). Never best effort: what an earlier command left
// there (a ~/.gitconfig with core.fsmonitor, a ~/.bash_profile) would run in this run, so a file
// that cannot be written stops the start, naming what to remove.
//
// Like a file written afresh, one left as it was stays Anvil's only until a command of the same
// sandbox home changes it: the home is writable in every view of it, including a run of the same
// workspace going on at this moment. What the check guarantees is what writing it did: at the
// start of this run the name holds exactly Anvil's file.
Status WriteHomeFile(int home, const std::string& name, const std::string& content, uid_t owner) {
  if (HoldsHomeFile(home, name, content, owner)) return Ok();  // as the last run left it
  const std::string shown = "~/" + name + " in the sandbox home";
  const std::string fix =
      " (fix: remove it from the sandbox home: `anvil sandbox --json` shows the home as "
      "home.sandbox_home; deleting the sandbox home is always safe)";
  UniqueFd out;
  std::string temp;
  for (int attempt = 0; attempt < 16 && !out; ++attempt) {
    uint64_t random = 0;
    if (::getrandom(&random, sizeof(random), 0) != static_cast<ssize_t>(sizeof(random))) {
      return SysFail("sandbox", "random name to write " + shown);
    }
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(random));
    temp = "." + name + ".anvil-" + hex;
    out.Reset(::openat(home, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                       kHomeFileMode));
    if (!out && errno != EEXIST) break;
  }
  if (!out) return SysFail("sandbox", "write " + shown + fix);
  const bool written =
      ::fchmod(out.Get(), kHomeFileMode) == 0 &&
      ::write(out.Get(), content.data(), content.size()) == static_cast<ssize_t>(content.size());
  out.Reset();
  if (!written) {
    const int err = errno;
    ::unlinkat(home, temp.c_str(), 0);
    errno = err;
    return SysFail("sandbox", "write " + shown);
  }
  if (::renameat(home, temp.c_str(), home, name.c_str()) != 0) {
    const int err = errno;
    ::unlinkat(home, temp.c_str(), 0);
    return Fail("sandbox",
                shown + " cannot be replaced by the file Anvil writes there (" +
                    std::strerror(err) +
                    ": an earlier command left a directory in its place, or is it another "
                    "user's file?)" +
                    fix,
                err);
  }
  return Ok();
}

// Forward: attaches a detached tree at `dst` (below).
Status AttachTree(UniqueFd tree, const std::string& shown, const std::string& dst, bool read_only,
                  bool keep_dev);

// An empty tmpfs of its own at `path` beneath the home (MountOpKind::kHomeStartupDir: fish's
// configuration), for this run only: whatever an earlier command left there is not what the
// shell finds. Mounted in the staging root, then attached at a mount point made beneath the
// home without following a link; something other than a directory there stops the start.
Status MountEmptyHomeDir(const std::string& path, std::size_t index) {
  const std::string shown = "~" + path.substr(g_home_base.size());
  const std::string stage = "/home-startup-dir-" + std::to_string(index);
  if (::mkdir(stage.c_str(), 0700) != 0) return SysFail("sandbox", "mkdir " + stage);
  if (::mount("tmpfs", stage.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
              TmpfsOptions("0700", 16 << 20).c_str()) != 0) {
    return SysFail("sandbox", "mount tmpfs for " + shown);
  }
  long fd = syscall(SYS_open_tree, AT_FDCWD, stage.c_str(), kOpenTreeClone | O_CLOEXEC);
  if (fd < 0) return SysFail("sandbox", "open_tree " + shown);
  return AttachTree(UniqueFd(static_cast<int>(fd)), shown + " in the sandbox home", kNew + path,
                    /*read_only=*/false, /*keep_dev=*/false);
}

// Applies flags to every mount of a detached tree (open_tree clone) and attaches it at `dst`.
// One syscall per step, no /proc/self/mountinfo parsing.
Status AttachTree(UniqueFd tree, const std::string& shown, const std::string& dst, bool read_only,
                  bool keep_dev) {
  MountAttr attr{};
  attr.attr_set =
      kMountAttrNosuid | (keep_dev ? 0 : kMountAttrNodev) | (read_only ? kMountAttrRdonly : 0);
  attr.propagation = MS_PRIVATE;
  if (syscall(SYS_mount_setattr, tree.Get(), "", AT_EMPTY_PATH | kAtRecursive, &attr,
              sizeof(attr)) != 0) {
    return SysFail("sandbox", "mount_setattr " + shown);
  }
  struct stat st {};
  if (::fstat(tree.Get(), &st) != 0) return SysFail("sandbox", "stat " + shown);
  const std::string view_path = dst.substr(kNew.size());
  if (const std::string* base = CommandWrittenBase(view_path)) {
    ANVIL_TRY(point, MountpointBeneath(*base, view_path, S_ISDIR(st.st_mode), /*create=*/true));
    if (syscall(SYS_move_mount, tree.Get(), "", point->Get(), "",
                kMoveMountFEmptyPath | kMoveMountTEmptyPath) != 0) {
      return SysFail("sandbox", "move_mount " + view_path);
    }
    return Ok();
  }
  ANVIL_RETURN_IF_ERROR(EnsureMountpoint(dst, S_ISDIR(st.st_mode)));
  if (syscall(SYS_move_mount, tree.Get(), "", AT_FDCWD, dst.c_str(), kMoveMountFEmptyPath) != 0) {
    return SysFail("sandbox", "move_mount " + dst);
  }
  return Ok();
}

// The id the kernel shows for an owner that is not mapped in this user namespace.
uid_t OverflowUid() {
  static const uid_t id = [] {
    uid_t v = 65534;
    if (FILE* f = std::fopen("/proc/sys/kernel/overflowuid", "re")) {
      unsigned long n = 0;
      if (std::fscanf(f, "%lu", &n) == 1) v = static_cast<uid_t>(n);
      std::fclose(f);
    }
    return v;
  }();
  return id;
}

// Init could not reach `dst` (EACCES): whether the command can never reach it either. True when
// the first directory on the way that init cannot search belongs to an owner this namespace does
// not map: init searches with every right the command has (and more), and only a directory's
// owner can change its mode, which no process of the sandbox is. A directory the sandbox's own
// id owns (the command could chmod it), or no blocking directory found: false (fail closed).
bool UnreachableForTheCommand(const std::string& dst) {
  for (size_t slash = dst.find('/', kNew.size() + 1); slash != std::string::npos;
       slash = dst.find('/', slash + 1)) {
    const std::string dir = dst.substr(0, slash);
    if (::faccessat(AT_FDCWD, dir.c_str(), X_OK, AT_EACCESS) == 0) continue;
    if (errno != EACCES) return false;
    struct stat st {};
    if (::fstatat(AT_FDCWD, dir.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
    return S_ISDIR(st.st_mode) && st.st_uid == OverflowUid();
  }
  return false;
}

// Covers the existing file or socket at `dst` (inside the view) with the read-only empty file
// `mask`. The mount point is opened, never created: a host file that vanished since the view was
// computed is skipped (false), and nothing is ever made in a writable root of the host.
// With `unreachable_is_hidden` (root's sandbox, outside its idmapped roots) a target that init
// cannot reach is skipped too: init looks as the command's own host id, and the command cannot
// change a host directory it does not own, so it can never reach it either. Elsewhere the same
// holds where the directory in the way has an owner the namespace does not map
// (UnreachableForTheCommand): another user's private directory in a writable root. `directory`: the
// target is a directory (a credential location) and `mask` an empty directory.
Result<bool> MaskExisting(const std::string& mask, const std::string& dst,
                          bool unreachable_is_hidden, bool directory = false) {
  UniqueFd target;
  const std::string view_path = dst.substr(kNew.size());
  if (const std::string* base = CommandWrittenBase(view_path)) {
    // Never through a symlink there; a type mismatch there is simply not the masked thing.
    open_how how{};
    how.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH;
    UniqueFd home(::open((kNew + *base).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!home) return SysFail("sandbox", "open " + *base);
    const std::string rel = view_path.substr(base->size() + 1);
    long fd = syscall(SYS_openat2, home.Get(), rel.c_str(), &how, sizeof(how));
    if (fd < 0) {
      if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP || errno == EXDEV) return false;
      if (errno == EACCES && (unreachable_is_hidden || UnreachableForTheCommand(dst))) {
        return false;
      }
      return SysFail("sandbox", "open mask target " + dst);
    }
    target = UniqueFd(static_cast<int>(fd));
  } else {
    target = UniqueFd(::open(dst.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  }
  if (!target) {
    if (errno == ENOENT || errno == ENOTDIR) return false;
    if (errno == EACCES && (unreachable_is_hidden || UnreachableForTheCommand(dst))) return false;
    return SysFail("sandbox", "open mask target " + dst);
  }
  struct stat st {};
  if (::fstat(target.Get(), &st) != 0) return SysFail("sandbox", "stat mask target " + dst);
  // Replaced by the host since (a directory, a link): no longer what the mask was for.
  if (directory ? !S_ISDIR(st.st_mode) : (!S_ISREG(st.st_mode) && !S_ISSOCK(st.st_mode))) {
    return false;
  }
  long fd = syscall(SYS_open_tree, AT_FDCWD, mask.c_str(), kOpenTreeClone | O_CLOEXEC);
  if (fd < 0) return SysFail("sandbox", "open_tree " + mask);
  UniqueFd tree(static_cast<int>(fd));
  MountAttr attr{};
  attr.attr_set = kMountAttrRdonly | kMountAttrNosuid | kMountAttrNodev;
  attr.propagation = MS_PRIVATE;
  if (syscall(SYS_mount_setattr, tree.Get(), "", AT_EMPTY_PATH, &attr, sizeof(attr)) != 0) {
    return SysFail("sandbox", "mount_setattr " + mask);
  }
  if (syscall(SYS_move_mount, tree.Get(), "", target.Get(), "",
              kMoveMountFEmptyPath | kMoveMountTEmptyPath) != 0) {
    if (errno == ENOENT && S_ISSOCK(st.st_mode) && st.st_nlink == 0) {
      // A mount of the socket file itself whose name the host deleted: the kernel mounts nothing
      // on a deleted entry, and the mount (locked in the sandbox's namespace) cannot be taken
      // away. Only root makes such a mount, and the socket stays reachable through it.
      return Fail("sandbox",
                  dst.substr(kNew.size()) +
                      " is a mount of a Unix socket whose name was deleted on the host; it "
                      "cannot be covered in the sandbox's view, and connect(2) would reach the "
                      "process holding the socket (fix: unmount it on the host, umount " +
                      dst.substr(kNew.size()) + ")",
                  ENOENT);
    }
    return SysFail("sandbox", "move_mount mask onto " + dst);
  }
  return true;
}

// The ways down to the workspace (MountOpKind::kWay) as they were attached, sealed read-only
// by SealWays once every mount point beneath them is made: by descriptor, never by a path that
// leads through the sandbox home (another run of the workspace may rename what is there).
std::vector<UniqueFd> g_ways;

// An empty tmpfs at `view_path`, writable until SealWays: the mount points beneath it are made in
// it, none in the sandbox home or the workspace's /tmp.
Status MountWay(const std::string& view_path) {
  UniqueFd fs(static_cast<int>(syscall(SYS_fsopen, "tmpfs", kFsopenCloexec)));
  if (!fs) return SysFail("sandbox", "fsopen tmpfs for " + view_path);
  const std::string size = std::to_string(64 << 10);
  const std::string inodes = std::to_string(kMinTmpfsInodes);
  for (const auto& [key, value] : {std::pair<const char*, const char*>{"mode", "0755"},
                                   {"size", size.c_str()},
                                   {"nr_inodes", inodes.c_str()}}) {
    if (syscall(SYS_fsconfig, fs.Get(), kFsconfigSetString, key, value, 0) != 0) {
      return SysFail("sandbox", std::string("fsconfig ") + key + " for " + view_path);
    }
  }
  if (syscall(SYS_fsconfig, fs.Get(), kFsconfigCmdCreate, nullptr, nullptr, 0) != 0) {
    return SysFail("sandbox", "create the tmpfs for " + view_path);
  }
  UniqueFd mnt(static_cast<int>(syscall(SYS_fsmount, fs.Get(), kFsmountCloexec,
                                        kMountAttrNosuid | kMountAttrNodev | kMountAttrNoexec)));
  if (!mnt) return SysFail("sandbox", "fsmount the tmpfs for " + view_path);
  // The same mount, kept to seal it; AttachTree makes or opens the mount point (beneath the
  // sandbox home or the kept /tmp, never through a symlink).
  UniqueFd kept(::fcntl(mnt.Get(), F_DUPFD_CLOEXEC, 0));
  if (!kept) return SysFail("sandbox", "dup the tmpfs for " + view_path);
  ANVIL_RETURN_IF_ERROR(AttachTree(std::move(mnt), view_path, kNew + view_path,
                                   /*read_only=*/false, /*keep_dev=*/false));
  g_ways.push_back(std::move(kept));
  return Ok();
}

// The workspace's logical path (FileView::workspace_link): a symbolic link to the workspace, made
// in the view's own directories — beneath the sandbox home or the kept /tmp each directory on the
// way made and opened without following a link (MountpointBeneath). An earlier command's link
// there is replaced; anything else there is left as it is, and the command then starts at the
// workspace's own path (the command's process checks where the link leads before it enters it).
Status LinkLogicalWorkspace(const FileView& view) {
  const std::string& link = view.workspace_link;
  if (link.empty()) return Ok();
  const size_t slash = link.rfind('/');
  const std::string dir = slash == 0 ? "/" : link.substr(0, slash);
  const std::string name = link.substr(slash + 1);
  UniqueFd parent;
  bool kept_dir = false;  // the link is a name of the sandbox home's or kept /tmp's own top
  if (const std::string* base = CommandWrittenBase(link)) {
    if (dir == *base) {
      // Held shared while the run lasts (RemoveWorkspaceLink): waits only while a finishing
      // run of this workspace holds it exclusively to remove the link.
      parent = UniqueFd(::open((kNew + dir).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!parent) return SysFail("sandbox", "open " + dir);
      while (::flock(parent.Get(), LOCK_SH) != 0) {
        if (errno != EINTR) return SysFail("sandbox", "lock " + dir);
      }
      kept_dir = true;
    } else {
      ANVIL_TRY(made, MountpointBeneath(*base, dir, /*directory=*/true, /*create=*/true));
      parent = std::move(*made);
    }
  } else {
    ANVIL_RETURN_IF_ERROR(MkdirP(kNew + dir));
    parent = UniqueFd(::open((kNew + dir).c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!parent) return SysFail("sandbox", "open " + dir);
  }
  struct stat st {};
  if (::fstatat(parent.Get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!S_ISLNK(st.st_mode)) return Ok();  // not the view's to replace
    char target[PATH_MAX];
    const ssize_t n = ::readlinkat(parent.Get(), name.c_str(), target, sizeof(target));
    const bool ours = n >= 0 && std::string(target, static_cast<size_t>(n)) == view.workspace;
    if (!ours && ::unlinkat(parent.Get(), name.c_str(), 0) != 0) {
      return SysFail("sandbox", "unlink " + link);
    }
  } else if (errno != ENOENT) {
    return SysFail("sandbox", "stat " + link);
  }
  // EEXIST: another run of the workspace made one meanwhile (the command's process checks it).
  if (::symlinkat(view.workspace.c_str(), parent.Get(), name.c_str()) != 0 && errno != EEXIST) {
    return SysFail("sandbox", "symlink " + link);
  }
  if (kept_dir) g_workspace_link = {std::move(parent), name, view.workspace};
  return Ok();
}

}  // namespace

void RemoveWorkspaceLink() {
  WorkspaceLinkHold hold = std::move(g_workspace_link);
  g_workspace_link = {};
  if (!hold.parent) return;
  // Another run of the workspace still holds the directory (and may stand in the link): the
  // last one to end removes it. A name that leads elsewhere now is not the view's.
  if (::flock(hold.parent.Get(), LOCK_EX | LOCK_NB) != 0) return;
  char target[PATH_MAX];
  const ssize_t n = ::readlinkat(hold.parent.Get(), hold.name.c_str(), target, sizeof(target));
  if (n >= 0 && std::string(target, static_cast<size_t>(n)) == hold.target) {
    (void)::unlinkat(hold.parent.Get(), hold.name.c_str(), 0);
  }
}

namespace {

// Makes each way down to the workspace read-only (the last mount point beneath it is made).
Status SealWays() {
  for (const UniqueFd& way : g_ways) {
    MountAttr attr{};
    attr.attr_set = kMountAttrRdonly;
    if (syscall(SYS_mount_setattr, way.Get(), "", AT_EMPTY_PATH, &attr, sizeof(attr)) != 0) {
      return SysFail("sandbox", "make the way to the workspace read-only");
    }
  }
  g_ways.clear();
  return Ok();
}

// Clones the tree at `src` (recursively) and attaches it at `dst`.
Status BindTree(const std::string& src, const std::string& dst, bool read_only, bool keep_dev) {
  long fd = syscall(SYS_open_tree, AT_FDCWD, src.c_str(),
                    kOpenTreeClone | O_CLOEXEC | kAtRecursive | AT_SYMLINK_NOFOLLOW);
  if (fd < 0) return SysFail("sandbox", "open_tree " + src);
  return AttachTree(UniqueFd(static_cast<int>(fd)), src, dst, read_only, keep_dev);
}

// BindTree, read-only, for a tree the caller already opened (O_PATH).
Status BindTreeFd(int src_fd, const std::string& shown, const std::string& dst) {
  long fd =
      syscall(SYS_open_tree, src_fd, "", kOpenTreeClone | O_CLOEXEC | kAtRecursive | AT_EMPTY_PATH);
  if (fd < 0) return SysFail("sandbox", "open_tree " + shown);
  return AttachTree(UniqueFd(static_cast<int>(fd)), shown, dst, /*read_only=*/true,
                    /*keep_dev=*/false);
}

// Binds the symbolic link `host` onto the same link in the view (`dst`), read-only, so that the
// command can neither remove nor replace it: unlink(2) and rename(2) refuse a mount point. The
// link in the view is opened, never made nor followed, and must be the one planned (the same
// inode).
Status PinLink(const std::string& host, const std::string& dst) {
  const std::string view_path = dst.substr(kNew.size());
  long fd = syscall(SYS_open_tree, AT_FDCWD, host.c_str(),
                    kOpenTreeClone | O_CLOEXEC | AT_SYMLINK_NOFOLLOW);
  if (fd < 0) return SysFail("sandbox", "open_tree " + view_path);
  UniqueFd tree(static_cast<int>(fd));
  struct stat planned {};
  if (::fstat(tree.Get(), &planned) != 0) return SysFail("sandbox", "stat " + view_path);
  if (!S_ISLNK(planned.st_mode)) {
    return Fail("sandbox", view_path +
                               " is no longer a symbolic link (changed on the host while "
                               "the sandbox started); fix: run it again");
  }
  MountAttr attr{};
  attr.attr_set = kMountAttrRdonly | kMountAttrNosuid | kMountAttrNodev;
  attr.propagation = MS_PRIVATE;
  if (syscall(SYS_mount_setattr, tree.Get(), "", AT_EMPTY_PATH, &attr, sizeof(attr)) != 0) {
    return SysFail("sandbox", "mount_setattr " + view_path);
  }
  UniqueFd root(::open(kNew.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return SysFail("sandbox", "open the new root");
  const auto slash = view_path.rfind('/');
  UniqueFd parent;
  if (slash == 0) {
    parent = std::move(root);
  } else {
    open_how how{};
    how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH;
    const std::string rel = view_path.substr(1, slash - 1);
    long p = syscall(SYS_openat2, root.Get(), rel.c_str(), &how, sizeof(how));
    if (p < 0) return SysFail("sandbox", "open the directory of " + view_path);
    parent = UniqueFd(static_cast<int>(p));
  }
  UniqueFd link(
      ::openat(parent.Get(), view_path.substr(slash + 1).c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!link) return SysFail("sandbox", "open " + view_path);
  struct stat shown {};
  if (::fstat(link.Get(), &shown) != 0) return SysFail("sandbox", "stat " + view_path);
  if (!S_ISLNK(shown.st_mode) || shown.st_dev != planned.st_dev || shown.st_ino != planned.st_ino) {
    return Fail("sandbox", view_path + " in the view is not the link planned; not starting");
  }
  if (syscall(SYS_move_mount, tree.Get(), "", link.Get(), "",
              kMoveMountFEmptyPath | kMoveMountTEmptyPath) != 0) {
    return SysFail("sandbox", "pin the link " + view_path);
  }
  return Ok();
}

}  // namespace

std::string TmpfsOptions(const std::string& mode, uint64_t size_bytes) {
  constexpr uint64_t kPage = 4096;
  const uint64_t size = std::max<uint64_t>(size_bytes, kPage);
  const uint64_t inodes = std::max<uint64_t>(size / kPage, kMinTmpfsInodes);
  return "mode=" + mode + ",size=" + std::to_string(size) + ",nr_inodes=" + std::to_string(inodes);
}

namespace {

Status MountTmpfs(const std::string& dst, const std::string& options, unsigned long flags) {
  // Never planned there (UnsearchableAncestors covers no directory the view makes itself); a
  // path walk through what earlier commands wrote would follow their links.
  if (CommandWrittenBase(dst.substr(kNew.size())) != nullptr) {
    return Fail("sandbox", "a tmpfs beneath a directory earlier commands wrote: " +
                               dst.substr(kNew.size()) + "; not starting");
  }
  ANVIL_RETURN_IF_ERROR(MkdirP(dst));
  if (::mount("tmpfs", dst.c_str(), "tmpfs", flags, options.c_str()) != 0) {
    return SysFail("sandbox", "mount tmpfs on " + dst);
  }
  return Ok();
}

Status CopySymlink(const std::string& host_path, const std::string& dst) {
  char target[PATH_MAX];
  ssize_t n = ::readlink(host_path.c_str(), target, sizeof(target) - 1);
  if (n < 0) return SysFail("sandbox", "readlink " + host_path);
  target[n] = '\0';
  auto slash = dst.rfind('/');
  const std::string view_dir = dst.substr(kNew.size(), slash - kNew.size());
  if (const std::string* base = CommandWrittenBase(view_dir + "/x")) {
    // Its directory made and opened without following a link earlier commands left there.
    UniqueFd parent;
    if (view_dir == *base) {
      parent = UniqueFd(::open((kNew + *base).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (!parent) return SysFail("sandbox", "open " + *base);
    } else {
      ANVIL_TRY(dir, MountpointBeneath(*base, view_dir, /*directory=*/true, /*create=*/true));
      parent = std::move(*dir);
    }
    if (::symlinkat(target, parent.Get(), dst.substr(slash + 1).c_str()) != 0 && errno != EEXIST) {
      return SysFail("sandbox", "symlink " + dst);
    }
    return Ok();
  }
  ANVIL_RETURN_IF_ERROR(MkdirP(dst.substr(0, slash)));
  if (::symlink(target, dst.c_str()) != 0 && errno != EEXIST) {
    return SysFail("sandbox", "symlink " + dst);
  }
  return Ok();
}

// Where the view's `path` is taken from: the staged idmapped tree of the deepest idmapped root
// holding it, else the host's tree.
std::string SourceOf(const std::vector<std::string>& idmapped_roots, const std::string& path) {
  size_t best = idmapped_roots.size();
  for (size_t i = 0; i < idmapped_roots.size(); ++i) {
    if (PathIsWithin(path, idmapped_roots[i]) &&
        (best == idmapped_roots.size() || idmapped_roots[i].size() > idmapped_roots[best].size())) {
      best = i;
    }
  }
  if (best == idmapped_roots.size()) return path == "/" ? kOld : kOld + path;
  const std::string& root = idmapped_roots[best];
  std::string rest = root == "/" ? (path == "/" ? "" : path) : path.substr(root.size());
  return kIdmapped + "/" + std::to_string(best) + rest;
}

// The host directories the view covers for root's sandbox (root_remap.h, UnsearchableAncestors),
// looked at as the command's own id (init's) through the host's tree.
std::vector<std::string> CoveredDirs(const FileView& view,
                                     const std::vector<std::string>& idmapped_roots) {
  if (idmapped_roots.empty()) return {};
  return UnsearchableAncestors(view, idmapped_roots,
                               [](const std::string& dir) -> std::optional<mode_t> {
                                 struct stat st {};
                                 if (::lstat((kOld + dir).c_str(), &st) != 0) return std::nullopt;
                                 return st.st_mode;
                               });
}

// Makes each cover read-only once every mount point beneath it is made (the last bind of the
// view). A cover the host's change of mode made appear since is not a mount: that fails.
Status SealCovers(const FileView& view, const std::vector<std::string>& idmapped_roots) {
  for (const auto& dir : CoveredDirs(view, idmapped_roots)) {
    MountAttr attr{};
    attr.attr_set = kMountAttrRdonly;
    if (syscall(SYS_mount_setattr, AT_FDCWD, (kNew + dir).c_str(), 0, &attr, sizeof(attr)) != 0) {
      return SysFail("sandbox", "make the cover of " + dir + " read-only");
    }
  }
  return Ok();
}

// Attaches each idmapped tree at kIdmapped/<index> of the staging root, where SourceOf finds it.
Status StageIdmappedTrees(const MountViewOptions& options) {
  if (options.idmapped_trees.size() != options.idmapped_roots.size()) {
    return Fail("sandbox", "idmapped trees and roots do not match");
  }
  if (options.idmapped_trees.empty()) return Ok();
  ANVIL_RETURN_IF_ERROR(MkdirP(kIdmapped));
  for (size_t i = 0; i < options.idmapped_trees.size(); ++i) {
    const int tree = options.idmapped_trees[i];
    struct stat st {};
    if (::fstat(tree, &st) != 0) return SysFail("sandbox", "stat idmapped tree");
    const std::string dst = kIdmapped + "/" + std::to_string(i);
    ANVIL_RETURN_IF_ERROR(EnsureMountpoint(dst, S_ISDIR(st.st_mode)));
    if (syscall(SYS_move_mount, tree, "", AT_FDCWD, dst.c_str(), kMoveMountFEmptyPath) != 0) {
      return SysFail("sandbox", "attach the idmapped tree of " + options.idmapped_roots[i]);
    }
  }
  return Ok();
}

// Binds mapped_binds[i]: its source from the host's tree (or, for root's sandbox, from the
// idmapped tree that holds it), checked to be the inode planned when the plan recorded one,
// at its target (read-only unless writable).
Status BindMapped(const MappedBind& bind, const std::vector<std::string>& idmapped_roots) {
  const std::string source = SourceOf(idmapped_roots, bind.source);
  long fd = -1;
  if (bind.expect_ino != 0) {
    // The object judged: opened from the tree's top without following a symbolic link anywhere
    // (a directory on the way swapped for a link since fails here), then cloned from that
    // descriptor, and checked below to be the very inode judged.
    const std::string& base = source.rfind(kIdmapped, 0) == 0 ? kIdmapped : kOld;
    UniqueFd top(::open(base.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!top) return SysFail("sandbox", "open " + base);
    const std::string rel = source.size() > base.size() ? source.substr(base.size() + 1) : ".";
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH;
    const long node = syscall(SYS_openat2, top.Get(), rel.c_str(), &how, sizeof(how));
    if (node < 0) {
      if (errno == ELOOP || errno == EXDEV || errno == ENOENT || errno == ENOTDIR) {
        return Fail("sandbox", bind.source +
                                   " was replaced after it was checked (a link on the way now); "
                                   "not binding it; fix: run it again");
      }
      return SysFail("sandbox", "open " + bind.source);
    }
    UniqueFd opened(static_cast<int>(node));
    fd = syscall(SYS_open_tree, opened.Get(), "",
                 kOpenTreeClone | O_CLOEXEC | kAtRecursive | AT_EMPTY_PATH);
  } else {
    fd = syscall(SYS_open_tree, AT_FDCWD, source.c_str(),
                 kOpenTreeClone | O_CLOEXEC | kAtRecursive | AT_SYMLINK_NOFOLLOW);
  }
  if (fd < 0) return SysFail("sandbox", "open_tree " + bind.source);
  UniqueFd tree(static_cast<int>(fd));
  if (bind.expect_ino != 0) {
    struct stat st {};
    if (::fstat(tree.Get(), &st) != 0) return SysFail("sandbox", "stat " + bind.source);
    if (st.st_dev != bind.expect_dev || st.st_ino != bind.expect_ino) {
      return Fail("sandbox", bind.source + " was replaced after it was checked; not binding it");
    }
  }
  return AttachTree(std::move(tree), bind.source, kNew + bind.target, !bind.writable,
                    /*keep_dev=*/false);
}

Status BuildDev(bool terminal, bool ptys, uint64_t shm_size) {
  const std::string dev = kNew + "/dev";
  ANVIL_RETURN_IF_ERROR(MountTmpfs(dev, TmpfsOptions("0755", 64 << 10), MS_NOSUID | MS_NOEXEC));
  for (const char* name : {"null", "zero", "full", "random", "urandom", "tty"}) {
    std::string host = kOld + "/dev/" + name;
    struct stat st {};
    if (::stat(host.c_str(), &st) != 0 || !S_ISCHR(st.st_mode)) continue;
    // Read-only: reading and writing a device node ignore the mount's read-only flag, while
    // chmod, chown, utimensat and setxattr of the host's node get EROFS.
    ANVIL_RETURN_IF_ERROR(BindTree(host, dev + "/" + name, /*read_only=*/true, /*keep_dev=*/true));
  }
  const std::pair<const char*, const char*> links[] = {{"/proc/self/fd", "fd"},
                                                       {"/proc/self/fd/0", "stdin"},
                                                       {"/proc/self/fd/1", "stdout"},
                                                       {"/proc/self/fd/2", "stderr"}};
  for (const auto& [target, name] : links) {
    if (::symlink(target, (dev + "/" + name).c_str()) != 0) {
      return SysFail("sandbox", std::string("symlink /dev/") + name);
    }
  }
  // The sandbox's own devpts instance: pseudo-terminals made inside (the command's own, when it
  // has one, and those of script, expect, tmux) are nodes no host path names and no host
  // process sees; `max` bounds how many the sandbox can take from the kernel's shared pool. Not
  // in a sys.exec tool's exact view (`ptys` false): rg and fd make none.
  if (ptys || terminal) {
    const std::string pts = dev + "/pts";
    ANVIL_RETURN_IF_ERROR(MkdirP(pts));
    if (::mount("devpts", pts.c_str(), "devpts", MS_NOSUID | MS_NOEXEC,
                "newinstance,ptmxmode=0666,mode=0620,max=256") == 0) {
      if (::symlink("pts/ptmx", (dev + "/ptmx").c_str()) != 0) {
        return SysFail("sandbox", "symlink /dev/ptmx");
      }
    } else if (terminal) {
      return SysFail("sandbox",
                     "mount a private devpts for the command's pseudo-terminal (a terminal on "
                     "stdin, stdout or stderr needs one; fix: redirect them, e.g. "
                     "`</dev/null | cat`)");
    }
  }
  return MountTmpfs(dev + "/shm", TmpfsOptions("1777", shm_size), MS_NOSUID | MS_NODEV | MS_NOEXEC);
}

// Makes the staged view the root (read-only unless full read) and detaches the staging root
// with everything beneath it, the host's tree at /oldroot included: MNT_DETACH takes the whole
// subtree, in one detach (each one waits for an RCU grace period, milliseconds on a busy host).
Status EnterView(const FileView& view) {
  if (::chdir(kNew.c_str()) != 0) return SysFail("sandbox", "chdir new root");
  if (syscall(SYS_pivot_root, ".", ".") != 0) return SysFail("sandbox", "pivot_root into view");
  if (::umount2(".", MNT_DETACH) != 0) {
    return SysFail("sandbox", "detach the staging root and the host's tree");
  }
  if (::chdir("/") != 0) return SysFail("sandbox", "chdir /");
  if (!view.full_read) {
    MountAttr attr{};
    attr.attr_set = kMountAttrRdonly | kMountAttrNosuid | kMountAttrNodev;
    if (syscall(SYS_mount_setattr, AT_FDCWD, "/", 0, &attr, sizeof(attr)) != 0) {
      return SysFail("sandbox", "make view root read-only");
    }
  }
  return Ok();
}

}  // namespace

Status BuildMountView(const FileView& view, const MountViewOptions& options) {
  // Nothing we mount may propagate back to the host, nor host changes into the view.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return SysFail("sandbox", "make mounts private");
  }
  if (::mount("tmpfs", kStage, "tmpfs", MS_NOSUID | MS_NODEV,
              TmpfsOptions("0755", 1 << 20).c_str()) != 0) {
    return SysFail("sandbox", "mount staging tmpfs");
  }
  if (::chdir(kStage) != 0) return SysFail("sandbox", "chdir staging");
  if (::mkdir("oldroot", 0755) != 0 || ::mkdir("newroot", 0755) != 0) {
    return SysFail("sandbox", "mkdir staging dirs");
  }
  if (syscall(SYS_pivot_root, kStage, "/tmp/oldroot") != 0) {
    return SysFail("sandbox", "pivot_root into staging");
  }
  if (::chdir("/") != 0) return SysFail("sandbox", "chdir /");
  if (::mount("tmpfs", kNew.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
              TmpfsOptions("0755", 1 << 20).c_str()) != 0) {
    return SysFail("sandbox", "mount new root");
  }
  ANVIL_RETURN_IF_ERROR(StageIdmappedTrees(options));
  const std::vector<std::string>& idmapped = options.idmapped_roots;

  ANVIL_TRY(planned,
            PlanMounts(view, options, [](const std::string& path) -> std::optional<mode_t> {
              struct stat st {};
              if (::lstat((kOld + path).c_str(), &st) != 0) return std::nullopt;
              return st.st_mode;
            }));
  const std::vector<MountOp>& ops = *planned;

  const std::string empty_file = "/masked-empty";
  if (!view.masked_files.empty()) {
    UniqueFd f(::open(empty_file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0444));
    if (!f) return SysFail("sandbox", "create mask file");
  }
  // The sanitized git config over the real one, in a workspace of $HOME (FileView::gitconfig_mask).
  const std::string gitconfig_file = "/masked-gitconfig";
  if (!view.gitconfig_mask.empty()) {
    UniqueFd f(::open(gitconfig_file.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0444));
    if (!f || ::write(f.Get(), view.home_gitconfig.data(), view.home_gitconfig.size()) !=
                  static_cast<ssize_t>(view.home_gitconfig.size())) {
      return SysFail("sandbox", "create the sanitized git config");
    }
  }
  const std::string empty_dir = "/masked-empty-dir";
  if (!view.masked_dirs.empty() && ::mkdir(empty_dir.c_str(), 0555) != 0) {
    return SysFail("sandbox", "create mask directory");
  }
  g_home_base = view.home_base;
  g_ways.clear();
  g_command_written.clear();
  if (!view.home_base.empty()) g_command_written.push_back(view.home_base);
  if (view.tmp_bind) g_command_written.push_back("/tmp");

  std::size_t startup_dirs = 0;
  for (const auto& op : ops) {
    std::string host = SourceOf(idmapped, op.path);
    std::string dst = op.path == "/" ? kNew : kNew + op.path;
    Status s = Ok();
    switch (op.kind) {
      case MountOpKind::kTmp:
        s = MountTmpfs(dst, TmpfsOptions("1777", options.tmp_size), MS_NOSUID | MS_NODEV);
        break;
      case MountOpKind::kRun:
        s = MountTmpfs(dst, TmpfsOptions("0755", 1 << 20), MS_NOSUID | MS_NODEV);
        break;
      case MountOpKind::kCover:
        // Read-only once the mount points beneath it are made (SealCovers).
        s = MountTmpfs(dst, TmpfsOptions("0755", 64 << 10), MS_NOSUID | MS_NODEV | MS_NOEXEC);
        break;
      case MountOpKind::kDev:
        s = BuildDev(options.terminal, !view.runtime_from_call, options.shm_size);
        break;
      case MountOpKind::kProc:
        s = MkdirP(dst);
        if (s &&
            ::mount("proc", dst.c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
          s = SysFail("sandbox", "mount /proc");
        }
        break;
      case MountOpKind::kWorkspaceDir:
        if (const std::string* base = CommandWrittenBase(op.path)) {
          auto made = MountpointBeneath(*base, op.path, /*directory=*/true, /*create=*/true);
          if (!made) s = tl::unexpected(made.error());
        } else {
          s = MkdirP(dst);
        }
        break;
      case MountOpKind::kBeneath: {
        ANVIL_TRY(fd, OpenBeneath(SourceOf(idmapped, view.workspace_base),
                                  op.path.substr(view.workspace_base.size() + 1)));
        if (!*fd) continue;  // missing, or leads outside the workspace: not in the view
        s = BindTreeFd(fd->Get(), op.path, dst);
        break;
      }
      case MountOpKind::kMask:
      case MountOpKind::kMaskDir: {
        bool outside_own = !idmapped.empty() && !std::any_of(idmapped.begin(), idmapped.end(),
                                                             [&](const std::string& r) {
                                                               return PathIsWithin(op.path, r);
                                                             });
        const std::string& file = op.path == view.gitconfig_mask ? gitconfig_file : empty_file;
        ANVIL_TRY(masked, op.kind == MountOpKind::kMask
                              ? MaskExisting(file, dst, outside_own)
                              : MaskExisting(empty_dir, dst, outside_own, /*directory=*/true));
        break;
      }
      case MountOpKind::kMapped:
        s = BindMapped(view.mapped_binds[op.index], idmapped);
        break;
      case MountOpKind::kHomeTmpfs:
        s = MountTmpfs(dst, TmpfsOptions("0700", options.tmp_size), MS_NOSUID | MS_NODEV);
        break;
      case MountOpKind::kWay:
        s = MountWay(op.path);
        break;
      case MountOpKind::kHomeStartupDir:
        s = MountEmptyHomeDir(op.path, startup_dirs++);
        break;
      case MountOpKind::kPinLink:
        s = PinLink(host, dst);
        break;
      case MountOpKind::kReadOnly:
      case MountOpKind::kWritable: {
        struct stat st {};
        if (::lstat(host.c_str(), &st) != 0) return SysFail("sandbox", "stat " + op.path);
        if (S_ISLNK(st.st_mode)) {  // e.g. /bin -> usr/bin on merged-/usr systems
          if (op.kind != MountOpKind::kReadOnly) {
            return Fail("sandbox", "refusing to bind a symlink: " + op.path);
          }
          s = CopySymlink(host, dst);
        } else {
          s = BindTree(host, dst, op.kind == MountOpKind::kReadOnly, false);
        }
        break;
      }
    }
    if (!s) return s;
  }

  // Written whenever the view shows a sandbox home, empty when there is nothing to say (no git
  // configuration of the user's): what an earlier command left at these names never stays.
  if (!view.home_base.empty()) {
    UniqueFd home(::open((kNew + g_home_base).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!home)
      return SysFail("sandbox", "open the sandbox home to write the files Anvil keeps there");
    const uid_t owner = ::geteuid();
    ANVIL_RETURN_IF_ERROR(WriteHomeFile(home.Get(), ".gitconfig", view.home_gitconfig, owner));
    // Every start-up file a shell reads from the home on its own (kHomeStartupFiles), where the
    // sandbox home itself holds the place; one another mount shows (`--readable-root ~/.bashrc`)
    // is the user's own, left as it shows it (HomeFilesToWrite, linux/mount_plan.h).
    for (const HomeFile& file : HomeFilesToWrite(view, ops)) {
      ANVIL_RETURN_IF_ERROR(WriteHomeFile(home.Get(), file.path, file.content, owner));
    }
    // fish's directories (view.home_startup_dirs) are mounts of the plan (kHomeStartupDir).
  }
  ANVIL_RETURN_IF_ERROR(LinkLogicalWorkspace(view));
  if (options.defer_workspace_paths) return Ok();  // FinishMountView enters the view
  ANVIL_RETURN_IF_ERROR(SealWays());
  ANVIL_RETURN_IF_ERROR(SealCovers(view, idmapped));
  return EnterView(view);
}

namespace {

// --- the warm exec call's part of the view (FinishMountView) ----------------------------------

constexpr uint64_t kResolvePlan = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
const char kMaskFileSrc[] = "/masked-plan-file";  // in the staging root, never in the view
const char kMaskDirSrc[] = "/masked-plan-dir";

// `path` beneath the directory `dir`, never through a symlink (nor a symlink itself): O_PATH.
// An invalid descriptor when it is not there (or leads elsewhere).
UniqueFd OpenPlanPath(int dir, const std::string& path) {
  open_how how{};
  how.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = kResolvePlan;
  for (int attempt = 0; attempt < 64; ++attempt) {
    long fd = syscall(SYS_openat2, dir, path.c_str(), &how, sizeof(how));
    if (fd >= 0) return UniqueFd(static_cast<int>(fd));
    if (errno != EAGAIN && errno != EINTR) break;
  }
  return UniqueFd();
}

std::vector<std::string> PathComponents(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(start, end - start);
    if (!part.empty() && part != ".") parts.push_back(std::move(part));
    start = end + 1;
  }
  return parts;
}

// Shows the host's file `path` (absolute) at the same path in the view, the way the loader
// reaches it: each directory on the way is one of the view's own, each symlink is recreated with
// its text and followed, and the regular file at the end is bound read-only. Nothing else of
// those directories is in the view.
Status ExposeHostFile(const std::string& path) {
  std::vector<std::string> rest = PathComponents(path);
  std::string cur;  // resolved so far, absolute without a trailing '/'; "" is the root
  size_t i = 0;
  int links = 0;
  while (i < rest.size()) {
    const std::string name = rest[i];
    if (name == "..") {
      cur = cur.substr(0, cur.rfind('/') == std::string::npos ? 0 : cur.rfind('/'));
      ++i;
      continue;
    }
    const std::string next = cur + "/" + name;
    const bool last = i + 1 == rest.size();
    struct stat st {};
    if (::lstat((kOld + next).c_str(), &st) != 0) {
      return SysFail("sandbox", "the tool's file " + path + " (" + next + ")");
    }
    if (S_ISLNK(st.st_mode)) {
      if (++links > 40) return Fail("sandbox", "too many symlinks on the way to " + path);
      char target[PATH_MAX];
      ssize_t n = ::readlink((kOld + next).c_str(), target, sizeof(target) - 1);
      if (n <= 0) return SysFail("sandbox", "readlink " + next);
      target[n] = '\0';
      struct stat have {};
      if (::lstat((kNew + next).c_str(), &have) != 0) {
        ANVIL_RETURN_IF_ERROR(MkdirP(kNew + (cur.empty() ? "/" : cur)));
        if (::symlink(target, (kNew + next).c_str()) != 0)
          return SysFail("sandbox", "symlink " + next);
      } else if (!S_ISLNK(have.st_mode)) {
        return Fail("sandbox", "the view already has something else at " + next);
      }
      std::vector<std::string> expanded = PathComponents(target);
      expanded.insert(expanded.end(), rest.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                      rest.end());
      if (target[0] == '/') cur.clear();
      rest = std::move(expanded);
      i = 0;
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      if (last) return Fail("sandbox", "the tool's file is a directory: " + path);
      ANVIL_RETURN_IF_ERROR(MkdirP(kNew + next));
      cur = next;
      ++i;
      continue;
    }
    if (!S_ISREG(st.st_mode) || !last) {
      return Fail("sandbox", "the tool's file is not a regular file: " + path);
    }
    struct stat have {};
    if (::lstat((kNew + next).c_str(), &have) == 0) return Ok();  // shown already
    return BindTree(kOld + next, kNew + next, /*read_only=*/true, /*keep_dev=*/false);
  }
  return Fail("sandbox", "the tool's file is not a file: " + path);
}

// Covers `target` (an O_PATH descriptor inside the view) with the read-only empty `mask`.
Status MaskOnto(const char* mask, int target, const std::string& shown) {
  long fd = syscall(SYS_open_tree, AT_FDCWD, mask, kOpenTreeClone | O_CLOEXEC);
  if (fd < 0) return SysFail("sandbox", std::string("open_tree ") + mask);
  UniqueFd tree(static_cast<int>(fd));
  MountAttr attr{};
  attr.attr_set = kMountAttrRdonly | kMountAttrNosuid | kMountAttrNodev;
  attr.propagation = MS_PRIVATE;
  if (syscall(SYS_mount_setattr, tree.Get(), "", AT_EMPTY_PATH, &attr, sizeof(attr)) != 0) {
    return SysFail("sandbox", std::string("mount_setattr ") + mask);
  }
  if (syscall(SYS_move_mount, tree.Get(), "", target, "",
              kMoveMountFEmptyPath | kMoveMountTEmptyPath) != 0) {
    return SysFail("sandbox", "mask " + shown);
  }
  return Ok();
}

// Builds the workspace part of the view from the call's read plan (fs/read_plan.h; validated by
// the caller): first the directories, binds and links (each source opened beneath the host's
// workspace, never through a symlink, and bound only while it is what the plan says), then the
// masks, through the binds just made.
Status ApplyReadPlan(const FileView& view, const std::string& source) {
  const std::string& base = view.workspace_base;
  UniqueFd host_ws(::open(source.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!host_ws) return SysFail("sandbox", "open the workspace " + base);
  const std::string view_ws = kNew + base;
  bool masks = false;
  for (const ReadOp& op : view.workspace_plan) {
    const bool root = op.path == ".";
    const std::string dst = root ? view_ws : view_ws + "/" + op.path;
    const std::string shown = base + (root ? "" : "/" + op.path);
    switch (op.kind) {
      case ReadOpKind::kDir:
        if (!root && ::mkdir(dst.c_str(), 0755) != 0) return SysFail("sandbox", "mkdir " + shown);
        break;
      case ReadOpKind::kSymlink:
        if (::symlink(op.target.c_str(), dst.c_str()) != 0) {
          return SysFail("sandbox", "symlink " + shown);
        }
        break;
      case ReadOpKind::kBindDir:
      case ReadOpKind::kBindFile:
      case ReadOpKind::kBindLinkedFile: {
        UniqueFd src = root ? UniqueFd(fcntl(host_ws.Get(), F_DUPFD_CLOEXEC, 0))
                            : OpenPlanPath(host_ws.Get(), op.path);
        if (!src) break;  // gone, or a symlink now: not in the view
        struct stat st {};
        if (::fstat(src.Get(), &st) != 0) return SysFail("sandbox", "stat " + shown);
        const bool dir = op.kind == ReadOpKind::kBindDir;
        if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) break;  // changed since
        // A file's bind holds its inode: checked now, it cannot become another file later.
        if (op.kind == ReadOpKind::kBindFile && st.st_nlink > 1) break;
        long fd = syscall(SYS_open_tree, src.Get(), "",
                          kOpenTreeClone | O_CLOEXEC | AT_EMPTY_PATH | (dir ? kAtRecursive : 0));
        if (fd < 0) return SysFail("sandbox", "open_tree " + shown);
        ANVIL_RETURN_IF_ERROR(AttachTree(UniqueFd(static_cast<int>(fd)), shown, dst,
                                         /*read_only=*/true, /*keep_dev=*/false));
        break;
      }
      case ReadOpKind::kMaskFile:
      case ReadOpKind::kMaskDir:
        masks = true;
        break;
    }
  }
  if (!masks) return Ok();
  {
    UniqueFd f(::open(kMaskFileSrc, O_CREAT | O_WRONLY | O_CLOEXEC, 0444));
    if (!f) return SysFail("sandbox", "create the mask file");
    if (::mkdir(kMaskDirSrc, 0555) != 0 && errno != EEXIST) {
      return SysFail("sandbox", "create the mask directory");
    }
  }
  UniqueFd in_view(::open(view_ws.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!in_view) return SysFail("sandbox", "open the view's workspace");
  for (const ReadOp& op : view.workspace_plan) {
    if (op.kind != ReadOpKind::kMaskFile && op.kind != ReadOpKind::kMaskDir) continue;
    UniqueFd target = OpenPlanPath(in_view.Get(), op.path);
    if (!target) continue;  // gone, or behind a symlink now: nothing there to hide
    struct stat st {};
    if (::fstat(target.Get(), &st) != 0) return SysFail("sandbox", "stat " + op.path);
    if (S_ISLNK(st.st_mode)) continue;
    // Whatever it is now decides the mask: a swapped entry is hidden all the same.
    const char* mask = S_ISDIR(st.st_mode) ? kMaskDirSrc : kMaskFileSrc;
    ANVIL_RETURN_IF_ERROR(MaskOnto(mask, target.Get(), base + "/" + op.path));
  }
  return Ok();
}

}  // namespace

Status FinishMountView(const FileView& view, const std::vector<std::string>& idmapped_roots) {
  if (view.workspace_base.empty()) {
    return Fail("sandbox", "a deferred workspace needs a view with a workspace directory");
  }
  // System files, world-readable: bound from the host's tree as they are (root's sandbox reads
  // them as "other", like everything outside its own trees).
  for (const auto& file : view.runtime_files) {
    ANVIL_RETURN_IF_ERROR(ExposeHostFile(file));
  }
  // The workspace from its idmapped tree for root's sandbox, so that its files stay its own.
  ANVIL_RETURN_IF_ERROR(ApplyReadPlan(view, SourceOf(idmapped_roots, view.workspace_base)));
  ANVIL_RETURN_IF_ERROR(SealWays());
  ANVIL_RETURN_IF_ERROR(SealCovers(view, idmapped_roots));
  return EnterView(view);
}

Status VerifyMountView(const FileView& view) {
  auto read_only = [](const std::string& path) -> Result<bool> {
    struct statvfs sv {};
    if (::statvfs(path.c_str(), &sv) != 0) return SysFail("sandbox", "statvfs " + path);
    return (sv.f_flag & ST_RDONLY) != 0;
  };
  struct statfs root {};
  if (::statfs("/", &root) != 0) return SysFail("sandbox", "statfs /");
  if (!view.full_read && root.f_type != TMPFS_MAGIC) {
    return Fail("sandbox", "view root is not the sandbox's own tmpfs");
  }
  for (const auto& wr : view.writable_roots) {
    for (const auto& sub : wr.read_only_subpaths) {
      ANVIL_TRY(ro, read_only(sub));
      if (!*ro) return Fail("sandbox", "read-only subpath is writable in the view: " + sub);
    }
  }
  for (const auto& link : view.pinned_links) {
    UniqueFd self(::open(link.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    struct statvfs sv {};
    if (!self || ::fstatvfs(self.Get(), &sv) != 0) return SysFail("sandbox", "statvfs " + link);
    if ((sv.f_flag & ST_RDONLY) == 0) return Fail("sandbox", "pinned link is not pinned: " + link);
  }
  std::vector<std::string> readable = view.workspace_read_subpaths;
  for (const ReadOp& op : view.workspace_plan) {
    // The trees (a file's bind is made read-only as it is attached, and there may be many).
    if (op.kind == ReadOpKind::kBindDir) readable.push_back(op.path);
  }
  for (const auto& sub : readable) {
    std::string p = sub == "." ? view.workspace_base : view.workspace_base + "/" + sub;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) continue;  // not part of the view
    ANVIL_TRY(ro, read_only(p));
    if (!*ro) return Fail("sandbox", "readable workspace path is writable in the view: " + p);
  }
  for (const auto& m : view.mapped_binds) {
    if (m.writable) continue;
    ANVIL_TRY(ro, read_only(m.target));
    if (!*ro) return Fail("sandbox", "read-only bind is writable in the view: " + m.target);
  }
  for (const auto& way : WorkspaceWays(view)) {
    ANVIL_TRY(ro, read_only(way));
    if (!*ro) return Fail("sandbox", "the way to the workspace is writable in the view: " + way);
  }
  for (const auto& dir : view.sealed_home_dirs) {
    ANVIL_TRY(ro, read_only(dir));
    if (!*ro) return Fail("sandbox", "a sealed directory of the home is writable: " + dir);
  }
  for (const auto& d : view.masked_dirs) {
    struct stat st {};
    if (::lstat(d.c_str(), &st) != 0) continue;  // gone from the host: nothing to cover
    ANVIL_TRY(ro, read_only(d));
    if (!*ro) return Fail("sandbox", "masked directory is writable in the view: " + d);
  }
  for (const auto& r : view.read_roots) {
    struct stat st {};
    if (::lstat(r.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) continue;
    bool is_writable_root = std::any_of(view.writable_roots.begin(), view.writable_roots.end(),
                                        [&](const WritableRoot& w) { return w.root == r; });
    if (is_writable_root) continue;
    ANVIL_TRY(ro, read_only(r));
    if (!*ro) return Fail("sandbox", "read root is writable in the view: " + r);
  }
  return Ok();
}

}  // namespace anvil
