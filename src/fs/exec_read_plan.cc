#include "fs/exec_read_plan.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <ctime>

#include "common/unique_fd.h"
#include "fs/path_glob.h"
#include "fs/workspace_path.h"

namespace anvil {
namespace {

using Clock = std::chrono::steady_clock;

std::string Q(std::string_view path) { return QuotePathForMessage(path); }

// The directory `path` beneath the root, never through a symlink: O_RDONLY so it can be listed.
// An invalid descriptor (and errno) when it is not there as a directory.
UniqueFd OpenDir(int root, const std::string& path) {
  open_how how{};
  how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  for (int attempt = 0; attempt < 64; ++attempt) {
    long fd = syscall(SYS_openat2, root, path.c_str(), &how, sizeof(how));
    if (fd >= 0) return UniqueFd(static_cast<int>(fd));
    if (errno != EAGAIN && errno != EINTR) break;
  }
  return UniqueFd();
}

EntryKind KindOf(mode_t mode) {
  if (S_ISREG(mode)) return EntryKind::kFile;
  if (S_ISDIR(mode)) return EntryKind::kDir;
  if (S_ISLNK(mode)) return EntryKind::kSymlink;
  return EntryKind::kOther;
}

// Lists the open directory `dir`: each entry's kind (lstat), link count for regular files, link
// text for symlinks. Entries that vanish while being looked at are left out.
Result<DirFacts> ReadDirFacts(int dir, const std::string& path) {
  int copy = fcntl(dir, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return SysFail("io", "dup " + Q(path));
  DIR* d = fdopendir(copy);
  if (d == nullptr) {
    ::close(copy);
    return SysFail("io", "list " + Q(path));
  }
  DirFacts facts;
  errno = 0;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    WalkEntry entry;
    entry.valid_name = static_cast<bool>(ValidatePathComponent(name));
    unsigned char type = e->d_type;
    if (type == DT_REG || type == DT_UNKNOWN) {
      struct stat st {};
      if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      entry.kind = KindOf(st.st_mode);
      entry.nlink = static_cast<std::uint64_t>(st.st_nlink);
    } else if (type == DT_DIR) {
      entry.kind = EntryKind::kDir;
    } else if (type == DT_LNK) {
      entry.kind = EntryKind::kSymlink;
    } else {
      entry.kind = EntryKind::kOther;
    }
    if (entry.kind != EntryKind::kFile) entry.nlink = 1;
    if (entry.kind == EntryKind::kSymlink) {
      char target[PATH_MAX];
      ssize_t n = ::readlinkat(dir, name.c_str(), target, sizeof(target) - 1);
      if (n < 0) continue;
      entry.link_target.assign(target, static_cast<std::size_t>(n));
    }
    entry.name = std::move(name);
    facts.push_back(std::move(entry));
    errno = 0;
  }
  int err = errno;
  closedir(d);
  if (err != 0) return SysFail("io", "list " + Q(path), err);
  std::sort(facts.begin(), facts.end(),
            [](const WalkEntry& a, const WalkEntry& b) { return a.name < b.name; });
  return facts;
}

}  // namespace

std::uint64_t ExecReadPlanner::directories_read() const {
  std::lock_guard<std::mutex> lock(mu_);
  return directories_read_;
}

Result<const DirFacts*> ExecReadPlanner::Lookup(const std::string& path, std::size_t& entries,
                                                Clock::time_point deadline) {
  if (Clock::now() > deadline) {
    return Fail("limit",
                "sys.exec: looking through the workspace for the files the grant allows "
                "took longer than " +
                    std::to_string(limits_.max_time.count()) +
                    " ms (fix: narrow fs.read to the directories the tool needs)");
  }
  UniqueFd dir = OpenDir(root_.fd(), path);
  if (!dir) {
    const int err = errno;
    cached_entries_ -= cache_.count(path) ? cache_[path].facts.size() : 0;
    cache_.erase(path);
    if (err == EMFILE || err == ENFILE) return Fail("limit", "out of file descriptors", err);
    // Not there as a directory (now), or not readable: absent from the view.
    if (err == ENOENT || err == ENOTDIR || err == ELOOP || err == EXDEV || err == EACCES ||
        err == EPERM) {
      return nullptr;
    }
    return SysFail("io", "open " + Q(path), err);
  }
  struct stat st {};
  if (::fstat(dir.Get(), &st) != 0) return SysFail("io", "fstat " + Q(path));
  const FileIdentity now_there{static_cast<std::uint64_t>(st.st_dev),
                               static_cast<std::uint64_t>(st.st_ino), st.st_ctim.tv_sec,
                               st.st_ctim.tv_nsec};
  CachedDir& slot = cache_[path];
  const bool same = slot.reusable && slot.identity == now_there;
  if (same) {
    // The entries are the ones listed before; a hard link count may have changed (a file linked
    // from elsewhere, or the other name removed): those few are looked at again.
    for (WalkEntry& e : slot.facts) {
      if (e.kind != EntryKind::kFile || e.nlink <= 1) continue;
      struct stat fst {};
      if (::fstatat(dir.Get(), e.name.c_str(), &fst, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISREG(fst.st_mode)) {
        e.nlink = static_cast<std::uint64_t>(fst.st_nlink);
      }
    }
  } else {
    ANVIL_TRY(facts, ReadDirFacts(dir.Get(), path));
    ++directories_read_;
    cached_entries_ -= slot.facts.size();
    slot.facts = std::move(*facts);
    cached_entries_ += slot.facts.size();
    slot.identity = now_there;
    // Reused only once its ctime is safely in the past: a change within the same clock tick
    // as the listing would leave the ctime as it was.
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    slot.reusable = now.tv_sec - st.st_ctim.tv_sec > limits_.settle.count();
  }
  entries += slot.facts.size();
  if (entries > limits_.max_entries) {
    return Fail("limit", "sys.exec: the directories this grant reaches hold more than " +
                             std::to_string(limits_.max_entries) +
                             " entries (fix: narrow fs.read to the directories the tool needs)");
  }
  return &slot.facts;
}

Result<std::vector<ReadOp>> ExecReadPlanner::Plan(const std::vector<std::string>& fs_read) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cached_entries_ > limits_.max_cached_entries) {
    cache_.clear();
    cached_entries_ = 0;
  }
  ReadPlanOptions options;
  options.follow_symlinks = !root_.options().no_symlinks;
  options.allow_hardlinked = root_.options().allow_hardlinked_reads;
  options.max_mounts = limits_.max_mounts;
  std::size_t entries = 0;
  const auto deadline = Clock::now() + limits_.max_time;
  DirFactsLookup lookup = [&](const std::string& path) -> Result<const DirFacts*> {
    return Lookup(path, entries, deadline);
  };
  return PlanWorkspaceReads(fs_read, lookup, options);
}

