// The seccomp policies as libseccomp rules, compiled to raw BPF. Used at build time only, by
// anvil-seccomp-gen (which bakes the result into the binaries, see seccomp.h) and by the unit
// test that proves the baked programs byte-identical to a fresh compile.
#pragma once

#include <linux/filter.h>

#include <vector>

#include "common/result.h"
#include "policy/sandbox_policy.h"

namespace anvil::seccomp {

// The rules behind BuildCommandFilter, BuildServiceFilter and BuildPluginHostFilter (seccomp.h
// documents them). `set_id_rules` false: the service filter (no set-id rules, openat2 allowed).
// `own_network_namespace` (NetworkMode::kNone only): the command runs in a network namespace of
// its own with nothing but loopback, so IP sockets and route queries are allowed there.
Result<std::vector<sock_filter>> CompileCommandFilter(NetworkMode network, bool deny_list,
                                                      bool set_id_rules = true,
                                                      bool own_network_namespace = false);
Result<std::vector<sock_filter>> CompilePluginHostFilter();

}  // namespace anvil::seccomp
