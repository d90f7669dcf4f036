// Which file-system object a name led to, and its state when it was looked at: the device and
// inode (the object) and the ctime (any change of its contents, its names or its mode moves
// it). The workspace's Anvil.toml watch (policy/protected_names_plan.h, ConfigEntry), the git
// walk's facts (policy/git_metadata.h, GitFileFacts), the git run guard's stamps
// (linux/git_run_guard.h) and the sys.exec read planner's cached directories
// (fs/exec_read_plan.h) are each one, with the kind of object beside it.
#pragma once

#include <cstdint>

namespace anvil {

struct FileIdentity {
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  std::int64_t ctime_sec = 0;
  std::int64_t ctime_nsec = 0;

  // The same object (device and inode), whatever its state.
  bool SameObject(const FileIdentity& other) const { return dev == other.dev && ino == other.ino; }
  // The same ctime: of the same object, not changed since.
  bool SameCtime(const FileIdentity& other) const {
    return ctime_sec == other.ctime_sec && ctime_nsec == other.ctime_nsec;
  }
  bool operator==(const FileIdentity&) const = default;
};

}  // namespace anvil
