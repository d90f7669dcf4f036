// A small, exact parser for the shell scripts agents hand to `bash -lc "…"` / `sh -c "…"`, so
// that command rules judge the simple commands a script runs rather than the shell.
//
// It understands words, single and double quotes, backslash escapes and line continuations,
// comments, the operators `&&`, `||`, `;`, `|` and newlines, and redirections that go nowhere
// (`>/dev/null`, `2>&1`). Everything else is refused as "not understood" with the reason and the
// byte offset: expansions of any kind ($, backticks, ~, globs, braces), assignments, here-docs,
// redirections to files, subshells, functions, background jobs and the reserved words of control
// flow. The caller judges a script it does not understand `prompt`, never `allow`: this parser's
// job is to be right about what it accepts, not to accept much. Behaviour that differs between
// bash, dash and zsh is refused too (a word starting with `=` runs a path lookup in zsh).
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

struct ShellScript {
  bool understood = false;
  std::string why;         // when not understood: what, for people (one line, no input bytes)
  std::size_t offset = 0;  // when not understood: the byte offset in the script
  // The simple commands in script order, each its argv after quote removal. Redirections that
  // were understood are dropped: they do not change what runs.
  std::vector<std::vector<std::string>> commands;
};

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
std::string QuoteShellWord(std::string_view word);
std::string JoinShellWords(const std::vector<std::string>& argv);

}  // namespace anvil
