#include "linux/root_remap.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/syscalls.h"
#include "ipc/fd_passing.h"
#include "policy/sandbox_home.h"

namespace anvil {
namespace {

// The new mount API (Linux 5.12+); defined here so the glibc and kernel headers do not clash.
constexpr unsigned kOpenTreeClone = 1;
constexpr unsigned kAtRecursive = 0x8000;
constexpr uint64_t kMountAttrIdmap = 0x00100000;
struct MountAttr {
  uint64_t attr_set;
  uint64_t attr_clr;
  uint64_t propagation;
  uint64_t userns_fd;
};

constexpr char kTreesMessage = 'T';

// At or beneath one of the runtime roots (/usr, /etc, ...): the system's trees, which every
// sandbox already sees as the host has them.
bool InRuntimeRoot(const std::string& path) { return InSystemRoot(path); }

bool WithinAny(const std::string& path, const std::vector<std::string>& roots) {
  return std::any_of(roots.begin(), roots.end(),
                     [&](const std::string& r) { return PathIsWithin(path, r); });
}

// A mountinfo path field with its octal escapes (\040 for a space, ...) decoded.
std::string Unescape(const std::string& field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      const std::string digits = field.substr(i + 1, 3);
      if (std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out.push_back(static_cast<char>(std::stoi(digits, nullptr, 8)));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

// "ext4": the file system `root` is on, for the error that names what cannot be idmapped.
std::string DescribeFilesystem(const std::string& root) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line, own_type, own_point;
  while (std::getline(in, line)) {
    // "ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER_OPTIONS"
    std::istringstream fields(line);
    std::string id, parent, dev, fs_root, point;
    fields >> id >> parent >> dev >> fs_root >> point;
    auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream rest(line.substr(dash + 3));
    std::string type;
    rest >> type;
    point = Unescape(point);
    if (PathIsWithin(root, point) && point.size() >= own_point.size()) {
      own_point = point;
      own_type = type;
    }
  }
  return own_type.empty() ? "unknown" : own_type;
}

std::string ReadAll(const char* path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Status WriteProcFile(pid_t pid, const char* name, const std::string& text) {
  const std::string path = "/proc/" + std::to_string(pid) + "/" + name;
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return SysFail("sandbox", "open " + path);
  if (::write(fd.Get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    return SysFail("sandbox", "write " + path);
  }
  return Ok();
}

}  // namespace

std::vector<std::string> IdmappedRoots(const FileView& view) {
  std::vector<std::string> out;
  auto add = [&out](const std::string& root) {
    if (std::find(out.begin(), out.end(), root) == out.end()) out.push_back(root);
  };
  for (const auto& wr : view.writable_roots) add(wr.root);
  for (const auto& r : view.read_roots) {
    if (!InRuntimeRoot(r)) add(r);
  }
  if (!view.workspace_base.empty()) add(view.workspace_base);
  // What the command's home shows of the caller's (the sandbox home, the toolchains), by its
  // host path: mount_view.cc binds it from there. Init, as the sandbox's id, could not even
  // reach most of it (a home is 0700).
  for (const auto& m : view.mapped_binds) add(m.source);
  return out;
}

std::vector<std::string> UnsearchableAncestors(
    const FileView& view, const std::vector<std::string>& idmapped_roots,
    const std::function<std::optional<mode_t>(const std::string&)>& host_mode) {
  // Whether the view shows `dir` as the host's own directory: through full read access's "/"
  // (but for the places the view replaces with its own) or through a runtime root.
  auto through_host_bind = [&](const std::string& dir) {
    // Not where the view shows something else (the command's home over /root).
    if (ViewSource(view, dir) != dir) return false;
    if (view.full_read) {
      for (const char* replaced : {"/dev", "/proc", "/tmp", "/run"}) {
        if (PathIsWithin(dir, replaced)) return false;
      }
      return true;
    }
    for (const auto& r : view.read_roots) {
      if (PathIsWithin(dir, r) && !WithinAny(r, idmapped_roots)) return true;
    }
    return false;
  };
  std::vector<std::string> out;
  for (const auto& root : idmapped_roots) {
    // A mapped bind's source is not a path of the view: nothing above it is walked through.
    if (std::any_of(view.mapped_binds.begin(), view.mapped_binds.end(),
                    [&](const MappedBind& m) { return m.source == root; })) {
      continue;
    }
    for (size_t pos = root.find('/', 1); pos != std::string::npos; pos = root.find('/', pos + 1)) {
      const std::string dir = root.substr(0, pos);
      if (WithinAny(dir, idmapped_roots)) break;  // the caller's own tree from here down
      if (!through_host_bind(dir)) continue;      // a directory the view makes itself
      auto mode = host_mode(dir);
      if (!mode) break;  // gone: binding the root fails on its own
      if ((*mode & S_IXOTH) == 0) {
        if (std::find(out.begin(), out.end(), dir) == out.end()) out.push_back(dir);
        break;
      }
    }
  }
  return out;
}

bool IdMapCovers(const std::string& map_text, uint32_t id) {
  std::istringstream lines(map_text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    uint64_t inside = 0, outside = 0, count = 0;
    if (!(fields >> inside >> outside >> count)) continue;
    if (id >= inside && id - inside < count) return true;
  }
  return false;
}

Status PrepareRemappedInit(pid_t init, const std::vector<std::string>& roots, int channel) {
  const std::string map = "0 " + std::to_string(kRootSandboxHostId) + " 1\n";
  for (const char* file : {"uid_map", "gid_map"}) {
    auto written = WriteProcFile(init, file, map);
    if (written) continue;
    const std::string own = std::string("/proc/self/") + file;
    if (!IdMapCovers(ReadAll(own.c_str()), kRootSandboxHostId)) {
      // Root of a user namespace that is not the host's, e.g. a rootless container.
      return Fail("sandbox",
                  "root's sandbox runs the command as host id " +
                      std::to_string(kRootSandboxHostId) +
                      " (docs/policy.md, \"Root's sandbox\"), which the user namespace anvil "
                      "runs in does not map: this root is root of a container, not of the host. "
                      "fix: run anvil as a non-root user there, or, when the container is the "
                      "sandbox, use --policy external-sandbox",
                  written.error().sys_errno);
    }
    return written;
  }
  std::vector<UniqueFd> trees;
  if (!roots.empty()) {
    const std::string ns_path = "/proc/" + std::to_string(init) + "/ns/user";
    UniqueFd userns(::open(ns_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!userns) return SysFail("sandbox", "open " + ns_path);
    for (const auto& root : roots) {
      if (root == "/") {
        // The view is built on a tmpfs of its own at /: a tree of the caller's cannot be it.
        return Fail("sandbox",
                    "root's sandbox shows the caller's trees through idmapped mounts, and / "
                    "cannot be one (the view's own root is there). fix: run from a project "
                    "directory (or pass --cwd DIR), or use --policy external-sandbox when the "
                    "machine or container is the sandbox",
                    EINVAL);
      }
      long fd = syscall(SYS_open_tree, AT_FDCWD, root.c_str(),
                        kOpenTreeClone | O_CLOEXEC | kAtRecursive | AT_SYMLINK_NOFOLLOW);
      if (fd < 0) return SysFail("sandbox", "open_tree " + root);
      UniqueFd tree(static_cast<int>(fd));
      // Only the tree's own mount: a file system mounted beneath the root (a bind of a root-only
      // directory, a tmpfs, NFS) keeps the host's owners, or the command would be the owner of
      // root's files there. The clone still holds those mounts, so the view shows them.
      MountAttr attr{};
      attr.attr_set = kMountAttrIdmap;
      attr.userns_fd = static_cast<uint64_t>(userns.Get());
      if (syscall(SYS_mount_setattr, tree.Get(), "", AT_EMPTY_PATH, &attr, sizeof(attr)) != 0) {
        int err = errno;
        return Fail("sandbox",
                    "root's sandbox runs the command as an unprivileged id and shows it " + root +
                        " through an idmapped mount, but " + root + " (file system " +
                        DescribeFilesystem(root) + ") cannot be idmapped: " + std::strerror(err) +
                        ". fix: run anvil as the user who owns the files (e.g. `sudo -u USER "
                        "anvil sandbox ...`), or use a workspace on a local file system (ext4, "
                        "xfs, btrfs, tmpfs)",
                    err);
      }
      trees.push_back(std::move(tree));
    }
  }
  // At least one message, which also says the maps are written.
  size_t sent = 0;
  do {
    std::vector<int> batch;
    for (size_t i = sent; i < trees.size() && batch.size() < ipc::kMaxPassedFds; ++i) {
      batch.push_back(trees[i].Get());
    }
    if (ipc::SendWithFds(channel, &kTreesMessage, 1, batch) != 1) {
      return SysFail("sandbox", "hand the idmapped trees to the sandbox's init");
    }
    sent += batch.size();
  } while (sent < trees.size());
  return Ok();
}

Result<std::vector<UniqueFd>> TakeRemappedIdentity(int channel, size_t count) {
  std::vector<UniqueFd> trees;
  bool first = true;
  while (first || trees.size() < count) {
    first = false;
    char byte = 0;
    std::vector<int> fds;
    int msg_flags = 0;
    ssize_t n = ipc::ReceiveWithFds(channel, &byte, 1, fds, ipc::kMaxPassedFds, 0, &msg_flags);
    for (int fd : fds) trees.emplace_back(fd);
    if (n != 1 || byte != kTreesMessage || (msg_flags & (MSG_CTRUNC | MSG_TRUNC)) ||
        trees.size() > count) {
      return Fail("sandbox", "the supervisor did not hand over root's id maps and trees");
    }
  }
  // Order matters: groups and gid while the namespace's root may still change them.
  if (::setgroups(0, nullptr) != 0) return SysFail("sandbox", "drop supplementary groups");
  if (::setresgid(0, 0, 0) != 0) return SysFail("sandbox", "become gid 0 of the namespace");
  if (::setresuid(0, 0, 0) != 0) return SysFail("sandbox", "become uid 0 of the namespace");
  if (::getgroups(0, nullptr) != 0) return Fail("sandbox", "supplementary groups survived");
  return trees;
}

}  // namespace anvil
