// The built-in "known harmless" set: read-only commands (ls, cat, rg, git status, git diff,
// git log, …) that the `untrusted` approval mode runs without asking when no rule says
// otherwise. Pure data with examples, like a rules file: every entry lists commands it must
// accept (match) and commands no entry may accept (not_match), and a unit test checks them all.
//
// "Harmless" is about the question, not the wall: a harmless command still runs in the sandbox.
// It means the command's own options cannot make it write, delete or start another program, so
// an entry refuses the options that would (find -exec/-delete, rg --pre, git log --output,
// sort -o). Refusal is deliberately broad: a long option is refused in every abbreviation
// getopt would accept (`--out` for `--output`), and a refused short option anywhere in a cluster
// (`-nz` holds rg's -z) even where it might be another option's value. Only a bare program
// name is harmless: `./ls` or `/tmp/x/cat` may be anything; and the name only when the PATH it
// is looked up on finds the system's program (program_lookup.h, EvaluateCommand), not one a
// workspace directory first on PATH may hold.
//
// What argv cannot show is out of scope: a repository's own git configuration (core.fsmonitor,
// core.pager, diff.external, textconv drivers) and a tool's config file or environment
// (RIPGREP_CONFIG_PATH) can make these programs run others. That is why they still run in the
// sandbox.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace anvil {

// A `leading` element that matches sed's line-range print command: N p or M,N p ("10p", "1,20p").
inline constexpr std::string_view kSedLinesPrint = "<lines>p";

struct HarmlessCommand {
  std::string_view program = {};                  // argv[0], exactly (a bare name)
  std::vector<std::string_view> subcommand = {};  // argv[1..] must start with these (git log)
  // The arguments right after the subcommand, in order (sed: "-n", kSedLinesPrint). When
  // non-empty, no argument after them may start with '-'.
  std::vector<std::string_view> leading = {};
  // Options that make the command not harmless: "--output" (with =VALUE, and abbreviated),
  // "-o" (a letter anywhere in a short-option cluster), "-exec" (exactly this word).
  std::vector<std::string_view> refused = {};
  // Text that makes any argument after the subcommand not harmless wherever it appears in it:
  // git's "%G" format placeholders verify signatures, which runs gpg.
  std::vector<std::string_view> refused_text = {};
  // Whether a `--` ends the options (getopt's rule): a wildcard word (shell_words.h) after a
  // `--` that cannot be an option's value is then an operand, harmless whatever it becomes.
  // Without it, a wildcard word is harmless only for an entry that refuses nothing: `rg foo *`
  // is not (a file named `--pre=x`), nor `find *` (`-delete`) whatever comes before.
  bool double_dash = false;
  std::string_view why = {};                     // for people: what is refused and why
  std::vector<std::string_view> match = {};      // shell words, each must be harmless by this entry
  std::vector<std::string_view> not_match = {};  // shell words, none may be harmless by any entry
};

const std::vector<HarmlessCommand>& HarmlessCommands();

// The entry that finds `argv` harmless, or nullptr.
const HarmlessCommand* FindHarmless(const std::vector<std::string>& argv);

// The entry for argv's program and subcommand whatever the rest of argv holds (so a refusal
// can say what the entry refuses), or nullptr.
const HarmlessCommand* HarmlessEntryFor(const std::vector<std::string>& argv);

// "git log", "ls": how an entry is named for people.
std::string HarmlessName(const HarmlessCommand& entry);

}  // namespace anvil
