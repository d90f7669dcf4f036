// The per-user counts the kernel keeps in every user namespace (/proc/sys/user/max_*: inotify
// instances and watches, fanotify groups and marks, namespaces of each kind). A process's use is
// charged at every level of its user-namespace chain, so a sandbox's inotify instances count
// against its caller's host-wide quota (max_user_instances, 128 by default): a sandboxed command
// could take them all and make the caller's own editor, file watchers and build tools fail
// (EMFILE) while it runs. The sandbox's init, which owns the sandbox's user namespace, lowers
// that namespace's limits to a part of the caller's, so the caller keeps the rest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace anvil {

struct UserNsLimit {
  std::string name;  // file name under /proc/sys/user
  uint64_t value = 0;
};

// The share of each of the caller's limits a sandbox gets: a quarter, at least 1 (where the
// caller has any), so that the caller keeps three quarters even beside a hogging sandbox. Pure.
inline constexpr uint64_t kSandboxShareDivisor = 4;
std::vector<UserNsLimit> SandboxUserNsLimits(const std::vector<UserNsLimit>& caller);

// The caller's limits, as its own user namespace has them (read before the sandbox's namespace
// exists: inside a new namespace every limit starts unlimited). The ones this kernel lacks are
// left out.
std::vector<UserNsLimit> ReadUserNsLimits();

// In init, in its new user namespace (where it holds CAP_SYS_RESOURCE): writes `limits`. A
// limit that cannot be written is an error naming it.
Status ApplyUserNsLimits(const std::vector<UserNsLimit>& limits);

}  // namespace anvil
