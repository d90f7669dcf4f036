// Where a controller's cgroup hierarchy is (src/linux/cgroup_facts.h), table by table: cgroup v1,
// v2, both at once, and the malformed lines the lookup must pass over; and the real files of this
// process, read once.
#include "linux/cgroup_facts.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace anvil {
namespace cgroup_facts_test {
namespace {

// A v1 host like the dev VM's: one hierarchy per controller, cpu and cpuacct apart, a unified
// (v2) hierarchy beside them.
const char kV1Cgroup[] =
    "9:name=systemd:/\n8:pids:/user.slice\n7:blkio:/\n4:memory:/process_api/abc\n"
    "3:cpu,cpuacct:/\n0::/\n";
const char kV1Mountinfo[] =
    "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
// A v2-only host (systemd): one hierarchy, optional fields before the separator.
const char kV2Cgroup[] = "0::/user.slice/user-1000.slice/session-2.scope\n";
const char kV2Mountinfo[] =
    "24 1 8:2 / / rw,relatime shared:1 - ext4 /dev/sda2 rw\n"
    "30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

struct Row {
  const char* name;
  std::string cgroup, mountinfo, controller;
  CgroupPlaces want;
};

TEST(CgroupFactsTest, LocatesEachControllerTheWayTheSandboxLooksForIt) {
  const std::vector<Row> rows = {
      {"v1 pids",
       kV1Cgroup,
       kV1Mountinfo,
       "pids",
       {"/sys/fs/cgroup/pids", "/user.slice", true, "/sys/fs/cgroup/unified", "/"}},
      {"v1 memory",
       kV1Cgroup,
       kV1Mountinfo,
       "memory",
       {"/sys/fs/cgroup/memory", "/process_api/abc", true, "/sys/fs/cgroup/unified", "/"}},
      {"v1, a controller that shares its hierarchy",
       kV1Cgroup,
       kV1Mountinfo,
       "cpuacct",
       {"/sys/fs/cgroup/cpu,cpuacct", "/", true, "/sys/fs/cgroup/unified", "/"}},
      // A named hierarchy's option is not a controller of that name.
      {"v1, not a prefix or a name=",
       kV1Cgroup,
       kV1Mountinfo,
       "systemd",
       {"", "", true, "/sys/fs/cgroup/unified", "/"}},
      {"v1, not a part of a name",
       kV1Cgroup,
       kV1Mountinfo,
       "mem",
       {"", "", true, "/sys/fs/cgroup/unified", "/"}},
      {"v2 only",
       kV2Cgroup,
       kV2Mountinfo,
       "pids",
       {"", "", true, "/sys/fs/cgroup", "/user.slice/user-1000.slice/session-2.scope"}},
      {"nothing read", "", "", "pids", {"", "", false, "", ""}},
      // Malformed lines are passed over, whatever they hold; the last line needs no newline.
      {"malformed lines",
       "garbage\n1:pids\n:\n5:pids:/a",
       "short line - cgroup\n"
       "1 2 3:4 / /x rw - cgroup\n"
       "1 2 3:4 / /y rw no separator cgroup cgroup rw,pids\n"
       "1 2 3:4 / /z rw - cgroup cgroup rw,pids",
       "pids",
       {"/z", "/a", false, "", ""}},
      // Fields are separated by runs of blanks; the last v1 mount and line win, the first v2
      // mount does.
      {"blanks, repeats",
       "5:pids:/first\n5:pids:/second\n0::/one\n0::/two\n",
       "1  2 3:4 / /p1 rw - cgroup cgroup rw,pids\n"
       "1 2 3:4\t/ /p2 rw - cgroup cgroup rw,pids\n"
       "1 2 3:4 / /u1 rw - cgroup2 cgroup2 rw\n"
       "1 2 3:4 / /u2 rw - cgroup2 cgroup2 rw\n",
       "pids",
       {"/p2", "/second", true, "/u1", "/two"}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const CgroupPlaces got = LocateController({row.cgroup, row.mountinfo}, row.controller);
    EXPECT_EQ(got.v1_mount, row.want.v1_mount);
    EXPECT_EQ(got.v1_path, row.want.v1_path);
    EXPECT_EQ(got.have_v2, row.want.have_v2);
    EXPECT_EQ(got.v2_mount, row.want.v2_mount);
    EXPECT_EQ(got.v2_path, row.want.v2_path);
  }
}

TEST(CgroupFactsTest, ReadsThisProcesssFiles) {
  const CgroupFacts facts = ReadCgroupFacts();
  // Every Linux process has a mount table and a line per hierarchy it is in.
  EXPECT_NE(facts.mountinfo.find(" - "), std::string::npos);
  EXPECT_NE(facts.proc_self_cgroup.find(':'), std::string::npos);
}

}  // namespace
}  // namespace cgroup_facts_test
}  // namespace anvil
