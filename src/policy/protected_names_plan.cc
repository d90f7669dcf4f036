#include "policy/protected_names_plan.h"

#include <algorithm>
#include <set>

#include "fs/protected_names.h"
#include "policy/display_text.h"
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
                                                     bool writable_git) {
  std::vector<NamePlaceholder> out;
  if (writable_git) return out;
  for (const ProtectedName& p : kProtectedNames) {
    if (p.kind != ProtectedNameKind::kGitMetadata) continue;
    for (const auto& root : roots) out.push_back({root, std::string(p.name), true});
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

bool WatchesWorkspaceConfig(const std::vector<std::string>& roots, const std::string& workspace) {
  if (workspace.empty() || workspace[0] != '/') return false;
  return std::any_of(roots.begin(), roots.end(),
                     [&](const std::string& root) { return PathIsWithin(workspace, root); });
}

std::optional<std::string> WorkspaceConfigChange(const ConfigEntry& before,
                                                 const ConfigEntry& after, bool strict) {
  if (after.kind == ConfigEntryKind::kMissing) return std::nullopt;
  if (before.kind == ConfigEntryKind::kMissing) {
    return "it did not exist when the sandboxed command started";
  }
  if (after.kind != before.kind || !after.SameObject(before)) {
    return "it is not the one that was there when the sandboxed command started (replaced)";
  }
  if (strict && !after.SameCtime(before)) {
    return "it was changed (written, moved or its mode set) while the sandboxed command ran";
  }
  return std::nullopt;
}

bool ConfigWatchIsStrict(const ConfigEntry& probe, const ConfigEntry& before,
                         bool other_lock_seen) {
  if (before.kind == ConfigEntryKind::kMissing) return false;
  return other_lock_seen || probe.kind != before.kind || !probe.SameObject(before);
}

int64_t ConfigWatchLockOffset(const ConfigEntry& before, bool strict) {
  if (strict || before.kind == ConfigEntryKind::kMissing) return kConfigWatchAnyChangeOffset;
  constexpr uint64_t kMask = (uint64_t{1} << 62) - 1;
  return static_cast<int64_t>(before.ino & kMask) + 1;
}

std::string ConfigQuarantineName(std::string_view name, int attempt) {
  std::string out = std::string(name) + std::string(kConfigQuarantineSuffix);
  if (attempt > 1) out += "-" + std::to_string(attempt);
  return out;
}

std::vector<ProtectedNameMove> NewProtectedNames(const std::vector<std::string>& before,
                                                 const std::vector<std::string>& after,
                                                 const std::vector<std::string>& roots,
                                                 const std::vector<std::string>& skip) {
  const std::set<std::string> was(before.begin(), before.end());
  const std::set<std::string> skipped(skip.begin(), skip.end());
  // Sorted: a directory comes before what is inside it.
  const std::set<std::string> now(after.begin(), after.end());
  std::vector<ProtectedNameMove> moves;
  for (const std::string& path : now) {
    if (was.count(path) > 0 || skipped.count(path) > 0) continue;
    const auto slash = path.rfind('/');
    if (slash == std::string::npos) continue;
    const auto kind = ProtectedKindOfPath(path);
    if (!kind || *kind == ProtectedNameKind::kGitMetadata) continue;
    if (std::any_of(moves.begin(), moves.end(),
                    [&](const ProtectedNameMove& m) { return PathIsWithin(path, m.path); })) {
      continue;
    }
    std::string root;
    for (const std::string& r : roots) {
      if (path != r && PathIsWithin(path, r) && r.size() > root.size()) root = r;
    }
    if (root.empty()) continue;
    moves.push_back({path, root, *kind});
  }
  return moves;
}

std::vector<ProtectedNameMove> ProtectedNamesAfterRenames(
    std::vector<ProtectedNameMove> moves,
    const std::vector<std::pair<std::string, std::string>>& renamed) {
  std::vector<ProtectedNameMove> out;
  for (ProtectedNameMove& m : moves) {
    bool aside = false;
    for (const auto& [from, to] : renamed) {
      if (m.path == from) aside = true;
      if (aside) break;
      if (PathIsWithin(m.path, from)) m.path = to + m.path.substr(from.size());
    }
    if (!aside) out.push_back(std::move(m));
  }
  return out;
}

std::string ConfigQuarantineRestore(const ConfigQuarantine& q) {
  if (q.moved_to.empty()) return {};
  return "mv -n " + PasteableShellWord(q.moved_to) + " " + PasteableShellWord(q.path);
}

namespace {

// What the name is, and what it does: for the line.
struct NameWhat {
  const char* name;
  const char* does;
};

NameWhat WhatItIs(ProtectedNameKind kind) {
  switch (kind) {
    case ProtectedNameKind::kAgentConfig:
      return {"an AI agent's project configuration",
              "tells the agent what to run on the host: hooks, MCP servers, permissions"};
    case ProtectedNameKind::kVcsMetadata:
      return {"a version control repository's metadata",
              "holds the config hg, jj, sl, darcs and pijul read on the host: hooks, extensions, "
              "pagers"};
    case ProtectedNameKind::kEditorAutorun:
      return {"VS Code's folder-open tasks or MCP servers",
              "tells VS Code what to run on the host: tasks when the folder opens, MCP servers"};
    case ProtectedNameKind::kPluginLock:
      return {"anvil.lock", "pins each plugin's manifest and code"};
    case ProtectedNameKind::kAnvilState:
      return {".anvil", "holds Anvil's state for the workspace, its command rules"};
    default:
      return {"Anvil.toml", "enables plugins and hands them settings"};
  }
}

}  // namespace

std::string ConfigQuarantineMessage(const ConfigQuarantine& q) {
  const NameWhat what = WhatItIs(q.kind);
  // The names are the command's: shown sanitized (policy/display_text.h); the restore command
  // is made to show as it is.
  auto shown = [](const std::string& s) { return SanitizeForDisplay(s, kNoDisplayCap); };
  if (q.moved_to.empty()) {
    return "WARNING: " + shown(q.path) + " could not be moved aside (" + shown(q.failure) + "); " +
           shown(q.reason) + ", and " + what.name + " " + what.does +
           ": check it (remove it if you did not write it) before Anvil runs in this workspace";
  }
  return "moved " + shown(q.path) + " aside to " + shown(q.moved_to) + ": " + shown(q.reason) +
         ", and a sandboxed command may not make or change " + what.name + " (it " + what.does +
         "); Anvil does not read it there. Review it, and if it is yours, put it back: " +
         ConfigQuarantineRestore(q);
}

}  // namespace anvil
