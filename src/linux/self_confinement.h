// The one way a long-lived helper (anvil-gateway, anvil-plugin-host, anvil-proxy) confines
// itself after start, each step failing closed:
//   1. no_new_privs (set, then read back)
//   2. Landlock: the kernel's ABI probed (none: the helper refuses to run), the ruleset its
//      plan gives for that ABI created, its paths allowed, and the calling thread restricted
//   3. seccomp: the helper's filter built and installed
// What differs between the helpers is data: the Landlock plan, the filter, the refusal text.
// Steps only one of them needs stay with it (the plugin host's rlimits, dumpable and
// verification from the inside: host/lockdown.cc). Must run while the process has one thread:
// Landlock and seccomp bind the calling thread and the threads it creates afterwards.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/result.h"

namespace anvil::confine {

struct PathRule {
  std::string path;
  uint64_t rights = 0;    // landlock::kFs* bits
  bool optional = false;  // a path that does not exist is skipped
};

// A helper's Landlock ruleset for one kernel ABI.
struct LandlockPlan {
  bool handle_net = false;  // TCP bind/connect handled (ABI 4+), none granted
  uint64_t scopes = 0;      // landlock::ScopesForAbi bits
  std::vector<PathRule> rules;
};

enum class Filter {
  kService,     // seccomp::BuildServiceFilter: the gateway and the proxy
  kPluginHost,  // seccomp::BuildPluginHostFilter: the allowlist
};

struct SelfConfinement {
  // The refusal when the kernel has no Landlock, from the probe's reason.
  std::function<std::string(const std::string& reason)> no_landlock;
  // The ruleset for the probed ABI (pure).
  std::function<LandlockPlan(int abi)> landlock;
  Filter filter = Filter::kService;
  // Called before the "landlock" and "seccomp" steps; a failure it returns stops there (the
  // plugin host's test-only injected failures). May be empty.
  std::function<Status(const char* step)> before_step;
};

Status ConfineSelf(const SelfConfinement& plan);

}  // namespace anvil::confine
