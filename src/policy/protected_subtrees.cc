#include "policy/protected_subtrees.h"

#include <utility>

#include "fs/protected_names.h"
#include "fs/workspace_path.h"

namespace anvil {
namespace {

// `inner` equals `outer` or lies beneath it (both folded; "" is the workspace).
bool Within(const std::string& inner, const std::string& outer) {
  if (outer.empty()) return true;
  return inner == outer ||
         (inner.size() > outer.size() && inner.starts_with(outer) && inner[outer.size()] == '/');
}

std::string Where(std::string_view root) {
  return root == "." ? std::string("the workspace itself") : QuotePathForMessage(root);
}

Error GitRunRefusal(const ProtectedRoot& root, std::string_view op, std::string_view path) {
  const bool holds = GitRunPathHeldBy(root.path, path);
  const std::string what = root.path == path ? "is" : holds ? "holds" : "lies beneath";
  return Error{
      "denied",
      std::string(op) + ": " + QuotePathForMessage(path) + " " + what +
          " a path git runs or follows: " + QuotePathForMessage(root.path) + " (" + root.detail +
          ")" + (holds ? std::string() : "; written only under a grant that names the exact path"),
      0};
}

Error TrustStateRefusal(const ProtectedRoot& root, ProtectedReach reach, std::string_view op,
                        std::string_view path) {
  return Error{"denied",
               std::string(op) + ": " + QuotePathForMessage(path) +
                   (reach == ProtectedReach::kHolds ? " holds " : " lies in ") +
                   "Anvil's own trust state (" + Where(root.path) +
                   ": the grant store, trusted keys, command rules, config): a plugin "
                   "never writes, makes, moves or removes it, whatever its grant, "
                   "since it decides what every plugin may do (fix: change it with "
                   "`anvil` outside the plugin, e.g. `anvil plugin approve`)",
               0};
}

Error PluginCodeRefusal(const ProtectedRoot& root, std::string_view op, std::string_view path) {
  const std::string where = Where(root.path);
  const std::string whose = root.detail.empty() ? "the plugin in " + where
                                                : "plugin " + root.detail + " (in " + where + ")";
  return Error{"denied",
               std::string(op) + ": " + QuotePathForMessage(path) + " is plugin code of " + whose +
                   ": a plugin never writes, makes, moves or removes a plugin's code, whatever "
                   "its grant, since that plugin would run it with its own grant (fix: edit the "
                   "plugin's files yourself)",
               0};
}

}  // namespace

std::string FoldWorkspacePath(std::string_view path) {
  if (path == "." || path.empty()) return "";
  std::string out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    if (!out.empty()) out += '/';  // a leading name that folds to nothing leaves none
    out += FoldNameForLookup(path.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

ProtectedSubtrees::ProtectedSubtrees(std::vector<ProtectedRoot> roots) : roots_(std::move(roots)) {
  folded_.reserve(roots_.size());
  for (const ProtectedRoot& root : roots_) folded_.push_back(FoldWorkspacePath(root.path));
}

std::optional<ProtectedHit> ProtectedSubtrees::Match(std::string_view path, bool or_above) const {
  const std::string folded = FoldWorkspacePath(path);
  for (size_t i = 0; i < roots_.size(); ++i) {
    if (Within(folded, folded_[i])) {
      return ProtectedHit{&roots_[i],
                          folded == folded_[i] ? ProtectedReach::kAt : ProtectedReach::kBeneath};
    }
    if (or_above && Within(folded_[i], folded)) {
      return ProtectedHit{&roots_[i], ProtectedReach::kHolds};
    }
  }
  return std::nullopt;
}

bool GitRunPathHeldBy(std::string_view root, std::string_view path) {
  return path == "." || (root.size() > path.size() && root.compare(0, path.size(), path) == 0 &&
                         root[path.size()] == '/');
}

Error ProtectedWriteRefusal(const ProtectedHit& hit, std::string_view op, std::string_view path) {
  switch (hit.root->kind) {
    case ProtectedKind::kGitRun:
      return GitRunRefusal(*hit.root, op, path);
    case ProtectedKind::kTrustState:
      return TrustStateRefusal(*hit.root, hit.reach, op, path);
    case ProtectedKind::kPluginCode:
      return PluginCodeRefusal(*hit.root, op, path);
  }
  return Error{"internal", "unknown protected kind", 0};
}

}  // namespace anvil
