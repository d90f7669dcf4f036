#include "policy/trust_state_paths.h"

#include "fs/protected_names.h"
#include "fs/workspace_path.h"
#include "policy/sandbox_policy.h"

namespace anvil {
namespace {

// `path` ("." or "a/b") folded component by component, "/"-joined; "" for ".".
std::string Folded(std::string_view path) {
  if (path == "." || path.empty()) return "";
  std::string out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    if (!out.empty()) out += '/';
    out += FoldNameForLookup(path.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

// `inner` equals `outer` or lies beneath it (both Folded; "" is the workspace).
bool Within(const std::string& inner, const std::string& outer) {
  if (outer.empty()) return true;
  return inner == outer ||
         (inner.size() > outer.size() && inner.starts_with(outer) && inner[outer.size()] == '/');
}

}  // namespace

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
  const std::string p = Folded(path);
  for (const auto& trust : trust_paths) {
    const std::string t = Folded(trust);
    if (!Within(p, t) && !(or_above && Within(t, p))) continue;
    const std::string where =
        trust == "." ? std::string("the workspace itself") : QuotePathForMessage(trust);
    return Fail("denied", std::string(op) + ": " + QuotePathForMessage(path) +
                              (Within(p, t) ? " lies in " : " holds ") +
                              "Anvil's own trust state (" + where +
                              ": the grant store, trusted keys, command rules, config): a plugin "
                              "never writes, makes, moves or removes it, whatever its grant, "
                              "since it decides what every plugin may do (fix: change it with "
                              "`anvil` outside the plugin, e.g. `anvil plugin approve`)");
  }
  return Ok();
}

}  // namespace anvil
