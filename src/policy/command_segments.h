// What a command runs, taken apart before command rules judge it (command_rules.h). Pure.
//
// A rule is written against the program that does the work, so the command is looked through:
//
//   bash -lc "cargo build && rm -rf target"   the shell, then `cargo build` and `rm -rf target`
//   env FOO=1 timeout 5 rm -rf target         env, then `timeout 5 rm …`, then `rm -rf target`
//   /bin/bash -c "…"                           a path to a shell is a shell
//
// Each part is a segment with a role. The segments that decide whether a command may run
// without a question are kJudged: the command itself, or for a shell script each command of the
// script (the shell only interprets them). Segments reached through a wrapper (env, nice,
// timeout, xargs, …) and the shell of a script are kNarrowing: a forbid or prompt rule that
// matches them applies, an allow rule does not — allowing `rm` must not allow `env LD_PRELOAD=x
// rm`, and allowing `bash` must not allow every script.
//
// A script's words that expand are wildcard words (kAnyWords, kAnyWord in shell_words.h) in a
// segment's argv; one in a command-name position, among a wrapper's own options or operands, or
// anywhere on a shell's command line is not understood (what runs would depend on it).
//
// Anything that cannot be taken apart exactly (a script the shell parser refuses, a wrapper
// option it does not know, a wrapper it cannot follow such as sudo or strace, a builtin inside a
// script that runs code or changes how later commands run, a shell with neither -c nor a script
// file, which reads its commands from standard input: `echo "rm -rf ~" | sh`) makes the whole
// command not understood, which the rules judge `prompt` while any layer has a prompt or
// forbidden rule it could hide a command from, `none` otherwise, and never `allow`.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace anvil {

inline constexpr std::size_t kMaxSegmentDepth = 8;
inline constexpr std::size_t kMaxSegments = 1024;

enum class SegmentRole { kJudged, kNarrowing };

struct CommandSegment {
  std::vector<std::string> argv;
  SegmentRole role = SegmentRole::kJudged;
  std::size_t depth = 0;  // 0: the command as given
  std::string via;        // how it was reached, for people: "", "bash -c script", "env"
  // From a script (shell_words.h): a redirection writes a file, or the script assigns a
  // variable. Either way the command is more than its argv: never harmless, and allow rules
  // (which allow an argv) do not apply to it.
  bool writes_file = false;
  bool environment = false;
  // A shell named without a slash whose script is judged instead of it (kNarrowing), on the
  // word that the name is a shell: judged itself after all when a directory the sandboxed
  // command or the workspace may write comes first on PATH (program_lookup.h, EvaluateCommand).
  bool shell_by_name = false;
};

struct CommandSegments {
  // The command first, then what it runs, depth first in order.
  std::vector<CommandSegment> segments;
  bool understood = true;
  std::string why;  // the first thing not understood (one line, for people)
};

// The names of the files a program (argv[0] as written) runs, links resolved, one for each way
// it may be looked up (program_lookup.h's ResolvedProgramNames); empty when unknown. Without
// one, programs are known by their names alone (`anvil rules check`).
using ProgramResolver = std::function<std::vector<std::string>(const std::string& argv0)>;

// A shell is known by its name (kShells), by a version after it (`zsh5`, `bash-5.2`: its script
// is read, but the program is judged itself too), or by the file it resolves to (`rzsh`, or any
// name, linking to zsh). A shell whose language the parser does not read (fish, csh, tcsh, …)
// with anything but a script file makes the command not understood. An interpreter's own code
// (python3 -c, perl -e, node -e) is not read: such a command is judged by its command line, as
// docs/agents.md says ("What rules cannot see"); the sandbox is the wall for what it runs.
CommandSegments SplitCommand(const std::vector<std::string>& argv,
                             const ProgramResolver& resolve = {});

// Whether `argv0` may name a program the system provides: a file directly in /bin, /usr/bin,
// /sbin, /usr/sbin, /usr/local/bin or /usr/local/sbin, or a bare name. A bare name only says so
// by its PATH, which this pure split does not see: EvaluateCommand checks it against the PATH
// the command runs with (program_lookup.h). A shell named otherwise (`./sh`) is judged as the
// program it is, not only its script.
bool IsSystemProgramPath(std::string_view argv0);
// The last path component of argv[0] ("/usr/bin/git" -> "git"); empty when it ends in '/'.
std::string_view ProgramName(std::string_view argv0);

// Whether `segment` is a command of a shell script that every shell parsed here runs as its
// own builtin without looking it up on PATH (cd, pwd, echo, true, false, test, `[`): a program
// of that name on PATH is never what runs.
bool RunsAsShellBuiltin(const CommandSegment& segment);

// Shells, by program name: those whose `-c SCRIPT` is parsed (bash, sh, dash, zsh, ksh, …, and
// those names with a version after them) and those whose language is not read (fish, csh, …).
bool IsShellProgram(std::string_view name);
// Every shell name known (the two lists): the sandbox home's start-up files are kept for each
// (policy/sandbox_home.h, kHomeStartupFiles; a test holds the two together).
std::vector<std::string_view> RecognisedShells();

// Programs that run another program given on their command line: shells, the wrappers this
// file follows, and those it refuses to follow (sudo, strace, …), by program name.
bool IsLauncherProgram(std::string_view name);

// The launchers that run another PROGRAM (shells, wrappers, busybox, sudo, …), as opposed to
// interpreters that run code given on their command line (python3 -c, make, git).
bool RunsAnotherProgram(std::string_view name);

}  // namespace anvil
