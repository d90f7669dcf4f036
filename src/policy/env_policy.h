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
// variables (LD_* but LD_LIBRARY_PATH, GCONV_PATH, ...); names that look like secrets
// (LooksLikeSecretEnvName); and any variable whose value holds a secret (ValueHoldsSecret),
// whatever its name. git's settings from the environment (GIT_CONFIG_COUNT/KEY_<n>/VALUE_<n>,
// GIT_CONFIG_PARAMETERS) are one set: kept whole, or dropped whole when any of them carries a
// credential.
bool IsDangerousEnvName(const std::string& name);
// Case-insensitive: containing KEY, SECRET, TOKEN, PASS (PASSWORD, PASSWD, PGPASS, SSHPASS,
// PASSPHRASE; not PWD or OLDPWD), CREDENTIAL, AUTH (NPM_CONFIG__AUTH, SSH_AUTH_SOCK,
// AUTHORIZATION; not AUTHOR: GIT_AUTHOR_NAME, XAUTHORITY), DSN, JWT, COOKIE, WEBHOOK, PRIVATE,
// BEARER, CONNECTION_STRING (CONNSTR, ConnectionStrings__X) or SESSION (not the desktop's
// XDG_SESSION_*, DESKTOP_SESSION, SESSION_MANAGER, DBUS_SESSION_BUS_ADDRESS); ending in _PWD
// (MYSQL_PWD) or _PAT, or named PAT (GH_PAT). Not: GOPRIVATE, GONOPROXY, GOINSECURE,
// TOKENIZERS_PARALLELISM, KEYTIMEOUT (public settings, exact names).
bool LooksLikeSecretEnvName(const std::string& name);
// Anywhere in the value: a URL with a password (scheme://user:password@host; the authority ends
// only at / ? #, so ',' and ';' in a password do not hide it) or with a user name that is a
// token, a webhook URL; a query parameter or `Key=Value;` connection-string part that carries a
// secret (password=, pwd=, token=, access_token=, secret=, sig=, signature=, key=, apikey=,
// AccountKey=, SharedAccessKey=, SharedAccessSignature=, X-Amz-Credential=...); an
// Authorization header, `Bearer <token>` or `Basic <base64>`; a JSON Web Token (eyJ...x.y.z); a
// private key; a token of a well-known service by its prefix (ghp_, github_pat_, glpat-, xoxb-,
// npm_, AKIA...).
bool ValueHoldsSecret(const std::string& value);
// GIT_CONFIG_COUNT, GIT_CONFIG_KEY_<n>, GIT_CONFIG_VALUE_<n>, GIT_CONFIG_PARAMETERS.
bool IsGitConfigEnvName(const std::string& name);

// `caller` holds NAME=VALUE entries. Entries without '=' or with an empty name are dropped.
std::vector<std::string> FilterEnvironment(const std::vector<std::string>& caller,
                                           const EnvPolicy& policy);

// The fixed environment a plugin's sys.exec always gets (T3: nothing from anywhere else).
std::vector<std::string> MinimalExecEnvironment();

}  // namespace anvil
