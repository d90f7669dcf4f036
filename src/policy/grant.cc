#include "policy/grant.h"

#include <nlohmann/json.hpp>

namespace anvil {
namespace {

Status ReadStrings(const nlohmann::json& json, const char* key, std::vector<std::string>& out) {
  if (!json.contains(key)) return Ok();
  const auto& v = json.at(key);
  if (!v.is_array()) return Fail("invalid", std::string("grant: ") + key + " must be a list");
  for (const auto& item : v) {
    if (!item.is_string())
      return Fail("invalid", std::string("grant: ") + key + " holds a non-string");
    out.push_back(item.get<std::string>());
  }
  return Ok();
}

}  // namespace

nlohmann::json GrantToJson(const Grant& grant) {
  return {{"fs.read", grant.fs_read},
          {"fs.write", grant.fs_write},
          {"net.hosts", grant.net_hosts},
          {"net.post", grant.net_post},
          {"exec", grant.exec}};
}

Result<Grant> GrantFromJson(const nlohmann::json& json) {
  if (!json.is_object()) return Fail("invalid", "grant must be an object");
  for (auto it = json.begin(); it != json.end(); ++it) {
    const std::string& k = it.key();
    if (k != "fs.read" && k != "fs.write" && k != "net.hosts" && k != "net.post" && k != "exec") {
      return Fail("invalid", "grant: unknown key " + k);
    }
  }
  Grant g;
  for (auto [key, field] : {std::pair{"fs.read", &g.fs_read}, std::pair{"fs.write", &g.fs_write},
                            std::pair{"net.hosts", &g.net_hosts}, std::pair{"exec", &g.exec}}) {
    ANVIL_RETURN_IF_ERROR(ReadStrings(json, key, *field));
  }
  if (json.contains("net.post")) {
    if (!json.at("net.post").is_boolean())
      return Fail("invalid", "grant: net.post must be a boolean");
    g.net_post = json.at("net.post").get<bool>();
  }
  return g;
}

}  // namespace anvil
