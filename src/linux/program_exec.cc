#include "linux/program_exec.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <tuple>
#include <vector>

namespace anvil {

Result<ResolvedProgram> ResolveProgram(const std::string& command, const std::string& path_env,
                                       const std::string& cwd) {
  if (command.empty()) return Fail("not_found", "empty command");
  auto try_open = [&cwd](const std::string& path) -> Result<ResolvedProgram> {
    std::string absolute = path[0] == '/' ? path : cwd + "/" + path;
    UniqueFd fd(::open(absolute.c_str(), O_PATH | O_CLOEXEC));
    if (!fd) return SysFail(errno == ENOENT ? Code::kNotFound : Code::kNotExecutable, path);
    struct stat st {};
    if (::fstat(fd.Get(), &st) != 0) return SysFail("not_executable", path);
    if (!S_ISREG(st.st_mode)) return Fail("not_executable", path + ": not a regular file", EACCES);
    if (::faccessat(fd.Get(), "", X_OK, AT_EMPTY_PATH | AT_EACCESS) != 0) {
      return SysFail("not_executable", path);
    }
    struct stat link {};
    const bool is_link = ::lstat(absolute.c_str(), &link) == 0 && S_ISLNK(link.st_mode);
    return ResolvedProgram{std::move(fd), path, is_link};
  };
  if (command.find('/') != std::string::npos) return try_open(command);
  std::optional<Error> first_error;
  std::stringstream dirs(path_env);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    // An empty PATH entry means the current directory (POSIX); a relative one is taken from it
    // too. The path keeps the entry's form, as a shell's lookup does.
    std::string candidate = (dir.empty() ? "." : dir) + "/" + command;
    auto program = try_open(candidate);
    if (program) return program;
    if (program.error().code == "not_executable" && !first_error) first_error = program.error();
  }
  if (first_error) return tl::unexpected(*first_error);
  return Fail("not_found", command + ": command not found on PATH" + NotFoundHint(command), ENOENT);
}

std::string NotFoundHint(std::string_view command) {
  static constexpr std::string_view kBuiltins[] = {
      "cd",    "source", ".",    "export", "alias",   "unalias", "set",     "unset",  "ulimit",
      "umask", "eval",   "exec", "read",   "wait",    "trap",    "shopt",   "pushd",  "popd",
      "type",  "hash",   "let",  "local",  "declare", "typeset", "builtin", "history"};
  for (std::string_view b : kBuiltins) {
    if (command == b) {
      const bool bash_only = command == "source" || command == "shopt" || command == "pushd" ||
                             command == "popd" || command == "declare" || command == "typeset" ||
                             command == "let" || command == "local" || command == "history" ||
                             command == "builtin";
      return " (" + std::string(command) +
             " is a shell builtin, not a program: run it in a shell, e.g. `" +
             (bash_only ? "bash" : "sh") + " -c '" + std::string(command) + " ... && CMD'`" +
             (command == "cd" ? ", or start in that directory with --workdir DIR" : "") + ")";
    }
  }
  const auto eq = command.find('=');
  if (eq != std::string_view::npos && eq > 0 && command.find_first_of(" /") > eq) {
    return " (" + std::string(command.substr(0, eq)) +
           "=... is a variable assignment: pass it with --setenv " + std::string(command) +
           ", or run `env " + std::string(command) + " CMD`)";
  }
  if (command.find_first_of(" \t") != std::string_view::npos) {
    const std::string first(command.substr(0, command.find_first_of(" \t")));
    return " (one argument holding a whole command line: give the words as separate arguments, "
           "`-- " +
           first + " ...`, or run it in a shell, `-- sh -c '" + std::string(command) + "'`)";
  }
  return "";
}

ExecWay ChooseExecWay(const std::optional<FileId>& path_in_view, const FileId& opened, bool link,
                      bool dir_in_view) {
  if (!path_in_view) return link && !dir_in_view ? ExecWay::kHidden : ExecWay::kDescriptor;
  return *path_in_view == opened ? ExecWay::kPath : ExecWay::kReplaced;
}

std::string ProgramDirectory(const std::string& path, const std::string& cwd) {
  if (path.empty()) return "";
  const auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (dir[0] == '/') return dir;
  while (dir.rfind("./", 0) == 0) dir.erase(0, 2);
  if (dir == ".") return cwd;
  return cwd == "/" ? "/" + dir : cwd + "/" + dir;
}

