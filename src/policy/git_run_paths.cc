#include "policy/git_run_paths.h"

#include <algorithm>
#include <map>

#include "fs/path_glob.h"
#include "fs/protected_names.h"
#include "fs/workspace_path.h"
#include "policy/git_paths.h"
#include "policy/protected_subtrees.h"

namespace anvil {
namespace {

// `path` relative to `root` when it is `root` or lies beneath it ("" for `root` itself).
std::optional<std::string> RelativeTo(const std::string& root, const std::string& path) {
  if (path == root) return std::string();
  const std::string prefix = root == "/" ? root : root + "/";
  if (path.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  return path.substr(prefix.size());
}

// Where git opens absolute `path`, existing or not: the kernel walks it component by component,
// following each symlink and taking ".." from where that led, so the deepest existing prefix is
// taken at its resolved name and the missing rest appended ("/w/.git/../local.gitconfig" is
// "/w/local.gitconfig"; through "tools -> real", "/w/tools/new/x" is "/w/real/new/x"). A write
// op names a path that way too: normalized, never through a symlink.
std::string WhereGitOpens(
    const std::string& path,
    const std::function<std::optional<std::string>(const std::string&)>& resolve) {
  if (auto r = resolve(path)) return *r;
  std::vector<std::string> parts;
  for (size_t start = 0; start <= path.size();) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    parts.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  std::string at = "/";
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      at = git_paths::Dirname(at);  // `at` is resolved: its parent is the physical one
      continue;
    }
    const std::string next = git_paths::Join(at, part);
    auto r = resolve(next);
    if (!r) {
      // Missing from here on: made by these names (a ".." below a missing directory fails in
      // the kernel; taken lexically, it names no more than the lexical form does).
      std::string rest = next;
      for (size_t k = i + 1; k < parts.size(); ++k) rest = git_paths::Join(rest, parts[k]);
      return git_paths::LexicalNormal(rest);
    }
    at = *r;
  }
  return at;
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
  // Each path both as its name says (lexically normalized: what a write op names) and where git
  // opens it; never as spelled ("./.hooks", ".git/../x" match no normalized workspace path).
  auto add_both = [&](const std::string& path, const std::string& reason) {
    const std::string lexical = git_paths::LexicalNormal(path);
    add(lexical, reason);
    if (std::string opened = WhereGitOpens(path, resolve); opened != lexical) add(opened, reason);
  };
  for (const auto& n : plan.named) add_both(n.path, n.reason);
  // Config files git reads because another includes them.
  auto add_include = [&](const GitConfigFile& f) {
    if (f.included_from.empty()) return;
    const std::string reason =
        "included from " + f.included_from + ":" + std::to_string(f.include_line);
    add_both(f.path, reason);
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

namespace {

ProtectedSubtrees RunSubtrees(const std::vector<GitRunPath>& run_paths) {
  std::vector<ProtectedRoot> roots;
  roots.reserve(run_paths.size());
  for (const GitRunPath& run : run_paths) {
    roots.push_back({ProtectedKind::kGitRun, run.path, run.reason});
  }
  return ProtectedSubtrees(std::move(roots));
}

}  // namespace

std::optional<GitRunPath> GitRunPathAt(const std::vector<GitRunPath>& run_paths,
                                       std::string_view path, bool or_above) {
  const ProtectedSubtrees run = RunSubtrees(run_paths);
  auto hit = run.Match(path, or_above);
  if (!hit) return std::nullopt;
  return GitRunPath{hit->root->path, hit->root->detail};
}

Status GitRunWriteAllowed(const std::vector<GitRunPath>& run_paths, std::string_view op,
                          std::string_view path, bool or_above,
                          const std::vector<std::string>& write_globs) {
  const ProtectedSubtrees run = RunSubtrees(run_paths);
  auto hit = run.Match(path, or_above);
  if (!hit) return Ok();
  // `path` holds the run path (a move or removal would take it along): never, whatever the grant.
  if (!GitRunPathHeldBy(hit->root->path, path)) {
    for (const std::string& glob : write_globs) {
      if (IsLiteralGlob(glob) && glob == path) return Ok();
    }
  }
  return tl::unexpected(ProtectedWriteRefusal(*hit, op, path));
}

}  // namespace anvil
