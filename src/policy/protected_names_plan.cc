#include "policy/protected_names_plan.h"

#include <algorithm>
#include <set>

#include "fs/protected_names.h"
#include "policy/sandbox_policy.h"

namespace anvil {
namespace {

std::string Dirname(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// `path` or a directory above it is in `set`.
bool UnderAny(const std::string& path, const std::set<std::string>& set) {
  for (std::string p = path;; p = Dirname(p)) {
    if (set.count(p)) return true;
    if (p == "/" || p == ".") return false;
  }
}

}  // namespace

std::vector<NamePlaceholder> MissingNamePlaceholders(const std::vector<std::string>& roots,
                                                     const std::string& workspace,
                                                     bool writable_git) {
  std::vector<NamePlaceholder> out;
  for (const ProtectedName& p : kProtectedNames) {
    switch (p.kind) {
      case ProtectedNameKind::kGitMetadata:
        if (writable_git) break;
        for (const auto& root : roots) out.push_back({root, std::string(p.name), true});
        break;
      case ProtectedNameKind::kWorkspaceConfig:
        if (std::find(roots.begin(), roots.end(), workspace) != roots.end()) {
          out.push_back({workspace, std::string(p.name), true});
        }
        break;
      case ProtectedNameKind::kAnvilState:
      case ProtectedNameKind::kPluginLock:
        break;
    }
  }
  return out;
}

ProtectedNamesPlan PlanProtectedNames(const std::vector<std::string>& found,
                                      const std::vector<std::string>& roots,
                                      const std::vector<std::string>& elsewhere,
                                      std::size_t mounts_before, std::size_t max_paths) {
  ProtectedNamesPlan plan;
  const std::set<std::string> root_set(roots.begin(), roots.end());
  // The deepest root that holds `p` strictly: the one whose view shows it, a mount point of its
  // own. None for a root itself or a path outside every root.
  auto root_of = [&](const std::string& p) -> const std::string* {
    const std::string* root = nullptr;
    if (p.empty() || p[0] != '/' || root_set.count(p)) return root;
    for (const auto& r : roots) {
      if (PathIsWithin(p, r) && (root == nullptr || r.size() > root->size())) root = &r;
    }
    return root;
  };
  std::vector<std::string> paths;
  for (const auto& p : found) {
    if (root_of(p) != nullptr) paths.push_back(p);
  }
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  const std::set<std::string> kept_elsewhere(elsewhere.begin(), elsewhere.end());
  const std::set<std::string> all(paths.begin(), paths.end());
  for (const auto& p : paths) {
    const std::string* root = root_of(p);
    // Inside another read-only path: kept read-only by it, and nothing in it can be moved.
    if (UnderAny(p, kept_elsewhere) || UnderAny(Dirname(p), all)) continue;
    plan.read_only.push_back(p);
    for (size_t slash = p.find('/', *root == "/" ? 1 : root->size() + 1);
         slash != std::string::npos; slash = p.find('/', slash + 1)) {
      std::string dir = p.substr(0, slash);
      if (root_set.count(dir)) continue;
      if (std::find(plan.pinned.begin(), plan.pinned.end(), dir) == plan.pinned.end()) {
        plan.pinned.push_back(std::move(dir));
      }
    }
  }
  const std::size_t total = mounts_before + plan.read_only.size() + plan.pinned.size();
  if (total > max_paths) {
    plan.problems.push_back(Error{
        "limit", "protected names: " + std::to_string(total) +
                     " paths to keep read-only or pin (one mount each, the git metadata's "
                     "included; the 'paths' bound is " +
                     std::to_string(max_paths) + "; reached at " +
                     (roots.empty() ? std::string() : roots.front()) +
                     "). The sandbox did not start: an anvil.lock, Anvil.toml or .anvil past the "
                     "bound could not be kept read-only. fix: raise it with --git-scan-limit "
                     "paths=N, or pass --writable-git to run without the walk (then only those at "
                     "the top of each writable root are kept)"});
  }
  return plan;
}

}  // namespace anvil
