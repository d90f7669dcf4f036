#include "linux/loopback.h"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cstring>

#include "common/unique_fd.h"

namespace anvil {

Status BringLoopbackUp() {
  UniqueFd ctl(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!ctl) return SysFail("sandbox", "loopback: socket");
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(ctl.Get(), SIOCGIFFLAGS, &ifr) != 0) return SysFail("sandbox", "loopback: lo flags");
  if (ifr.ifr_flags & IFF_UP) return Ok();
  ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
  if (::ioctl(ctl.Get(), SIOCSIFFLAGS, &ifr) != 0)
    return SysFail("sandbox", "loopback: bring lo up");
  return Ok();
}

}  // namespace anvil
