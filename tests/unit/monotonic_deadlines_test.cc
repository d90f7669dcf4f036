// Issue #9, clock jumps: every deadline, timeout and rate limit in Anvil is measured on the
// monotonic clock (std::chrono::steady_clock, or a relative poll/epoll timeout, which the kernel
// measures on CLOCK_MONOTONIC), so setting the wall clock back or forward never extends or cuts
// a deadline. The wall clock is read only where a wall-clock time is the data itself. This test
// keeps it that way: a new realtime read anywhere in src/ fails here until it is reviewed and
// listed below with its reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace anvil {
namespace monotonic_deadlines_test {
namespace {

// file (relative to src/) -> why reading the wall clock there is not a deadline.
const std::map<std::string, std::string> kReviewed = {
    {"gateway/audit_log.cc", "the audit line's timestamp"},
    {"common/capped_log.cc", "the log.compacted marker line's timestamp"},
    {"net/proxy_service.cc", "the proxy's audit line timestamp"},
    {"agent/exec_flow.cc", "audit line timestamps and the date in an \"always\" rule"},
    {"policy/grant_store.cc", "granted_at, shown to the user"},
    {"host/lua_bindings.cc", "os.time() for plugins: a value, the budget uses steady_clock"},
    {"linux/pids_cgroup.cc", "a stale cgroup's age: compared with its mtime, which is wall time"},
    {"linux/memory_cgroup.cc", "a stale cgroup's age: compared with its mtime, which is wall time"},
    {"fs/exec_read_plan.cc",
     "whether a directory's ctime (wall time, set by the kernel) is far enough in the past to "
     "reuse its cached listing; compared with wall time, not a deadline"},
    {"linux/git_real_fs.cc",
     "which directories' ctimes (wall time) are older than a walk; its deadline uses steady_clock"},
    {"linux/git_walk_cache.cc",
     "a stale temporary memo's age: compared with its mtime, which is wall time"},
    {"cli/sandbox_setup.cc", "a sandbox home's age: compared with its mtime, which is wall time"},
    {"session/runtime_sweep.cc",
     "a dead session's directory's age: compared with its mtime, which is wall time"},
    {"session/rpc_trace.h", "the --trace line's timestamp"},
    {"session/rpc_trace.cc", "the --trace line's timestamp"},
    {"cli/audit_view.h", "`anvil audit --since 10m`: compared with the audit lines' wall times"},
    {"cli/audit_view.cc", "`anvil audit --since 10m`: compared with the audit lines' wall times"},
    {"cli/audit_command.cc", "`anvil audit --since 10m`: now, for the filter on wall times"},
};

TEST(MonotonicDeadlines, WallClockIsReadOnlyWhereItIsTheData) {
  const std::filesystem::path src = std::filesystem::path(ANVIL_SOURCE_DIR) / "src";
  const char* patterns[] = {"system_clock",  "CLOCK_REALTIME", "time(nullptr)",        "time(NULL)",
                            "gettimeofday(", "timespec_get",   "high_resolution_clock"};
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(src)) {
    const auto ext = entry.path().extension();
    if (ext != ".cc" && ext != ".h") continue;
    ++files;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string rel = std::filesystem::relative(entry.path(), src).string();
    std::istringstream lines(text.str());
    std::string line;
    for (int n = 1; std::getline(lines, line); ++n) {
      // The seccomp allowlist names the syscalls, it does not call them.
      if (rel == "linux/seccomp.cc") continue;
      for (const char* p : patterns) {
        if (line.find(p) == std::string::npos) continue;
        EXPECT_TRUE(kReviewed.count(rel))
            << "src/" << rel << ":" << n << " reads the wall clock (" << p
            << "): use std::chrono::steady_clock for any deadline, or review and list it here";
      }
    }
  }
  EXPECT_GT(files, 50) << "source tree not found at " << src;
}

}  // namespace
}  // namespace monotonic_deadlines_test
}  // namespace anvil
