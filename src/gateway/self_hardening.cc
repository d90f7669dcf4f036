#include "gateway/self_hardening.h"

#include "linux/landlock.h"
#include "linux/self_confinement.h"
#include "policy/sandbox_policy.h"

namespace anvil::gateway {

Status HardenGateway(const std::string& workspace, const std::string& runtime_dir,
                     const std::string& audit_log) {
  using namespace landlock;
  confine::SelfConfinement plan;
  plan.no_landlock = [](const std::string& reason) {
    return "gateway hardening needs Landlock: " + reason;
  };
  plan.landlock = [&](int abi) {
    confine::LandlockPlan p;
    for (auto root : kPlatformReadRoots) p.rules.push_back({std::string(root), kFsRead, true});
    const uint64_t all = FsRightsForAbi(abi);
    p.rules.push_back({workspace, all, false});
    p.rules.push_back({runtime_dir, all, false});
    p.rules.push_back({audit_log, kFsWriteFile | kFsReadFile, false});
    for (const char* dev : {"/dev/null", "/dev/urandom"}) {
      p.rules.push_back({dev, kFsReadFile | kFsWriteFile, true});
    }
    return p;
  };
  plan.filter = confine::Filter::kService;
  return confine::ConfineSelf(plan);
}

}  // namespace anvil::gateway
