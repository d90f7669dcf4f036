#include "linux/self_confinement.h"

#include <sys/prctl.h>

#include "linux/landlock.h"
#include "linux/seccomp.h"

namespace anvil::confine {

Status ConfineSelf(const SelfConfinement& plan) {
  auto step = [&](const char* name) -> Status {
    return plan.before_step ? plan.before_step(name) : Ok();
  };
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
    return SysFail("sandbox", "no_new_privs");
  }

  ANVIL_RETURN_IF_ERROR(step("landlock"));
  auto probe = landlock::ProbeAbi();
  if (probe.abi < 1) return Fail("sandbox", plan.no_landlock(probe.reason));
  const LandlockPlan rules = plan.landlock(probe.abi);
  ANVIL_TRY(ruleset, landlock::Ruleset::Create(probe.abi, rules.handle_net, rules.scopes));
  for (const auto& rule : rules.rules) {
    ANVIL_RETURN_IF_ERROR(ruleset->AllowPath(rule.path, rule.rights, rule.optional));
  }
  ANVIL_RETURN_IF_ERROR(ruleset->Restrict());

  ANVIL_RETURN_IF_ERROR(step("seccomp"));
  ANVIL_TRY(filter, plan.filter == Filter::kPluginHost ? seccomp::BuildPluginHostFilter()
                                                       : seccomp::BuildServiceFilter());
  return filter->Install();
}

}  // namespace anvil::confine
