// The paths of a workspace that git runs or follows because a repository's config (or the
// user's) names them: the hooks directory of core.hooksPath, the programs of core.fsmonitor,
// diff.*.textconv, filter.*.process, ..., include targets, and the git dirs a `.git` file points
// at — the same list the command sandbox keeps read-only (policy/git_metadata.h,
// PlanGitProtection), seen from a plugin's fs ops: the gateway refuses to write, make, move or
// remove any of them, or anything beneath them, unless a grant names that exact path
// (linux/git_run_guard.h; anvil serve checks an editor buffer edit
// against it too). Without it a plugin with fs.write = ["**"] rewrites
// .githooks/pre-commit and the user's next `git commit` runs it on the host.
//
// Pure: the scan and plan come from the caller.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "policy/git_metadata.h"

namespace anvil {

struct GitRunPath {
  std::string path;    // normalized, workspace-relative ("." never: the workspace itself)
  std::string reason;  // "core.hooksPath in /w/.git/config:3", "a git dir (read-only)"
};

// What of `plan` (a plan of `workspace` as its one writable root) lies in the workspace, as
// workspace-relative paths: every config-named path and every config file `scan` found included
// by another, each once, sorted, both as its name says (lexically normalized) and where git
// opens it (the deepest existing prefix where `resolve`, the scan's GitFs::resolve, says it
// leads, the missing rest by name): a missing include "../local.gitconfig" of .git/config is
// "local.gitconfig", a missing hooks dir "./.hooks" is ".hooks". `workspace` is the canonical
// absolute path the scan walked. Paths through a protected name (fs/protected_names.h: .git,
// ...) are left out, as are the git dirs the plan keeps read-only: the protected-name rule and
// the git-dir guard (fs/git_dir_guard.h) refuse those already, each in its own words.
std::vector<GitRunPath> GitRunPathsIn(
    const std::string& workspace, const GitScan& scan, const GitProtectionPlan& plan,
    const std::function<std::optional<std::string>(const std::string&)>& resolve);

// The run path that normalized workspace path `path` is, or lies beneath; with `or_above`
// (moving or removing `path` takes what is beneath it along) also one that lies beneath
// `path`. Components are compared as the protected names are (fs/protected_names.h,
// FoldNameForLookup, through policy/protected_subtrees.h): a case-folding file system opens
// ".GitHooks" for ".githooks".
std::optional<GitRunPath> GitRunPathAt(const std::vector<GitRunPath>& run_paths,
                                       std::string_view path, bool or_above);

// The one rule of both walls (the gateway's fs write ops, `anvil serve`'s editor.buffer.edit):
// "ok", or why op `op` may not change normalized workspace path `path` ("denied"): it is, or
// lies beneath, a path of `run_paths`, and no glob of `write_globs` names it exactly; with
// `or_above` also when such a path lies beneath it, which no grant opens (a move or removal
// would take it along).
Status GitRunWriteAllowed(const std::vector<GitRunPath>& run_paths, std::string_view op,
                          std::string_view path, bool or_above,
                          const std::vector<std::string>& write_globs);

}  // namespace anvil
