// The sandbox settings parsers (src/policy/user_config): config.toml (the user's own, but a file
// that decides what a sandbox may do) and the [sandbox] table of Anvil.toml (untrusted, comes
// with the repository). Invariants for an accepted config.toml: lists bounded, paths absolute or
// '~'-relative, every named profile defined or built in. For an accepted Anvil.toml: the
// sandbox table can only narrow (policy read-only/workspace-write, network none/proxy, read-only
// subpaths relative without '..'), and narrowing never widens what it is applied to.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "policy/user_config.h"
#include "policy/workspace_config.h"

using anvil::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = anvil::fuzz::AsView(data, size);
  if (auto config = anvil::ParseUserConfig(text, "config.toml")) {
    for (const auto* list : {&config->writable_roots, &config->readable_roots, &config->allow_hosts,
                             &config->profiles}) {
      Require(list->size() <= anvil::kMaxConfigListEntries, "list too long");
    }
    for (const auto* list : {&config->writable_roots, &config->readable_roots}) {
      for (const auto& p : *list) {
        Require(!p.empty() && (p[0] == '/' || p == "~" || p.rfind("~/", 0) == 0),
                "path neither absolute nor ~", p);
      }
    }
    Require(config->profile_defs.size() <= anvil::kMaxProfiles, "too many profiles");
    for (const auto& name : config->profiles) {
      Require(config->profile_defs.count(name) || anvil::BuiltinProfiles().count(name),
              "unknown profile accepted", name);
    }
  }
  if (auto ws = anvil::ParseWorkspaceConfig(text)) {
    const auto& s = ws->sandbox;
    if (s.policy) {
      Require(*s.policy == anvil::PolicyKind::kReadOnly ||
                  *s.policy == anvil::PolicyKind::kWorkspaceWrite,
              "workspace policy wider than workspace-write");
    }
    if (s.network) {
      Require(*s.network != anvil::NetworkMode::kFull, "workspace network full");
    }
    for (const auto& sub : s.read_only_subpaths) {
      Require(anvil::ValidateWorkspaceSubpath(sub).has_value(), "read-only subpath", sub);
    }
    for (auto policy : {anvil::PolicyKind::kReadOnly, anvil::PolicyKind::kWorkspaceWrite,
                        anvil::PolicyKind::kDangerFullAccess}) {
      for (auto network :
           {anvil::NetworkMode::kNone, anvil::NetworkMode::kProxy, anvil::NetworkMode::kFull}) {
        auto p = policy;
        auto n = network;
        if (anvil::NarrowByWorkspace(s, p, n)) {
          Require(anvil::PolicyWidth(p) <= anvil::PolicyWidth(policy), "policy widened");
          Require(anvil::NetworkWidth(n) <= anvil::NetworkWidth(network), "network widened");
        } else {
          Require(p == policy && n == network, "refused narrowing changed the settings");
        }
      }
    }
  }
  return 0;
}
