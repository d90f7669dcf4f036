#include "linux/host_socket_facts.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/sockios.h>
#include <linux/unix_diag.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "common/fd_io.h"
#include "common/syscalls.h"
#include "common/unique_fd.h"
#include "policy/sandbox_policy.h"

namespace anvil {
namespace {

// The kernel's TCP_ESTABLISHED, the state unix_diag reports for a connected socket.
constexpr uint8_t kTcpEstablished = 1;

struct MountTable {
  std::vector<HostMount> mounts;
  std::map<uint64_t, uint64_t> dev_by_id;
};

std::shared_ptr<const MountTable> SharedMountTable(std::vector<HostMount> mounts) {
  auto table = std::make_shared<MountTable>();
  for (const auto& m : mounts) table->dev_by_id[m.id] = m.dev;
  table->mounts = std::move(mounts);
  return table;
}

// The descriptor number under which process `pid` holds socket `socket_ino`, or -1.
int HolderFd(int pid, uint64_t socket_ino) {
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* fds = ::opendir(fd_dir.c_str());
  if (!fds) return -1;
  const std::string want = "socket:[" + std::to_string(socket_ino) + "]";
  int found = -1;
  while (dirent* f = ::readdir(fds)) {
    if (f->d_name[0] == '.') continue;
    char link[64];
    ssize_t n = ::readlinkat(::dirfd(fds), f->d_name, link, sizeof(link) - 1);
    if (n <= 0) continue;
    link[n] = '\0';
    if (want == link) {
      found = std::atoi(f->d_name);
      break;
    }
  }
  ::closedir(fds);
  return found;
}

// BoundFile of socket `socket_ino` held by `pid`: a copy of the holder's descriptor
// (pidfd_getfd, which needs ptrace access), then SIOCUNIXFILE, which opens the file the socket
// holds as O_PATH (CAP_NET_ADMIN). Only root has both; nothing of the holder changes.
std::optional<BoundFile> OpenBoundFile(uint64_t socket_ino, int pid) {
  if (::geteuid() != 0) return std::nullopt;
  const int target = HolderFd(pid, socket_ino);
  if (target < 0) return std::nullopt;
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd) return std::nullopt;
  UniqueFd socket(static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.Get(), target, 0)));
  if (!socket) return std::nullopt;
  struct stat st {};
  // The descriptor may have been closed and reused since /proc was read.
  if (::fstat(socket.Get(), &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_ino != socket_ino) {
    return std::nullopt;
  }
  UniqueFd file(::ioctl(socket.Get(), SIOCUNIXFILE));
  if (!file) return std::nullopt;
  if (::fstat(file.Get(), &st) != 0) return std::nullopt;
  BoundFile out;
  out.dev = st.st_dev;
  out.ino = st.st_ino;
  out.nlink = st.st_nlink;
  char path[PATH_MAX];
  const std::string self = "/proc/self/fd/" + std::to_string(file.Get());
  ssize_t n = ::readlink(self.c_str(), path, sizeof(path) - 1);
  if (n > 0) out.path.assign(path, static_cast<size_t>(n));
  return out;
}

}  // namespace

uint64_t DevFromKernel(uint32_t kernel_dev) {
  return makedev(kernel_dev >> 20, kernel_dev & 0xfffff);
}

