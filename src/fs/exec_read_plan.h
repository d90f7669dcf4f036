// The gateway's half of "a tool run by sys.exec reads exactly what sys.fs.read allows" (threat
// model T3, fs/read_plan.h): before a call runs, its path operands are resolved beneath the
// workspace the way sys.fs.read resolves a path, and the read plan (which of the workspace the
// tool's view holds) is computed from a bounded walk of the directories the grant reaches. Lives
// in fs/ (not gateway/) so that the walk is tested on real directories without a gateway.
//
// The walk's facts are cached per directory for the session and reused while the directory's
// identity and ctime are unchanged: every change of a directory's entries (a file or link created,
// removed or renamed into it, a hard link to an outside file planted) changes its ctime, which no
// process can set back, so a call only re-reads what changed and otherwise pays one open and fstat
// per directory. A directory changed within the last two seconds is read again on every call
// (timestamps are coarser than the time between two changes), and files already seen with several
// links are looked at again on every call. One change is only seen once the directory changes
// too: a workspace file that gains a second name *outside* the workspace (its content is the
// workspace's own; nothing from outside comes in). The walk is bounded in entries and time; past a
// bound the call fails with "limit:" naming it. A mount placed on a file inside the workspace by
// the host's root after the file was listed is not looked for.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/file_identity.h"
#include "common/result.h"
#include "fs/read_plan.h"
#include "fs/workspace_root.h"

namespace anvil {

struct ExecWalkLimits {
  std::size_t max_entries = 1000000;         // entries looked at per call (cached or not)
  std::chrono::milliseconds max_time{5000};  // per call
  std::size_t max_cached_entries = 2000000;  // the whole cache; past it, it starts over
  std::chrono::seconds settle{2};            // younger ctimes are not trusted for reuse
  std::size_t max_mounts = 4096;             // see ReadPlanOptions
};

class ExecReadPlanner {
 public:
  explicit ExecReadPlanner(const WorkspaceRoot& root, ExecWalkLimits limits = {})
      : root_(root), limits_(limits) {}

  // Thread-safe (one plan at a time). Errors: "limit" (a bound of the walk or the plan), "io".
  Result<std::vector<ReadOp>> Plan(const std::vector<std::string>& fs_read);

  // For tests and the bench: directories read from disk (not from the cache) so far.
  std::uint64_t directories_read() const;

 private:
  struct CachedDir {
    FileIdentity identity;  // the directory as listed
    bool reusable = false;
    DirFacts facts;
  };
  Result<const DirFacts*> Lookup(const std::string& path, std::size_t& entries,
                                 std::chrono::steady_clock::time_point deadline);

  const WorkspaceRoot& root_;
  ExecWalkLimits limits_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, CachedDir> cache_;
  std::size_t cached_entries_ = 0;
  std::uint64_t directories_read_ = 0;
};

// The gateway's check of a tool's path operands (positionals in path position and path-valued
// flags, as CheckExecArgv found them), each resolved beneath the workspace as sys.fs.read would:
// one that leaves the workspace (an absolute symlink, "..", a magic link) or leads, through a
// symlink, to a name outside the grant is "denied"; so is one that names nothing the grant can
// read (a file outside the grant, a directory the grant reaches nothing in), a hard-linked file
// (unless the gateway allows those), and a FIFO, socket or device ("invalid"). "-" (stdin) and a
// missing path the grant could match are left to the tool (the view decides what is there).
Status CheckExecOperands(const WorkspaceRoot& root, const std::vector<std::string>& fs_read,
                         const std::string& tool, const std::vector<std::string>& operands);

}  // namespace anvil
