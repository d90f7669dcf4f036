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

  if (auto s = step("landlock"); !s) return s;
  auto probe = landlock::ProbeAbi();
  if (probe.abi < 1) return Fail("sandbox", plan.no_landlock(probe.reason));
  const LandlockPlan rules = plan.landlock(probe.abi);
  auto ruleset = landlock::Ruleset::Create(probe.abi, rules.handle_net, rules.scopes);
  if (!ruleset) return tl::unexpected(ruleset.error());
  for (const auto& rule : rules.rules) {
    if (auto s = ruleset->AllowPath(rule.path, rule.rights, rule.optional); !s) return s;
  }
  if (auto s = ruleset->Restrict(); !s) return s;

  if (auto s = step("seccomp"); !s) return s;
  auto filter = plan.filter == Filter::kPluginHost ? seccomp::BuildPluginHostFilter()
                                                   : seccomp::BuildServiceFilter();
  if (!filter) return tl::unexpected(filter.error());
  return filter->Install();
}

}  // namespace anvil::confine
