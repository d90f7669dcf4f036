// LocateHostSockets: host sockets are found by device and inode, whatever name they were bound
// under (table tests over a fake host), and the real facts agree with the kernel. One thing:
// the tables of the one search, past 600 lines.
#include "policy/host_sockets.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include "linux/host_socket_facts.h"
#include "policy/sandbox_policy.h"

namespace anvil {
namespace host_sockets_test {
namespace {

using Type = PathNode::Type;

// A fake host tree: nodes by canonical path, symlinks (prefix rewrites, like /proc/PID/cwd),
// mounts, the socket table and who holds which socket.
struct FakeHost {
  std::map<std::string, PathNode> nodes;
  std::map<std::string, std::string> links;
  std::vector<HostMount> mounts = {{"/", "/", 1}};
  std::vector<BoundSocket> sockets;
  std::map<uint64_t, int> holders;
  std::set<std::string> unknown_type;  // readdir reports DT_UNKNOWN for these
  std::vector<std::string> listed;     // directories read, in order
  std::optional<uint32_t> caller_uid;
  std::map<uint64_t, BoundFile> bound_files;  // by socket inode: what SIOCUNIXFILE would say
  HostSocketSearch search;                    // of the last Locate
  std::vector<std::string> locked;            // HostSocketMasks::locked_dirs of the last Locate
  // Directories the caller may not search (x) or read (r), and their owners (default: 1000).
  std::set<std::string> no_search, no_read;
  std::map<std::string, uint32_t> owner;
  bool access_known = true;  // HostSocketFacts::dir_access is given
  uint64_t next_ino = 1000;

  // A directory above `path` denies the search: nothing of `path` can be looked at.
  bool Hidden(const std::string& path) const {
    return std::any_of(no_search.begin(), no_search.end(),
                       [&](const std::string& d) { return path != d && PathIsWithin(path, d); });
  }

  void Dir(const std::string& path, uint64_t dev = 1) {
    if (nodes.count(path)) return;
    if (path != "/") Dir(path.substr(0, std::max<size_t>(1, path.rfind('/'))), dev);
    nodes[path] = PathNode{Type::kDirectory, dev, 0, next_ino++, 2};
  }
  void Sock(const std::string& path, uint64_t ino, uint64_t nlink = 1, uint64_t dev = 1) {
    Dir(path.substr(0, std::max<size_t>(1, path.rfind('/'))), dev);
    nodes[path] = PathNode{Type::kSocket, dev, 0, ino, nlink};
  }
  void File(const std::string& path, uint64_t dev = 1) {
    Dir(path.substr(0, std::max<size_t>(1, path.rfind('/'))), dev);
    nodes[path] = PathNode{Type::kOther, dev, 0, next_ino++, 1};
  }
  void Bound(const std::string& name, uint64_t ino, uint64_t socket_ino = 0, uint64_t dev = 1,
             std::optional<uint32_t> uid = std::nullopt, bool connectable = true) {
    sockets.push_back({socket_ino, name, dev, ino, uid, connectable});
  }

  HostSocketFacts Facts() {
    HostSocketFacts f;
    f.sockets = [this]() -> Result<std::vector<BoundSocket>> { return sockets; };
    f.owners = [this](const std::set<uint64_t>& wanted) {
      std::map<uint64_t, int> out;
      for (uint64_t s : wanted) {
        if (auto it = holders.find(s); it != holders.end()) out[s] = it->second;
      }
      return out;
    };
    f.canonical = [this](const std::string& path) -> std::optional<std::string> {
      std::string p = path;
      for (int round = 0; round < 8; ++round) {
        bool changed = false;
        for (const auto& [from, to] : links) {
          if (PathIsWithin(p, from)) {
            p = to + p.substr(from.size());
            changed = true;
          }
        }
        if (!changed) break;
      }
      while (p.size() > 1 && p.back() == '/') p.pop_back();
      if (!nodes.count(p) || Hidden(p)) return std::nullopt;
      return p;
    };
    f.lstat = [this](const std::string& path) -> std::optional<PathNode> {
      if (Hidden(path)) return std::nullopt;
      auto it = nodes.find(path);
      if (it == nodes.end()) return std::nullopt;
      return it->second;
    };
    f.list_dir = [this](const std::string& dir) -> std::optional<std::vector<SocketScanEntry>> {
      auto it = nodes.find(dir);
      if (it == nodes.end() || it->second.type != Type::kDirectory) return std::nullopt;
      if (Hidden(dir) || no_read.count(dir)) return std::nullopt;
      listed.push_back(dir);
      std::vector<SocketScanEntry> out;
      for (const auto& [path, node] : nodes) {
        if (path == "/" || path.substr(0, std::max<size_t>(1, path.rfind('/'))) != dir) continue;
        SocketScanEntry e;
        e.name = path.substr(path.rfind('/') + 1);
        e.type = node.type;
        e.type_known = !unknown_type.count(path);
        out.push_back(e);
      }
      return out;
    };
    f.mounts = [this]() { return mounts; };
    if (access_known) {
      f.dir_access = [this](const std::string& dir) -> std::optional<DirAccess> {
        auto it = nodes.find(dir);
        if (it == nodes.end() || it->second.type != Type::kDirectory || Hidden(dir)) {
          return std::nullopt;
        }
        auto o = owner.find(dir);
        return DirAccess{!no_search.count(dir), !no_read.count(dir),
                         o == owner.end() ? 1000u : o->second};
      };
    }
    if (!bound_files.empty()) {
      f.bound_file = [this](uint64_t socket_ino, int) -> std::optional<BoundFile> {
        auto it = bound_files.find(socket_ino);
        if (it == bound_files.end()) return std::nullopt;
        return it->second;
      };
    }
    f.caller_uid = caller_uid;
    return f;
  }

