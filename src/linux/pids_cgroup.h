// A per-sandbox pids cgroup for root's sandboxes: a process-count bound that does not depend on
// the id mapping. (The kernel never applies RLIMIT_NPROC to host uid 0; root's sandbox runs as
// an unprivileged host id, root_remap.h, so RLIMIT_NPROC bounds it too, and this is the second
// bound.) cgroup v1 (a "pids" hierarchy) or v2 (pids enabled in the parent's subtree_control).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"
#include "linux/cgroup_facts.h"

namespace anvil {

class PidsCgroup {
 public:
  // Creates <caller's pids cgroup>/anvil-<pid>-<n> with pids.max = limit; `facts`: where this
  // process's cgroups are (cgroup_facts.h, read once for the sandbox's cgroups).
  static Result<PidsCgroup> Create(uint64_t limit, const CgroupFacts& facts);
  PidsCgroup(PidsCgroup&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  PidsCgroup& operator=(PidsCgroup&&) = delete;
  PidsCgroup(const PidsCgroup&) = delete;
  ~PidsCgroup();

  Status Attach(pid_t pid) const;
  // cgroup v1: a descriptor of the `tasks` file, through which a single-threaded process moves
  // itself (write "0") without the system-wide lock that Attach's move by pid takes (see
  // MemoryCgroup::OpenSelfAttach). Invalid on v2.
  UniqueFd OpenSelfAttach() const;
  const std::string& path() const { return path_; }

 private:
  explicit PidsCgroup(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace anvil
