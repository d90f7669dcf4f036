// Which environment variables reach a sandboxed command. Pure: environment in, environment out.
#pragma once

#include <string>
#include <vector>

namespace anvil {

struct EnvPolicy {
  bool clear = false;                    // start empty instead of from the caller's environment
  std::vector<std::string> keep;         // names kept even if the filters below would drop them
  std::vector<std::string> set;          // NAME=VALUE, applied last
};

// Dropped unless named in `keep`: dynamic-loader and libc code-loading variables (LD_*,
// GCONV_PATH, ...), and names that look like secrets (*KEY*, *SECRET*, *TOKEN*, *PASSWORD*,
// *CREDENTIAL*, case-insensitive) as Codex's default environment policy does.
bool IsDangerousEnvName(const std::string& name);
bool LooksLikeSecretEnvName(const std::string& name);

// `caller` holds NAME=VALUE entries. Entries without '=' or with an empty name are dropped.
std::vector<std::string> FilterEnvironment(const std::vector<std::string>& caller,
                                           const EnvPolicy& policy);

// The fixed environment a plugin's sys.exec always gets (T3: nothing from anywhere else).
std::vector<std::string> MinimalExecEnvironment();

}  // namespace anvil