  Result<std::vector<std::string>> Locate(const std::vector<ViewRegion>& regions,
                                          size_t budget = kMaxSocketSearchEntries) {
    listed.clear();
    search = {};
    locked.clear();
    auto facts = Facts();
    auto masks = LocateHostSockets(regions, facts, budget, &search);
    if (!masks) return tl::unexpected(masks.error());
    locked = masks->locked_dirs;
    return masks->sockets;
  }
};

using Paths = std::vector<std::string>;
const std::vector<ViewRegion> kWorkspace = {{"/ws", {}}};

TEST(LocateHostSockets, AnAbsoluteNameThatStillNamesTheSocketIsTakenWithoutASearch) {
  FakeHost h;
  h.Dir("/ws/big");
  for (int i = 0; i < 50; ++i) h.File("/ws/big/f" + std::to_string(i));
  h.Sock("/ws/a.sock", 10);
  h.Bound("/ws/a.sock", 10);
  h.Bound("/ws/a.sock", 10);  // a connection it accepted: the same file
  auto found = h.Locate(kWorkspace);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, Paths{"/ws/a.sock"});
  EXPECT_TRUE(h.listed.empty()) << "searched " << h.listed.size() << " directories";
}

TEST(LocateHostSockets, ARelativeNameIsTakenInTheCwdOfAProcessHoldingIt) {
  FakeHost h;
  h.Sock("/ws/sub/rel.sock", 11);
  h.Bound("rel.sock", 11, /*socket_ino=*/501);
  h.holders[501] = 42;
  h.links["/proc/42/cwd"] = "/ws/sub";
  h.Dir("/proc/42");
  auto found = h.Locate(kWorkspace);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, Paths{"/ws/sub/rel.sock"});
  EXPECT_TRUE(h.listed.empty());
}

TEST(LocateHostSockets, AProcSelfFdNameIsTakenThroughThatProcessesDescriptor) {
  // systemd binds names longer than sun_path through "/proc/self/fd/N/name".
  for (const char* name :
       {"/proc/self/fd/7/long.sock", "/proc/thread-self/fd/7/long.sock", "/dev/fd/7/long.sock"}) {
    FakeHost h;
    h.Sock("/ws/deep/long.sock", 12);
    h.Bound(name, 12, 502);
    h.holders[502] = 43;
    h.links["/proc/43/fd/7"] = "/ws/deep";
    h.Dir("/proc/43/fd");
    auto found = h.Locate(kWorkspace);
    ASSERT_TRUE(found) << found.error().ToString();
    EXPECT_EQ(*found, Paths{"/ws/deep/long.sock"}) << name;
  }
}

TEST(LocateHostSockets, ASocketRenamedNextToItsNameIsFoundInThatDirectory) {
  // ssh's ControlMaster: bind "cm.XXXX", link "cm", unlink the first.
  FakeHost h;
  h.Sock("/ws/ssh/cm", 13);
  h.File("/ws/ssh/config");
  h.Dir("/ws/other");
  h.Bound("/ws/ssh/cm.XXXX", 13);
  auto found = h.Locate(kWorkspace);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, Paths{"/ws/ssh/cm"});
  EXPECT_EQ(h.listed, Paths{"/ws/ssh"}) << "only its directory is read";
}

TEST(LocateHostSockets, ASocketMovedElsewhereOrWhoseHolderIsUnknownIsFoundBySearchingTheView) {
  FakeHost h;
  h.Sock("/ws/b/c/moved.sock", 14);
  h.Dir("/ws/a");
  h.Bound("/ws/a/x.sock", 14);
  h.Sock("/ws/d/rel.sock", 15);
  h.Bound("rel.sock", 15, 503);  // no holder visible (another user's process)
  h.Sock("/ws/e/renamed-in-place", 16);
  h.Bound("/proc/self/fd/3/name", 16, 504);  // holder unknown
  h.unknown_type.insert("/ws/e/renamed-in-place");
  h.unknown_type.insert("/ws/b");
  auto found = h.Locate(kWorkspace);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, (Paths{"/ws/b/c/moved.sock", "/ws/d/rel.sock", "/ws/e/renamed-in-place"}));
}

