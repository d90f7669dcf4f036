#include "linux/protected_placeholders.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace anvil {

Result<ProtectedPlaceholders> ProtectedPlaceholders::Create(const std::vector<std::string>& roots,
                                                            const std::vector<std::string>& names) {
  ProtectedPlaceholders out;
  for (const auto& root : roots) {
    UniqueFd dir(::open(root.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) return SysFail("sandbox", "open writable root " + root);
    for (const auto& name : names) {
      struct stat st {};
      if (::fstatat(dir.Get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) continue;
      if (errno != ENOENT) return SysFail("sandbox", "stat " + root + "/" + name);
      if (::mkdirat(dir.Get(), name.c_str(), 0755) != 0) {
        if (errno == EEXIST) continue;  // made meanwhile: the view protects what is there
        if (errno == EACCES || errno == EPERM || errno == EROFS) continue;
        return SysFail("sandbox", "create the read-only placeholder " + root + "/" + name);
      }
      if (::fstatat(dir.Get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
          !S_ISDIR(st.st_mode)) {
        return SysFail("sandbox", "stat the placeholder " + root + "/" + name);
      }
      UniqueFd parent(::fcntl(dir.Get(), F_DUPFD_CLOEXEC, 0));
      if (!parent) return SysFail("sandbox", "dup");
      out.made_.push_back({std::move(parent), root, name, st.st_dev, st.st_ino});
    }
  }
  return out;
}

ProtectedPlaceholders::~ProtectedPlaceholders() {
  for (const auto& m : made_) {
    struct stat st {};
    if (::fstatat(m.parent.Get(), m.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISDIR(st.st_mode) || st.st_dev != m.dev || st.st_ino != m.ino) continue;
    // Fails (ENOTEMPTY) when someone outside the sandbox put something in it meanwhile, e.g.
    // the user ran `git init`: then it is theirs and stays.
    (void)::unlinkat(m.parent.Get(), m.name.c_str(), AT_REMOVEDIR);
  }
}

std::vector<std::string> ProtectedPlaceholders::Paths() const {
  std::vector<std::string> paths;
  for (const auto& m : made_) paths.push_back(m.root + "/" + m.name);
  return paths;
}

}  // namespace anvil
