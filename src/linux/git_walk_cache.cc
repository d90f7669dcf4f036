#include "linux/git_walk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>

#include "common/fd_io.h"
#include "common/syscalls.h"
#include "policy/digest.h"
#include "policy/sandbox_policy.h"

namespace anvil {
namespace {

// The format's version changes whenever what a walk keeps changes: a memo written by a walk that
// did not keep some marker (HEAD beside commondir, before version 2; Anvil's protected names,
// before version 3; symlinks, which the check after the run judges, before version 4; the
// territory those links were judged against, before version 5; a file or symlink by a name the
// protected names' table gained since, `crush.json` or `.hg`, before version 6; `.sl`,
// `_darcs`, `.pijul` or a file of kProtectedFilesIn, `tasks.json`, before version 7; a symlink
// named as a directory of kProtectedFilesIn,
// `.vscode`, before version 8) would hide it from the next run, so an older memo is no memo.
// Version 9: a memo vouches too that its directories' links were judged against what the run
// kept read-only (policy/git_territory.h, GitLinkIntoProtected), which no check did before.
// Version 10: each directory's path, which a rename above it changes (GitWalkMemo::Dir::path).
constexpr char kMagic[] = "anvil-git-walk-cache 10\n";
// A territory key names a few homes directories (policy/git_territory.h).
constexpr size_t kMaxTerritoryBytes = 64 * (PATH_MAX + 48);
// A memo this large describes millions of directories: a walk that big is bounded anyway.
constexpr size_t kMaxFileBytes = 256u << 20;

void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutStr(std::string& out, std::string_view s) {
  PutU64(out, s.size());
  out.append(s);
}

// Reads what PutU64/PutStr wrote, refusing to run past the end.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool U64(uint64_t& v) {
    if (data_.size() - pos_ < 8) return false;
    v = 0;
    for (int i = 0; i < 8; ++i) {
      v |= static_cast<uint64_t>(static_cast<unsigned char>(data_[pos_ + i])) << (8 * i);
    }
    pos_ += 8;
    return true;
  }
  bool Str(std::string_view& s, size_t max) {
    uint64_t n = 0;
    if (!U64(n) || n > max || data_.size() - pos_ < n) return false;
    s = data_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool Done() const { return pos_ == data_.size(); }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

std::string BootId() {
  UniqueFd fd(::open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC));
  if (!fd) return "";
  char buf[64];
  ssize_t n = ::read(fd.Get(), buf, sizeof(buf));
  if (n <= 0) return "";
  std::string id(buf, static_cast<size_t>(n));
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

std::string PathOfFd(int fd) {
  char buf[PATH_MAX];
  std::string link = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = ::readlink(link.c_str(), buf, sizeof(buf) - 1);
  if (n <= 0 || buf[0] != '/') return "";
  return std::string(buf, static_cast<size_t>(n));
}

// What the caller may trust: its own directory that nobody else can write.
bool Fit(const struct stat& st) {
  return S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077) == 0;
}

// Empties and removes a directory moved aside (one level: the cache never makes more).
void RemoveAside(const std::string& path) {
  UniqueFd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir) {
    if (DIR* d = ::fdopendir(::dup(dir.Get()))) {
      std::vector<std::string> names;
      while (struct dirent* e = ::readdir(d)) {
        std::string_view n(e->d_name);
        if (n != "." && n != "..") names.emplace_back(n);
      }
      ::closedir(d);
      for (const auto& n : names) ::unlinkat(dir.Get(), n.c_str(), 0);
    }
  }
  if (::rmdir(path.c_str()) != 0) ::unlink(path.c_str());
}

}  // namespace

std::string GitWalkCacheDirFor(uid_t uid) { return "/tmp/anvil-cache-" + std::to_string(uid); }

void MergeShield(GitWalkCacheShield& into, const GitWalkCacheShield& more) {
  auto add = [](std::vector<std::string>& to, const std::vector<std::string>& from) {
    for (const auto& p : from) {
      if (std::find(to.begin(), to.end(), p) == to.end()) to.push_back(p);
    }
  };
  add(into.read_only, more.read_only);
  add(into.pinned, more.pinned);
}

