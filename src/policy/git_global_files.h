// git's global ignore and attributes files as the user's configuration names them
// (core.excludesFile, core.attributesFile): which of them the sandbox home shows (pure; the
// implementations are in policy/sandbox_home.cc, cli/sandbox_setup.cc asks the host).
//
// The sandbox's copy of ~/.gitconfig keeps both keys (GitConfigEntryAllowed), but the sandbox
// home holds neither file unless it is git's default (~/.config/git/ignore and attributes, in
// kHomeToolchains): without the file, `git add -A` inside commits what the host's git ignores
// (`.env` in `~/.gitignore_global`, GitHub's suggested name). A file shown here is a root the
// run implies (HomePlanInput::implied_readable_roots): read-only at its path, and skipped inside
// a credential location, by path or once resolved. Attributes only name filter, diff and merge
// drivers, whose commands come from configuration, and the copy keeps none.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "policy/git_config.h"
#include "policy/sandbox_home.h"

namespace anvil {

// The files `entries` (the user's global configuration, in git's order) name: the last value
// of core.excludesFile and of core.attributesFile, as git takes it, `~/` expanded against `home`.
// A value git would read relative to the current directory, or from another user's home
// (`~u/`), is left out.
std::vector<std::string> GitNamedFiles(const std::vector<GitConfigEntry>& entries,
                                       const std::string& home);

// Whether a file of GitNamedFiles is shown: its path (`lexical`, normal and absolute) lies in the
// home (`home`, lexical; `home_canonical`, resolved) and is none of the shells' start-up files
// (kHomeStartupFiles, kHomeStartupDirs: Anvil's there); what it resolves to (`resolved`;
// nullopt: missing or dangling) is a regular file (`resolved_kind`, lstat) that is the home's
// own by its name (no link below the home on the way: an earlier run of a workspace holding the
// link could point it at a file this run hides) or lies in a system root (InSystemRoot) — never a
// directory, a FIFO, a socket or a device; and neither lies in one of `writable_roots` (the run's:
// there the file is shown as it is, and could change while it is judged).
bool GitNamedFileShown(const std::string& lexical, const std::optional<std::string>& resolved,
                       HomeHost::Kind resolved_kind, const std::string& home,
                       const std::string& home_canonical,
                       const std::vector<std::string>& writable_roots);

}  // namespace anvil