TEST(LocateHostSockets, EveryHardLinkOfASocketIsFound) {
  FakeHost h;
  h.Sock("/ws/a.sock", 17, /*nlink=*/3);
  h.Sock("/ws/x/y/b.sock", 17, 3);
  h.Sock("/home/u/c.sock", 17, 3);  // the third link, outside the view
  h.Bound("/ws/a.sock", 17);
  auto found = h.Locate(kWorkspace);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, (Paths{"/ws/a.sock", "/ws/x/y/b.sock"}));
}

TEST(LocateHostSockets, ANameThatNowNamesAnotherFileIsNotTheSocket) {
  FakeHost h;
  h.Sock("/ws/api.sock", 99);  // a different socket now holds the name
  h.Sock("/ws/old/api.sock", 18);
  h.Bound("/ws/api.sock", 18);
  auto found = h.Locate(kWorkspace);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, Paths{"/ws/old/api.sock"});
}

TEST(LocateHostSockets, SocketsTheViewDoesNotShowAreNotMaskedAndCostNoSearch) {
  FakeHost h;
  h.Dir("/ws");
  h.Dir("/run", 7);
  h.mounts.push_back({"/run", "/", 7});
  h.Sock("/run/docker.sock", 19, 1, 7);
  h.Bound("/run/docker.sock", 19, 0, 7);
  h.Bound("/run/gone.sock", 20, 0, 7);  // unlinked; its file system is not in the view
  h.Sock("/home/u/s.sock", 21);
  h.Bound("/home/u/s.sock", 21);
  auto found = h.Locate(kWorkspace);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_TRUE(found->empty());
  EXPECT_TRUE(h.listed.empty()) << h.listed.front();
}

TEST(LocateHostSockets, FullReadShowsAllButWhatTheViewReplaces) {
  FakeHost h;
  h.Dir("/tmp", 5);
  h.mounts.push_back({"/tmp", "/", 5});
  h.Sock("/tmp/.X11-unix/X0", 22, 1, 5);
  h.Bound("/tmp/.X11-unix/X0", 22, 0, 5);
  h.Sock("/tmp/ws/dev.sock", 23, 1, 5);  // a workspace under /tmp is bound over the private /tmp
  h.Bound("/tmp/ws/dev.sock", 23, 0, 5);
  h.Sock("/home/u/.gnupg/S.gpg-agent", 24);
  h.Bound("/home/u/.gnupg/S.gpg-agent", 24);
  std::vector<ViewRegion> regions = {{"/", {"/dev", "/proc", "/tmp", "/run"}}, {"/tmp/ws", {}}};
  auto found = h.Locate(regions);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, (Paths{"/home/u/.gnupg/S.gpg-agent", "/tmp/ws/dev.sock"}));
}

TEST(LocateHostSockets, TheSearchStaysOnTheSocketsFileSystemAndSkipsWhatTheViewReplaces) {
  FakeHost h;
  h.Dir("/data", 3);
  h.mounts.push_back({"/data", "/", 3});
  for (int i = 0; i < 20; ++i) h.File("/data/f" + std::to_string(i), 3);
  h.Dir("/tmp/x");
  h.Sock("/srv/found.sock", 25);
  h.Bound("/nowhere/x.sock", 25);
  std::vector<ViewRegion> regions = {{"/", {"/tmp"}}};
  auto found = h.Locate(regions);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, Paths{"/srv/found.sock"});
  for (const auto& d : h.listed) {
    EXPECT_FALSE(PathIsWithin(d, "/data")) << d << ": another file system";
    EXPECT_FALSE(PathIsWithin(d, "/tmp")) << d << ": replaced by the view";
  }
}

TEST(LocateHostSockets, ABindMountOfTheSocketsDirectoryIsMaskedToo) {
  FakeHost h;
  h.Sock("/data/run/s.sock", 26);
  h.Bound("/data/run/s.sock", 26);
  h.mounts.push_back({"/ws/alias", "/data", 1});  // mount --bind /data /ws/alias
  h.Sock("/ws/alias/run/s.sock", 26);
  auto found = h.Locate(kWorkspace);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, Paths{"/ws/alias/run/s.sock"});
}

TEST(LocateHostSockets, AFileSystemWithItsOwnStDevIsMatchedByItsMountsDevice) {
  // btrfs subvolumes report an st_dev of their own; the socket table names the superblock's.
  FakeHost h;
  h.Sock("/ws/sub/vol.sock", 27, 1, /*dev=*/44);
  h.nodes["/ws/sub/vol.sock"].mount_dev = 1;
  h.Bound("/ws/sub/vol.sock", 27, 0, 1);
  auto found = h.Locate(kWorkspace);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, Paths{"/ws/sub/vol.sock"});
}

