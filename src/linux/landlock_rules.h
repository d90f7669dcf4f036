// The Landlock wall of a sandboxed command as data: which rights the rule set handles and which
// holes it punches, a pure function of the command's file view, its network mode, the kernel's
// Landlock ABI and the namespaces it has. The command child applies the plan as it is
// (Ruleset::AllowRule, one rule at a time, failing closed on any of them); the unit test
// (tests/unit/landlock_rules_test.cc) states the exact plan for each policy, namespace set and
// ABI without a kernel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "policy/sandbox_policy.h"

namespace anvil::landlock {

// The namespaces the command ended up with (the clone may fall back to none of them).
struct Namespaces {
  bool mount = false;
  bool pid = false;
  bool net = false;
};

enum class RuleKind {
  kPath,     // `path` (absolute) opened as it is
  kBeneath,  // `path` (relative) opened beneath `base` (RESOLVE_BENEATH): missing or escaping
             // adds nothing, a symlink in `base` never widens the rule
  // A bound file or tree of the view's read plan (fs/read_plan.h): `path` (relative, "." for
  // `base` itself) opened beneath `base` never through a symlink, allowed only while it is
  // still what the plan says; missing adds nothing (the mount view leaves it out too).
  kPlanDir,         // a directory
  kPlanFile,        // a regular file with a single link
  kPlanLinkedFile,  // a regular file
};

struct Rule {
  RuleKind kind = RuleKind::kPath;
  std::string path;
  uint64_t rights = 0;    // already masked to what the ABI handles
  bool optional = false;  // kPath: a missing path is skipped (any other error still fails)
  std::string base;       // kBeneath and kPlan*: the directory `path` is opened beneath
  bool operator==(const Rule&) const = default;
};

struct RulesetPlan {
  int abi = 0;
  uint64_t handled_fs = 0;  // every filesystem right of the ABI: denied unless a rule allows it
  bool handle_net = false;  // TCP bind/connect denied unless tcp_connect_ports names the port
  uint64_t scopes = 0;      // kScope* bits
  std::vector<uint16_t> tcp_connect_ports;
  std::vector<Rule> rules;
};

// The rule set of a command with `view`. `own_pid`: the command's pid as its procfs names it,
// for the host procfs's one entry it may read when it has no pid and mount namespace of its
// own. Network: under kProxy only TCP connect to `proxy_port`; under kNone no TCP at all unless
// the command has a network namespace of its own (its loopback reaches nothing outside).
// ABI >= 6 scopes signals and abstract Unix sockets to the sandbox.
RulesetPlan LandlockRulesFor(const FileView& view, NetworkMode network, int abi,
                             const Namespaces& namespaces, int own_pid, uint16_t proxy_port);

}  // namespace anvil::landlock
