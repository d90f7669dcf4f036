#include "gateway/self_hardening.h"

#include <sys/prctl.h>

#include "linux/landlock.h"
#include "linux/seccomp.h"
#include "policy/sandbox_policy.h"

namespace anvil::gateway {

Status HardenGateway(const std::string& workspace, const std::string& runtime_dir,
                     const std::string& audit_log) {
  using namespace landlock;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return SysFail("sandbox", "no_new_privs");
  auto probe = ProbeAbi();
  if (probe.abi < 1) return Fail("sandbox", "gateway hardening needs Landlock: " + probe.reason);
  // Must run while the process has one thread: Landlock and seccomp bind the calling thread
  // and the threads it creates afterwards (RunGateway starts the workers later).
  auto rs = Ruleset::Create(probe.abi, /*handle_net=*/false, /*scopes=*/0);
  if (!rs) return tl::unexpected(rs.error());
  const uint64_t all = FsRightsForAbi(probe.abi);
  for (auto root : kPlatformReadRoots) {
    if (auto s = rs->AllowPath(std::string(root), kFsRead, true); !s) return s;
  }
  if (auto s = rs->AllowPath(workspace, all); !s) return s;
  if (auto s = rs->AllowPath(runtime_dir, all); !s) return s;
  if (auto s = rs->AllowPath(audit_log, kFsWriteFile | kFsReadFile); !s) return s;
  for (const char* dev : {"/dev/null", "/dev/urandom"}) {
    if (auto s = rs->AllowPath(dev, kFsReadFile | kFsWriteFile, true); !s) return s;
  }
  if (auto s = rs->Restrict(); !s) return s;
  auto filter = seccomp::BuildServiceFilter();
  if (!filter) return tl::unexpected(filter.error());
  return filter->Install();
}

}  // namespace anvil::gateway