Result<std::vector<BoundSocket>> ListBoundUnixSockets() {
  UniqueFd nl(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (!nl) return SysFail("sandbox", "host sockets: netlink sock_diag socket");
  struct {
    nlmsghdr header;
    unix_diag_req request;
  } message{};
  message.header.nlmsg_len = sizeof(message);
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  message.header.nlmsg_seq = 1;
  message.request.sdiag_family = AF_UNIX;
  message.request.udiag_states = ~0U;  // listening, bound, connected: any may be reached later
  message.request.udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_VFS | UDIAG_SHOW_UID;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(nl.Get(), &message, sizeof(message), 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof(kernel)) != static_cast<ssize_t>(sizeof(message))) {
    return SysFail("sandbox", "host sockets: sock_diag request");
  }
  std::vector<BoundSocket> out;
  // On the heap, not thread_local: a thread-local array is part of every thread's start-up
  // (zeroed for each thread this program makes, the gateway's workers among them).
  constexpr size_t kBufferSize = 32768;
  const auto storage = std::make_unique_for_overwrite<nlmsghdr[]>(kBufferSize / sizeof(nlmsghdr));
  char* const buffer = reinterpret_cast<char*>(storage.get());
  while (true) {
    ssize_t n = ::recv(nl.Get(), buffer, kBufferSize, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return SysFail("sandbox", "host sockets: sock_diag answer");
    size_t len = static_cast<size_t>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_type == NLMSG_DONE) return out;
      if (h->nlmsg_type == NLMSG_ERROR) {
        int err = 0;
        if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(nlmsgerr))) {
          err = -static_cast<const nlmsgerr*>(NLMSG_DATA(h))->error;
        }
        return Fail("sandbox",
                    std::string("host sockets: the kernel's Unix socket table (unix_diag) is not "
                                "available: ") +
                        std::strerror(err) +
                        " (fix: load the unix_diag kernel module: modprobe unix_diag)",
                    err);
      }
      if (h->nlmsg_len < NLMSG_LENGTH(sizeof(unix_diag_msg))) continue;
      const auto* msg = static_cast<const unix_diag_msg*>(NLMSG_DATA(h));
      BoundSocket s;
      s.socket_ino = msg->udiag_ino;
      // A stream or seqpacket socket that is connected (an accepted connection, a client that
      // bound a name first) is never what connect(2) by path finds, and cannot listen later.
      s.connectable = msg->udiag_type == SOCK_DGRAM || msg->udiag_state != kTcpEstablished;
      bool has_file = false;
      size_t attr_len = h->nlmsg_len - NLMSG_LENGTH(sizeof(unix_diag_msg));
      auto* attr = reinterpret_cast<rtattr*>(reinterpret_cast<char*>(NLMSG_DATA(h)) +
                                             NLMSG_ALIGN(sizeof(unix_diag_msg)));
      for (; RTA_OK(attr, attr_len); attr = RTA_NEXT(attr, attr_len)) {
        const char* data = static_cast<const char*>(RTA_DATA(attr));
        size_t size = RTA_PAYLOAD(attr);
        if (attr->rta_type == UNIX_DIAG_NAME && size > 0 && data[0] != '\0') {
          s.name.assign(data, strnlen(data, size));
        } else if (attr->rta_type == UNIX_DIAG_UID && size >= sizeof(uint32_t)) {
          uint32_t uid = 0;
          std::memcpy(&uid, data, sizeof(uid));
          s.uid = uid;
        } else if (attr->rta_type == UNIX_DIAG_VFS && size >= sizeof(unix_diag_vfs)) {
          unix_diag_vfs vfs;
          std::memcpy(&vfs, data, sizeof(vfs));
          s.ino = vfs.udiag_vfs_ino;
          s.dev = DevFromKernel(vfs.udiag_vfs_dev);
          has_file = true;
        }
      }
      if (has_file) out.push_back(std::move(s));
    }
  }
}

HostSocketFacts RealHostSocketFacts(std::vector<HostMount> mounts) {
  HostSocketFacts facts;
  const std::shared_ptr<const MountTable> table = SharedMountTable(std::move(mounts));
  auto mount_table = [table]() -> const MountTable& { return *table; };
  facts.sockets = ListBoundUnixSockets;
  facts.owners = [](const std::set<uint64_t>& wanted) {
    std::map<uint64_t, int> found;
    DIR* proc = ::opendir("/proc");
    if (!proc) return found;
    while (dirent* e = ::readdir(proc)) {
      char* end = nullptr;
      long pid = std::strtol(e->d_name, &end, 10);
      if (pid <= 0 || *end != '\0') continue;
      std::string fd_dir = std::string("/proc/") + e->d_name + "/fd";
      UniqueFd dir_fd(::open(fd_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!dir_fd) continue;  // gone, or another user's
      DIR* fds = ::fdopendir(dir_fd.Release());
      if (!fds) continue;
      while (dirent* f = ::readdir(fds)) {
        if (f->d_name[0] == '.') continue;
        char link[64];
        ssize_t n = ::readlinkat(::dirfd(fds), f->d_name, link, sizeof(link) - 1);
        if (n < 9 || std::strncmp(link, "socket:[", 8) != 0) continue;
        link[n] = '\0';
        uint64_t ino = std::strtoull(link + 8, nullptr, 10);
        if (wanted.count(ino) && !found.count(ino)) found[ino] = static_cast<int>(pid);
      }
      ::closedir(fds);
      if (found.size() == wanted.size()) break;
    }
    ::closedir(proc);
    return found;
  };
  facts.canonical = [](const std::string& path) -> std::optional<std::string> {
    char buf[PATH_MAX];
    if (::realpath(path.c_str(), buf) == nullptr) return std::nullopt;
    return std::string(buf);
  };
  facts.lstat = [mount_table](const std::string& path) -> std::optional<PathNode> {
    struct statx sx {};
    if (::statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
                STATX_TYPE | STATX_INO | STATX_NLINK | STATX_MNT_ID, &sx) != 0) {
      return std::nullopt;
    }
    PathNode node;
    node.type = S_ISSOCK(sx.stx_mode)  ? PathNode::Type::kSocket
                : S_ISDIR(sx.stx_mode) ? PathNode::Type::kDirectory
                                       : PathNode::Type::kOther;
    node.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
    node.ino = sx.stx_ino;
    node.nlink = sx.stx_nlink;
    if ((sx.stx_mask & STATX_MNT_ID) && node.type == PathNode::Type::kSocket) {
      const auto& ids = mount_table().dev_by_id;
      if (auto it = ids.find(sx.stx_mnt_id); it != ids.end()) node.mount_dev = it->second;
    }
    return node;
  };
  facts.list_dir = [](const std::string& dir) -> std::optional<std::vector<SocketScanEntry>> {
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return std::nullopt;
    DIR* d = ::fdopendir(fd.Release());
    if (!d) return std::nullopt;
    std::vector<SocketScanEntry> out;
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.' &&
          (e->d_name[1] == '\0' || (e->d_name[1] == '.' && e->d_name[2] == '\0'))) {
        continue;
      }
      SocketScanEntry entry;
      entry.name = e->d_name;
      switch (e->d_type) {
        case DT_DIR:
          entry.type = PathNode::Type::kDirectory;
          break;
        case DT_SOCK:
          entry.type = PathNode::Type::kSocket;
          break;
        case DT_UNKNOWN:
          entry.type_known = false;
          break;
        default:
          entry.type = PathNode::Type::kOther;
      }
      out.push_back(std::move(entry));
    }
    ::closedir(d);
    return out;
  };
  facts.mounts = [mount_table]() { return mount_table().mounts; };
  facts.dir_access = [](const std::string& dir) -> std::optional<DirAccess> {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
    auto may = [&](int mode) {
      return ::faccessat(AT_FDCWD, dir.c_str(), mode, AT_EACCESS) == 0 || errno != EACCES;
    };
    DirAccess access;
    access.search = may(X_OK);
    access.read = may(R_OK);
    access.owner = st.st_uid;
    return access;
  };
  facts.bound_file = OpenBoundFile;
  facts.caller_uid = static_cast<uint32_t>(::getuid());
  return facts;
}

