// git's conditional includes of the user's global configuration (`[includeIf "COND"] path =
// FILE`), kept in the sandbox's copy of it (pure; the implementations are in
// policy/sandbox_home.cc, cli/sandbox_setup.cc reads the files and writes the sandbox home's).
//
// Each kept FILE's entries are sanitized as the main file's (GitConfigEntryAllowed; its own
// unconditional and conditional includes followed the same way) into a file of the sandbox home,
// kGitConfigIncludePrefix and a number, which the copy includes under the same condition: git
// evaluates the condition itself, so a work repository's commits carry the work identity inside
// as outside. The condition only chooses whether entries apply that the copy could hold
// unconditionally, so none can add a program; a condition of another kind, or one past
// kMaxGitConditionalIncludes, is dropped (git drops one it does not know).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/git_config.h"

namespace anvil {

inline constexpr std::string_view kGitConfigIncludePrefix = ".gitconfig-include-";
inline constexpr size_t kMaxGitConditionalIncludes = 16;

// The condition as the copy writes it, or nullopt (dropped). Kept: `gitdir:` and `gitdir/i:` (a
// pattern relative to the including file, `./...`, made absolute against `including_dir`, the
// directory that file lies in, since the copy lies elsewhere; `~/` is git's to expand, against
// the same $HOME inside), `onbranch:` and `hasconfig:remote.*.url:`. Never an empty pattern, nor
// one holding a control character.
std::optional<std::string> GitIncludeConditionKept(std::string_view condition,
                                                   std::string_view including_dir);

// One kept conditional include of a rendered copy.
struct GitConditionalInclude {
  size_t before = 0;      // written before entries[before]; entries.size() or more: at the end
  std::string condition;  // GitIncludeConditionKept's answer
  std::string file;       // kGitConfigIncludePrefix and a number: beside the copy
};

// RenderSanitizedGitConfig (policy/sandbox_home.h) with `includes` (in order of `before`) where
// they stood, each `[includeIf "COND"] path = FILE`; one whose condition GitIncludeConditionKept
// would not write, or whose file is not such a name, is left out.
std::string RenderGitConfigCopy(const std::vector<GitConfigEntry>& entries,
                                const std::vector<GitConditionalInclude>& includes);

}  // namespace anvil