// A tree the search of the view would have to read: 30 directories of files.
void BigTree(FakeHost& h) {
  for (int d = 0; d < 30; ++d) {
    for (int f = 0; f < 5; ++f) h.File("/ws/t" + std::to_string(d) + "/f" + std::to_string(f));
  }
}

TEST(LocateHostSockets, AnotherUsersSocketNotWhereItsNameSaysStartsNoSearch) {
  // Any user can bind a socket and unlink it (or link it into a directory of theirs, or bind a
  // relative name the caller cannot resolve): searching the whole view for it at every start
  // would let that user slow down, or past the bound fail, everybody's sandboxes.
  for (uint32_t caller : {0u, 1000u}) {
    FakeHost h;
    BigTree(h);
    h.caller_uid = caller;
    h.Bound("/home/u2/gone.sock", 40, 601, 1, /*uid=*/1001);
    h.Bound("rel.sock", 41, 602, 1, /*uid=*/1001);  // holder not visible to the caller
    h.Sock("/ws/t3/moved-by-u2.sock", 42);
    h.Bound("/home/u2/m.sock", 42, 603, 1, /*uid=*/1001);
    auto found = h.Locate(kWorkspace);
    ASSERT_TRUE(found) << found.error().ToString();
    EXPECT_EQ(h.search.searched_dirs, 0u) << "caller " << caller;
    EXPECT_TRUE(h.listed.empty()) << "caller " << caller << " read " << h.listed.front();
    EXPECT_EQ(h.search.others, 3u);
    EXPECT_TRUE(found->empty());  // another user's, put there by that user: theirs to offer
  }
  // Benign: a socket of the caller's own, or of root's, moved into the view is still searched
  // for and masked, by either caller.
  for (uint32_t owner : {1000u, 0u}) {
    FakeHost h;
    BigTree(h);
    h.caller_uid = 1000;
    h.Sock("/ws/t7/moved.sock", 43);
    h.Bound("/home/u/was-here.sock", 43, 604, 1, owner);
    auto found = h.Locate(kWorkspace);
    ASSERT_TRUE(found) << found.error().ToString();
    EXPECT_EQ(*found, Paths{"/ws/t7/moved.sock"}) << "owner " << owner;
    EXPECT_GT(h.search.searched_dirs, 0u);
  }
  // A kernel that does not say who made a socket: searched for, as before.
  FakeHost unknown;
  unknown.caller_uid = 1000;
  unknown.Sock("/ws/t1/x.sock", 44);
  unknown.Bound("/elsewhere/x.sock", 44);
  auto found = unknown.Locate(kWorkspace);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, Paths{"/ws/t1/x.sock"});
}

TEST(LocateHostSockets, WhereTheKernelSaysTheFileHasNoNameLeftNothingIsSearched) {
  // Root may ask the kernel for the file a socket holds: a link count of 0 means no path can
  // reach it any more; a rename is followed to where the bound name is now.
  FakeHost h;
  BigTree(h);
  h.caller_uid = 0;
  h.Bound("/ws/unlinked.sock", 45, 605, 1, 0u);
  h.holders[605] = 90;
  h.bound_files[605] = BoundFile{1, 45, 0, "/ws/unlinked.sock (deleted)"};
  h.Sock("/ws/t9/renamed.sock", 46);
  h.Bound("/ws/before.sock", 46, 606, 1, 1001u);  // another user's, renamed into the view
  h.holders[606] = 91;
  h.bound_files[606] = BoundFile{1, 46, 1, "/ws/t9/renamed.sock"};
  auto found = h.Locate(kWorkspace);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(h.search.searched_dirs, 0u);
  EXPECT_EQ(h.search.unlinked, 1u);
  // Another user's socket is not asked about (nor searched for); the caller's own renamed one is
  // found where the kernel says.
  EXPECT_TRUE(found->empty());
  FakeHost own;
  own.caller_uid = 0;
  BigTree(own);
  own.Sock("/ws/t9/renamed.sock", 47);
  own.Bound("/ws/before.sock", 47, 607, 1, 0u);
  own.holders[607] = 92;
  own.bound_files[607] = BoundFile{1, 47, 1, "/ws/t9/renamed.sock"};
  found = own.Locate(kWorkspace);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, Paths{"/ws/t9/renamed.sock"});
  EXPECT_EQ(own.search.searched_dirs, 0u);
  // Linked elsewhere and the bound name unlinked: one link left, not at the path the kernel has
  // (deleted); the search finds it.
  FakeHost linked;
  linked.caller_uid = 0;
  BigTree(linked);
  linked.Sock("/ws/t4/link.sock", 48);
  linked.Bound("/ws/orig.sock", 48, 608, 1, 0u);
  linked.holders[608] = 93;
  linked.bound_files[608] = BoundFile{1, 48, 1, "/ws/orig.sock (deleted)"};
  found = linked.Locate(kWorkspace);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, Paths{"/ws/t4/link.sock"});
}