std::function<Result<HostSocketMasks>(const FileView&)> HostSocketLocator(
    std::vector<HostMount> mounts) {
  auto cache = std::make_shared<std::map<std::string, Result<HostSocketMasks>>>();
  return [cache, mounts = std::move(mounts)](const FileView& view) -> Result<HostSocketMasks> {
    auto regions = ViewRegionsOf(view);
    std::string key;
    for (const auto& r : regions) {
      key += r.root;
      for (const auto& e : r.excluded) key += '\x01' + e;
      key += '\0';
    }
    if (auto it = cache->find(key); it != cache->end()) return it->second;
    auto located = LocateHostSockets(regions, RealHostSocketFacts(mounts));
    cache->emplace(key, located);
    return located;
  };
}

MountInfoRead ReadHostMountInfo() {
  MountInfoRead out;
  UniqueFd fd(::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC));
  if (!fd) {
    out.error = std::string("open: ") + std::strerror(errno);
    return out;
  }
  std::string text;
  char buf[65536];
  while (true) {
    const fd_io::IoResult r = fd_io::ReadExactly(fd.Get(), buf, sizeof(buf));
    text.append(buf, r.done);
    if (r.eof) break;
    if (r.error != 0) {
      out.error = std::string("read: ") + std::strerror(r.error);
      return out;
    }
  }
  out.read = true;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    std::istringstream ss(line);
    std::string id, parent, majmin, root, point;
    bool ok = static_cast<bool>(ss >> id >> parent >> majmin >> root >> point);
    const auto at = ok ? majmin.find(':') : std::string::npos;
    // The root field is not always a path (a bind of a namespace file: "net:[4026531840]").
    ok = ok && at != std::string::npos && !point.empty() && point[0] == '/';
    if (!ok) {
      if (out.malformed++ == 0) out.first_malformed = line.substr(0, 200);
      continue;
    }
    const uint64_t dev = makedev(std::strtoul(majmin.c_str(), nullptr, 10),
                                 std::strtoul(majmin.c_str() + at + 1, nullptr, 10));
    out.mounts.push_back({UnescapeMountinfoField(point), UnescapeMountinfoField(root), dev,
                          std::strtoull(id.c_str(), nullptr, 10),
                          std::strtoull(parent.c_str(), nullptr, 10)});
  }
  return out;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string UnescapeMountinfoField(const std::string& field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      const char* p = field.c_str() + i + 1;
      if (p[0] >= '0' && p[0] <= '3' && p[1] >= '0' && p[1] <= '7' && p[2] >= '0' && p[2] <= '7') {
        out.push_back(static_cast<char>((p[0] - '0') * 64 + (p[1] - '0') * 8 + (p[2] - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

}  // namespace anvil
