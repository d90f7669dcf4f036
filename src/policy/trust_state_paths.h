// Anvil's own trust state (the grant store, trusted signing keys, command rules, config, audit
// logs: linux/trust_shield.h AnvilTrustDirs) is never a plugin's to write. A workspace of $HOME
// (or above it, or one holding $XDG_STATE_HOME) holds it, and a plugin granted fs.write over
// "**" there would otherwise rewrite grants.json — a grant for itself or any other plugin, for
// any code, with no consent asked — or add a trusted key. The command sandbox keeps the same
// directories read-only (linux/trust_shield.h); the gateway refuses fs.write, fs.mkdir,
// fs.remove and fs.rename at or beneath one, and a move or removal of a tree that holds one
// (src/gateway/dispatch.cc). No grant opens it.
//
// Pure: the gateway finds where the directories lie (WhereTrustDirLies) before it hardens.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace anvil {

// The trust directories `dirs` (absolute: each as named and as resolved) that lie at or beneath
// canonical `workspace`, as normalized workspace paths; "." when the workspace lies inside one.
std::vector<std::string> TrustStateInWorkspace(std::string_view workspace,
                                               const std::vector<std::string>& dirs);

// "ok", or why op `op` may not change normalized workspace path `path` ("denied"): it is, or
// lies beneath, one of `trust_paths` (TrustStateInWorkspace); with `or_above` (a move or a
// removal, which takes what is beneath along) also when one lies beneath it. Names are
// compared as a case-folding file system compares them (fs/protected_names.h
// FoldNameForLookup, through policy/protected_subtrees.h): over-matching only refuses more.
Status CheckTrustStateWrite(const std::vector<std::string>& trust_paths, std::string_view op,
                            std::string_view path, bool or_above);

}  // namespace anvil