// A directory the caller owns but may not search or list hides what is beneath it from the
// search, and the command, its owner, could chmod it: where a socket may be beneath it, it is a
// locked directory (covered by an empty read-only one). Mode 0 (neither), 0600 (listed, no
// name looked up) and 0100 (names looked up, not listed).
TEST(LocateHostSockets, TheCallersLockedDirectoryASocketMayBeBeneathIsCovered) {
  struct Case {
    const char* what;
    bool search, read;
    std::optional<uint32_t> socket_uid;
    const char* name;  // as bound
  };
  const Case cases[] = {
      {"mode 0, root's daemon", false, false, 0u, "/ws/closed/d.sock"},
      {"mode 0, the caller's own", false, false, 1000u, "/ws/closed/d.sock"},
      {"mode 0, another user's", false, false, 1001u, "/ws/closed/d.sock"},
      {"mode 0, deeper", false, false, 0u, "/ws/closed/sub/d.sock"},
      {"mode 0, bound elsewhere and moved in", false, false, 0u, "/ws/before.sock"},
      {"mode 0600, root's", false, true, 0u, "/ws/closed/d.sock"},
      {"mode 0600, moved in deeper", false, true, 0u, "/ws/before.sock"},
      {"mode 0100, moved in", true, false, 1000u, "/ws/before.sock"},
  };
  for (const auto& c : cases) {
    FakeHost h;
    h.caller_uid = 1000;
    BigTree(h);
    const std::string real = std::string(c.name) == "/ws/before.sock"
                                 ? (c.read ? "/ws/closed/sub/d.sock" : "/ws/closed/d.sock")
                                 : c.name;
    h.Sock(real, 60);
    h.Bound(c.name, 60, 620, 1, c.socket_uid);
    if (!c.search) h.no_search.insert("/ws/closed");
    if (!c.read) h.no_read.insert("/ws/closed");
    auto found = h.Locate(kWorkspace);
    ASSERT_TRUE(found) << c.what << ": " << found.error().ToString();
    EXPECT_EQ(*found, Paths{}) << c.what;
    EXPECT_EQ(h.locked, Paths{"/ws/closed"}) << c.what;
  }
}

TEST(LocateHostSockets, AnotherUsersLockedDirectoryStaysAsItIs) {
  // Only its owner can change its mode, and nothing of the sandbox is that user: the command
  // can no more reach beneath it than the search can. Root searches everything anyway.
  for (std::optional<uint32_t> socket_uid : {std::optional<uint32_t>(0u), {1000u}, {1001u}}) {
    FakeHost h;
    h.caller_uid = 1000;
    h.Sock("/ws/theirs/d.sock", 61);
    h.Bound("/ws/theirs/d.sock", 61, 621, 1, socket_uid);
    h.no_search.insert("/ws/theirs");
    h.no_read.insert("/ws/theirs");
    h.owner["/ws/theirs"] = 1001;
    auto found = h.Locate(kWorkspace);
    ASSERT_TRUE(found) << found.error().ToString();
    EXPECT_EQ(*found, Paths{});
    EXPECT_EQ(h.locked, Paths{});
  }
  // An unknown caller (caller_uid nullopt) counts every locked directory as its own.
  FakeHost h;
  h.Sock("/ws/theirs/d.sock", 61);
  h.Bound("/ws/theirs/d.sock", 61, 621, 1, 0u);
  h.no_search.insert("/ws/theirs");
  h.owner["/ws/theirs"] = 1001;
  ASSERT_TRUE(h.Locate(kWorkspace));
  EXPECT_EQ(h.locked, Paths{"/ws/theirs"});
  // Facts that cannot say (no dir_access): nothing is locked, as before.
  h.access_known = false;
  ASSERT_TRUE(h.Locate(kWorkspace));
  EXPECT_EQ(h.locked, Paths{});
}

TEST(LocateHostSockets, ALockedDirectoryNoSocketCanBeBeneathStaysAsItIs) {
  // Every socket found elsewhere (all its links): nothing more is beneath the caller's locked
  // directory, which is shown as it is (the command may chmod it and use what it holds).
  FakeHost h;
  h.caller_uid = 1000;
  BigTree(h);
  h.File("/ws/private/notes");
  h.no_search.insert("/ws/private");
  h.no_read.insert("/ws/private");
  h.Sock("/ws/t5/moved.sock", 62);  // searched for, and found before or after the directory
  h.Bound("/ws/a/bound.sock", 62, 622, 1, 0u);
  h.Sock("/other/x.sock", 63, 1, 2);  // another file system, not found: no search of /ws's
  h.mounts.push_back({"/other", "/", 2});
  h.Bound("/other/gone.sock", 63, 623, 2, 0u);
  auto found = h.Locate({{"/ws", {}}, {"/other", {}}});
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, (Paths{"/other/x.sock", "/ws/t5/moved.sock"}));
  EXPECT_EQ(h.locked, Paths{});
  // A socket of root's on that file system found nowhere (unlinked, to an unprivileged caller's
  // eyes): the search read all of it, and the locked directory could hold it.
  h.Bound("/ws/gone.sock", 64, 624, 1, 0u);
  found = h.Locate({{"/ws", {}}, {"/other", {}}});
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(h.locked, Paths{"/ws/private"});
  // Another user's, found nowhere, starts no search: the directory stays as it is.
  h.sockets.pop_back();
  h.Bound("/ws/gone.sock", 64, 624, 1, 1001u);
  ASSERT_TRUE(h.Locate({{"/ws", {}}, {"/other", {}}}));
  EXPECT_EQ(h.locked, Paths{});
}

