// The real facts behind LocateHostSockets (policy/host_sockets.h): the host's bound Unix
// sockets from NETLINK_SOCK_DIAG (unix_diag: the name, the device and inode of the file each
// was bound to, its creator's uid, its type and state), their holders from /proc/PID/fd, lstat,
// readdir, access(2) and mountinfo, and for root the file a socket holds (a copy of the holder's
// descriptor by pidfd_getfd, then SIOCUNIXFILE: its link count and current path). Thin: no
// decision is made here.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/result.h"
#include "policy/host_sockets.h"
#include "policy/tree_alias.h"

namespace anvil {

// Every pathname socket in the caller's network namespace (abstract and unnamed ones have no
// file and are left out). Fails when the kernel cannot answer (no unix_diag).
Result<std::vector<BoundSocket>> ListBoundUnixSockets();

// The kernel's internal dev_t (major << 20 | minor: what unix_diag reports) as st_dev.
uint64_t DevFromKernel(uint32_t kernel_dev);

// The real facts, with `mounts` the host's mount table as the start read it (ReadHostMountInfo,
// checked by MountTableForAliases: one that could not be read stops the start before this).
HostSocketFacts RealHostSocketFacts(std::vector<HostMount> mounts);

// For HostFs::bound_unix_sockets: LocateHostSockets over the view's regions with the real
// facts and `mounts`. The answer is kept for the next call with the same regions (a launch
// computes its view twice).
std::function<Result<HostSocketMasks>(const FileView&)> HostSocketLocator(
    std::vector<HostMount> mounts);

// The mounts of /proc/self/mountinfo, in its order (one read), and whether it could be read
// (policy/tree_alias.h MountTableForAliases decides what the start does with it).
MountInfoRead ReadHostMountInfo();

// A field of /proc/self/mountinfo as the path it names: \ooo escapes (space, tab, newline,
// backslash) undone.
std::string UnescapeMountinfoField(const std::string& field);

}  // namespace anvil
