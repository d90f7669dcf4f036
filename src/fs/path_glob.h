// Grant globs (`fs.read` / `fs.write` in a plugin manifest) and the grant decision, which
// refuses a wildcard write to a protected name (fs/protected_names.h, included here). Pure
// functions over normalized workspace paths (see workspace_path.h); nothing here touches the
// filesystem, so a grant decision is unit-testable and identical everywhere it is made.
//
// Glob syntax, relative to the workspace root, '/'-separated:
//   "**"        a whole segment: zero or more path components (so "src/**" matches "src" too,
//               and "**" matches the root ".")
//   "*"         any run of characters within one component (never crosses '/'; may be empty)
//   "?"         exactly one character (one Unicode code point, not one byte)
//   anything else is literal and case-sensitive, as Linux names are. There are no character
//   classes and no escapes. Wildcards match names starting with '.' too.
// A glob that is not valid (absolute, empty/"."/".." segments, "**" inside a segment, bad UTF-8,
// control characters, too long) matches nothing: a malformed grant fails closed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "fs/protected_names.h"

namespace anvil {

enum class Access { kRead, kWrite };

// "ok" or an "invalid" error naming what is wrong with the glob. Run when a manifest is parsed,
// so a user never approves a grant that silently matches nothing.
Status ValidateGlob(std::string_view glob);

// True when the glob is valid and contains no wildcard ('*' or '?'): it names one path exactly.
bool IsLiteralGlob(std::string_view glob);

// True when a valid `glob` matches the normalized path. Invalid globs and invalid paths never
// match.
bool GlobMatches(std::string_view glob, std::string_view normalized_path);

// For a view that must hold exactly what a read grant allows (sys.exec, fs/read_plan.h):
// whether some valid glob matches the normalized directory `dir` or a path beneath it (so a walk
// must look inside it), and whether every path strictly beneath `dir` is matched (so the whole
// directory may be shown as it is). "src/**" reaches "." and "src" and covers "src"; "*.md"
// reaches "." only and covers nothing; "**" covers ".". Covering is decided per glob and is
// conservative: false never widens what is shown.
bool GrantReaches(const std::vector<std::string>& globs, std::string_view normalized_dir);
bool GrantCoversSubtree(const std::vector<std::string>& globs, std::string_view normalized_dir);

// The grant decision. Read: some glob matches. Write: some glob matches and, when the path is
// protected, that glob is literal and equal to the path — a wildcard ("**", "*.toml",
// ".git/hooks/*") never grants a write to a protected path; only a grant that names it exactly
// does, so the user saw that exact path when approving.
bool GrantAllows(const std::vector<std::string>& globs, std::string_view normalized_path,
                 Access access);

}  // namespace anvil
