// The seccomp tables (seccomp_rules.h) compiled with libseccomp to raw BPF. Used at build time
// only, by anvil-seccomp-gen (which bakes the result into the binaries, see seccomp.h), and by
// the unit tests that prove the baked programs byte-identical to a fresh compile and that read
// every row of the tables in them.
#pragma once

#include <linux/filter.h>

#include <vector>

#include "common/result.h"
#include "linux/seccomp_rules.h"
#include "policy/sandbox_policy.h"

namespace anvil::seccomp {

// The tables behind BuildCommandFilter, BuildServiceFilter and BuildPluginHostFilter
// (CommandRules and PluginHostRules, seccomp_rules.h, document the arguments).
Result<std::vector<sock_filter>> CompileCommandFilter(NetworkMode network, bool deny_list,
                                                      bool set_id_rules = true,
                                                      bool own_network_namespace = false,
                                                      bool allow_tracing = false);
Result<std::vector<sock_filter>> CompilePluginHostFilter();
// The refusal observer's (RefusalObserverRules): kRefusalObserver and kRefusalObserverConnect.
Result<std::vector<sock_filter>> CompileRefusalObserverFilter(bool watch_connect);
// Any table (seccomp_rules.h): its rules in order; the first that fails fails the program.
Result<std::vector<sock_filter>> CompileTable(const RuleTable& table);

}  // namespace anvil::seccomp
