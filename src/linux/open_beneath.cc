#include "linux/open_beneath.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace anvil {

Result<UniqueFd> OpenBeneath(const std::string& base, const std::string& relative) {
  UniqueFd dir(::open(base.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return SysFail("sandbox", "open " + base);
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  long fd = syscall(SYS_openat2, dir.Get(), relative.c_str(), &how, sizeof(how));
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR || errno == EXDEV || errno == ELOOP) return UniqueFd();
    return SysFail("sandbox", "open " + relative + " beneath " + base);
  }
  return UniqueFd(static_cast<int>(fd));
}

}  // namespace anvil
