// The loopback interface of a sandbox's own network namespace. A new network namespace has
// `lo` down: nothing, not even 127.0.0.1, is reachable until it is brought up.
#pragma once

#include "common/result.h"

namespace anvil {

// Brings `lo` of the calling process's network namespace up (127.0.0.1 and, where the kernel
// has IPv6, ::1). Needs CAP_NET_ADMIN over that namespace: the sandbox's init has it there.
Status BringLoopbackUp();

}  // namespace anvil
