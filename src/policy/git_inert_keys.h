// The git config keys a repository the command made (or changed) may carry and still be left
// alone after the run (policy/git_metadata.h, step 3): an allowlist, not a list of what runs.
//
// git runs code from far more keys than any list of them can hold (an alias that is not `!cmd`
// can still carry `-c core.fsmonitor=...`, `tar.<fmt>.command`, a remote URL with the `ext::`
// transport, drivers, helpers, editors, pagers, ...), and a repository's config overrides the
// user's own. So a repository made during the run is judged by what it may hold: the keys that
// `git init`, `git clone`, `git remote add`, `git config user.*`, `git branch
// --set-upstream-to`, `git submodule add`, `git worktree add` and `git commit` write, whose values
// are data. Any other key makes it one that may run code: moved aside, as a hook would.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "policy/git_config.h"

namespace anvil {

// Why the value of a key that names a repository (a remote URL or path: remote.*.url,
// remote.*.pushurl, submodule.*.url, branch.*.remote, branch.*.pushremote) is not inert: a local
// path into a place the command writes that no check walks (policy/git_territory.h); nullopt
// when it is not.
using GitLocalRefJudge = std::function<std::optional<std::string>(std::string_view value)>;

// nullopt when `entry` is inert; else why not ("not a key git init or clone writes", "a URL
// with the ext:: transport runs a command", what `local_ref` says of a repository path).
// `worktree_is_top`: core.worktree names the directory whose .git leads to this git dir (what
// `git submodule add` writes), nothing else.
std::optional<std::string> GitKeyNotInert(const GitConfigEntry& entry, bool worktree_is_top,
                                          const GitLocalRefJudge& local_ref = {});

}  // namespace anvil
