// git's global ignore and attributes files as the user's configuration names them
// (core.excludesFile, core.attributesFile): which of them the sandbox home shows (pure; the
// implementations are in policy/sandbox_home.cc, cli/sandbox_setup.cc asks the host).
//
// The sandbox's copy of ~/.gitconfig keeps both keys (GitConfigEntryAllowed), but the sandbox
// home holds neither file unless it is git's default (~/.config/git/ignore and attributes, in
// kHomeToolchains): without the file, `git add -A` inside commits what the host's git ignores
// (`.env` in `~/.gitignore_global`, GitHub's suggested name). PlanHomeView judges each
// (HomePlanInput::git_named_files): read-only at its path, and skipped inside a credential
// location, by path or once resolved. Attributes only name filter, diff and merge
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
// (kHomeStartupFiles, kHomeStartupDirs: Anvil's there); the walk of its path (`walk`, WalkPath)
// ends at a regular file (`end_kind`, as opened without following a link) — never a directory,
// a FIFO, a socket or a device — that HomeWalkAllowed allows, the file's own path counting as
// its own place: the file by its own name, one reached only through the home's own links (stow's
// `~/.gitignore_global -> dotfiles/gitignore`), or one in a system root; not one that a link
// deeper in the home leads to (an earlier run of a workspace holding that link could have
// pointed it at a file this run hides) unless to one of `named` (places the user names as
// readable roots, shown by their own name anyway); and neither the path, the end nor a link on
// the way lies in one of `writable_roots` (the run's: there the file is shown as it is, and
// could change while it is judged).
bool GitNamedFileShown(const std::string& lexical, const PathWalk& walk, HomeHost::Kind end_kind,
                       const std::string& home, const std::string& home_canonical,
                       const std::vector<std::string>& writable_roots,
                       const std::vector<std::string>& named = {});

}  // namespace anvil
