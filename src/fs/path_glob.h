// Grant globs (`fs.read` / `fs.write` in a plugin manifest) and the protected-path rule. Pure
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

namespace anvil {

enum class Access { kRead, kWrite };

// Names that a command sandbox keeps read-only inside a writable workspace, plus Anvil's own
// workspace files: rewriting .git/hooks or .git/config gives code execution the next time the
// user runs git; .anvil holds Anvil's per-workspace state; anvil.lock pins plugin hashes (T8);
// Anvil.toml selects plugins. Compared as IsProtectedName does, so ".GIT" on a case-folding
// filesystem (ext4 casefold, vfat, a mounted share) is protected too.
inline constexpr std::string_view kProtectedWriteNames[] = {".git", ".anvil", "anvil.lock",
                                                            "Anvil.toml"};

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

// True when one file name (raw bytes, not necessarily UTF-8) names a protected entry on some
// file system Anvil may run on: compared after the folds those file systems apply when they
// look a name up — ASCII case, the two non-ASCII letters that case-fold to ASCII ones (U+212A
// KELVIN SIGN to k, U+017F LONG S to s: ext4/f2fs casefold), the code points HFS+ ignores
// (U+200C-U+200F, U+202A-U+202E, U+206A-U+206F, U+FEFF), and trailing dots and spaces (NTFS,
// SMB). Over-matching only refuses more, so the folds are applied whatever the file system.
bool IsProtectedName(std::string_view name);

// `name` as the case-folding and ignoring file systems of IsProtectedName compare it: ASCII
// lower case, U+212A -> 'k', U+017F -> 's', HFS+'s ignorable code points dropped, trailing dots
// and spaces cut. Any other non-ASCII code point (or invalid byte) becomes '\x80', which no
// ASCII name contains.
std::string FoldNameForLookup(std::string_view name);

// True when any component of the normalized path is a protected name (at any depth: nested
// repositories and submodules have their own .git).
bool IsProtectedPath(std::string_view normalized_path);

// The grant decision. Read: some glob matches. Write: some glob matches and, when the path is
// protected, that glob is literal and equal to the path — a wildcard ("**", "*.toml",
// ".git/hooks/*") never grants a write to a protected path; only a grant that names it exactly
// does, so the user saw that exact path when approving.
bool GrantAllows(const std::vector<std::string>& globs, std::string_view normalized_path,
                 Access access);

}  // namespace anvil
