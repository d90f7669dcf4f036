// A per-sandbox pids cgroup: the process-count bound for callers that RLIMIT_NPROC cannot
// bound. The kernel never applies RLIMIT_NPROC to uid 0 of the initial user namespace (our
// user namespace maps root to root), so a fork bomb started by root needs the pids controller.
// cgroup v1 (a "pids" hierarchy) or v2 (pids enabled in the parent's subtree_control).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "common/result.h"

namespace anvil {

class PidsCgroup {
 public:
  // Creates <caller's pids cgroup>/anvil-<pid>-<n> with pids.max = limit.
  static Result<PidsCgroup> Create(uint64_t limit);
  PidsCgroup(PidsCgroup&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  PidsCgroup& operator=(PidsCgroup&&) = delete;
  PidsCgroup(const PidsCgroup&) = delete;
  ~PidsCgroup();

  Status Attach(pid_t pid) const;
  const std::string& path() const { return path_; }

 private:
  explicit PidsCgroup(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace anvil
