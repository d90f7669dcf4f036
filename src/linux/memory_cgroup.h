// A per-sandbox memory cgroup: the memory ceiling of the whole sandboxed tree, so that a
// command that allocates without bound is killed inside its own cgroup (the kernel's memory
// cgroup OOM killer) instead of pushing the host into an OOM that may pick the user's editor.
// cgroup v1 (a "memory" hierarchy) or v2 (memory enabled in the parent's subtree_control: root,
// or a user whose systemd delegates a cgroup). Where none can be had the sandbox runs without a
// ceiling (`--json` reports memory_limit 0); the tree is still the OOM killer's first choice
// (oom_score_adj 1000, set by the sandbox's init).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"
#include "linux/cgroup_facts.h"

namespace anvil {

// This machine's physical memory (MemTotal), bytes; 0 when the kernel does not say.
uint64_t PhysicalMemory();
// The memory ceiling `--limit mem` defaults to: half of this machine's physical memory.
uint64_t DefaultMemoryCeiling();

// The size of the sandbox's own /dev/shm, a tmpfs (Python's multiprocessing, Chromium, PyTorch's
// data loaders and test runners share memory through it). `asked`: `--limit shm`. `ceiling`: the
// ceiling of the memory cgroup that holds the sandbox, 0 when none does (`--limit mem=unlimited`,
// or none could be had). `physical`: PhysicalMemory(). Pure.
//
// Unless asked, half of the memory the sandbox has: its ceiling (never more than the machine's
// memory). Half is the kernel's own default for a tmpfs, what the host's /dev/shm and
// bubblewrap's --dev have, applied to the memory in force. A tmpfs page is charged to the memory
// cgroup of the process that writes it, so the ceiling already holds whatever the size; the size
// decides how it ends: past it a write fails with ENOSPC, which the writer reports, while the other
// half stays for the processes sharing the memory, instead of the cgroup's OOM killer taking some
// process of the sandbox (a tmpfs page cannot be reclaimed without swap). Without a ceiling
// (`--limit mem=unlimited`, or no memory cgroup for this caller) the size is the only bound on what
// /dev/shm takes of the host, and it holds per sandbox: with half the machine each, two sandboxes
// at once could take all of it, and tmpfs pages are freed only when the whole namespace goes. So
// then the fixed 64 MiB (Docker's; `--limit shm` raises it).
uint64_t DevShmSize(std::optional<uint64_t> asked, uint64_t ceiling, uint64_t physical);
// The size without a ceiling: the 64 MiB the view once always had.
inline constexpr uint64_t kFallbackDevShmSize = 64ULL << 20;

class MemoryCgroup {
 public:
  // Creates <the caller's memory cgroup, or its parent where only that is delegated>/
  // anvil-mem-<pid>-<n> with the ceiling `limit` (swap included where the kernel accounts it).
  // `facts`: where this process's cgroups are (cgroup_facts.h, read once for the sandbox's
  // cgroups). `pids_cgroup`: the sandbox's pids cgroup, if any; on cgroup v2 a process is in one
  // cgroup only, so when that one offers memory.max the ceiling is written there instead.
  static Result<MemoryCgroup> Create(uint64_t limit, const CgroupFacts& facts,
                                     const std::string& pids_cgroup = "");
  MemoryCgroup(MemoryCgroup&& other) noexcept
      : path_(std::move(other.path_)), owned_(other.owned_), v2_(other.v2_) {
    other.path_.clear();
  }
  MemoryCgroup& operator=(MemoryCgroup&&) = delete;
  MemoryCgroup(const MemoryCgroup&) = delete;
  ~MemoryCgroup();

  Status Attach(pid_t pid) const;
  // cgroup v1: a descriptor of this cgroup's `tasks` file, through which a single-threaded
  // process moves itself by writing "0" — a move of one thread, which the kernel makes without
  // the system-wide lock (and its RCU grace period) that moving a process by pid takes. Invalid
  // on v2 (no `tasks`; Attach it is).
  UniqueFd OpenSelfAttach() const;
  // How many processes the kernel's OOM killer ended in this cgroup (memory.events or
  // memory.oom_control, "oom_kill").
  uint64_t OomKills() const;
  const std::string& path() const { return path_; }

 private:
  MemoryCgroup(std::string path, bool owned, bool v2)
      : path_(std::move(path)), owned_(owned), v2_(v2) {}
  std::string path_;
  bool owned_ = true;  // false: the pids cgroup's directory, which PidsCgroup removes
  bool v2_ = false;
};

}  // namespace anvil
