// A small, exact parser for the shell scripts agents hand to `bash -lc "…"` / `sh -c "…"`, so
// that command rules judge the simple commands a script runs rather than the shell.
//
// It understands words, single and double quotes, backslash escapes and line continuations,
// comments, the operators `&&`, `||`, `;`, `|` and newlines, redirections with a literal or
// expanding target (`>f`, `>>f`, `2>f`, `<f`, `>|f`, `2>&1`, bash's `&>f`), here-documents
// (`<<'EOF'`, `<<-EOF`; an unquoted delimiter only when the body holds no `$`, backtick or
// backslash) and bash's here-strings, assignments before a command or alone (`x=1 cmd`), and
// the compound commands `if`/`elif`/`else`, `for NAME in WORDS`, `while`, `until`, `{ …; }` and
// `( … )`, whose simple commands are listed in script order. A command substitution `$(…)` is
// parsed as a script of its own (no comments, here-documents or `case` inside): its commands
// are listed before the command whose word it is, and the word is a wildcard. `IFS=…` is
// understood right before `read` only (it lasts for that command); a script that runs `read`
// or `export` assigns. For bash only, `[[ EXPR ]]` on one line with file and string tests,
// `=`, `==`, `!=`, `-nt`, `-ot`, `-ef`, `!`, `&&` and `||` (not the arithmetic comparisons,
// `-v`, `-R`, `=~`, `<`, `>` or parentheses) is a command of its own, listed as
// `[[ WORDS… ]]`; `$(( … ))` of digits, blanks and operators only (no name: bash evaluates a
// name's value as arithmetic, where a subscript runs code) is a word that expands.
//
// Words that expand are understood as WILDCARDS, not read: a glob (`*.py`) or an unquoted
// `$VAR`/`${VAR}` may become any number of words (kAnyWords), a quoted "$VAR" or a tilde exactly
// one arbitrary word (kAnyWord). Whoever judges a command holding one must judge it for every
// word it could become: a rule that could match applies, a command is harmless only if it is
// for every expansion. An expansion in the command-name position is not understood.
//
// Everything else is refused as "not understood" with the reason and the byte offset: backticks,
// other arithmetic, other `[[`, process substitution, brace expansion (a bare `{}` is itself),
// `$'…'`, parameter operators (`${X:-…}`), functions, `case`, background jobs, assignments to the
// variables that change how the shell reads or runs later commands (PATH, IFS, BASH_ENV, …:
// ShellVariableIsSpecial) and `+=` (dash reads `A+=b` as a command name). The caller never
// judges a script it does not understand `allow` (command_rules.h): this parser's job is to be
// right about what it accepts, not to accept much. Behaviour that differs between bash, dash and
// zsh is refused too (a word starting with `=` runs a path lookup in zsh; `$X[1]` and `$X:h`
// subscript and modify in zsh).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace anvil {

// Bounds on untrusted input: a script longer than this, or with more commands or words, is
// not understood (nothing is judged on a truncated view).
inline constexpr std::size_t kMaxShellScriptBytes = 64 * 1024;
inline constexpr std::size_t kMaxShellCommands = 256;
inline constexpr std::size_t kMaxShellWords = 4096;
inline constexpr std::size_t kMaxShellNesting = 16;        // open if/for/while/{/( at once
inline constexpr std::size_t kMaxShellHereDocuments = 64;  // here-documents in one script

// The wildcard words a ShellScript's argv may hold in place of a word that expands. Each starts
// with a NUL byte, which no real argv word (and no rule pattern) can hold.
inline constexpr std::string_view kAnyWords{"\0*", 2};  // any number of arbitrary words, even 0
inline constexpr std::string_view kAnyWord{"\0?", 2};   // exactly one arbitrary word
inline bool IsWildcardWord(std::string_view word) { return !word.empty() && word[0] == '\0'; }

struct ShellScript {
  bool understood = false;
  std::string why;         // when not understood: what, for people (one line, no input bytes)
  std::size_t offset = 0;  // when not understood: the byte offset in the script
  // The simple commands in script order, each its argv after quote removal, with kAnyWords or
  // kAnyWord for a word that expands. Redirections are dropped: they do not change what runs.
  std::vector<std::vector<std::string>> commands;
  // Per command (parallel to `commands`): whether a redirection of it, or of a compound command
  // around it, writes a file (any target but /dev/null and descriptors).
  std::vector<bool> writes_file;
  // Whether the script assigns a variable anywhere (`x=1 cmd`, `x=1`, a `for` variable). Such a
  // variable may be exported already and reach every later program (GIT_EXTERNAL_DIFF, PAGER),
  // so no command of the script is as plain as its argv reads.
  bool assigns = false;
};

// Variables whose assignment changes how a shell reads or runs what follows, whatever the
// command (PATH, IFS, ENV, BASH_ENV, CDPATH, PS4, SHELLOPTS, LD_*, BASH_*, zsh's lowercase tied
// arrays such as `path`, …), compared without regard to case: never understood.
bool ShellVariableIsSpecial(std::string_view name);

// Which shell will run the script. A construct is understood only when every shell a dialect
// stands for gives it the same meaning: `&>`, `&>>` and multi-digit descriptors (`10>`) are
// bash's; dash, ash, ksh, posh and busybox sh read `ls &>/dev/null rm x` as a background `ls`
// followed by `>/dev/null rm x`, and `10>x` as the word 10 and `>x`. kPosix is the strict subset
// every POSIX shell shares and the default for any shell not known to be bash.
enum class ShellDialect { kPosix, kBash };

// The dialect for a shell by program name: kBash only for bash and rbash; everything else
// (sh, dash, ash, ksh, zsh, posh, yash, busybox, an unknown name) kPosix.
ShellDialect DialectOfShell(std::string_view program);

ShellScript ParseShellScript(std::string_view script, ShellDialect dialect = ShellDialect::kPosix);

// One word as a shell would have to read it back: unchanged when it is made of characters no
// shell treats specially (and is not a reserved word), otherwise single-quoted. Also what
// `anvil rules check` prints, so a command shown to a user can be pasted back as is.
// A wildcard word is shown as `<*>` (kAnyWords) or `<?>` (kAnyWord), which reads back as a
// redirection: a command holding one is for people, not for pasting.
std::string QuoteShellWord(std::string_view word);
std::string JoinShellWords(const std::vector<std::string>& argv);

}  // namespace anvil
