#include "policy/env_policy.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace anvil {
namespace {

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

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
  if (name.rfind("LD_", 0) == 0) return true;
  return std::find(std::begin(kExact), std::end(kExact), name) != std::end(kExact);
}

bool LooksLikeSecretEnvName(const std::string& name) {
  static constexpr std::string_view kPatterns[] = {"KEY",  "SECRET",     "TOKEN",
                                                   "PASS", "CREDENTIAL", "DSN"};
  std::string upper = Upper(name);
  for (auto pattern : kPatterns) {
    if (upper.find(pattern) != std::string::npos) return true;
  }
  // AUTH, but not the AUTHOR of GIT_AUTHOR_NAME or XAUTHORITY (AUTHORIZATION is a secret).
  for (size_t at = upper.find("AUTH"); at != std::string::npos; at = upper.find("AUTH", at + 1)) {
    std::string_view rest(upper.c_str() + at + 4);
    if (rest.substr(0, 2) != "OR" || rest.substr(0, 4) == "ORIZ") return true;
  }
  auto ends_with = [&upper](std::string_view suffix) {
    return upper.size() >= suffix.size() &&
           upper.compare(upper.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return upper == "PAT" || ends_with("_PAT") || ends_with("_PWD");
}

bool ValueHoldsUrlPassword(const std::string& value) {
  // Every "scheme://" in the value (a list of URLs, or one inside other text): a password is a
  // ':' followed by something in the userinfo, i.e. before the last '@' of the authority.
  for (size_t at = value.find("://"); at != std::string::npos; at = value.find("://", at + 3)) {
    size_t start = at + 3;
    size_t end = value.find_first_of("/?#\\ \t\n,;", start);
    std::string_view authority(value.c_str() + start,
                               (end == std::string::npos ? value.size() : end) - start);
    size_t userinfo_end = authority.rfind('@');
    if (userinfo_end == std::string_view::npos) continue;
    size_t colon = authority.substr(0, userinfo_end).find(':');
    if (colon != std::string_view::npos && colon + 1 < userinfo_end) return true;
  }
  return false;
}

std::vector<std::string> FilterEnvironment(const std::vector<std::string>& caller,
                                           const EnvPolicy& policy) {
  std::vector<std::string> out;
  for (const auto& entry : caller) {
    std::string name = NameOf(entry);
    if (name.empty()) continue;
    bool kept = Contains(policy.keep, name);
    if (policy.clear && !kept) continue;
    if (!kept && (IsDangerousEnvName(name) || LooksLikeSecretEnvName(name) ||
                  ValueHoldsUrlPassword(entry.substr(name.size() + 1)))) {
      continue;
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
