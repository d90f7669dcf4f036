#include "policy/trust_state_paths.h"

#include <utility>

#include "policy/protected_subtrees.h"
#include "policy/sandbox_policy.h"

namespace anvil {
std::vector<std::string> TrustStateInWorkspace(std::string_view workspace,
                                               const std::vector<std::string>& dirs) {
  std::vector<std::string> out;
  auto add = [&out](std::string p) {
    for (const auto& o : out) {
      if (o == p) return;
    }
    out.push_back(std::move(p));
  };
  for (const auto& dir : dirs) {
    if (dir.empty() || dir[0] != '/') continue;
    if (PathIsWithin(workspace, dir)) {
      add(".");
    } else if (PathIsWithin(dir, workspace)) {
      add(workspace == "/" ? dir.substr(1) : dir.substr(workspace.size() + 1));
    }
  }
  return out;
}

Status CheckTrustStateWrite(const std::vector<std::string>& trust_paths, std::string_view op,
                            std::string_view path, bool or_above) {
  std::vector<ProtectedRoot> roots;
  roots.reserve(trust_paths.size());
  for (const auto& trust : trust_paths) roots.push_back({ProtectedKind::kTrustState, trust});
  const ProtectedSubtrees trust_state(std::move(roots));
  auto hit = trust_state.Match(path, or_above);
  if (!hit) return Ok();
  return tl::unexpected(ProtectedWriteRefusal(*hit, op, path));
}

}  // namespace anvil
