// The sandbox home's directories that stand for the host's trusted caches in a run whose
// writable root holds them (policy/host_caches.h): made beneath the sandbox home and opened one
// component at a time without following a symbolic link (an earlier command wrote in them), so
// each bind is of the directory checked, by its inode.
#pragma once

#include <vector>

#include "common/result.h"
#include "policy/home_view.h"
#include "policy/host_autorun.h"
#include "policy/host_caches.h"

namespace anvil {

// One writable bind per shadowed place, from the sandbox home `home` (kPersistent) at the key
// of its place. Empty when the run has no persistent sandbox home (the caller keeps the caches
// read-only then). A "sandbox" error when a directory on the way is not a directory.
Result<std::vector<MappedBind>> CacheShadowBinds(const HomeView& home,
                                                 const std::vector<HostCachePlace>& places,
                                                 const std::vector<AutorunShadow>& shadowed);

// Makes `point.relative` beneath `point.source` (directories, 0700), without following a link.
Status MakeShadowMountPoint(const ShadowMountPoint& point);

}  // namespace anvil
