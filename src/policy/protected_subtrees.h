// The one matcher of the protected subtrees a plugin's write may not touch: what git runs or
// follows (git_run_paths), Anvil's own trust state (trust_state_paths) and plugin code
// (plugin_code_paths). Each is a list of roots (normalized workspace paths, "." the workspace
// itself) with a kind; a write op's path is refused when it is a root, lies beneath one, or —
// for a move or a removal, which takes what is beneath along — holds one. Names are compared as
// a case-folding file system compares them (fs/protected_names.h FoldNameForLookup), each root
// folded once, when the set is made: over-matching only refuses more. The refusal is each kind's
// own words (ProtectedWriteRefusal). Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace anvil {

enum class ProtectedKind {
  kGitRun,      // a path git runs or follows (a hooks dir, a textconv program, an include)
  kTrustState,  // Anvil's trust state (the grant store, trusted keys, command rules, config)
  kPluginCode,  // a directory holding an anvil-plugin.toml
};

struct ProtectedRoot {
  ProtectedKind kind = ProtectedKind::kTrustState;
  std::string path;  // normalized workspace path; "." is the workspace itself
  // kGitRun: why git runs it ("core.hooksPath in /w/.git/config:3"); kPluginCode: the plugin's
  // id, "" when its manifest does not parse; kTrustState: unused.
  std::string detail = {};
};

enum class ProtectedReach {
  kAt,       // the path is the root
  kBeneath,  // the path lies beneath the root
  kHolds,    // the root lies beneath the path (only asked for with or_above)
};

struct ProtectedHit {
  const ProtectedRoot* root = nullptr;  // into the ProtectedSubtrees asked
  ProtectedReach reach = ProtectedReach::kAt;
};

// `path` ("." or "a/b") folded component by component with FoldNameForLookup, "/"-joined; ""
// for "." (and ""), the workspace.
std::string FoldWorkspacePath(std::string_view path);

class ProtectedSubtrees {
 public:
  ProtectedSubtrees() = default;
  explicit ProtectedSubtrees(std::vector<ProtectedRoot> roots);

  // The first root, in order, that normalized workspace path `path` is or lies beneath; with
  // `or_above` also one that lies beneath `path`. A root that is the workspace holds every path.
  std::optional<ProtectedHit> Match(std::string_view path, bool or_above) const;

  const std::vector<ProtectedRoot>& roots() const { return roots_; }

 private:
  std::vector<ProtectedRoot> roots_;
  std::vector<std::string> folded_;  // FoldWorkspacePath of each root, in the same order
};

// The refusal ("denied") of op `op` on `path` for `hit`, in the words of its kind; each names
// what is protected and how to do it instead. kGitRun says "is", "holds" or "lies beneath" by
// the names as written (GitRunWriteAllowed's grant exception uses the same "holds").
Error ProtectedWriteRefusal(const ProtectedHit& hit, std::string_view op, std::string_view path);

// kGitRun: `path` holds the run path `root` by the names as written ("." holds every path).
bool GitRunPathHeldBy(std::string_view root, std::string_view path);

}  // namespace anvil
