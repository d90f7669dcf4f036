#include "policy/env_policy.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "common/ascii.h"
#include "policy/manifest_signature.h"

namespace anvil {
namespace {

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// Locale-independent, as every name and value rule here is ASCII.
std::string Lower(std::string_view s) { return AsciiLower(s); }

std::string NameOf(const std::string& entry) {
  auto eq = entry.find('=');
  return eq == std::string::npos ? std::string() : entry.substr(0, eq);
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

bool IsDangerousEnvName(const std::string& name) {
  // Variables through which glibc or the dynamic loader load code or data from a path.
  static constexpr std::string_view kExact[] = {"GCONV_PATH",  "GETCONF_DIR",   "HOSTALIASES",
                                                "LOCALDOMAIN", "LOCPATH",       "MALLOC_TRACE",
                                                "NIS_PATH",    "NLSPATH",       "RESOLV_HOST_CONF",
                                                "RES_OPTIONS", "GLIBC_TUNABLES"};
  // LD_LIBRARY_PATH is a search path like PATH: the command could set it itself, it loads
  // nothing the command could not load anyway, and builds and toolkits (CUDA, conda, a
  // project's build/lib under test) need it. LD_PRELOAD, LD_AUDIT and the rest stay out.
  if (name == "LD_LIBRARY_PATH") return false;
  if (name.rfind("LD_", 0) == 0) return true;
  return std::find(std::begin(kExact), std::end(kExact), name) != std::end(kExact);
}

bool LooksLikeSecretEnvName(const std::string& name) {
  // Public settings whose names hold a secret word: Go's list of private module paths (dropping
  // it would send those paths to the public proxy and checksum database), the Hugging Face
  // tokenizer's thread switch, zsh's key timeout. Their values are still judged.
  static constexpr std::string_view kPublic[] = {"GOPRIVATE", "GONOPROXY", "GOINSECURE",
                                                 "TOKENIZERS_PARALLELISM", "KEYTIMEOUT"};
  if (std::find(std::begin(kPublic), std::end(kPublic), name) != std::end(kPublic)) return false;
  static constexpr std::string_view kPatterns[] = {"KEY",     "SECRET",     "TOKEN",
                                                   "PASS",    "CREDENTIAL", "DSN",
                                                   "JWT",     "COOKIE",     "WEBHOOK",
                                                   "PRIVATE", "BEARER",     "CONNECTIONSTRING",
                                                   "CONNSTR", "CONN_STR",   "CONNECTION_STRING"};
  std::string upper = Upper(name);
  for (auto pattern : kPatterns) {
    if (upper.find(pattern) != std::string::npos) return true;
  }
  // AUTH, but not the AUTHOR of GIT_AUTHOR_NAME or XAUTHORITY (AUTHORIZATION is a secret).
  for (size_t at = upper.find("AUTH"); at != std::string::npos; at = upper.find("AUTH", at + 1)) {
    std::string_view rest(upper.c_str() + at + 4);
    if (rest.substr(0, 2) != "OR" || rest.substr(0, 4) == "ORIZ") return true;
  }
  // A session's id or cookie is a login; the desktop's session variables say where it runs.
  if (upper.find("SESSION") != std::string::npos) {
    static constexpr std::string_view kDesktop[] = {"DESKTOP_SESSION", "SESSION_MANAGER",
                                                    "DBUS_SESSION_BUS_ADDRESS"};
    const bool desktop =
        upper.rfind("XDG_SESSION_", 0) == 0 ||
        std::find(std::begin(kDesktop), std::end(kDesktop), upper) != std::end(kDesktop);
    if (!desktop) return true;
  }
  auto ends_with = [&upper](std::string_view suffix) {
    return upper.size() >= suffix.size() &&
           upper.compare(upper.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  // Bundler's per-host credentials: BUNDLE_GEMS__EXAMPLE__COM=user:token (the host's dots
  // written as "__"; BUNDLE_PATH and BUNDLE_WITHOUT have none).
  if (upper.rfind("BUNDLE_", 0) == 0 && upper.find("__") != std::string::npos) return true;
  // Jenkins' credentials() binding (X, X_USR, X_PSW: X holds user:password) and other short
  // endings of a password, a credential set or a login token (SONAR_LOGIN).
  return upper == "PAT" || ends_with("_PAT") || ends_with("_PWD") || ends_with("_PW") ||
         ends_with("_PSW") || ends_with("_CREDS") || ends_with("_LOGIN");
}

namespace {

bool TokenChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
}

// A user name that is itself a token (https://ghp_abc...@github.com): long, letters and digits.
bool LooksLikeTokenUser(std::string_view user) {
  if (user.size() < 20) return false;
  bool letter = false, digit = false;
  for (char c : user) {
    if (!TokenChar(c) && c != '.' && c != '~' && c != '%') return false;
    letter |= std::isalpha(static_cast<unsigned char>(c)) != 0;
    digit |= std::isdigit(static_cast<unsigned char>(c)) != 0;
  }
  return letter && digit;
}

// scheme://[userinfo@]host...: a password in the userinfo (RFC 3986 allows ',' ';' '&' '=' and
// more there, so the authority ends only at '/', '?', '#' or what no URI holds), a user name
// that is a token, or a webhook (the secret is the path: hooks.slack.com/services/...,
// discord.com/api/webhooks/..., *.webhook.office.com).
bool UrlHoldsSecret(std::string_view value) {
  for (size_t at = value.find("://"); at != std::string::npos; at = value.find("://", at + 3)) {
    size_t start = at + 3;
    size_t end = value.find_first_of("/?#\\ \t\n\"'<>", start);
    std::string_view authority =
        value.substr(start, (end == std::string::npos ? value.size() : end) - start);
    const std::string lower = Lower(authority);
    size_t userinfo_end = authority.rfind('@');
    if (userinfo_end != std::string_view::npos) {
      std::string_view userinfo = authority.substr(0, userinfo_end);
      size_t colon = userinfo.find(':');
      if (colon != std::string_view::npos && colon + 1 < userinfo.size()) return true;
      if (LooksLikeTokenUser(userinfo.substr(0, colon))) return true;
    }
    std::string host = lower.substr(userinfo_end == std::string_view::npos ? 0 : userinfo_end + 1);
    // The path, up to where the URL ends.
    const std::string path =
        end == std::string::npos
            ? std::string()
            : Lower(value.substr(end, value.find_first_of(" \t\n", end) - end));
    if ((host.rfind("hooks.", 0) == 0 || host.find("webhook") != std::string::npos ||
         path.find("/webhook") != std::string::npos) &&
        path.size() > 1) {
      return true;
    }
  }
  return false;
}

// A parameter or connection-string key that carries a secret (lower case, ' ' '_' '-' gone).
bool SecretParameter(std::string key) {
  key.erase(std::remove_if(key.begin(), key.end(),
                           [](char c) { return c == ' ' || c == '_' || c == '-' || c == '.'; }),
            key.end());
  static constexpr std::string_view kExact[] = {
      "pwd", "pass", "key", "sig", "auth", "accesskey", "accountkey", "sharedaccesskey"};
  if (std::find(std::begin(kExact), std::end(kExact), key) != std::end(kExact)) return true;
  static constexpr std::string_view kParts[] = {"password",  "passwd",     "secret", "token",
                                                "signature", "credential", "apikey", "privatekey"};
  return std::any_of(std::begin(kParts), std::end(kParts),
                     [&](std::string_view part) { return key.find(part) != std::string::npos; });
}

bool KeyChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
         c == ' ';
}

// name=value pairs after a '?' (a query: separated by '&' or ';'), `Key=Value;` lists (a
// connection string: "Server=db;Password=hunter2;", "...;AccountKey=...;") and
// space-separated ones: one whose name carries a secret and whose value is not empty.
bool PairsHoldSecret(std::string_view value) {
  auto scan = [&](size_t from, std::string_view separators) {
    size_t pos = from;
    while (pos <= value.size()) {
      size_t next = value.find_first_of(separators, pos);
      std::string_view part =
          value.substr(pos, (next == std::string::npos ? value.size() : next) - pos);
      size_t eq = part.find('=');
      if (eq != std::string_view::npos && eq > 0) {
        std::string_view key = part.substr(0, eq);
        while (!key.empty() && key.front() == ' ') key.remove_prefix(1);
        std::string_view val = part.substr(eq + 1);
        while (!val.empty() && (val.front() == ' ' || val.front() == '"')) val.remove_prefix(1);
        if (!key.empty() && !val.empty() && std::all_of(key.begin(), key.end(), KeyChar) &&
            SecretParameter(Lower(key))) {
          return true;
        }
      }
      if (next == std::string::npos) break;
      pos = next + 1;
    }
    return false;
  };
  for (size_t q = value.find('?'); q != std::string::npos; q = value.find('?', q + 1)) {
    if (scan(q + 1, "&; \t\n#")) return true;
  }
  if (value.find(';') != std::string::npos && scan(0, ";")) return true;
  // libpq's keyword form, "host=db user=app password=hunter2"; a compiler's -DNAME=1 or a
  // program's --flag=value starts with '-' and is not looked at.
  return !value.empty() && value.front() != '-' && value.find(" -") == std::string_view::npos &&
         scan(0, " \t\n");
}

// A value a secret could be: not empty, not a number, not a boolean word.
bool SecretLooking(std::string_view v) {
  while (!v.empty() && (v.front() == '"' || v.front() == '\'')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == '"' || v.back() == '\'' || v.back() == ',')) v.remove_suffix(1);
  if (v.size() < 3) return false;
  if (std::all_of(v.begin(), v.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return false;
  const std::string l = Lower(v);
  return l != "true" && l != "false" && l != "yes" && l != "no" && l != "on" && l != "off" &&
         l != "null" && l != "none";
}

// The last segment of a property or flag name (spring.datasource.password, signingPassword,
// MYSQL_PWD) names a secret: it ends with one of the secret words. Stricter than
// SecretParameter, because build flags name keys and tokens that are not secrets
// (-DAPI_KEY_LEN=32), and with SecretLooking on the value (-DUSE_TOKEN=1 stays).
bool SecretPropertyName(std::string_view name) {
  const size_t cut = name.find_last_of("._-");
  std::string last = Lower(cut == std::string_view::npos ? name : name.substr(cut + 1));
  static constexpr std::string_view kEnds[] = {"password",    "passwd",    "passphrase", "secret",
                                               "token",       "apikey",    "pwd",        "pass",
                                               "credentials", "privatekey"};
  return std::any_of(std::begin(kEnds), std::end(kEnds), [&](std::string_view end) {
    return last.size() >= end.size() &&
           last.compare(last.size() - end.size(), end.size(), end) == 0;
  });
}

// Secrets handed to programs as flags and in config text: "-Dspring.datasource.password=x",
// "--password=x", "--password x", netrc's "password x", JSON's "password": "x" and YAML's
// "password: x".
bool FlagsAndConfigTextHoldSecret(std::string_view value) {
  std::vector<std::string_view> words;
  for (size_t pos = 0; pos < value.size();) {
    size_t end = value.find_first_of(" \t\n", pos);
    if (end == std::string_view::npos) end = value.size();
    if (end > pos) words.push_back(value.substr(pos, end - pos));
    pos = end + 1;
  }
  for (size_t i = 0; i < words.size(); ++i) {
    std::string_view w = words[i];
    std::string_view bare = w;
    while (!bare.empty() && bare.front() == '-') bare.remove_prefix(1);
    if (bare.size() != w.size() && (bare.starts_with("D") || bare.starts_with("P"))) {
      // -Dname=value, -Pname=value (Java system and Gradle project properties).
      if (w.size() - bare.size() == 1) bare.remove_prefix(1);
    }
    const size_t eq = bare.find('=');
    if (eq != std::string_view::npos && eq > 0 && bare.size() != w.size()) {
      if (SecretPropertyName(bare.substr(0, eq)) && SecretLooking(bare.substr(eq + 1))) return true;
      continue;
    }
    // "--password VALUE" and netrc's "password VALUE".
    const std::string lw = Lower(bare);
    if ((lw == "password" || lw == "passwd" || lw == "passphrase") && i + 1 < words.size() &&
        !words[i + 1].starts_with("-") && SecretLooking(words[i + 1])) {
      return true;
    }
  }
  // "key": "value" (JSON) and key: value (YAML), a secret-named key with a non-empty value.
  for (size_t colon = value.find(':'); colon != std::string_view::npos;
       colon = value.find(':', colon + 1)) {
    size_t k_end = colon;
    bool quoted = k_end > 0 && value[k_end - 1] == '"';
    if (quoted) --k_end;
    size_t k_begin = k_end;
    while (k_begin > 0 && KeyChar(value[k_begin - 1]) && value[k_begin - 1] != ' ') --k_begin;
    if (k_begin == k_end) continue;
    if (quoted ? (k_begin == 0 || value[k_begin - 1] != '"')
               : (k_begin > 0 && value[k_begin - 1] != ' ' && value[k_begin - 1] != '\n' &&
                  value[k_begin - 1] != '{' && value[k_begin - 1] != ',')) {
      continue;
    }
    size_t v = colon + 1;
    if (!quoted && (v >= value.size() || value[v] != ' ')) continue;  // not "a:b" (URLs, PATH)
    while (v < value.size() && value[v] == ' ') ++v;
    size_t v_end = value.find_first_of(quoted ? ",}\n" : "\n", v);
    std::string_view val =
        value.substr(v, (v_end == std::string_view::npos ? value.size() : v_end) - v);
    if (val.starts_with("{") || val.starts_with("[")) continue;
    // YAML's value is one word; prose after a colon ("the password: is asked") is not.
    while (!val.empty() && (val.back() == ' ' || val.back() == '\r')) val.remove_suffix(1);
    if (!quoted && val.find(' ') != std::string_view::npos) continue;
    if (SecretParameter(Lower(value.substr(k_begin, k_end - k_begin))) && SecretLooking(val)) {
      return true;
    }
  }
  return false;
}

// Standard base64 of "user:password" (a Basic credential made only of letters).
bool Base64OfUserColonPassword(std::string_view token) {
  const std::optional<std::string> out = DecodeBase64(token);  // RFC 7617: standard, padded
  if (!out) return false;
  const size_t colon = out->find(':');
  return colon != std::string::npos && colon > 0 && colon + 1 < out->size() &&
         std::all_of(out->begin(), out->end(),
                     [](char c) { return static_cast<unsigned char>(c) >= 0x20 && c != 0x7f; });
}

// "Authorization: ...", "Bearer <token>", "Basic <base64>" anywhere in the value.
bool AuthorizationHoldsSecret(std::string_view value) {
  const std::string lower = Lower(value);
  if (lower.find("authorization:") != std::string::npos) return true;
  for (std::string_view scheme : {"bearer", "basic", "token"}) {
    for (size_t at = lower.find(scheme); at != std::string::npos; at = lower.find(scheme, at + 1)) {
      if (at > 0 && std::isalnum(static_cast<unsigned char>(lower[at - 1]))) continue;
      size_t p = at + scheme.size();
      if (p >= lower.size() || (lower[p] != ' ' && lower[p] != '\t')) continue;
      while (p < lower.size() && (lower[p] == ' ' || lower[p] == '\t')) ++p;
      size_t len = 0;
      bool mixed = false;
      while (p + len < value.size()) {
        char c = value[p + len];
        if (!TokenChar(c) && c != '.' && c != '~' && c != '+' && c != '/' && c != '=') break;
        mixed |= !std::isalpha(static_cast<unsigned char>(c));
        ++len;
      }
      // A word after "basic" or "token" in prose is letters only; a credential is not, or it
      // is base64 of "user:password".
      if (len >= 8 && (scheme == "bearer" || mixed)) return true;
      if (len >= 8 && scheme == "basic" && Base64OfUserColonPassword(value.substr(p, len))) {
        return true;
      }
    }
  }
  return false;
}

// A JSON Web Token (three base64url parts, the first a JSON object: "eyJ"), a private key, or a
// token of a well-known service by its prefix, anywhere in the value.
bool TokenShapedSecret(std::string_view value) {
  auto run = [&](size_t from) {
    size_t n = 0;
    while (from + n < value.size() && TokenChar(value[from + n])) ++n;
    return n;
  };
  for (size_t at = value.find("eyJ"); at != std::string::npos; at = value.find("eyJ", at + 1)) {
    if (at > 0 && TokenChar(value[at - 1])) continue;
    size_t a = run(at);
    if (at + a >= value.size() || value[at + a] != '.') continue;
    size_t b = run(at + a + 1);
    if (b > 0 && at + a + 1 + b < value.size() && value[at + a + 1 + b] == '.') return true;
  }
  if (value.find("PRIVATE KEY-----") != std::string::npos) return true;
  struct Prefix {
    std::string_view text;
    size_t min_rest;
  };
  static constexpr Prefix kPrefixes[] = {
      {"ghp_", 30},        {"gho_", 30},     {"ghu_", 30},     {"ghs_", 30},   {"ghr_", 30},
      {"github_pat_", 30}, {"glpat-", 20},   {"xoxb-", 10},    {"xoxp-", 10},  {"xoxa-", 10},
      {"xoxs-", 10},       {"npm_", 30},     {"AKIA", 16},     {"ASIA", 16},   {"sk-", 20},
      {"sk_live_", 16},    {"rk_live_", 16}, {"AIza", 30},     {"hf_", 30},    {"pypi-", 50},
      {"glptt-", 20},      {"dop_v1_", 40},  {"sk_test_", 16}, {"SG.", 20},    {"hvs.", 20},
      {"dckr_pat_", 20},   {"glrt-", 20},    {"xapp-", 20},    {"shpat_", 20}, {"gsk_", 30},
      {"lin_api_", 20},    {"ntn_", 30}};
  for (const Prefix& prefix : kPrefixes) {
    for (size_t at = value.find(prefix.text); at != std::string::npos;
         at = value.find(prefix.text, at + 1)) {
      if (at > 0 && TokenChar(value[at - 1])) continue;
      if (run(at + prefix.text.size()) >= prefix.min_rest) return true;
    }
  }
  return false;
}

}  // namespace

bool ValueHoldsSecret(const std::string& value) {
  return UrlHoldsSecret(value) || PairsHoldSecret(value) || AuthorizationHoldsSecret(value) ||
         TokenShapedSecret(value) || FlagsAndConfigTextHoldSecret(value);
}

bool IsGitConfigEnvName(const std::string& name) {
  if (name == "GIT_CONFIG_COUNT" || name == "GIT_CONFIG_PARAMETERS") return true;
  for (std::string_view prefix : {"GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"}) {
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
        std::all_of(name.begin() + static_cast<long>(prefix.size()), name.end(),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
      return true;
    }
  }
  return false;
}

namespace {

// A git setting's name that carries a credential: credential.*, http.*.extraHeader, a password,
// token, secret, cookie or auth setting (not an author's), or a name holding a secret itself
// (url.https://user:password@host/.insteadOf).
bool GitConfigKeyCarriesCredential(const std::string& key) {
  const std::string lower = Lower(key);
  static constexpr std::string_view kParts[] = {"credential", "extraheader", "pass",
                                                "token",      "secret",      "cookie"};
  for (auto part : kParts) {
    if (lower.find(part) != std::string::npos) return true;
  }
  for (size_t at = lower.find("auth"); at != std::string::npos; at = lower.find("auth", at + 1)) {
    if (lower.compare(at, 6, "author") != 0) return true;
  }
  return ValueHoldsSecret(key);
}

}  // namespace

std::vector<std::string> FilterEnvironment(const std::vector<std::string>& caller,
                                           const EnvPolicy& policy) {
  // Settings given to git through the environment (GIT_CONFIG_COUNT with GIT_CONFIG_KEY_<n> and
  // GIT_CONFIG_VALUE_<n>, GIT_CONFIG_PARAMETERS) go as one set: half of it makes git fail
  // ("missing config key"), and a credential in any of them (http.extraHeader, credential.*, a
  // URL with a password) drops the whole set.
  bool git_config_credential = false;
  for (const auto& entry : caller) {
    std::string name = NameOf(entry);
    if (name.empty() || !IsGitConfigEnvName(name)) continue;
    const std::string value = entry.substr(name.size() + 1);
    // GIT_CONFIG_PARAMETERS holds 'name'='value' pairs: its names and values are looked at.
    const bool names_a_key =
        name.rfind("GIT_CONFIG_KEY_", 0) == 0 || name == "GIT_CONFIG_PARAMETERS";
    if ((names_a_key && GitConfigKeyCarriesCredential(value)) || ValueHoldsSecret(value)) {
      git_config_credential = true;
    }
  }
  std::vector<std::string> out;
  for (const auto& entry : caller) {
    std::string name = NameOf(entry);
    if (name.empty()) continue;
    bool kept = Contains(policy.keep, name);
    if (policy.clear && !kept) continue;
    if (!kept) {
      if (IsGitConfigEnvName(name)) {
        if (git_config_credential) continue;
      } else if (IsDangerousEnvName(name) || LooksLikeSecretEnvName(name) ||
                 ValueHoldsSecret(entry.substr(name.size() + 1))) {
        continue;
      }
    }
    out.push_back(entry);
  }
  for (const auto& entry : policy.set) {
    std::string name = NameOf(entry);
    if (name.empty()) continue;
    out.erase(std::remove_if(out.begin(), out.end(),
                             [&](const std::string& e) { return NameOf(e) == name; }),
              out.end());
    out.push_back(entry);
  }
  return out;
}

std::vector<std::string> MinimalExecEnvironment() {
  return {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C.UTF-8",
          "HOME=/nonexistent", "TERM=dumb"};
}

}  // namespace anvil
