#include "linux/program_exec.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>

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
    return ResolvedProgram{std::move(fd), path};
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
  return Fail("not_found", command + ": command not found on PATH", ENOENT);
}

ExecWay ChooseExecWay(const std::optional<FileId>& path_in_view, const FileId& opened) {
  if (!path_in_view) return ExecWay::kDescriptor;
  return *path_in_view == opened ? ExecWay::kPath : ExecWay::kReplaced;
}

ExecFailure ExecProgram(int fd, const std::string& path, bool is_script, char* const argv[],
                        char* const envp[]) {
  struct stat opened {};
  if (::fstat(fd, &opened) != 0) return {errno, false};
  std::optional<FileId> in_view;
  struct stat st {};
  // stat, not lstat: the kernel follows a symlink to the script, and so does the check.
  if (!path.empty() && ::stat(path.c_str(), &st) == 0) in_view = FileId{st.st_dev, st.st_ino};
  switch (ChooseExecWay(in_view, FileId{opened.st_dev, opened.st_ino})) {
    case ExecWay::kPath:
      ::execve(path.c_str(), argv, envp);
      return {errno, false};
    case ExecWay::kReplaced:
      return {ESTALE, true};
    case ExecWay::kDescriptor:
      break;
  }
  // The kernel hands a script's interpreter /dev/fd/N, which must then survive exec.
  if (is_script) ::fcntl(fd, F_SETFD, 0);
  syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
  return {errno, false};
}

}  // namespace anvil
