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
  static constexpr std::string_view kExact[] = {"GCONV_PATH", "GETCONF_DIR", "HOSTALIASES",
                                                "LOCALDOMAIN", "LOCPATH", "MALLOC_TRACE",
                                                "NIS_PATH", "NLSPATH", "RESOLV_HOST_CONF",
                                                "RES_OPTIONS", "GLIBC_TUNABLES"};
  if (name.rfind("LD_", 0) == 0) return true;
  return std::find(std::begin(kExact), std::end(kExact), name) != std::end(kExact);
}

bool LooksLikeSecretEnvName(const std::string& name) {
  static constexpr std::string_view kPatterns[] = {"KEY", "SECRET", "TOKEN", "PASSWORD",
                                                   "CREDENTIAL", "PASSWD"};
  std::string upper = Upper(name);
  for (auto pattern : kPatterns) {
    if (upper.find(pattern) != std::string::npos) return true;
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
    if (!kept && (IsDangerousEnvName(name) || LooksLikeSecretEnvName(name))) continue;
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
  return {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "HOME=/nonexistent",
          "TERM=dumb"};
}

}  // namespace anvil
