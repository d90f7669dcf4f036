#include "net/local_interfaces.h"

#include <ifaddrs.h>

#include <algorithm>
#include <memory>
#include <utility>

namespace anvil {

Result<std::vector<IpAddress>> LocalInterfaceAddresses() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return SysFail("net", "getifaddrs");
  std::unique_ptr<ifaddrs, decltype(&::freeifaddrs)> owner(list, &::freeifaddrs);
  std::vector<IpAddress> addresses;
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    auto address = IpAddress::FromSockaddr(entry->ifa_addr);
    if (!address) continue;  // AF_PACKET and friends: not a connect target
    if (std::find(addresses.begin(), addresses.end(), *address) == addresses.end()) {
      addresses.push_back(*address);
    }
  }
  return addresses;
}

Result<ConnectPolicy> ConnectPolicyForThisMachine(UnsafeTestOptions unsafe_test) {
  ANVIL_TRY(local, LocalInterfaceAddresses());
  return ConnectPolicy(std::move(*local), std::move(unsafe_test));
}

}  // namespace anvil