Result<GitWalkCacheShield> ShieldGitWalkCache(const std::string& cache_dir,
                                              const std::vector<std::string>& writable_roots,
                                              const std::vector<std::string>& covered) {
  GitWalkCacheShield shield;
  if (cache_dir.empty()) return shield;
  for (const auto& root : writable_roots) {
    if (PathIsWithin(root, cache_dir)) {
      return Fail("invalid", "writable root " + root + " is " +
                                 (root == cache_dir ? "" : "inside ") + "Anvil's git walk cache (" +
                                 cache_dir +
                                 "), which no sandbox may write. fix: choose another writable "
                                 "root");
    }
    if (!PathIsWithin(cache_dir, root)) continue;
    // The view mounts something of its own (a fresh /tmp) between the root and the cache: the
    // root does not show it.
    if (std::any_of(covered.begin(), covered.end(), [&](const std::string& c) {
          return c != root && PathIsWithin(c, root) && PathIsWithin(cache_dir, c);
        })) {
      continue;
    }
    if (std::find(shield.read_only.begin(), shield.read_only.end(), cache_dir) ==
        shield.read_only.end()) {
      shield.read_only.push_back(cache_dir);
    }
    // Every directory below the root on the way down: each becomes a mount point, which
    // rename(2) and rmdir(2) refuse to move or remove.
    for (size_t slash = cache_dir.find('/', root == "/" ? 1 : root.size() + 1);
         slash != std::string::npos; slash = cache_dir.find('/', slash + 1)) {
      std::string dir = cache_dir.substr(0, slash);
      if (std::find(shield.pinned.begin(), shield.pinned.end(), dir) == shield.pinned.end()) {
        shield.pinned.push_back(dir);
      }
    }
  }
  return shield;
}

std::string GitWalkCacheFileName(const std::vector<std::string>& roots) {
  std::string joined;
  for (const auto& r : roots) {
    joined += r;
    joined.push_back('\0');
  }
  return "walk-" + Sha256Hex(joined).substr(0, 32);
}

std::vector<std::string> GitWalkCacheFilesToPrune(std::vector<GitWalkCacheFile> files, size_t keep,
                                                  int64_t now_ns, int64_t stale_ns) {
  auto is_memo = [](std::string_view n) {
    return n.size() == 5 + 32 && n.substr(0, 5) == "walk-" &&
           n.find_first_not_of("0123456789abcdef", 5) == std::string_view::npos;
  };
  std::vector<std::string> out;
  std::vector<GitWalkCacheFile> memos;
  for (auto& f : files) {
    if (is_memo(f.name)) {
      memos.push_back(std::move(f));
    } else if (f.name.rfind(".tmp-", 0) == 0 && now_ns - f.mtime_ns > stale_ns) {
      out.push_back(std::move(f.name));
    }
  }
  if (memos.size() > keep) {
    // Newest first; the name breaks ties so that the choice does not depend on listing order.
    std::sort(memos.begin(), memos.end(), [](const GitWalkCacheFile& a, const GitWalkCacheFile& b) {
      return a.mtime_ns != b.mtime_ns ? a.mtime_ns > b.mtime_ns : a.name < b.name;
    });
    for (size_t i = keep; i < memos.size(); ++i) out.push_back(std::move(memos[i].name));
  }
  return out;
}

std::string EncodeGitWalkMemo(std::string_view boot_id, const std::vector<std::string>& roots,
                              std::string_view territory, const GitWalkMemo& memo) {
  std::string out = kMagic;
  PutStr(out, boot_id);
  PutU64(out, roots.size());
  for (const auto& r : roots) PutStr(out, r);
  PutStr(out, territory);
  PutU64(out, memo.dirs.size());
  for (const auto& [id, d] : memo.dirs) {
    PutU64(out, id.first);
    PutU64(out, id.second);
    PutU64(out, static_cast<uint64_t>(d.ctime_sec));
    PutU64(out, static_cast<uint64_t>(d.ctime_nsec));
    PutU64(out, d.mnt_id);
    PutU64(out, d.entries);
    PutStr(out, d.path);
    PutU64(out, d.kept.size());
    for (const auto& e : d.kept) {
      PutU64(out, static_cast<uint64_t>(e.type));
      PutStr(out, e.name);
    }
  }
  return out;
}