TEST(LocateHostSockets, ALockedDirectoryIsCoveredWhereverTheViewShowsIt) {
  // Where another mount of its file system shows it too, and once, not again beneath itself;
  // a mount beneath it (the search starts there) leads to it as well.
  FakeHost h;
  h.caller_uid = 1000;
  h.Sock("/data/closed/in/d.sock", 65);
  h.Bound("/data/closed/in/d.sock", 65, 625, 1, 1001u);  // another user's: its name leads in
  h.mounts.push_back({"/ws/alias", "/data", 1});
  h.Dir("/ws/alias/closed/in");
  h.nodes["/ws/alias/closed"].ino = h.nodes["/data/closed"].ino;
  h.no_search.insert("/data/closed");
  h.no_search.insert("/data/closed/in");
  h.no_search.insert("/ws/alias/closed");
  auto found = h.Locate({{"/ws", {}}, {"/data", {}}});
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(h.locked, (Paths{"/data/closed", "/ws/alias/closed"}));

  FakeHost m;
  m.caller_uid = 1000;
  m.Dir("/ws/closed/mnt", 3);
  m.mounts.push_back({"/ws/closed/mnt", "/", 3});
  m.Sock("/ws/closed/mnt/d.sock", 66, 1, 3);
  m.Bound("/elsewhere/d.sock", 66, 626, 3, 0u);  // moved: found by no name
  m.no_search.insert("/ws/closed");
  m.Sock("/ws/closed-b/in/d.sock", 67);  // a sibling: a name, not beneath the first
  m.Bound("/ws/closed-b/in/d.sock", 67, 627, 1, 0u);
  m.Bound("/ws/closed/in/d.sock", 68, 628, 1, 0u);  // a second name into the first: once
  m.no_search.insert("/ws/closed-b");
  found = m.Locate(kWorkspace);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, Paths{});
  EXPECT_EQ(m.locked, (Paths{"/ws/closed", "/ws/closed-b"}));
}

TEST(LocateHostSockets, ASocketFileMountedOnItsOwnIsMaskedWhereTheMountShowsIt) {
  // mount --bind /run/rt1.sock ws/s.sock, then rm /run/rt1.sock: no name is left anywhere, the
  // mount still reaches the socket. /run (device 7) is not in the view; the mount is.
  for (bool unlinked : {true, false}) {
    FakeHost h;
    h.caller_uid = 0;
    h.Dir("/run", 7);
    h.mounts.push_back({"/run", "/", 7});
    h.mounts.push_back({"/ws/s.sock", unlinked ? "/rt1.sock//deleted" : "/rt1.sock", 7});
    h.Sock("/ws/s.sock", 50, unlinked ? 0 : 1, 7);
    if (!unlinked) h.Sock("/run/rt1.sock", 50, 1, 7);
    h.Bound("/run/rt1.sock", 50, 610, 7, 0u);
    h.holders[610] = 94;
    h.bound_files[610] = BoundFile{7, 50, unlinked ? 0u : 1u, "/run/rt1.sock"};
    auto found = h.Locate(kWorkspace);
    ASSERT_TRUE(found) << found.error().ToString();
    EXPECT_EQ(*found, Paths{"/ws/s.sock"}) << (unlinked ? "unlinked" : "linked");
    EXPECT_EQ(h.search.searched_dirs, 0u);
  }
  // Without the kernel's answer (an unprivileged caller) the same holds.
  FakeHost h;
  h.caller_uid = 1000;
  h.Dir("/run", 7);
  h.mounts.push_back({"/run", "/", 7});
  h.mounts.push_back({"/ws/s.sock", "/rt1.sock//deleted", 7});
  h.Sock("/ws/s.sock", 51, 0, 7);
  h.Bound("/run/rt1.sock", 51, 611, 7, 1000u);
  auto found = h.Locate(kWorkspace);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, Paths{"/ws/s.sock"});
}

