// Where this process's cgroups are: /proc/self/cgroup and /proc/self/mountinfo, read once per
// sandbox start for both of its cgroups (pids_cgroup.h, memory_cgroup.h; mountinfo is the costly
// one, the kernel writes it out anew on every read), and the lookup of one controller's
// hierarchy in them (LocateController: pure, table-tested).
#pragma once

#include <string>
#include <string_view>

namespace anvil {

// The two files as read, not parsed.
struct CgroupFacts {
  std::string proc_self_cgroup;  // "ID:controllers:path" lines (v1), "0::path" (v2)
  std::string mountinfo;         // "... MOUNT_POINT ... - FSTYPE SOURCE SUPER_OPTIONS" lines
};

// Reads both files of this process (an unreadable one stays empty: no cgroup is found in it).
CgroupFacts ReadCgroupFacts();

// Where `controller` ("pids", "memory") can be had: the cgroup v1 hierarchy that holds it (its
// mount point and this process's path in it), and the cgroup v2 hierarchy (the first one
// mounted, and this process's path in it). Empty where there is none.
struct CgroupPlaces {
  std::string v1_mount, v1_path;
  bool have_v2 = false;  // /proc/self/cgroup has a v2 line ("0::path")
  std::string v2_mount, v2_path;
};
CgroupPlaces LocateController(const CgroupFacts& facts, std::string_view controller);

}  // namespace anvil
