// The [sandbox] table of a workspace's Anvil.toml, parsed from the toml++ tree that
// workspace_config.cc already holds. Internal to src/policy (toml++ types).
#pragma once

#include <string_view>

#include "policy/toml_internal.h"
#include "policy/user_config.h"

namespace anvil::policy_internal {

// `node` is the value of the top-level key "sandbox". Keys outside the narrowing shape are
// refused by name ("a workspace can only narrow the sandbox").
Status ParseWorkspaceSandbox(const toml::key& key, const toml::node& node, std::string_view source,
                             WorkspaceSandboxConfig& out);

}  // namespace anvil::policy_internal