TEST(LocateHostSockets, AcceptedConnectionsDoNotMakeAFileATarget) {
  // The kernel makes an accepted connection with uid 0 and gives it the listener's file; once
  // the listener is closed nothing can connect by path.
  FakeHost h;
  BigTree(h);
  h.caller_uid = 1000;
  h.Bound("/home/u2/l.sock", 52, 612, 1, 0u, /*connectable=*/false);
  auto found = h.Locate(kWorkspace);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_TRUE(found->empty());
  EXPECT_EQ(h.search.searched_dirs, 0u);
  // Benign: with its listener still there, the file is one, and is masked.
  h.Sock("/ws/l.sock", 52);
  h.Bound("/ws/l.sock", 52, 613, 1, 1001u);
  found = h.Locate(kWorkspace);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, Paths{"/ws/l.sock"});
}

TEST(LocateHostSockets, ManySocketsOfAnotherUserNeitherFailNorSlowTheStart) {
  FakeHost h;
  h.caller_uid = 1000;
  for (uint64_t i = 0; i <= kMaxHostSockets; ++i) {
    h.Bound("/home/u2/s" + std::to_string(i), 100000 + i, 0, 1, 1001u);
  }
  h.Sock("/ws/own.sock", 53);
  h.Bound("/ws/own.sock", 53, 0, 1, 1000u);
  auto found = h.Locate(kWorkspace);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, Paths{"/ws/own.sock"});
  EXPECT_EQ(h.search.others, kMaxHostSockets + 1);  // the first 1000 looked at, none there
  // The caller's own and root's still fail closed past the bound.
  FakeHost own;
  own.caller_uid = 1000;
  for (uint64_t i = 0; i <= kMaxHostSockets; ++i) {
    own.Bound("/x/s" + std::to_string(i), 100000 + i, 0, 1, i % 2 ? 1000u : 0u);
  }
  EXPECT_FALSE(own.Locate(kWorkspace));
}

TEST(LocateHostSockets, ASearchPastItsBoundFailsClosedNamingTheBoundAndTheSocket) {
  FakeHost h;
  for (int i = 0; i < 40; ++i) h.File("/ws/d/f" + std::to_string(i));
  h.Bound("gone.sock", 28, 505);  // unlinked, or not findable: only a complete search can tell
  h.holders[505] = 77;
  h.links["/proc/77/cwd"] = "/ws/d";
  h.Dir("/proc/77");
  auto refused = h.Locate(kWorkspace, 20);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "sandbox");
  const std::string& m = refused.error().message;
  EXPECT_NE(m.find("20 directory entries"), std::string::npos) << m;
  EXPECT_NE(m.find("gone.sock"), std::string::npos) << m;
  EXPECT_NE(m.find("pid 77"), std::string::npos) << m;
  EXPECT_NE(m.find("fix:"), std::string::npos) << m;
  // Benign: within the bound, the same search completes, and nothing is masked.
  auto within = h.Locate(kWorkspace, 100);
  ASSERT_TRUE(within) << within.error().ToString();
  EXPECT_TRUE(within->empty());
}

TEST(LocateHostSockets, TooManySocketsFailClosed) {
  FakeHost h;
  for (uint64_t i = 0; i <= kMaxHostSockets; ++i) h.Bound("/x/s" + std::to_string(i), 100 + i);
  auto refused = h.Locate(kWorkspace);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("too many"), std::string::npos);
}

TEST(LocateHostSockets, RegionsOfAViewFollowItsReadAccess) {
  FileView restricted;
  restricted.read_roots = {"/usr", "/etc"};
  restricted.writable_roots = {{"/ws", {"/ws/.git"}}};
  auto r = ViewRegionsOf(restricted);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].root, "/usr");
  EXPECT_EQ(r[2].root, "/ws");
  FileView full;
  full.full_read = true;
  r = ViewRegionsOf(full);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].root, "/");
  EXPECT_EQ(r[0].excluded, (std::vector<std::string>{"/dev", "/proc", "/tmp", "/run"}));
}

// The real facts, against the kernel: a socket bound under a relative name, through
// /proc/self/fd/N, and renamed, each found where it is now.
// The host's mount table as a start reads it (one read, checked).
std::vector<HostMount> HostMountTable() {
  auto table = MountTableForAliases(ReadHostMountInfo());
  EXPECT_TRUE(table) << table.error().ToString();
  return table ? *table : std::vector<HostMount>{};
}

