#include "linux/git_real_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <ctime>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "common/fd_io.h"
#include "common/syscalls.h"
#include "common/unique_fd.h"
#include "linux/owner_write.h"

namespace anvil {

namespace {

// statx(2) of `path` beneath `dirfd` (AT_SYMLINK_NOFOLLOW, or AT_EMPTY_PATH for the fd):
// lstat's facts and the mount's id. nullopt when it fails (errno set).
std::optional<GitFileFacts> FactsAt(int dirfd, const char* path, int flags) {
  struct statx sx {};
  if (::statx(dirfd, path, flags, STATX_BASIC_STATS | STATX_MNT_ID | STATX_MNT_ID_UNIQUE, &sx) !=
      0) {
    return std::nullopt;
  }
  GitFileFacts f;
  f.type = S_ISDIR(sx.stx_mode)   ? GitFileType::kDir
           : S_ISREG(sx.stx_mode) ? GitFileType::kFile
           : S_ISLNK(sx.stx_mode) ? GitFileType::kSymlink
                                  : GitFileType::kOther;
  f.executable = S_ISREG(sx.stx_mode) && (sx.stx_mode & 0111) != 0;
  f.nlink = sx.stx_nlink;
  f.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
  f.ino = sx.stx_ino;
  f.ctime_sec = sx.stx_ctime.tv_sec;
  f.ctime_nsec = sx.stx_ctime.tv_nsec;
  // The unique id is 64 bits and never reused within a boot; the plain one is reused after an
  // unmount, so the two are kept apart (the top bit marks the plain one).
  if (sx.stx_mask & STATX_MNT_ID_UNIQUE) {
    f.mnt_id = sx.stx_mnt_id & ~(uint64_t{1} << 63);
  } else if (sx.stx_mask & STATX_MNT_ID) {
    f.mnt_id = sx.stx_mnt_id | (uint64_t{1} << 63);
  }
  return f;
}

// Local filesystems, where creating, removing or renaming an entry sets the directory's ctime
// (the VFS does it for them); network and FUSE filesystems report what a server says, overlay
// what a layer says.
bool CtimeTracksEntries(int64_t magic) {
  switch (static_cast<uint32_t>(magic)) {
    case 0xEF53:      // ext2, ext3, ext4
    case 0x58465342:  // xfs
    case 0x9123683E:  // btrfs
    case 0x01021994:  // tmpfs
    case 0xF2F52010:  // f2fs
    case 0x2FC12FC1:  // zfs
    case 0xCA451A4E:  // bcachefs
      return true;
    default:
      return false;
  }
}

}  // namespace

GitEnv GitEnvFromProcess() {
  GitEnv env;
  auto get = [](const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
  };
  env.home = get("HOME");
  env.xdg_config_home = get("XDG_CONFIG_HOME");
  env.config_global = get("GIT_CONFIG_GLOBAL");
  env.config_system = get("GIT_CONFIG_SYSTEM");
  env.template_dir = get("GIT_TEMPLATE_DIR");
  // Where `anvil sandbox` keeps the sandbox homes and kept /tmp directories (as
  // cli/sandbox_setup.cc finds its state dir): a relative XDG_STATE_HOME is ignored.
  const std::string state = get("XDG_STATE_HOME");
  if (!state.empty() && state[0] == '/') {
    env.sandbox_homes.push_back(state + "/anvil/homes");
  } else if (!env.home.empty() && env.home[0] == '/') {
    env.sandbox_homes.push_back(env.home + "/.local/state/anvil/homes");
  }
  return env;
}

namespace {

// `dir` (absolute) as an O_PATH descriptor, no symlink followed anywhere on the way
// (RESOLVE_NO_SYMLINKS); invalid with errno set when it cannot be.
UniqueFd OpenDirNoSymlinks(const std::string& dir) {
  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  for (int attempt = 0; attempt < 16; ++attempt) {
    long fd = syscall(SYS_openat2, AT_FDCWD, dir.c_str(), &how, sizeof(how));
    if (fd >= 0) return UniqueFd(static_cast<int>(fd));
    if (errno != EAGAIN && errno != EINTR) break;
  }
  return UniqueFd();
}

}  // namespace

GitFs RealGitFs() {
  GitFs fs;
  // Filesystem type per device, looked up once: whether a directory's ctime tracks its entries.
  auto tracks = std::make_shared<std::map<uint64_t, bool>>();
  fs.list_dir = [tracks](const std::string& dir) -> Result<GitDirListing> {
    GitDirListing out;
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) {
      // Gone, or no longer a directory, since its parent was listed: nothing to look at.
      if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) return out;
      return SysFail(errno == EACCES || errno == EPERM ? Code::kDenied : Code::kIo, "open " + dir);
    }
    // The directory's own facts before its entries: a change after them moves its ctime.
    auto facts = FactsAt(fd.Get(), "", AT_EMPTY_PATH);
    if (!facts) return SysFail("io", "stat " + dir);
    out.dir = *facts;
    auto known = tracks->find(facts->dev);
    if (known == tracks->end()) {
      struct statfs sfs {};
      bool local = ::fstatfs(fd.Get(), &sfs) == 0 && CtimeTracksEntries(sfs.f_type);
      known = tracks->emplace(facts->dev, local).first;
    }
    out.dir.ctime_tracks_entries = known->second;
    alignas(8) char buf[64 * 1024];
    for (;;) {
      long n = syscall(SYS_getdents64, fd.Get(), buf, sizeof(buf));
      if (n < 0) {
        if (errno == EINTR) continue;
        return SysFail("io", "read directory " + dir);
      }
      if (n == 0) break;
      for (long off = 0; off < n;) {
        struct Dirent64 {
          uint64_t d_ino;
          int64_t d_off;
          unsigned short d_reclen;
          unsigned char d_type;
          char d_name[1];
        };
        auto* d = reinterpret_cast<Dirent64*>(buf + off);
        off += d->d_reclen;
        std::string_view name(d->d_name);
        if (name == "." || name == "..") continue;
        unsigned char t = d->d_type;
        if (t == DT_UNKNOWN) {
          struct stat est {};
          if (::fstatat(fd.Get(), d->d_name, &est, AT_SYMLINK_NOFOLLOW) != 0) continue;
          t = S_ISDIR(est.st_mode)   ? DT_DIR
              : S_ISREG(est.st_mode) ? DT_REG
              : S_ISLNK(est.st_mode) ? DT_LNK
                                     : DT_UNKNOWN;
        }
        GitFileType type = t == DT_DIR   ? GitFileType::kDir
                           : t == DT_REG ? GitFileType::kFile
                           : t == DT_LNK ? GitFileType::kSymlink
                                         : GitFileType::kOther;
        out.entries.push_back({std::string(name), type});
      }
    }
    return out;
  };
  fs.lstat = [](const std::string& path) {
    return FactsAt(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW).value_or(GitFileFacts{});
  };
  fs.readlink = [](const std::string& path) -> std::optional<std::string> {
    char buf[PATH_MAX];
    const ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf));
    if (n <= 0 || static_cast<size_t>(n) >= sizeof(buf)) return std::nullopt;
    return std::string(buf, static_cast<size_t>(n));
  };
  fs.resolve = [](const std::string& path) -> std::optional<std::string> {
    // The kernel's own resolution, read back from /proc: three syscalls whatever the depth,
    // where realpath(3) asks readlink(2) about every component (most of the walk's set-up
    // cost with many repositories). Never through a magic link (/proc/self/cwd, /dev/fd/N):
    // it would lead where this process is, not where git on the host is (policy/
    // git_territory.h); such a path does not resolve (ELOOP).
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_NO_MAGICLINKS;
    long raw = -1;
    bool no_magic = true;
    for (int attempt = 0; attempt < 16; ++attempt) {
      raw = syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof(how));
      if (raw >= 0 || (errno != EAGAIN && errno != EINTR)) break;
    }
    if (raw < 0 && errno == ENOSYS) {
      no_magic = false;  // a kernel without openat2(2)
      raw = ::open(path.c_str(), O_PATH | O_CLOEXEC);
    }
    UniqueFd fd(raw < 0 ? -1 : static_cast<int>(raw));
    if (!fd) {
      if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP || errno == EACCES) {
        return std::nullopt;
      }
      if (no_magic) return std::nullopt;  // realpath(3) would follow a magic link
    } else {
      char buf[PATH_MAX];
      std::string link = "/proc/self/fd/" + std::to_string(fd.Get());
      ssize_t n = ::readlink(link.c_str(), buf, sizeof(buf) - 1);
      if (n > 0 && buf[0] == '/') return std::string(buf, static_cast<size_t>(n));
    }
    char buf[PATH_MAX];  // no /proc: the slow way
    if (::realpath(path.c_str(), buf) == nullptr) return std::nullopt;
    return std::string(buf);
  };
  fs.read_file = [](const std::string& path,
                    size_t max_bytes) -> Result<std::optional<std::string>> {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (!fd) {
      if (errno == EACCES || errno == EPERM) return SysFail("denied", "open " + path);
      if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP || errno == ENXIO ||
          errno == EISDIR) {
        return std::optional<std::string>();
      }
      return SysFail("io", "open " + path);
    }
    struct stat st {};
    if (::fstat(fd.Get(), &st) != 0) return SysFail("io", "stat " + path);
    if (!S_ISREG(st.st_mode)) return std::optional<std::string>();
    if (static_cast<uint64_t>(st.st_size) > max_bytes) {
      return Fail("limit", path + " is larger than " + std::to_string(max_bytes) + " bytes");
    }
    std::string data;
    char buf[16384];
    for (;;) {
      ssize_t n = ::read(fd.Get(), buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return SysFail("io", "read " + path);
      if (n == 0) break;
      data.append(buf, static_cast<size_t>(n));
      if (data.size() > max_bytes) {
        return Fail("limit", path + " is larger than " + std::to_string(max_bytes) + " bytes");
      }
    }
    return std::optional<std::string>(std::move(data));
  };
  fs.writable = [](const std::string& dir) {
    return ::faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) == 0;
  };
  fs.now = [] { return std::chrono::steady_clock::now(); };
  fs.wall_seconds = [] {
    struct timespec ts {};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<int64_t>(ts.tv_sec);
  };
  fs.rename_noreplace = [](const std::string& from, const std::string& to) -> Status {
    // Both by their directory, opened without following a symlink anywhere on the way: the
    // paths are canonical, and a link on the way now is one a concurrent command made (it
    // would lead the rename out of the roots). Fails rather than follows.
    auto parent_of = [](const std::string& p) {
      const auto slash = p.rfind('/');
      return slash == 0 || slash == std::string::npos ? std::string("/") : p.substr(0, slash);
    };
    auto base_of = [](const std::string& p) { return p.substr(p.rfind('/') + 1); };
    UniqueFd from_dir = OpenDirNoSymlinks(parent_of(from));
    if (!from_dir)
      return SysFail("io", "open the directory of " + from + " (a symlink on the way?)");
    UniqueFd to_dir =
        parent_of(to) == parent_of(from) ? UniqueFd() : OpenDirNoSymlinks(parent_of(to));
    const int to_fd = parent_of(to) == parent_of(from) ? from_dir.Get() : to_dir.Get();
    if (to_fd < 0) return SysFail("io", "open the directory of " + to + " (a symlink on the way?)");
    const std::string from_name = base_of(from);
    const std::string to_name = base_of(to);
    auto rename = [&] {
      return static_cast<int>(syscall(SYS_renameat2, from_dir.Get(), from_name.c_str(), to_fd,
                                      to_name.c_str(), RENAME_NOREPLACE));
    };
    if (rename() == 0) return Ok();
    // The command may have taken the owner's write permission off the directory; the
    // quarantine's names are in the same directory as what they move.
    if ((errno == EACCES || errno == EPERM) && to_fd == from_dir.Get() &&
        WithOwnerWrite(from_dir.Get(), rename) == 0) {
      return Ok();
    }
    return SysFail("io", "rename " + from + " to " + to);
  };
  fs.link_to_file = [](const std::string& link, const std::string& to) -> Status {
    // By their directory (one for both), opened without following a symlink on the way.
    const auto slash = link.rfind('/');
    const std::string dir = slash == 0 || slash == std::string::npos ? "/" : link.substr(0, slash);
    if (to.rfind(dir == "/" ? "/" : dir + "/", 0) != 0 ||
        to.find('/', dir.size() + 1) != std::string::npos) {
      return Fail("io", to + " is not beside " + link);
    }
    const std::string name = link.substr(slash + 1);
    const std::string to_name = to.substr(to.rfind('/') + 1);
    UniqueFd dfd = OpenDirNoSymlinks(dir);
    if (!dfd) return SysFail("io", "open the directory of " + link + " (a symlink on the way?)");
    char buf[PATH_MAX];
    const ssize_t n = ::readlinkat(dfd.Get(), name.c_str(), buf, sizeof(buf));
    if (n <= 0 || static_cast<size_t>(n) >= sizeof(buf)) return SysFail("io", "readlink " + link);
    const std::string_view target(buf, static_cast<size_t>(n));
    auto replace = [&]() -> int {
      UniqueFd f(::openat(dfd.Get(), to_name.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
      if (!f) return -1;
      const fd_io::IoResult written = fd_io::WriteAll(f.Get(), target);
      if (!written || ::unlinkat(dfd.Get(), name.c_str(), 0) != 0) {
        const int why = written ? errno : written.error;
        ::unlinkat(dfd.Get(), to_name.c_str(), 0);
        errno = why;
        return -1;
      }
      return 0;
    };
    if (replace() == 0) return Ok();
    // The command may have taken the owner's write permission off the directory.
    if ((errno == EACCES || errno == EPERM) && WithOwnerWrite(dfd.Get(), replace) == 0) {
      return Ok();
    }
    return SysFail("io", "replace the symlink " + link + " by " + to);
  };
  // Opened directories and their modes, by O_PATH fd (a rename of what lies in them, or of
  // them, leaves the fd on the same directory), to be put back in reverse order: a parent
  // closed first would bar the way to its children.
  auto opened = std::make_shared<std::vector<std::pair<UniqueFd, mode_t>>>();
  fs.open_up = [opened](const std::string& dir) -> Status {
    UniqueFd fd = OpenDirNoSymlinks(dir);
    if (!fd) return SysFail(errno == EACCES ? Code::kDenied : Code::kIo, "open " + dir);
    struct stat st {};
    if (::fstat(fd.Get(), &st) != 0) return SysFail("io", "stat " + dir);
    if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
      return Fail("denied", dir + " is not a directory of the caller's");
    }
    const mode_t mode = st.st_mode & 07777;
    const std::string proc = "/proc/self/fd/" + std::to_string(fd.Get());
    if (::chmod(proc.c_str(), mode | S_IRWXU) != 0) return SysFail("io", "chmod " + dir);
    opened->emplace_back(std::move(fd), mode);
    return Ok();
  };
  fs.close_up = [opened] {
    for (auto it = opened->rbegin(); it != opened->rend(); ++it) {
      const std::string proc = "/proc/self/fd/" + std::to_string(it->first.Get());
      (void)::chmod(proc.c_str(), it->second);
    }
    opened->clear();
  };
  return fs;
}

}  // namespace anvil
