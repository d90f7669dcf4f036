#include "linux/unchecked_run.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "fs/file_facts.h"
#include "fs/file_io.h"
#include "fs/workspace_path.h"
#include "linux/host_socket_facts.h"

namespace anvil {

namespace {

// The whole file, for a write lock held by its open file description (F_OFD_*): unlike flock,
// which any reader may take, a write lock needs a descriptor open for writing, which no
// sandboxed command gets on the state directory (read-only in every view that holds it).
struct flock WholeFile(short type) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  return fl;
}

}  // namespace

bool UncheckedRecordIsLive(int dir_fd, const std::string& name) {
  UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return false;
  // Would a read lock wait? Only for a write lock: the one the run's `anvil` holds. A read lock
  // anyone took conflicts with no read lock, so it makes nothing look live.
  struct flock probe = WholeFile(F_RDLCK);
  if (::fcntl(fd.Get(), F_OFD_GETLK, &probe) != 0) return false;
  return probe.l_type == F_WRLCK;
}

Result<std::vector<LoadedUncheckedRecord>> LoadSettledUncheckedRecords(
    const std::string& dir, std::vector<LoadedUncheckedRecord>* gone) {
  return LoadUncheckedRecords(dir, UncheckedRecordIsLive, gone);
}

namespace {

UncheckedRecord PendingRecord(const std::vector<std::string>& roots) {
  UncheckedRecord record;
  record.roots = roots;
  for (const auto& root : roots) {
    record.subtrees.push_back({root,
                               "the check after a sandbox run there did not finish (anvil "
                               "was killed, or could not record what it found)"});
  }
  return record;
}

// Writes `record` as `name` in `dir_fd`, locked: made under a name no reader lists, locked,
// written, then renamed into place (the lock is the open file's and goes with it), so a reader
// never finds it empty or unlocked while the run lasts, however many runs start at once. Over
// an earlier version, the new one is whole and locked the moment it replaces the old.
Status WriteLockedRecord(int dir_fd, const std::string& name, const UncheckedRecord& record,
                         UniqueFd& held) {
  const std::string temp = "." + name + ".tmp";
  UniqueFd fd(
      ::openat(dir_fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return SysFail("io", "create " + temp, errno);
  struct flock lock = WholeFile(F_WRLCK);
  // Not synced: it stands for a run whose anvil is killed, and the page cache keeps it through
  // that (a sync would cost every start a disk flush).
  const std::string text = EncodeUncheckedRecord(record);
  if (::fcntl(fd.Get(), F_OFD_SETLK, &lock) != 0 ||
      ::write(fd.Get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
      ::renameat(dir_fd, temp.c_str(), dir_fd, name.c_str()) != 0) {
    const int e = errno;
    ::unlinkat(dir_fd, temp.c_str(), 0);
    return SysFail("io", "write the pending record " + name, e);
  }
  held = std::move(fd);
  return Ok();
}

// Whether `error` says no record can be kept there for anyone (a state directory that is not
// the caller's, or one it may not write): no run of this user records anything there either.
// Anything else (a full disk, a quota, an I/O error) a command may have caused: a run without
// its record would be invisible to the runs that start meanwhile.
bool NoRecordsPossible(const Error& error) {
  const int e = error.sys_errno;
  return error.code == "invalid" || e == EACCES || e == EPERM || e == EROFS;
}

// Writes the pending record under a name of its own and takes its lock; "" when no record can
// be kept there (NoRecordsPossible); an error otherwise.
Result<std::string> WritePending(const std::string& dir, const std::vector<std::string>& roots,
                                 UniqueFd& held) {
  auto fail = [&](const Error& error) -> Result<std::string> {
    if (NoRecordsPossible(error)) return std::string();
    const std::string homes = dir.substr(0, dir.rfind('/')) + "/homes";
    return Fail("io", "cannot write this run's pending record in " + QuotePathForMessage(dir) +
                          " (" + error.message +
                          "); without it a sandbox run started meanwhile could not tell what "
                          "this run's command makes from yours. Free space there, or check "
                          "its permissions (the sandbox homes and kept /tmp of your workspaces "
                          "are beside it: du -sh " +
                          QuotePathForMessage(homes) + "/*/*)");
  };
  if (auto made = MakeUncheckedRecordsDir(dir); !made) return fail(made.error());
  auto dir_fd = OpenDirectory(dir, DirOpen::kReadNoFollow);
  if (!dir_fd) return fail(dir_fd.error());
  unsigned char nonce[16];
  if (::getrandom(nonce, sizeof(nonce), 0) != static_cast<ssize_t>(sizeof(nonce))) {
    return fail(SysFail("io", "getrandom", errno).value());
  }
  std::vector<std::string> key = roots;
  key.push_back("pending " + std::to_string(::getpid()) + " " +
                std::string(reinterpret_cast<const char*>(nonce), sizeof(nonce)));
  const std::string name = UncheckedRecordFileName(key);
  if (auto s = WriteLockedRecord(dir_fd->Get(), name, PendingRecord(roots), held); !s) {
    return fail(s.error());
  }
  return name;
}

// A mount of /proc/self/mountinfo: its device, the path within its file system it shows
// (`root`) and where (`point`), octal escapes undone.
struct MountLine {
  std::string dev, root, point;
};

std::vector<MountLine> ReadMounts() {
  std::vector<MountLine> out;
  // A proc file: its size is not known before it is read.
  std::ifstream lines("/proc/self/mountinfo");
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    if (fields >> id >> parent >> dev >> root >> point) {
      out.push_back({dev, UnescapeMountinfoField(root), UnescapeMountinfoField(point)});
    }
  }
  return out;
}

// Where `path` (canonical) lies as its file system knows it: the device and the path within
// it, through the mount that shows it (the deepest mount point holding it; the last one listed
// at a point is the one on top). The same directory reached through a bind mount has the same
// key; nullopt when no mount holds it.
std::optional<std::pair<std::string, std::string>> TreeKey(const std::vector<MountLine>& mounts,
                                                           const std::string& path) {
  const MountLine* best = nullptr;
  for (const auto& m : mounts) {
    if (PathIsWithin(path, m.point) && (best == nullptr || m.point.size() >= best->point.size())) {
      best = &m;
    }
  }
  if (best == nullptr) return std::nullopt;
  const std::string rest = best->point == "/" ? path : path.substr(best->point.size());
  std::string within = best->root == "/" ? rest : best->root + rest;
  if (within.empty()) within = "/";
  return std::make_pair(best->dev, within);
}

// Whether a root of `a` is, or lies within, a root of `b` or the other way round, as their
// file systems know them: what RootsOverlap says of paths, for trees reachable by more than
// one path (a bind mount of the workspace, or of a directory in it).
bool RootsShareTrees(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  const std::vector<MountLine> mounts = ReadMounts();
  for (const auto& x : a) {
    auto kx = TreeKey(mounts, x);
    if (!kx) continue;
    for (const auto& y : b) {
      auto ky = TreeKey(mounts, y);
      if (ky && kx->first == ky->first &&
          (PathIsWithin(kx->second, ky->second) || PathIsWithin(ky->second, kx->second))) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

Result<UncheckedRun> UncheckedRun::Start(const std::vector<std::string>& roots) {
  UncheckedRun run;
  run.dir_ = UncheckedRecordsDir();
  run.roots_ = roots;
  if (run.dir_.empty()) return run;  // no home: nothing was recorded, nothing can be
  std::vector<LoadedUncheckedRecord> gone;
  ANVIL_TRY(loaded, LoadSettledUncheckedRecords(run.dir_, &gone));
  run.loaded_ = std::move(*loaded);
  // Records of workspaces since removed (killed runs' in a temporary directory) would be read
  // again by every start: gone once, here.
  RemoveGoneUncheckedRecords(run.dir_, gone);
  std::vector<UncheckedRecord> records;
  for (const auto& l : run.loaded_) {
    if (l.record.trusted &&
        (RootsOverlap(l.record.roots, roots) || RootsShareTrees(l.record.roots, roots))) {
      // The pending record of a run whose anvil was killed after it said what it took as the
      // user's: what else is in its roots is its command's work, judged as a live run's would
      // be (at the roots' tops too), and what it trusted stays the user's.
      run.settled_trust_.push_back(
          {RootsOverlap(l.record.roots, roots) ? l.record.roots : roots, l.record.trusted});
      continue;
    }
    records.push_back(l.record);
  }
  run.suspect_ = SuspectUncheckedSubtrees(records, roots);
  ANVIL_TRY(pending, WritePending(run.dir_, roots, run.pending_fd_));
  run.pending_ = std::move(*pending);
  return run;
}

std::vector<LiveRun> UncheckedRun::LiveOthers() const {
  std::vector<LiveRun> out = settled_trust_;
  if (dir_.empty()) return out;
  auto dir_fd = OpenDirectory(dir_, DirOpen::kReadNoFollow);
  if (!dir_fd) return out;
  std::vector<std::string> names;
  (void)ForEachName(dir_fd->Get(), "list " + dir_, [&](const std::string& name) -> Status {
    if (name != pending_ && IsUncheckedRecordFileName(name)) names.push_back(name);
    return Ok();
  });
  for (const auto& name : names) {
    if (!UncheckedRecordIsLive(dir_fd->Get(), name)) continue;
    OwnerFacts owner;
    auto text = ReadRegularFileNoFollowOwned(dir_fd->Get(), name, kMaxUncheckedRecordBytes, owner);
    if (!text && text.error().code == "not_found") continue;  // that run ended meanwhile
    auto record = text ? DecodeUncheckedRecord(*text) : std::nullopt;
    if (!record || !owner.Mine() || owner.others_may_write) {
      // A live record that cannot be read for what it trusts: nothing in these roots is.
      out.push_back({roots_, RunTrust{}});
      continue;
    }
    if (!RootsOverlap(record->roots, roots_)) {
      // The same directories reached by other paths (a bind mount): overlap is a matter of
      // inodes. Its roots are then taken as this run's own, whose paths this walk knows.
      if (!RootsShareTrees(record->roots, roots_)) continue;
      record->roots = roots_;
    }
    out.push_back({std::move(record->roots), std::move(record->trusted)});
  }
  return out;
}

Status UncheckedRun::Publish(const RunTrust& trust) {
  if (dir_.empty() || pending_.empty()) return Ok();
  ANVIL_TRY(dir_fd, OpenDirectory(dir_, DirOpen::kReadNoFollow));
  UncheckedRecord record = PendingRecord(roots_);
  record.trusted = trust;
  UniqueFd held;
  if (auto s = WriteLockedRecord(dir_fd->Get(), pending_, record, held); !s) {
    return Fail("io", "cannot record what this run takes as yours in " + QuotePathForMessage(dir_) +
                          " (" + s.error().message +
                          "); a sandbox run started meanwhile could not tell it from what the "
                          "command makes. Free space there, or check its permissions");
  }
  pending_fd_ = std::move(held);
  return Ok();
}

UncheckedRun::~UncheckedRun() {
  if (!pending_fd_ || pending_.empty()) return;
  if (auto dir_fd = OpenDirectory(dir_, DirOpen::kReadNoFollow)) {
    (void)RemoveFileAt(dir_fd->Get(), pending_);
  }
}

void UncheckedRun::Finish(SandboxOutcome& out, bool git_checked) {
  if (dir_.empty()) return;
  UncheckedFacts facts;
  facts.roots = roots_;
  for (const auto& u : out.git.unwalked) facts.unwalked.push_back({u.path, u.why});
  facts.unwalked_total = out.git.unwalked_total;
  facts.check_error = out.git.check_error;
  facts.quarantine_failures = out.git.quarantine_failures;
  for (const ConfigQuarantine& q : out.git.protected_names) {
    if (q.moved_to.empty()) facts.names_left.push_back({q.path, q.failure});
  }
  if (out.workspace_config && out.workspace_config->moved_to.empty()) {
    facts.names_left.push_back({out.workspace_config->path, out.workspace_config->failure});
  }
  bool keep_pending = false;
  if (auto record = UncheckedAfterRun(facts)) {
    if (auto s = SaveUncheckedRecord(dir_, *record); !s) {
      keep_pending = true;
      if (!out.git.check_error.empty()) out.git.check_error += "; ";
      out.git.check_error += "what it found could not be recorded (" + s.error().ToString() +
                             "), so plugins stay out of all of " + roots_.front() +
                             (pending_.empty() ? " only if an earlier record says so"
                                               : " until a sandbox run there checks it");
    }
  } else if (git_checked) {
    // Best effort: a record left in place only keeps refusing until a later run resolves it.
    for (const auto& l : loaded_) (void)ResolveUncheckedRecord(dir_, l, roots_);
  }
  if (!pending_.empty() && !keep_pending) {
    if (auto dir_fd = OpenDirectory(dir_, DirOpen::kReadNoFollow)) {
      (void)RemoveFileAt(dir_fd->Get(), pending_);
    }
  }
  pending_fd_.Reset();
}

}  // namespace anvil
