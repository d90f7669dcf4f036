// Root's sandbox runs as an unprivileged host id. A caller that is root would otherwise stay
// uid 0 of the host inside its user namespace: with every capability dropped it is still the
// owner of every root-owned file, so the kernel's own permission checks let it read the 0600
// keys in the runtime roots (/etc/ssl/private, /etc/sudoers.d, VPN keys), chmod the host's
// device nodes and /proc entries, and connect to root's sockets. Instead, uid and gid 0 of
// the sandbox's user namespace are mapped to kRootSandboxHostId, an id no user or file of the
// host has: to the kernel the command is a stranger to everything outside its workspace, with
// no list of files to keep and no scan (`id -u` inside still says 0).
//
// The caller's own trees (the workspace, --writable-root, a read-only workspace, the runner's
// workspace) are attached as idmapped mounts through that namespace, so host root's files
// there are inside-root's and what the command creates is owned by host root on disk, as
// before. Making an idmapped mount needs privilege over the file system's user namespace (the
// host's), so the supervisor, still real root outside, makes the detached trees once init is
// cloned and passes them to init, which attaches them into the view (mount_view.h).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "policy/sandbox_policy.h"

namespace anvil {

// The host uid and gid of root's sandbox (uid 0 inside). From the range systemd documents as
// unallocated (1879048192-2147483647), below 2^31 so that nothing treating ids as signed
// stumbles on it. It owns no file: the only files the command writes on the host go through
// idmapped mounts, which store them as host root's.
inline constexpr uint32_t kRootSandboxHostId = 2147483646;

// The roots of `view` that hold the caller's own files and are attached idmapped for root: every
// writable root (the caller gives the command that tree to change, wherever it is), every read
// root that is not at or beneath a runtime root (the read-only workspace: one inside /etc is the
// system's, shown as /etc is), and the workspace whose paths are bound one by one
// (workspace_base). A root beneath another one is listed too: only a tree's own mount is
// idmapped, and a nested root may be a file system of its own (a tmpfs named --writable-root).
// Pure.
std::vector<std::string> IdmappedRoots(const FileView& view);

// Directories of the host, shown in the view through a bind that is not idmapped (full read
// access's "/", a runtime root), that lie above an idmapped root and that the command cannot
// search (no execute bit for others: the sandbox's id is "other" to every host inode). The view
// covers each with an empty read-only tmpfs holding only the way down to the root, or the
// command could not reach its own workspace (a workspace under /root with full read access).
// Nothing is lost: the command could not look inside them anyway. `host_mode` is lstat's mode
// (nullopt: missing). At most one per root, the highest. Pure.
std::vector<std::string> UnsearchableAncestors(
    const FileView& view, const std::vector<std::string>& idmapped_roots,
    const std::function<std::optional<mode_t>(const std::string&)>& host_mode);

// Whether an id map (the text of /proc/PID/uid_map or gid_map: "INSIDE OUTSIDE COUNT" lines) maps
// inside id `id`. Pure.
bool IdMapCovers(const std::string& map_text, uint32_t id);

// Outside, in the supervisor (real root), once `init` is cloned into its new user namespace and
// waits in TakeRemappedIdentity: maps the namespace's uid and gid 0 to kRootSandboxHostId, makes
// a detached clone of each of `roots` (with the mounts beneath it) whose own mount, and only
// that one, is idmapped through that namespace — a file system mounted beneath keeps the host's
// owners — and sends them to init over `channel` (a SOCK_SEQPACKET socket). A root on a file system
// that cannot be idmapped (NFS, FUSE, ...) is an error naming the file system and the way out, and
// so is a caller that is root only of a user namespace without kRootSandboxHostId (a container).
Status PrepareRemappedInit(pid_t init, const std::vector<std::string>& roots, int channel);

// In init: waits for PrepareRemappedInit, takes the `count` trees it sends (in the order of the
// roots), and becomes uid and gid 0 of the namespace without supplementary groups (root's own
// groups, e.g. gid 0, would still open group-readable files). The id change clears the
// parent-death signal: the caller arms it again.
Result<std::vector<UniqueFd>> TakeRemappedIdentity(int channel, size_t count);

}  // namespace anvil
