// Where a root of the view shows, by another name, a directory the host also reaches by its own
// path (pure; the mount table comes from /proc/self/mountinfo, linux/host_socket_facts.h).
//
// The protected places (the autorun table, the credential locations, Anvil's trust
// directories) are named by path, and a root is compared with them by path. A bind mount
// (`mount --bind ~ /work/alias`) shows the same directory at another path: a workspace there
// holds ~/.bashrc and ~/.ssh as /work/alias/.bashrc and /work/alias/.ssh, which no path string
// relates to the home. So every comparison also asks the file system: a directory is the
// pair (device, path within its file system) that mountinfo gives (the mount's root field and
// the path below its mount point), the same through every mount that shows it. From the roots
// and the mount table come the aliases: a host path and the path inside a root that shows the
// same directory. A place beneath an alias's host path is then also the place at the alias,
// shielded or masked there as at its own path; and a root that is an alias of a directory
// inside a place lies inside that place, refused as a root named there is.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "policy/host_autorun.h"
#include "policy/host_caches.h"
#include "policy/host_sockets.h"

namespace anvil {

// What reading /proc/self/mountinfo gave (linux/host_socket_facts.h ReadHostMountInfo): `read`
// false when it could not be opened or read through (`error` says why); else its mounts, and
// the lines that did not parse as a mount (`malformed`, the first of them in `first_malformed`).
struct MountInfoRead {
  bool read = false;
  std::string error;
  std::vector<HostMount> mounts;
  size_t malformed = 0;
  std::string first_malformed;
};

// The mount table the bind-alias protection works from, or the error that stops the start
// ("sandbox", naming the feature, what was wrong and the fix): a table that could not be read,
// holds no mount, or has a line that does not parse would hide every alias, or some, and leave
// the protection silently off.
Result<std::vector<HostMount>> MountTableForAliases(const MountInfoRead& read);

// The directory at host path `host` is shown at `alias` (inside a root) too. Never equal.
struct TreeAlias {
  std::string host;   // canonical, where the host's mounts show it
  std::string alias;  // canonical, at or beneath a root
  bool operator==(const TreeAlias&) const = default;
};

// The device and the path within its file system of canonical `path`, through the mount that
// shows it (the deepest mount point holding it; of those at one point, the one on top: the one
// no other there has as its parent, or with no ids known the last listed).
struct TreeKey {
  uint64_t dev = 0;
  std::string within;
  bool operator==(const TreeKey&) const = default;
};
std::optional<TreeKey> TreeKeyOf(const std::vector<HostMount>& mounts, const std::string& path);

// Every alias of `roots` (canonical) that can matter to `places` (the protected places, by
// every name the caller will ask about): each mount that shows part of a root (the root's own
// mount, and each mounted beneath it) against each other mount of the same device that shows
// the same directory, or one beneath or above it, where the host's path to it is the one that
// shows it (not covered by a deeper mount), and that host path holds a place or lies inside
// one. Sorted, once each. The work grows with the mounts that show a place, not with every
// bind mount of the host.
std::vector<TreeAlias> RootAliases(const std::vector<HostMount>& mounts,
                                   const std::vector<std::string>& roots,
                                   const std::vector<std::string>& places);

// Each place of `places` (absolute) beneath an alias's host path, as the alias shows it, where
// that is another path: what a root shows of the place by object. Once each, in order.
std::vector<std::string> PlacesThroughAliases(const std::vector<TreeAlias>& aliases,
                                              const std::vector<std::string>& places);

// `places` with, added at its end, each place of `named` (`places` themselves, or more names of
// them: their canonical forms) as the aliases show it (PlacesThroughAliases), once each.
std::vector<std::string> WithPlacesThroughAliases(const std::vector<TreeAlias>& aliases,
                                                  std::vector<std::string> places,
                                                  const std::vector<std::string>& named);

// `places` (policy/host_caches.h) with each place of them and of `real`'s (the same env with
// canonical bases) as the aliases show it, under the same key: the sandbox home's directory
// goes over the cache there too.
std::vector<HostCachePlace> CachePlacesThroughAliases(const std::vector<TreeAlias>& aliases,
                                                      std::vector<HostCachePlace> places,
                                                      const AutorunEnv& real);

// `root` is another name of `host`, which lies inside `place` (of `places`).
struct RootInsidePlace {
  std::string host;
  std::string place;
};
// The first place of `places` that holds another name of `root` (through an alias at or above
// it); nullopt when none does.
std::optional<RootInsidePlace> RootInsideByAlias(const std::vector<TreeAlias>& aliases,
                                                 const std::string& root,
                                                 const std::vector<std::string>& places);

}  // namespace anvil
