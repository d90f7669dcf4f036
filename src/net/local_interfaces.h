// This machine's interface addresses, read from the kernel (getifaddrs), and the connect policy
// built on them: the I/O half of the address policy, whose decisions (netpolicy/address_policy.h,
// netpolicy/connect_policy.h) stay pure.
#pragma once

#include <vector>

#include "common/result.h"
#include "netpolicy/connect_policy.h"
#include "netpolicy/ip_address.h"

namespace anvil {

// Every address assigned to a local interface, loopback included, each once.
Result<std::vector<IpAddress>> LocalInterfaceAddresses();

// The production connect policy: the current interface addresses. A snapshot; the gateway takes
// a new one per fetch, the proxy per connection.
Result<ConnectPolicy> ConnectPolicyForThisMachine(UnsafeTestOptions unsafe_test = {});

}  // namespace anvil
