// Which environment variables reach a sandboxed command. Pure: environment in, environment out.
#pragma once

#include <string>
#include <vector>

namespace anvil {

struct EnvPolicy {
  bool clear = false;             // start empty instead of from the caller's environment
  std::vector<std::string> keep;  // names kept even if the filters below would drop them
  std::vector<std::string> set;   // NAME=VALUE, applied last
};

// Dropped unless named in `keep` (a deny-list: everything else passes, so that everyday tools
// behave as outside; docs/policy.md "Environment"): dynamic-loader and libc code-loading
// variables (LD_*, GCONV_PATH, ...); names that look like secrets, case-insensitive: containing
// KEY, SECRET, TOKEN, PASS (PASSWORD, PASSWD, PGPASS, SSHPASS, PASSPHRASE; not PWD or OLDPWD),
// CREDENTIAL, AUTH (NPM_CONFIG__AUTH, SSH_AUTH_SOCK, AUTHORIZATION; not AUTHOR: GIT_AUTHOR_NAME,
// XAUTHORITY) or DSN, ending in _PWD (MYSQL_PWD) or _PAT, or named PAT (GH_PAT); and any
// variable whose value holds a URL with a password (scheme://user:password@host), whatever its
// name (DATABASE_URL, PIP_INDEX_URL, ...).
bool IsDangerousEnvName(const std::string& name);
bool LooksLikeSecretEnvName(const std::string& name);
bool ValueHoldsUrlPassword(const std::string& value);

// `caller` holds NAME=VALUE entries. Entries without '=' or with an empty name are dropped.
std::vector<std::string> FilterEnvironment(const std::vector<std::string>& caller,
                                           const EnvPolicy& policy);

// The fixed environment a plugin's sys.exec always gets (T3: nothing from anywhere else).
std::vector<std::string> MinimalExecEnvironment();

}  // namespace anvil
