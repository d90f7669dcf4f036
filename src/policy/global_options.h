// Global options: the options some programs take before their subcommand (`git -C dir -c k=v
// push`), so that a `prompt` or `forbidden` rule written against the subcommand (["git", "push"])
// also meets the command written with them. Pure and table-driven: one table per program, every
// option the program accepts there, and whether it takes a value.
//
// Only restrictions use this (command_rules.h): an `allow` rule still matches the command as
// written, so allowing `git push` never allows `git -c core.sshCommand=evil push`.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace anvil {

// Whether argv's program (by program name, any path) has a global-options table.
bool HasGlobalOptions(std::string_view program_name);

// argv with the global options before the subcommand removed, or nullopt when argv's program has
// no table or no global option is there. When the words before the subcommand cannot be read
// exactly (an option the table does not know, an expansion among them, a `-c alias.NAME=…` that
// makes a new subcommand), the result is {argv[0], kAnyWords} (shell_words.h): every restriction
// on the program could match it.
std::optional<std::vector<std::string>> WithoutGlobalOptions(const std::vector<std::string>& argv);

}  // namespace anvil
