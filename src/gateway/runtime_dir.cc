#include "gateway/runtime_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace anvil::gateway {

Result<std::string> PrepareRuntimeDir(GatewayOptions& options, UniqueFd* held) {
  if (options.runtime_dir.empty()) {
    const char* xdg = std::getenv("XDG_RUNTIME_DIR");
    std::string base;
    if (xdg && *xdg == '/') {
      base = std::string(xdg) + "/anvil";
    } else {
      base = "/tmp/anvil-" + std::to_string(geteuid());
    }
    if (::mkdir(base.c_str(), 0700) != 0 && errno != EEXIST) return SysFail("io", "mkdir " + base);
    struct stat st {};
    // A pre-made /tmp/anvil-UID owned by someone else (or group/world-accessible) could be a
    // trap: refuse to use it.
    if (::lstat(base.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077) != 0) {
      return Fail("denied", "runtime base " + base + " is not a private directory of this user");
    }
    options.runtime_dir = base + "/" + options.session_id;
  }
  if (::mkdir(options.runtime_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return SysFail("io", "mkdir " + options.runtime_dir);
  }
  struct stat st {};
  if (::lstat(options.runtime_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
      st.st_uid != geteuid()) {
    return Fail("denied", "runtime dir " + options.runtime_dir + " is not ours");
  }
  if (::chmod(options.runtime_dir.c_str(), 0700) != 0) return SysFail("io", "chmod runtime dir");
  UniqueFd dir(
      ::open(options.runtime_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return SysFail("io", "open runtime dir " + options.runtime_dir);
  // Shared: nothing of this session waits for it; a file system without flock just keeps the
  // session's directory from being swept as dead.
  (void)::flock(dir.Get(), LOCK_SH | LOCK_NB);
  *held = std::move(dir);
  return options.runtime_dir + "/gateway.sock";
}

}  // namespace anvil::gateway
