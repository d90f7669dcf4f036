#include "policy/git_run_paths.h"

#include <algorithm>
#include <map>

#include "fs/path_glob.h"
#include "fs/protected_names.h"
#include "fs/workspace_path.h"

namespace anvil {
namespace {

// `path` relative to `root` when it is `root` or lies beneath it ("" for `root` itself).
std::optional<std::string> RelativeTo(const std::string& root, const std::string& path) {
  if (path == root) return std::string();
  const std::string prefix = root == "/" ? root : root + "/";
  if (path.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  return path.substr(prefix.size());
}

// Each component folded for lookup, joined by '/'.
std::string Folded(std::string_view path) {
  std::string out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    if (!out.empty()) out.push_back('/');
    out += FoldNameForLookup(path.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

// `inner` is `outer` or lies beneath it (both folded).
bool AtOrBeneath(std::string_view inner, std::string_view outer) {
  if (inner.size() < outer.size() || inner.compare(0, outer.size(), outer) != 0) return false;
  return inner.size() == outer.size() || inner[outer.size()] == '/';
}

}  // namespace

std::vector<GitRunPath> GitRunPathsIn(
    const std::string& workspace, const GitScan& scan, const GitProtectionPlan& plan,
    const std::function<std::optional<std::string>(const std::string&)>& resolve) {
  std::map<std::string, std::string> found;
  auto add = [&](const std::string& absolute, const std::string& reason) {
    auto rel = RelativeTo(workspace, absolute);
    // A path through a protected name (.git, ...) is the protected-name rule's, which refuses
    // it (and a tree holding it) already, with its own words. The workspace itself as a named
    // path (core.hooksPath = .) is refused whole: ".".
    if (rel && !IsProtectedPath(*rel)) found.emplace(rel->empty() ? "." : *rel, reason);
  };
  for (const auto& n : plan.named) {
    add(n.path, n.reason);
    if (auto r = resolve(n.path); r && *r != n.path) add(*r, n.reason);
  }
  // Config files git reads because another includes them.
  auto add_include = [&](const GitConfigFile& f) {
    if (f.included_from.empty()) return;
    const std::string reason =
        "included from " + f.included_from + ":" + std::to_string(f.include_line);
    add(f.path, reason);
    if (auto r = resolve(f.path); r && *r != f.path) add(*r, reason);
  };
  for (const auto& repo : scan.repos) {
    for (const auto& f : repo.configs) add_include(f);
  }
  for (const auto& f : scan.user_configs) add_include(f);
  std::vector<GitRunPath> out;
  out.reserve(found.size());
  for (auto& [path, reason] : found) out.push_back({path, reason});
  return out;
}

std::optional<GitRunPath> GitRunPathAt(const std::vector<GitRunPath>& run_paths,
                                       std::string_view path, bool or_above) {
  const std::string folded = Folded(path);
  for (const GitRunPath& run : run_paths) {
    if (run.path == ".") return run;
    const std::string run_folded = Folded(run.path);
    if (AtOrBeneath(folded, run_folded)) return run;
    if (or_above && (path == "." || AtOrBeneath(run_folded, folded))) return run;
  }
  return std::nullopt;
}

Status GitRunWriteAllowed(const std::vector<GitRunPath>& run_paths, std::string_view op,
                          std::string_view path, bool or_above,
                          const std::vector<std::string>& write_globs) {
  auto hit = GitRunPathAt(run_paths, path, or_above);
  if (!hit) return Ok();
  // `path` holds the run path (a move or removal would take it along): never, whatever the grant.
  const bool holds = path == "." || (hit->path.size() > path.size() &&
                                     hit->path.compare(0, path.size(), path) == 0 &&
                                     hit->path[path.size()] == '/');
  if (!holds) {
    for (const std::string& glob : write_globs) {
      if (IsLiteralGlob(glob) && glob == path) return Ok();
    }
  }
  const std::string what = hit->path == path ? "is" : holds ? "holds" : "lies beneath";
  return Fail(
      "denied",
      std::string(op) + ": " + QuotePathForMessage(path) + " " + what +
          " a path git runs or follows: " + QuotePathForMessage(hit->path) + " (" + hit->reason +
          ")" + (holds ? std::string() : "; written only under a grant that names the exact path"));
}

}  // namespace anvil
