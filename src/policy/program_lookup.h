// Where a program named without a slash comes from, for the judgements that go by its name: the
// built-in harmless set (harmless_commands.h), allow rules (command_rules.h) and a shell taken
// for the system's shell (command_segments.h). What runs is the file the lookup on PATH finds:
// the entries in order, the first holding an executable regular file wins, an empty or relative
// entry is the working directory (execvp(3), and ResolveProgram in linux/program_exec.h). A PATH
// with a directory the workspace can write (an activated virtualenv's .venv/bin,
// node_modules/.bin, `.`) makes `ls` whatever the workspace holds under that name.
//
// Both judgements go by the PATH entries themselves, not only by what they hold now: the command
// runs later, in a sandbox where the workspace is writable, so a file missing at the check may be
// there at the run.
//
//   the system's program   the name is in one of kSystemProgramDirs, reached through an entry
//                          that is that directory by name (absolute, no `.` or `..`) and that
//                          no writable root of the sandbox holds, by its name or its links
//                          (`--writable-root /usr/local` makes /usr/local/bin the command's to
//                          fill: then it is a directory like any other), and no
//                          entry before it is relative, empty, or inside a writable root of the
//                          sandbox (those may hold the name by the time it runs, whether or not
//                          they do now), nor another directory that holds the name now. A
//                          directory the command cannot write that does not hold it
//                          (~/.cargo/bin, ~/.local/bin, a version manager's shims) is passed, as
//                          the allow rules pass it. A name in no system directory: not the
//                          system's. Only the system's program is built-in harmless: the set's
//                          claims (which options write or run programs) are about it.
//   an allow rule's        no entry before the one that holds the name (every entry, when none
//   program                does) is relative, empty, or, not being a system directory, inside a
//                          writable root of the sandbox (canonically: a link into the workspace
//                          counts). The user's own directories outside them (~/.local/bin,
//                          ~/.cargo/bin) keep meaning what the user allowed; and a shell found
//                          there still only interprets its script, which is what is judged.
//
// Pure: the facts about directories come from the caller (fs/program_dirs.h for the real ones).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace anvil {

// The directories whose programs the system provides (root's, read-only in every sandbox).
inline constexpr std::string_view kSystemProgramDirs[] = {
    "/bin", "/usr/bin", "/sbin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"};

// The lookup path used when the environment has none (ResolveProgram's, and what the system's
// shells fall back to, but for bash's trailing `.`, which comes after these).
inline constexpr std::string_view kDefaultProgramPath = "/usr/local/bin:/usr/bin:/bin";

// What a shell inside looks names up on when the environment has no PATH (`--clear-env`): bash's
// own default, the widest of the system shells', which ends in `.` (the working directory, the
// workspace). The judgement of what a shell or wrapper runs takes this one then.
inline constexpr std::string_view kShellDefaultProgramPath =
    "/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin:.";

// Whether a PATH entry names one of kSystemProgramDirs: exactly, or with trailing slashes.
bool IsSystemProgramDir(std::string_view entry);

// Facts about the directories of a PATH, from the file system (injected).
struct ProgramDirFacts {
  // Whether `dir` (absolute) holds `name` as a regular file this user may execute.
  std::function<bool(const std::string& dir, const std::string& name)> holds;
  // `dir` (absolute) with every link resolved, as far as it exists (the rest appended); "" when
  // unknown.
  std::function<std::string(const std::string& dir)> canonical;
};

// One PATH a bare name may be looked up on, and where the sandboxed command may write as that
// lookup sees the files: the caller's PATH finds the command itself, outside the sandbox (the
// writable roots); the sandbox environment's finds what a shell or wrapper runs inside (also
// the sandbox's home and /tmp, but for what the view binds read-only there).
struct LookupPath {
  std::string value;                        // an unset PATH is kDefaultProgramPath
  std::vector<std::string> writable_roots;  // canonical; "/" when the file system is not confined
  std::vector<std::string> read_only;       // inside a writable root, yet read-only
};

// How the command's bare program names will be looked up: on every path of `paths`.
struct ProgramSearch {
  std::vector<LookupPath> paths;  // none: kDefaultProgramPath, nothing writable
  ProgramDirFacts facts;          // no `holds`: no directory holds anything
};

enum class BareNameSource {
  kSystem,      // the system's program, on every path
  kShadowable,  // a PATH entry the sandboxed command may write into comes first (`entry`)
  kOther,       // another directory that holds the name comes first (`entry`)
  kNotFound,    // in no system directory reached that way
};

struct BareNameJudgement {
  BareNameSource source = BareNameSource::kNotFound;
  std::string entry;  // kShadowable: the entry, as written ("" for an empty one)
  std::string path;   // the PATH value it was judged on
  // One line for people, naming the fix: "" for kSystem.
  std::string Why(std::string_view name) const;
};

// Whether the bare `name` is the system's program on every path of `search`.
BareNameJudgement JudgeSystemProgram(std::string_view name, const ProgramSearch& search);

// Why `argv0`, a program named by its path in a system directory (`/usr/local/bin/bash`), is
// not the system's: a writable root of the sandbox holds that directory, so the program may be
// one a sandboxed command put there. "" for any other path, and for a bare name.
std::string SystemPathNotSystems(std::string_view argv0, const ProgramSearch& search);

// Why an allow rule may not speak for `argv0`, a program named by a path: a relative one
// (`./build.sh`, `tools/gen`) is whatever file of that name is where the command runs, in any
// repository; an absolute one inside a writable root of the sandbox (not the unconfined `/`) is
// a file the sandboxed command may write. "" for any other path, and for a bare name. Without
// `search`, only the relative path is judged.
std::string ProgramPathAllowBlocked(std::string_view argv0, const ProgramSearch* search);

// Why an allow rule may not speak for the bare `name` (a PATH entry the sandboxed command, or
// the workspace, may put a program of that name into comes before it is found); "" when it may.
std::string AllowRuleBlocked(std::string_view name, const ProgramSearch& search);

// The names of the files `argv0` runs once every link is resolved (`rzsh` -> "zsh", `sh` ->
// "dash"), one per path of `search` on which it is found (a bare name: the first entry that
// holds it; an absolute path: that file; a relative one: none, the working directory is not
// known here). What a program is, when its own name does not say (command_segments.h): a shell
// linked under another name still only runs its script, which is read.
std::vector<std::string> ResolvedProgramNames(std::string_view argv0, const ProgramSearch& search);

}  // namespace anvil