std::optional<GitWalkMemo> DecodeGitWalkMemo(std::string_view data, std::string_view boot_id,
                                             const std::vector<std::string>& roots,
                                             std::string_view territory) {
  const std::string_view magic(kMagic);
  if (boot_id.empty() || data.substr(0, magic.size()) != magic) return std::nullopt;
  Reader in(data.substr(magic.size()));
  std::string_view s;
  uint64_t n = 0;
  if (!in.Str(s, 256) || s != boot_id) return std::nullopt;
  if (!in.U64(n) || n != roots.size()) return std::nullopt;
  for (const auto& r : roots) {
    if (!in.Str(s, PATH_MAX) || s != r) return std::nullopt;
  }
  if (!in.Str(s, kMaxTerritoryBytes) || s != territory) return std::nullopt;
  uint64_t dirs = 0;
  if (!in.U64(dirs) || dirs > data.size() / 64) return std::nullopt;
  GitWalkMemo memo;
  for (uint64_t i = 0; i < dirs; ++i) {
    uint64_t dev, ino, sec, nsec, mnt, entries, kept;
    std::string_view path;
    if (!in.U64(dev) || !in.U64(ino) || !in.U64(sec) || !in.U64(nsec) || !in.U64(mnt) ||
        !in.U64(entries) || !in.Str(path, PATH_MAX) || !in.U64(kept)) {
      return std::nullopt;
    }
    if (path.empty() || path[0] != '/' || path.find('\0') != std::string_view::npos) {
      return std::nullopt;
    }
    if (nsec >= 1000000000 || kept > entries || kept > data.size() / 16) return std::nullopt;
    GitWalkMemo::Dir d;
    d.ctime_sec = static_cast<int64_t>(sec);
    d.ctime_nsec = static_cast<int64_t>(nsec);
    d.mnt_id = mnt;
    d.entries = entries;
    d.path = std::string(path);
    d.kept.reserve(kept);
    for (uint64_t k = 0; k < kept; ++k) {
      uint64_t type = 0;
      if (!in.U64(type) || !in.Str(s, NAME_MAX)) return std::nullopt;
      if (type > static_cast<uint64_t>(GitFileType::kOther) || s.empty() || s == "." || s == ".." ||
          s.find('/') != std::string_view::npos || s.find('\0') != std::string_view::npos) {
        return std::nullopt;
      }
      d.kept.push_back({std::string(s), static_cast<GitFileType>(type)});
    }
    if (!memo.dirs.emplace(std::make_pair(dev, ino), std::move(d)).second) return std::nullopt;
  }
  if (!in.Done()) return std::nullopt;
  return memo;
}

bool GitWalkMemoNeedsSave(const GitWalkMemo* loaded, const GitWalkMemo& now) {
  if (loaded == nullptr) return true;
  auto same_entry = [](const GitDirEntry& a, const GitDirEntry& b) {
    return a.type == b.type && a.name == b.name;
  };
  auto same_dir = [&](const GitWalkMemo::Dir& a, const GitWalkMemo::Dir& b) {
    return a.ctime_sec == b.ctime_sec && a.ctime_nsec == b.ctime_nsec && a.mnt_id == b.mnt_id &&
           a.entries == b.entries && a.path == b.path &&
           std::equal(a.kept.begin(), a.kept.end(), b.kept.begin(), b.kept.end(), same_entry);
  };
  return !std::equal(loaded->dirs.begin(), loaded->dirs.end(), now.dirs.begin(), now.dirs.end(),
                     [&](const auto& a, const auto& b) {
                       return a.first == b.first && same_dir(a.second, b.second);
                     });
}

bool GitWalkMemoMayBeSaved(std::string_view loaded_for, const std::optional<std::string>& judged) {
  return judged && *judged == loaded_for;
}

GitWalkCache GitWalkCache::Open() { return OpenAt(GitWalkCacheDirFor(::geteuid())); }

GitWalkCache GitWalkCache::OpenAt(const std::string& path) {
  GitWalkCache cache;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
      cache.problem_ = "cannot make Anvil's git walk cache " + path + ": " + std::strerror(errno);
      break;
    }
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    if (fd && ::fstat(fd.Get(), &st) == 0 && Fit(st)) {
      cache.dir_ = PathOfFd(fd.Get());
      if (cache.dir_.empty()) break;
      cache.fd_ = std::move(fd);
      cache.boot_id_ = BootId();
      return cache;
    }
    if (fd && ::fstat(fd.Get(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid != ::geteuid()) {
      // Another user's: never read, and nothing of this caller's can change it.
      cache.dir_ = PathOfFd(fd.Get());
      return cache;
    }
    // A symlink, a file, or a directory others could write (perhaps by a command of an earlier
    // run, before it was kept read-only): none of it is trusted. Moved aside, then removed.
    struct timespec ts {};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    std::string aside = path + ".unfit-" + std::to_string(::getpid()) + "-" +
                        std::to_string(ts.tv_sec) + "." + std::to_string(ts.tv_nsec);
    if (::rename(path.c_str(), aside.c_str()) != 0) {
      cache.problem_ = "cannot move aside " + path + ", which is not a directory only its owner " +
                       "can write: " + std::strerror(errno);
      break;
    }
    RemoveAside(aside);
  }
  // Still shield what is there, when it is a directory (it is not used).
  if (cache.dir_.empty()) {
    UniqueFd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
    struct stat st {};
    if (fd && ::fstat(fd.Get(), &st) == 0 && S_ISDIR(st.st_mode)) cache.dir_ = PathOfFd(fd.Get());
  }
  if (cache.problem_.empty()) cache.problem_ = "cannot use Anvil's git walk cache " + path;
  return cache;
}

