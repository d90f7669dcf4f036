#include "common/std_fds.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace anvil {

bool EnsureStandardDescriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // The lowest free descriptor is `fd` itself: the ones below it are open by now. Not
    // close-on-exec: a child started later must find its standard descriptors open too.
    int got = ::open("/dev/null", O_RDWR | O_NOCTTY);
    if (got != fd) {
      if (got >= 0) ::close(got);
      return false;
    }
  }
  return true;
}

}  // namespace anvil
