// What the user granted one plugin in one workspace (keyed elsewhere by plugin id and manifest
// hash). The gateway enforces exactly this; a manifest only *requests* it.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "common/result.h"

namespace anvil {

struct Grant {
  std::vector<std::string> fs_read;  // globs relative to the workspace root
  std::vector<std::string> fs_write;
  std::vector<std::string> net_hosts;  // exact hosts
  bool net_post = false;
  std::vector<std::string> exec;  // names from the executable policy table

  bool operator==(const Grant&) const = default;
};

// {"fs.read": [...], "fs.write": [...], "net.hosts": [...], "net.post": bool, "exec": [...]}
nlohmann::json GrantToJson(const Grant& grant);
Result<Grant> GrantFromJson(const nlohmann::json& json);

}  // namespace anvil