std::optional<GitWalkMemo> GitWalkCache::Load(const std::vector<std::string>& roots,
                                              std::string_view territory) const {
  if (!fd_ || boot_id_.empty()) return std::nullopt;
  const std::string name = GitWalkCacheFileName(roots);
  UniqueFd fd(::openat(fd_.Get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.Get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & 077) != 0 || static_cast<uint64_t>(st.st_size) > kMaxFileBytes) {
    return std::nullopt;
  }
  std::string data(static_cast<size_t>(st.st_size), '\0');
  if (!fd_io::ReadExactly(fd.Get(), data.data(), data.size(), fd_io::Wait::NoWait())) {
    return std::nullopt;
  }
  return DecodeGitWalkMemo(data, boot_id_, roots, territory);
}

void GitWalkCache::Save(const std::vector<std::string>& roots, std::string_view territory,
                        const GitWalkMemo& memo) const {
  if (!fd_ || boot_id_.empty() || territory.size() > kMaxTerritoryBytes) return;
  const std::string name = GitWalkCacheFileName(roots);
  const std::string data = EncodeGitWalkMemo(boot_id_, roots, territory, memo);
  if (data.size() > kMaxFileBytes) return;
  struct timespec ts {};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  const std::string tmp = ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(ts.tv_nsec);
  UniqueFd fd(
      ::openat(fd_.Get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return;
  if (!fd_io::WriteAll(fd.Get(), data, fd_io::Wait::NoWait())) {
    ::unlinkat(fd_.Get(), tmp.c_str(), 0);
    return;
  }
  // Exchanged with the old memo, which then goes, rather than renamed over it: ext4
  // (auto_da_alloc) writes a file renamed over another one out to disk first, which costs more
  // than the whole walk of a small workspace, and a memo is only good for this boot anyway. A
  // reader sees the old or the new file whole either way.
  if (::syscall(SYS_renameat2, fd_.Get(), tmp.c_str(), fd_.Get(), name.c_str(), RENAME_EXCHANGE) ==
      0) {
    ::unlinkat(fd_.Get(), tmp.c_str(), 0);
    return;
  }
  // No memo there yet, or no RENAME_EXCHANGE on this filesystem.
  if (::renameat(fd_.Get(), tmp.c_str(), fd_.Get(), name.c_str()) != 0) {
    ::unlinkat(fd_.Get(), tmp.c_str(), 0);
    return;
  }
  Prune();
}

void GitWalkCache::Prune() const {
  std::vector<GitWalkCacheFile> files;
  const int listing = ::openat(fd_.Get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (listing < 0) return;
  DIR* d = ::fdopendir(listing);
  if (d == nullptr) {
    ::close(listing);
    return;
  }
  while (struct dirent* e = ::readdir(d)) {
    std::string_view n(e->d_name);
    if (n == "." || n == "..") continue;
    struct stat st {};
    if (::fstatat(fd_.Get(), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
      continue;
    }
    files.push_back({std::string(n),
                     static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec});
  }
  ::closedir(d);
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  constexpr int64_t kStaleTmpNs = int64_t{600} * 1000000000;
  for (const auto& n : GitWalkCacheFilesToPrune(
           std::move(files), kGitWalkCacheMaxMemos,
           static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec, kStaleTmpNs)) {
    ::unlinkat(fd_.Get(), n.c_str(), 0);
  }
}

Result<GitWalkCacheShield> ShieldFor(const GitWalkCache& cache,
                                     const std::vector<std::string>& writable_roots,
                                     const std::vector<std::string>& covered) {
  if (!cache.Dir().empty()) return ShieldGitWalkCache(cache.Dir(), writable_roots, covered);
  // Nothing there to shield: only a root that could make it is a problem, since the command
  // could then make it with a memo of its own.
  const std::string would_be = GitWalkCacheDirFor(::geteuid());
  std::string canonical = would_be;
  char parent[PATH_MAX];
  if (::realpath("/tmp", parent) != nullptr) {
    canonical = std::string(parent) + would_be.substr(std::string_view("/tmp").size());
  }
  ANVIL_TRY(shield, ShieldGitWalkCache(canonical, writable_roots, covered));
  if (!shield->read_only.empty()) {
    return Fail("sandbox", cache.Problem() + "; the writable root that holds it could make it " +
                               "in its place. fix: make /tmp a directory every user can write " +
                               "(mode 1777), or choose another writable root");
  }
  return GitWalkCacheShield{};
}

}  // namespace anvil
