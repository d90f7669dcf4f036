// How a sandboxed command's program is found and started. The program is looked up once,
// outside the sandbox (the caller's PATH, the caller's view of the files), and opened there;
// inside, nothing searches PATH again. It is then started under the path the lookup produced
// (`./build.sh`, `scripts/gen.sh`, `/home/u/.local/bin/tool`) once that path is checked to name
// the very file that was opened — so a script's interpreter gets that path as `$0`/`__file__`,
// as it would outside, instead of `/dev/fd/N`.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/unique_fd.h"

namespace anvil {

struct ResolvedProgram {
  UniqueFd fd;        // O_PATH|O_CLOEXEC, a regular file the caller may execute
  std::string path;   // as the lookup produced it: as typed, or a PATH entry + "/" + name
  bool link = false;  // `path` itself is a symbolic link (lstat): `fd` is its target
};

// Resolves `command` once, outside the sandbox: a name without '/' is looked up on `path_env`
// (the caller's PATH; an empty entry is the current directory), anything else is taken
// relative to `cwd`. Errors: not_found (127) / not_executable (126).
Result<ResolvedProgram> ResolveProgram(const std::string& command, const std::string& path_env,
                                       const std::string& cwd);

// The identity of a file: device and inode.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileId&) const = default;
};

enum class ExecWay {
  kPath,        // the path names the opened file in the view: exec it by that path
  kDescriptor,  // no path, or the view does not show it: exec the opened file itself
  kReplaced,    // the path names another file now: refuse, nothing runs
  // The path is a symbolic link in a directory the view does not show: the opened file is its
  // target, and running that would silently be another program (a virtualenv's bin/python
  // is the system's interpreter without the environment). Refuse, nothing runs.
  kHidden,
};

// Pure. `path_in_view`: stat(2) of the path inside the sandbox (nullopt: no path was kept, or it
// does not resolve there); `opened`: fstat(2) of the descriptor opened outside; `link`: the path
// was a symbolic link outside (ResolvedProgram::link); `dir_in_view`: the path's directory
// resolves inside the sandbox (looked at only when the path does not).
ExecWay ChooseExecWay(const std::optional<FileId>& path_in_view, const FileId& opened,
                      bool link = false, bool dir_in_view = true);

// The directory of the program path `path` (as the lookup produced it), absolute against `cwd`;
// "" for an empty path. Pure.
std::string ProgramDirectory(const std::string& path, const std::string& cwd);

// The message for a program the view does not show: `program` lies in `dir`, which is not in
// the sandbox's view (`hidden_link`: the path is a symbolic link there, not run as its target),
// and the fix, `--readable-root DIR`, in at most `max` bytes (the report record's room). What
// gives way to a long path is, in turn: the second fix, the directory named before the fix, the
// note about the link, then the middle of the path itself; the fix is never cut.
// `environment`: the virtualenv or conda environment `dir` is the bin/ of (ProgramEnvironment):
// the fix names it instead (its directory alone runs the system's python), and the hint that an
// activated one is shown by itself gives way after the directory's name. Pure.
std::string NotInViewMessage(std::string_view program, const std::string& dir, bool hidden_link,
                             size_t max, const std::string& environment = "");

// The Python environment whose program directory `dir` (absolute) is: its parent when that holds
// a virtualenv's pyvenv.cfg (a file) or a conda environment's conda-meta (a directory), looked at
// on the host; "" otherwise.
std::string ProgramEnvironment(const std::string& dir);

// What to add to "CMD: command not found on PATH" when CMD is no program at all: a shell
// builtin (`cd`, `source`), a variable assignment (`FOO=1`), a whole command line in one
// argument (`'make -v'`) — each with its fix; "" otherwise. Pure.
std::string NotFoundHint(std::string_view command);

struct ExecFailure {
  int err = 0;
  bool replaced = false;  // kReplaced: `err` is ESTALE and nothing was executed
  bool hidden = false;    // kHidden: `err` is EACCES and nothing was executed
};

// In the command process, after the working directory and every layer are in place: starts
// the program (never returns on success). `path` may be empty (a program handed over as a
// descriptor only: sys.exec). A file the kernel will not run (ENOEXEC: a script without `#!`)
// is run with /bin/sh, as execvp(3) does. Allocates nothing (the command process may share its
// parent's memory, vfork).
ExecFailure ExecProgram(int fd, const std::string& path, bool path_is_link, bool is_script,
                        char* const argv[], char* const envp[]);

}  // namespace anvil