std::string NotInViewMessage(std::string_view program, const std::string& dir, bool hidden_link,
                             size_t max, const std::string& environment) {
  // The directory of a virtualenv's or conda environment's program (bin/) is not enough: shown
  // alone, its python finds no environment and runs as the system's.
  const bool env = !environment.empty();
  const std::string fix_root = env ? environment : dir;
  const std::string more = env           ? "; an activated environment is shown by itself"
                           : hidden_link ? "; an activated virtualenv is shown by itself"
                                         : "; or --read-access full";
  const std::string link_note = " (the link there is not run as its target)";
  auto compose = [&](std::string_view prog, const std::string& named, bool note,
                     const std::string& shown, bool second) {
    return std::string(prog) + ": " + named + " is not in the sandbox's view" +
           (note ? link_note : "") + " (fix: --readable-root " + shown +
           (env ? ", its environment" : "") + ", or readable_roots in config.toml" +
           (second ? more : "") + ")";
  };
  const std::string its = "its directory";
  // What gives way first: for an environment, the directory's name before the hint to activate
  // it; else the second fix first.
  using Try = std::tuple<std::string, bool, bool>;
  const std::vector<Try> tries = env ? std::vector<Try>{{dir, hidden_link, true},
                                                        {its, hidden_link, true},
                                                        {its, false, true},
                                                        {its, false, false}}
                                     : std::vector<Try>{{dir, hidden_link, true},
                                                        {dir, hidden_link, false},
                                                        {its, hidden_link, false},
                                                        {its, false, false}};
  for (const auto& [named, note, second] : tries) {
    std::string m = compose(program, named, note, fix_root, second);
    if (m.size() <= max) return m;
  }
  // Still too long: a long program name, then the path's middle (its head and its own
  // directory's name stay, which say where it is).
  const std::string_view prog = program.substr(0, std::min<size_t>(program.size(), 32));
  const size_t fixed = compose(prog, its, false, "", false).size();
  const std::string dots = "...";
  if (fixed + dots.size() + 2 > max) return compose(prog, its, false, "", false).substr(0, max);
  const size_t room = max - fixed - dots.size();
  const size_t tail = std::min(fix_root.size(), room - room / 3);
  const size_t head = room - tail;
  const std::string shown = fix_root.size() <= room ? fix_root
                                                    : fix_root.substr(0, head) + dots +
                                                          fix_root.substr(fix_root.size() - tail);
  return compose(prog, its, false, shown, false);
}

std::string ProgramEnvironment(const std::string& dir) {
  if (dir.empty() || dir[0] != '/' || dir == "/") return "";
  const auto slash = dir.rfind('/');
  if (slash == 0) return "";
  const std::string root = dir.substr(0, slash);
  struct stat st {};
  if (::stat((root + "/pyvenv.cfg").c_str(), &st) == 0 && S_ISREG(st.st_mode)) return root;
  if (::stat((root + "/conda-meta").c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return root;
  return "";
}

namespace {

// What execvp does when the kernel will not run a file (ENOEXEC: a script without `#!`): run it
// with /bin/sh, as every shell, env, xargs and find -exec do. `file` is the path the shell opens.
// No allocation: this runs in the vfork child.
void ExecWithShell(const char* file, char* const argv[], char* const envp[]) {
  // Not a binary of another kind (a NUL in its first bytes, as bash checks before it falls back):
  // that stays "Exec format error".
  {
    const int text = ::open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (text < 0) {
      errno = ENOEXEC;
      return;
    }
    char head[256];
    const ssize_t got = ::pread(text, head, sizeof(head), 0);
    ::close(text);
    if (got < 0 || std::memchr(head, '\0', static_cast<size_t>(got)) != nullptr) {
      errno = ENOEXEC;
      return;
    }
  }
  constexpr size_t kMaxArgs = 4096;
  char* args[kMaxArgs + 2];
  size_t n = 0;
  args[n++] = const_cast<char*>("/bin/sh");
  args[n++] = const_cast<char*>(file);
  for (size_t i = 1; argv[i] != nullptr; ++i) {
    if (n >= kMaxArgs) return;
    args[n++] = argv[i];
  }
  args[n] = nullptr;
  ::execve("/bin/sh", args, envp);
  errno = ENOEXEC;  // what the caller reports: the file itself could not be run
}

}  // namespace

ExecFailure ExecProgram(int fd, const std::string& path, bool path_is_link, bool is_script,
                        char* const argv[], char* const envp[]) {
  struct stat opened {};
  if (::fstat(fd, &opened) != 0) return {errno, false};
  std::optional<FileId> in_view;
  struct stat st {};
  // stat, not lstat: the kernel follows a symlink to the script, and so does the check.
  if (!path.empty() && ::stat(path.c_str(), &st) == 0) in_view = FileId{st.st_dev, st.st_ino};
  bool dir_in_view = true;
  if (!in_view && path_is_link) {
    // The path's directory, in a buffer of our own (no allocation: this may run after vfork).
    char dir[PATH_MAX];
    const size_t slash = path.rfind('/');
    if (slash != std::string::npos && slash < sizeof(dir)) {
      std::memcpy(dir, path.data(), slash);
      dir[slash == 0 ? 1 : slash] = '\0';
      if (slash == 0) dir[0] = '/';
      dir_in_view = ::stat(dir, &st) == 0;
    }
  }
  switch (ChooseExecWay(in_view, FileId{opened.st_dev, opened.st_ino}, path_is_link, dir_in_view)) {
    case ExecWay::kHidden:
      return {EACCES, false, true};
    case ExecWay::kPath:
      ::execve(path.c_str(), argv, envp);
      if (errno == ENOEXEC) ExecWithShell(path.c_str(), argv, envp);
      return {errno, false};
    case ExecWay::kReplaced:
      return {ESTALE, true};
    case ExecWay::kDescriptor:
      break;
  }
  // The kernel hands a script's interpreter /dev/fd/N, which must then survive exec.
  if (is_script) ::fcntl(fd, F_SETFD, 0);
  syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
  if (errno == ENOEXEC) {
    // The shell reads the opened file itself, by its descriptor (kept across exec).
    char dev_fd[32];
    std::snprintf(dev_fd, sizeof(dev_fd), "/dev/fd/%d", fd);
    ::fcntl(fd, F_SETFD, 0);
    ExecWithShell(dev_fd, argv, envp);
  }
  return {errno, false};
}

}  // namespace anvil
