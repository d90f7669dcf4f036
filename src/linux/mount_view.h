// Builds the file view of a FileView inside a fresh mount namespace, bubblewrap-style: a tmpfs
// root, the runtime roots bound read-only, the writable roots bound read-write, then every
// read-only subpath (.git, .anvil, ...) bound read-only on top, a minimal /dev, a new /proc and
// a private /tmp; then pivot_root into it and detach the host's tree. Runs in the sandbox's
// init process, after it entered its user/mount/pid namespaces.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "policy/sandbox_policy.h"

namespace anvil {

struct MountViewOptions {
  bool mount_proc = true;     // needs a pid namespace owned by our user namespace
  uint64_t tmp_size = 1ULL << 30;
};

Status BuildMountView(const FileView& view, const MountViewOptions& options);

// After BuildMountView: checks that the walls are really there (root is our tmpfs, every
// read-only path is on a read-only mount). A view that fails this never runs a command.
Status VerifyMountView(const FileView& view);

}  // namespace anvil
