// Which paths of a sandbox's file view show a Unix socket that a host process has bound. A
// read-only mount does not stop connect(2), so every such path is covered by an empty file
// (FileView::masked_files). Sockets are identified by the device and inode of the file they
// were bound to, never by the name they were bound under: a daemon may bind a relative name,
// bind through "/proc/self/fd/N/name" (systemd's way past the 108-byte sun_path), or rename or
// hard-link the socket after binding; the name the kernel remembers is then no place to look,
// or the wrong one.
//
// Pure: every fact about the host is injected (HostSocketFacts); linux/host_socket_facts.h
// provides the real ones (NETLINK_SOCK_DIAG, /proc, lstat, readdir, mountinfo).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"

namespace anvil {

struct FileView;

// One pathname socket bound in the caller's network namespace.
struct BoundSocket {
  uint64_t socket_ino = 0;  // the socket's own inode: "socket:[N]" in /proc/PID/fd
  std::string name;         // sun_path as bound: absolute, relative, or through /proc/self/fd/N
  uint64_t dev = 0;         // device of the bound file, encoded as st_dev is
  uint64_t ino = 0;         // inode of the bound file (the kernel's table: its low 32 bits)
  // Who made the socket (unix_diag's UNIX_DIAG_UID, the creator's uid as the caller's user
  // namespace maps it); nullopt where the kernel does not say.
  std::optional<uint32_t> uid;
  // Whether connect(2) by path can reach this socket: a listening or a not yet connected stream
  // or seqpacket socket, or a datagram one. A connection accepted from a listener shares its
  // file and name but is never looked up by path (the kernel finds only the bound socket), and
  // it is made with uid 0 whoever the listener's owner is: it does not make the file a target.
  bool connectable = true;
};

// The file a socket was bound to, as the kernel still holds it (SIOCUNIXFILE through a
// descriptor of the socket taken from its holder; root only): its link count, 0 once every
// name was unlinked, and the path its bound name has now (renames move it; empty or ending in
// " (deleted)" when that name was unlinked).
struct BoundFile {
  uint64_t dev = 0;
  uint64_t ino = 0;
  uint64_t nlink = 0;
  std::string path;
};

// lstat(2) of a path (the last component is never followed).
struct PathNode {
  enum class Type { kSocket, kDirectory, kOther } type = Type::kOther;
  uint64_t dev = 0;  // st_dev
  // The device of the mount the path is on (mountinfo's major:minor, the superblock's): where a
  // file system reports another st_dev (btrfs subvolumes), this is the one the kernel's socket
  // table names. 0 when unknown.
  uint64_t mount_dev = 0;
  uint64_t ino = 0;
  uint64_t nlink = 0;
};

// One entry of a directory the scan reads. Its own name: another anvil::DirEntry (fs/) with a
// different layout would be an ODR violation, and the vector code of one would serve the other.
struct SocketScanEntry {
  std::string name;
  PathNode::Type type = PathNode::Type::kOther;
  bool type_known = true;  // false: readdir said DT_UNKNOWN, ask lstat
};

// What the caller may do with a directory (access(2) with its own ids; EACCES is "may not").
struct DirAccess {
  bool search = true;  // look names up in it (x)
  bool read = true;    // list it (r)
  uint32_t owner = 0;  // st_uid: only the owner can change the mode
};

// One line of /proc/self/mountinfo.
struct HostMount {
  std::string path;  // mount point, canonical
  std::string root;  // the directory of the file system mounted there ("/" for all of it)
  uint64_t dev = 0;  // major:minor, encoded as st_dev is
  // mountinfo's mount id and its parent's; 0 when unknown (then, of the mounts at one point,
  // the last listed is the one on top).
  uint64_t id = 0;
  uint64_t parent = 0;
};

struct HostSocketFacts {
  std::function<Result<std::vector<BoundSocket>>()> sockets;
  // A process holding each of `socket_inos` (its pid), as far as /proc lets the caller see.
  std::function<std::map<uint64_t, int>(const std::set<uint64_t>& socket_inos)> owners;
  // realpath(3): the canonical absolute path, when `path` exists.
  std::function<std::optional<std::string>(const std::string& path)> canonical;
  std::function<std::optional<PathNode>(const std::string& path)> lstat;
  // The entries of a directory (without "." and ".."); nullopt when it cannot be read.
  std::function<std::optional<std::vector<SocketScanEntry>>(const std::string& dir)> list_dir;
  std::function<std::vector<HostMount>()> mounts;
  // stat(2) and access(2) of a directory (not followed if a link): nullopt when it is gone, is
  // no directory, or cannot be looked at (a directory above it denies the search). Asked only
  // where a name could not be looked up or a directory read. Empty function: never known.
  std::function<std::optional<DirAccess>(const std::string& dir)> dir_access;
  // The bound file of the socket `socket_ino` held by process `pid`; nullopt when the caller may
  // not ask (not root, ptrace refused) or it is gone. Empty function: never known.
  std::function<std::optional<BoundFile>(uint64_t socket_ino, int pid)> bound_file;
  // The caller's uid: sockets made by it or by root (uid 0) that are not found where their name
  // says are searched for in the whole view; another user's are not (docs/policy.md, "Host Unix
  // sockets"). nullopt: every socket is searched for, and every locked directory is the
  // caller's (HostSocketMasks::locked_dirs).
  std::optional<uint32_t> caller_uid;
};

// What the view must cover: each path at which it shows a host socket (an empty file goes over
// it), and each directory the caller owns but may not search or list, in the way of a socket
// that may lie beneath it (an empty read-only directory goes over it). The command runs as the
// directory's owner and could chmod it: what the search could not see beneath it is unknown,
// socket or not, and none of it is shown. Sorted; none beneath another.
struct HostSocketMasks {
  std::vector<std::string> sockets;
  std::vector<std::string> locked_dirs;
};

// What a search did, for tests and the error messages: the directories the search of the
// view's file systems (step 4) read, and why sockets needed none.
struct HostSocketSearch {
  size_t searched_dirs = 0;  // directories read by the search of the view (not the name's)
  size_t unlinked = 0;       // sockets whose file has no name left (BoundFile: nlink 0)
  size_t others = 0;         // another user's sockets not where their name says: not searched
};

// A tree of the host that the view shows: `root` and everything beneath it except `excluded`.
struct ViewRegion {
  std::string root;
  std::vector<std::string> excluded;
};
// The regions of a view: its read roots, its writable roots, the sources of its mapped binds
// (the command's home), or all of "/" but the places the view replaces with its own (/dev,
// /proc, /tmp, /run) under full read access. Not the readable
// paths of a workspace bound piece by piece (sys.exec): nothing may be mounted beneath those.
std::vector<ViewRegion> ViewRegionsOf(const FileView& view);

// Bounds: more distinct bound socket files of the caller's and root's than kMaxHostSockets, or
// a search that would read more than `max_entries` directory entries in all, and the sandbox
// does not start (a socket not found is a socket not hidden).
inline constexpr size_t kMaxHostSockets = 20000;  // the caller's and root's
// Another user's sockets are looked for where their names say, up to this many per user; the
// rest are left alone (they lead only to that user's processes).
inline constexpr size_t kMaxOtherUserSockets = 1000;
inline constexpr size_t kMaxSocketSearchEntries = 1000000;

// Every path inside `regions` at which one of the host's bound sockets can be reached, each
// canonical. Only sockets connect(2) can reach count (BoundSocket::connectable). A socket file
// mounted on its own (a file bind mount, whose source name may be gone) is taken where the
// view shows the mount. A socket is looked for where its name says (absolute names; relative
// names in the cwd of a process holding it; "/proc/self/..." names in that process's /proc
// entry; in that process's root), then in the directory of each of those names (a rename or
// link next to it), then, where the caller may ask the kernel (BoundFile), at the path its bound
// name has now; a file with no name left (nlink 0) is unreachable and needs nothing more. A
// socket of the caller's or root's with fewer links found than its link count (or none) is then
// searched for in every directory of the regions on its device, bounded by `max_entries`;
// another user's is not (it can only be elsewhere because that user put it there). Each link
// found is also taken through every other mount of the same file system that shows it (bind
// mounts). `search`, when given, says what the search did.
// A directory in the way that the caller owns and may not search (or, to read it, list) is a
// locked directory when a socket may be beneath it: a socket's name leads into it, or the
// search met it on a file system where a socket of the caller's or root's was not found
// (the whole of that file system the view shows was read then, so every one is met). One of
// another user's stays as it is: the command can no more change it than search it.
Result<HostSocketMasks> LocateHostSockets(const std::vector<ViewRegion>& regions,
                                          const HostSocketFacts& facts,
                                          size_t max_entries = kMaxSocketSearchEntries,
                                          HostSocketSearch* search = nullptr);

}  // namespace anvil
