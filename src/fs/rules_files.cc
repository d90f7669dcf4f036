#include "fs/rules_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>

#include "common/unique_fd.h"
#include "fs/file_io.h"
#include "fs/workspace_path.h"

namespace anvil {

std::string UserRulesDirFrom(const char* xdg_config_home, const char* home) {
  if (xdg_config_home != nullptr && xdg_config_home[0] == '/') {
    return std::string(xdg_config_home) + "/anvil/rules";
  }
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.config/anvil/rules";
  return {};
}

std::string UserRulesDir() {
  return UserRulesDirFrom(std::getenv("XDG_CONFIG_HOME"), std::getenv("HOME"));
}

namespace {

struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};

}  // namespace

Result<std::vector<std::string>> RulesFilesIn(const std::string& dir, std::size_t max_files) {
  std::unique_ptr<DIR, DirCloser> handle(::opendir(dir.c_str()));
  if (!handle) {
    if (errno == ENOENT) return std::vector<std::string>{};
    return SysFail("io", "rules directory " + QuotePathForMessage(dir));
  }
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* entry = ::readdir(handle.get())) {
    const std::string_view name = entry->d_name;
    if (name.starts_with(".") || !name.ends_with(".toml")) continue;
    if (names.size() >= max_files) {
      return Fail("limit", QuotePathForMessage(dir) + " holds more than " +
                               std::to_string(max_files) +
                               " rules files (fix: merge some of them)");
    }
    names.emplace_back(name);
  }
  if (errno != 0) return SysFail("io", "read rules directory " + QuotePathForMessage(dir));
  std::sort(names.begin(), names.end());
  std::vector<std::string> paths;
  paths.reserve(names.size());
  for (const auto& name : names) paths.push_back(dir + "/" + name);
  return paths;
}

Result<std::string> ReadTrustedRulesFile(const std::string& path, std::size_t max_bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) {
    return SysFail(errno == ENOENT ? Code::kNotFound : Code::kIo,
                   "rules file " + QuotePathForMessage(path));
  }
  return ReadRegularFileFromFd(fd.Get(), QuotePathForMessage(path), max_bytes);
}

Result<std::optional<std::string>> ReadWorkspaceRulesFile(const std::string& workspace_dir,
                                                          std::string_view relative_path,
                                                          const std::string& shown,
                                                          std::size_t max_bytes) {
  UniqueFd dir(::open(workspace_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return SysFail("io", "workspace " + QuotePathForMessage(workspace_dir));
  open_how how{};
  how.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const std::string relative(relative_path);
  long raw = -1;
  do {
    raw = ::syscall(SYS_openat2, dir.Get(), relative.c_str(), &how, sizeof(how));
  } while (raw < 0 && (errno == EINTR || errno == EAGAIN));
  if (raw < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<std::string>{};
    if (errno == ELOOP || errno == EXDEV) {
      return Fail("denied", QuotePathForMessage(shown) +
                                ": the workspace's rules file (or its .anvil directory) is a "
                                "symbolic link; it is read only as a file of the workspace itself "
                                "(fix: replace the link with the file)");
    }
    return SysFail("io", "open " + QuotePathForMessage(shown));
  }
  UniqueFd fd(static_cast<int>(raw));
  ANVIL_TRY(text, ReadRegularFileFromFd(fd.Get(), QuotePathForMessage(shown), max_bytes));
  return std::optional<std::string>(std::move(*text));
}

}  // namespace anvil