TEST(RealHostSocketFacts, FindsSocketsBoundUnderEveryKindOfName) {
  char dir_template[] = "/tmp/anvil-hostsock-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  ASSERT_EQ(mkdir((dir + "/rel").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((dir + "/viafd").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((dir + "/moved").c_str(), 0755), 0);
  auto bind_as = [](const std::string& name) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, name.c_str(), name.size());
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 1) != 0) {
      close(fd);
      return -1;
    }
    return fd;
  };
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  ASSERT_EQ(chdir((dir + "/rel").c_str()), 0);
  int relative = bind_as("r.sock");
  ASSERT_EQ(chdir(cwd), 0);
  int dir_fd = open((dir + "/viafd").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir_fd, 0);
  int via_fd = bind_as("/proc/self/fd/" + std::to_string(dir_fd) + "/f.sock");
  int moved = bind_as(dir + "/m.sock");
  ASSERT_GE(relative, 0);
  ASSERT_GE(via_fd, 0);
  ASSERT_GE(moved, 0);
  ASSERT_EQ(rename((dir + "/m.sock").c_str(), (dir + "/moved/m2.sock").c_str()), 0);

  auto listed = ListBoundUnixSockets();
  ASSERT_TRUE(listed) << listed.error().ToString();
  struct stat st {};
  ASSERT_EQ(stat((dir + "/rel/r.sock").c_str(), &st), 0);
  bool seen = false;
  for (const auto& s : *listed) {
    if (s.name == "r.sock" && s.ino == (st.st_ino & 0xffffffffULL)) {
      EXPECT_EQ(s.dev, st.st_dev) << "device numbers must be comparable with st_dev";
      seen = true;
    }
  }
  EXPECT_TRUE(seen) << "the relative bind is not in the kernel's table";

  auto found = LocateHostSockets({{dir, {}}}, RealHostSocketFacts(HostMountTable()));
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(found->sockets,
            (Paths{dir + "/moved/m2.sock", dir + "/rel/r.sock", dir + "/viafd/f.sock"}));

  close(relative);
  close(via_fd);
  close(moved);
  close(dir_fd);
  ASSERT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
}

TEST(RealHostSocketFacts, TheKernelSaysWhoMadeASocketAndWhatBecameOfItsFile) {
  char dir_template[] = "/tmp/anvil-hostsock-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  auto listener = [](const std::string& name) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, name.c_str(), name.size());
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 1) != 0) {
      close(fd);
      return -1;
    }
    return fd;
  };
  const int gone = listener(dir + "/gone.sock");
  const int moved = listener(dir + "/m.sock");
  ASSERT_GE(gone, 0);
  ASSERT_GE(moved, 0);
  // A connection accepted from `moved`: the same file, never found by path.
  int client = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, (dir + "/m.sock").c_str(), dir.size() + 7);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  int accepted = accept4(moved, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(accepted, 0);
  struct stat gone_st {
  }, moved_st{}, accepted_st{}, moved_sock{};
  ASSERT_EQ(stat((dir + "/gone.sock").c_str(), &gone_st), 0);
  ASSERT_EQ(stat((dir + "/m.sock").c_str(), &moved_st), 0);
  ASSERT_EQ(fstat(accepted, &accepted_st), 0);
  ASSERT_EQ(fstat(moved, &moved_sock), 0);
  ASSERT_EQ(unlink((dir + "/gone.sock").c_str()), 0);
  ASSERT_EQ(rename((dir + "/m.sock").c_str(), (dir + "/m2.sock").c_str()), 0);

  auto listed = ListBoundUnixSockets();
  ASSERT_TRUE(listed) << listed.error().ToString();
  int seen = 0;
  for (const auto& s : *listed) {
    if (s.ino == (moved_st.st_ino & 0xffffffffULL) && s.dev == moved_st.st_dev) {
      ++seen;
      const bool is_accepted = s.socket_ino == accepted_st.st_ino;
      EXPECT_EQ(s.connectable, !is_accepted) << "socket " << s.socket_ino;
      if (!is_accepted) {
        EXPECT_EQ(s.uid, std::optional<uint32_t>(getuid()));
      }
    }
  }
  EXPECT_EQ(seen, 2) << "the listener and the connection it accepted";

  // Root may ask the kernel: no link left for the unlinked one, the new path of the renamed one.
  if (geteuid() == 0) {
    auto facts = RealHostSocketFacts(HostMountTable());
    struct stat gone_sock {};
    ASSERT_EQ(fstat(gone, &gone_sock), 0);
    auto file = facts.bound_file(gone_sock.st_ino, getpid());
    ASSERT_TRUE(file) << "SIOCUNIXFILE through pidfd_getfd";
    EXPECT_EQ(file->nlink, 0u);
    EXPECT_EQ(file->ino, gone_st.st_ino);
    file = facts.bound_file(moved_sock.st_ino, getpid());
    ASSERT_TRUE(file);
    EXPECT_EQ(file->nlink, 1u);
    EXPECT_EQ(file->path, dir + "/m2.sock");
  }
  for (int fd : {gone, moved, client, accepted}) close(fd);
  ASSERT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
}

TEST(RealHostSocketFacts, KernelDeviceNumbersConvertToStDev) {
  EXPECT_EQ(DevFromKernel((254u << 20) | 1u), makedev(254, 1));
  EXPECT_EQ(DevFromKernel((0u << 20) | 27u), makedev(0, 27));
  EXPECT_EQ(DevFromKernel((259u << 20) | 0x12345u), makedev(259, 0x12345));
}

}  // namespace
}  // namespace host_sockets_test
}  // namespace anvil
