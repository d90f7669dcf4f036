#include "linux/real_host.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>

#include "common/unique_fd.h"
#include "fs/file_io.h"
#include "linux/host_socket_facts.h"

namespace anvil {

HostFs RealHostFs(std::vector<HostMount> mounts) {
  HostFs fs;
  fs.resolve = [](const std::string& path) -> std::optional<std::string> {
    char buf[PATH_MAX];
    if (::realpath(path.c_str(), buf) == nullptr) return std::nullopt;
    return std::string(buf);
  };
  fs.read_gitdir_pointer = [](const std::string& path) -> std::optional<std::string> {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > 4096) {
      return std::nullopt;
    }
    std::ifstream in(path);
    std::string line;
    if (!std::getline(in, line) || line.rfind("gitdir:", 0) != 0) return std::nullopt;
    std::string target = line.substr(7);
    while (!target.empty() && (target.front() == ' ' || target.front() == '\t')) target.erase(0, 1);
    while (!target.empty() && (target.back() == '\r' || target.back() == ' ')) target.pop_back();
    if (target.empty()) return std::nullopt;
    if (target[0] != '/') {
      auto slash = path.rfind('/');
      target = path.substr(0, slash + 1) + target;
    }
    return target;
  };
  fs.read_git_line = [](const std::string& path) -> std::optional<std::string> {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > 4096) {
      return std::nullopt;
    }
    std::ifstream in(path);
    std::string line;
    if (!std::getline(in, line)) return std::nullopt;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) return std::nullopt;
    return line;
  };
  // Read once, by the caller (a launch computes its view twice).
  fs.mounts = [table = std::move(mounts)]() { return table; };
  fs.is_symlink = [](const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
  };
  fs.lstat_kind = [](const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return HostFs::Kind::kMissing;
    return S_ISREG(st.st_mode) ? HostFs::Kind::kRegular : HostFs::Kind::kOther;
  };
  fs.owner = [](const std::string& path) -> std::optional<PathOwner> {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
    return PathOwner{static_cast<uint32_t>(st.st_uid), static_cast<uint32_t>(st.st_mode)};
  };
  return fs;
}

HomeHost RealHomeHost() {
  HomeHost host;
  host.lstat_kind = [](const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return HomeHost::Kind::kMissing;
    if (S_ISDIR(st.st_mode)) return HomeHost::Kind::kDirectory;
    if (S_ISREG(st.st_mode)) return HomeHost::Kind::kFile;
    if (S_ISLNK(st.st_mode)) return HomeHost::Kind::kSymlink;
    return HomeHost::Kind::kOther;
  };
  host.resolve = [](const std::string& path) -> std::optional<std::string> {
    char buf[PATH_MAX];
    if (::realpath(path.c_str(), buf) == nullptr) return std::nullopt;
    return std::string(buf);
  };
  host.list_dir = [](const std::string& path) {
    std::vector<std::string> names;
    if (DIR* d = ::opendir(path.c_str())) {
      while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n != "." && n != "..") names.push_back(n);
        if (names.size() >= kMaxListedNames) break;  // the caller treats this as unknown
      }
      ::closedir(d);
    }
    std::sort(names.begin(), names.end());
    return names;
  };
  host.readlink = [](const std::string& path) -> std::optional<std::string> {
    char buf[PATH_MAX];
    const ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf));
    if (n < 0 || static_cast<size_t>(n) >= sizeof(buf)) return std::nullopt;
    return std::string(buf, static_cast<size_t>(n));
  };
  host.identify = [](const std::string& path) -> std::optional<HomeHost::Node> {
    open_how how{};
    how.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    const long fd = syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof(how));
    if (fd < 0) return std::nullopt;
    UniqueFd node(static_cast<int>(fd));
    struct stat st {};
    if (::fstat(node.Get(), &st) != 0) return std::nullopt;
    const auto kind = S_ISDIR(st.st_mode)   ? HomeHost::Kind::kDirectory
                      : S_ISREG(st.st_mode) ? HomeHost::Kind::kFile
                      : S_ISLNK(st.st_mode) ? HomeHost::Kind::kSymlink
                                            : HomeHost::Kind::kOther;
    return HomeHost::Node{kind, static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  };
  return host;
}

AutorunEnv AutorunEnvFromProcess() {
  auto get = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  return AutorunEnv{get("HOME"),          PasswdHome(),   get("XDG_CONFIG_HOME"),
                    get("XDG_DATA_HOME"), get("ZDOTDIR"), get("XDG_CACHE_HOME")};
}

AutorunEnv CanonicalAutorunEnv(const AutorunEnv& env) {
  auto real = [](const std::string& path) {
    char buf[PATH_MAX];
    if (path.empty() || path[0] != '/' || ::realpath(path.c_str(), buf) == nullptr) return path;
    return std::string(buf);
  };
  AutorunEnv out = env;
  for (std::string* p : {&out.home, &out.passwd_home, &out.xdg_config_home, &out.xdg_data_home,
                         &out.zdotdir, &out.xdg_cache_home}) {
    *p = real(*p);
  }
  return out;
}

}  // namespace anvil