Status CheckExecOperands(const WorkspaceRoot& root, const std::vector<std::string>& fs_read,
                         const std::string& tool, const std::vector<std::string>& operands) {
  // Something the grant can read at or beneath `path`: a granted file, or a directory the grant
  // reaches into. The root is always there (possibly empty).
  auto within = [&](const std::string& path, FileType type) {
    if (path == kWorkspaceRootPath) return true;
    if (type == FileType::kDir) return GrantReaches(fs_read, path);
    return GrantAllows(fs_read, path, Access::kRead);
  };
  for (const std::string& operand : operands) {
    if (operand == "-") continue;  // stdin (rg), which the plugin supplied itself
    auto resolved = root.Resolve(operand);
    if (!resolved) {
      const Error& e = resolved.error();
      if (e.code == "not_found") {
        // Nothing there now: the tool says so, unless the name could never be read anyway.
        if (within(operand, FileType::kFile) || within(operand, FileType::kDir)) continue;
        return Fail("denied", tool + " path operand outside the grant: " + Q(operand));
      }
      return Fail(e.error_code(), tool + " path operand: " + e.message);
    }
    if (resolved->type == FileType::kOther) {
      return Fail("invalid",
                  tool + " path operand is not a regular file or directory: " + Q(operand));
    }
    if (!within(operand, resolved->type)) {
      return Fail("denied", tool + " path operand outside the grant: " + Q(operand));
    }
    if (resolved->path != operand && !within(resolved->path, resolved->type)) {
      return Fail("denied", tool + " path operand leads outside the grant: " + Q(operand) + " -> " +
                                Q(resolved->path));
    }
    if (resolved->type == FileType::kFile && resolved->nlink > 1 &&
        !root.options().allow_hardlinked_reads) {
      return Fail("denied", tool + " path operand has " + std::to_string(resolved->nlink) +
                                " hard links and may be shared with a file outside the "
                                "workspace: " +
                                Q(operand));
    }
  }
  return Ok();
}

}  // namespace anvil
