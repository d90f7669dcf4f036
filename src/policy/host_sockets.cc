#include "policy/host_sockets.h"

#include <algorithm>
#include <utility>

#include "fs/file_facts.h"
#include "policy/sandbox_policy.h"

namespace anvil {
namespace {

// One socket file of the host (a listener and every connection it accepted share it).
struct Target {
  uint64_t dev = 0;
  uint64_t ino = 0;
  std::set<std::string> names;
  std::set<uint64_t> socket_inos;
  std::set<std::string> links;    // canonical paths found to name it
  std::set<std::string> mounted;  // where a mount of the file itself shows it (not a link)
  std::optional<uint64_t> nlink;
  std::optional<int> owner;
  std::set<uint32_t> uids;  // who made its connectable sockets
  bool uid_unknown = false;

  // Every link of it is known: nothing else of the host's tree can name it (a file with no
  // link left is reachable only through a mount of its own, which is looked at first).
  bool Complete() const { return nlink && links.size() >= *nlink; }
  // Whether a search of the whole view is warranted when it is not complete: it may be the
  // caller's or root's (the system's), not only another user's.
  bool SearchedFor(const std::optional<uint32_t>& caller) const {
    if (!caller || uid_unknown || uids.empty()) return true;
    return std::any_of(uids.begin(), uids.end(),
                       [&](uint32_t uid) { return uid == 0 || uid == *caller; });
  }
};

std::string Join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

std::string Parent(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The kernel's socket table carries only the low 32 bits of a file's inode number.
uint64_t Low32(uint64_t ino) { return ino & 0xffffffffULL; }

// A name that only makes sense in the binding process: its own /proc entry or its descriptors.
std::optional<std::string> RewriteForOwner(const std::string& name, int pid) {
  const std::string proc = "/proc/" + std::to_string(pid) + "/";
  for (const char* prefix : {"/proc/self/", "/proc/thread-self/"}) {
    std::string p(prefix);
    if (name.compare(0, p.size(), p) == 0) return proc + name.substr(p.size());
  }
  const std::string dev_fd = "/dev/fd/";
  if (name.compare(0, dev_fd.size(), dev_fd) == 0) return proc + "fd/" + name.substr(dev_fd.size());
  return std::nullopt;
}

bool OwnerRelative(const std::string& name) {
  return name.empty() || name[0] != '/' || RewriteForOwner(name, 0).has_value();
}

class Locator {
 public:
  Locator(const std::vector<ViewRegion>& regions, const HostSocketFacts& facts, size_t max_entries,
          HostSocketSearch& search)
      : facts_(facts), max_entries_(max_entries), view_regions_(regions), search_(search) {}

  Result<HostSocketMasks> Run() {
    ANVIL_TRY(listed, facts_.sockets());
    if (listed->empty()) return HostSocketMasks{};  // nothing to look for: no cost
    for (const auto& r : view_regions_) {
      auto root = facts_.canonical(r.root);
      if (!root) continue;
      regions_.push_back({*root, r.excluded});
    }
    std::map<std::pair<uint64_t, uint64_t>, Target> by_file;
    for (const auto& s : *listed) {
      // A connection a listener accepted is never found by path: only the listener is.
      if (s.ino == 0 || !s.connectable) continue;
      Target& t = by_file[{s.dev, s.ino}];
      t.dev = s.dev;
      t.ino = s.ino;
      if (!s.name.empty()) t.names.insert(s.name);
      t.socket_inos.insert(s.socket_ino);
      if (s.uid) {
        t.uids.insert(*s.uid);
      } else {
        t.uid_unknown = true;
      }
    }
    // The bound on the work: the caller's and root's sockets fail closed past it; another
    // user's are looked at up to a number per user, so that nobody makes every sandbox start
    // slow, or fail, by holding many sockets (beyond it that user's sockets lead only to that
    // user's processes, which chose to offer them).
    size_t own = 0;
    std::map<uint32_t, size_t> per_other;
    for (auto it = by_file.begin(); it != by_file.end();) {
      const Target& t = it->second;
      if (t.SearchedFor(facts_.caller_uid)) {
        if (++own > kMaxHostSockets) {
          return Fail("sandbox", "more than " + std::to_string(kMaxHostSockets) +
                                     " named Unix sockets of this user and root are bound on "
                                     "this host; too many to hide them from the sandbox");
        }
      } else if (++per_other[*t.uids.begin()] > kMaxOtherUserSockets) {
        ++search_.others;
        it = by_file.erase(it);
        continue;
      }
      ++it;
    }
    mounts_ = facts_.mounts();
    for (const auto& m : mounts_) mount_points_.insert(m.path);
    // A socket on a file system the view shows nowhere cannot be reached from inside: it costs
    // nothing more.
    for (auto& [key, t] : by_file) {
      if (!walks_.count(t.dev)) walks_[t.dev] = SearchStarts(t.dev);
      if (!walks_[t.dev].empty()) targets_.push_back(std::move(t));
    }
    for (size_t i = 0; i < targets_.size(); ++i) by_ino_[Low32(targets_[i].ino)].push_back(i);

    // 0. A socket file mounted on its own (mount --bind /run/x.sock ws/s.sock): the mount shows
    // it whatever became of its names, even once none is left.
    FileMounts();
    // 1. Where the name says, for names that mean the same to everyone.
    for (auto& t : targets_) {
      for (const auto& name : t.names) {
        if (!OwnerRelative(name)) Try(name, t);
      }
    }
    // 2. Where the name says in the binding process's context, for the caller's and root's
    // sockets (looking for holders reads every process's descriptors: not for anybody's).
    std::set<uint64_t> unowned;
    for (const auto& t : targets_) {
      if (!t.Complete() && t.SearchedFor(facts_.caller_uid)) {
        unowned.insert(t.socket_inos.begin(), t.socket_inos.end());
      }
    }
    std::map<uint64_t, int> owners;
    if (!unowned.empty() && facts_.owners) owners = facts_.owners(unowned);
    std::set<std::string> hint_dirs;
    for (auto& t : targets_) {
      if (t.Complete() || !t.SearchedFor(facts_.caller_uid)) continue;
      for (uint64_t s : t.socket_inos) {
        if (auto it = owners.find(s); it != owners.end()) {
          t.owner = it->second;
          break;
        }
      }
      for (const auto& name : t.names) {
        std::vector<std::string> candidates;
        if (!OwnerRelative(name)) candidates.push_back(name);
        if (t.owner) {
          const std::string proc = "/proc/" + std::to_string(*t.owner);
          if (auto rewritten = RewriteForOwner(name, *t.owner)) {
            candidates.push_back(*rewritten);
          } else if (name[0] != '/') {
            candidates.push_back(proc + "/cwd/" + name);
          } else {
            candidates.push_back(proc + "/root" + name);
          }
        }
        for (const auto& c : candidates) {
          if (c != name) Try(c, t);
          if (auto dir = facts_.canonical(Parent(c))) hint_dirs.insert(*dir);
        }
      }
    }
    // 3. Where the kernel says the socket's file is now: its link count (none left: it can
    // never be reached by a name) and the path of its bound name after renames (root only).
    if (facts_.bound_file) {
      for (auto& t : targets_) {
        if (t.Complete() || !t.owner || !t.SearchedFor(facts_.caller_uid)) continue;
        for (uint64_t s : t.socket_inos) {
          auto file = facts_.bound_file(s, *t.owner);
          if (!file) continue;
          if (Low32(file->ino) != Low32(t.ino)) break;  // not this file: a stale answer
          t.nlink = file->nlink;
          if (!file->path.empty() && file->path[0] == '/') Try(file->path, t);
          if (file->nlink == 0) ++search_.unlinked;
          break;
        }
      }
    }
    // 4. Next to those names: a socket renamed or linked in the same directory (ssh's
    // ControlMaster binds a temporary name, links the real one and unlinks the first).
    if (!SearchComplete()) {
      for (const auto& dir : hint_dirs) {
        ANVIL_RETURN_IF_ERROR(ScanDirectory(dir, nullptr, dir));
        if (SearchComplete()) break;
      }
    }
    // 5. Everywhere the view shows the socket's file system, for a socket of the caller's or
    // root's. Another user's socket that is not where its name says was moved or linked
    // elsewhere by that user (or bound under a relative name in a directory of theirs): a
    // search for it would let any user make every sandbox start read the whole view, or fail
    // it at the bound, by holding one unlinked socket.
    std::set<uint64_t> devs;
    for (const auto& t : targets_) {
      if (t.Complete()) continue;
      if (t.SearchedFor(facts_.caller_uid)) {
        devs.insert(t.dev);
      } else {
        ++search_.others;
      }
    }
    for (uint64_t dev : devs) {
      ANVIL_RETURN_IF_ERROR(SearchDevice(dev));
    }
    // 6. Each link as every mount of its file system shows it, and only what the view shows.
    std::set<std::string> out;
    for (const auto& t : targets_) {
      auto same = [&](const PathNode& node) { return Matches(node, t); };
      for (const auto& link : t.links) {
        if (Visible(link)) out.insert(link);
        for (const auto& alias : Aliases(link, same)) {
          if (Visible(alias)) out.insert(alias);
        }
      }
      out.insert(t.mounted.begin(), t.mounted.end());
    }
    HostSocketMasks masks;
    masks.sockets.assign(out.begin(), out.end());
    masks.locked_dirs = LockedDirs();
    return masks;
  }

 private:
  bool Visible(const std::string& path) const {
    for (const auto& r : regions_) {
      if (!PathIsWithin(path, r.root)) continue;
      bool excluded = std::any_of(r.excluded.begin(), r.excluded.end(),
                                  [&](const std::string& e) { return PathIsWithin(path, e); });
      if (!excluded) return true;
    }
    return false;
  }

  static bool Matches(const PathNode& node, const Target& t) {
    return node.type == PathNode::Type::kSocket && Low32(node.ino) == Low32(t.ino) &&
           (node.dev == t.dev || (node.mount_dev != 0 && node.mount_dev == t.dev));
  }

  void Record(const std::string& path, const PathNode& node, Target& t) {
    if (!Matches(node, t)) return;
    t.links.insert(path);
    t.nlink = node.nlink;
  }

  void Try(const std::string& path, Target& t) {
    auto canonical = facts_.canonical(path);
    if (!canonical) {
      NameBlocked(path);
      return;
    }
    auto node = facts_.lstat(*canonical);
    if (node) Record(*canonical, *node, t);
  }

  // A socket's name that leads nowhere: gone, or through a directory the caller may not search.
  // The deepest directory on its way that exists is the one that may be in the way (realpath
  // searched every one above it).
  void NameBlocked(const std::string& path) {
    if (!facts_.dir_access || path.empty() || path[0] != '/') return;
    for (std::string p = Parent(path);; p = Parent(p)) {
      if (auto dir = facts_.canonical(p)) {
        Blocked(*dir, *dir, /*listing=*/false, std::nullopt);
        return;
      }
      if (p == "/") return;
    }
  }

  // `dir` could not be read (`listing`) or a name looked up in it: finds the directory in the
  // way among `dir` and those above it up to `from` (every one above `from` is known to be
  // searchable), top down, that the view shows. One the caller owns is kept (LockedDirs): the
  // command could chmod it. `dev`: the file system being searched; nullopt: a socket's name
  // leads into it.
  void Blocked(const std::string& dir, const std::string& from, bool listing,
               std::optional<uint64_t> dev) {
    if (!facts_.dir_access) return;
    std::vector<std::string> chain;
    for (std::string p = dir; PathIsWithin(p, from); p = Parent(p)) {
      chain.push_back(p);
      if (p == from || p == "/") break;
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      if (!Visible(*it)) continue;
      auto access = facts_.dir_access(*it);
      if (!access) return;  // gone, or no directory: nothing to search beneath it
      if (access->search && !(listing && *it == dir && !access->read)) continue;
      if (facts_.caller_uid && access->owner != *facts_.caller_uid) return;  // another user's
      if (dev) {
        met_locked_[*it].insert(*dev);
      } else {
        named_locked_.insert(*it);
      }
      return;
    }
  }

  // The locked directories a socket may be beneath: those a socket's name leads into, and
  // those met by a search of a file system where a socket of the caller's or root's is still
  // missing (the search then read all of it the view shows). Each also where another mount of
  // its file system shows it.
  std::vector<std::string> LockedDirs() const {
    std::set<std::string> locked = named_locked_;
    for (const auto& [dir, devs] : met_locked_) {
      bool missing = std::any_of(devs.begin(), devs.end(), [&](uint64_t dev) {
        return dev == 0 ? !SearchComplete() : !DeviceComplete(dev);
      });
      if (missing) locked.insert(dir);
    }
    std::set<std::string> all;
    for (const auto& dir : locked) {
      all.insert(dir);
      auto node = facts_.lstat(dir);
      if (!node) continue;
      auto same = [&](const PathNode& n) {
        return n.type == PathNode::Type::kDirectory && n.dev == node->dev && n.ino == node->ino;
      };
      for (const auto& alias : Aliases(dir, same)) {
        if (Visible(alias)) all.insert(alias);
      }
    }
    std::vector<std::string> out;
    for (const auto& dir : all) {  // sorted: a directory comes before those beneath it
      if (std::none_of(out.begin(), out.end(),
                       [&](const std::string& o) { return PathIsWithin(dir, o); })) {
        out.push_back(dir);
      }
    }
    return out;
  }

  // A socket found at `path` (canonical): every target it is a link of.
  void Consider(const std::string& path, const PathNode& node) {
    auto it = by_ino_.find(Low32(node.ino));
    if (it == by_ino_.end()) return;
    for (size_t i : it->second) Record(path, node, targets_[i]);
  }

  // Every socket a search is for is complete.
  bool SearchComplete() const {
    return std::all_of(targets_.begin(), targets_.end(), [&](const Target& t) {
      return t.Complete() || !t.SearchedFor(facts_.caller_uid);
    });
  }
  // Nothing left on `dev` that the search is for.
  bool DeviceComplete(uint64_t dev) const {
    return std::all_of(targets_.begin(), targets_.end(), [&](const Target& t) {
      return t.dev != dev || t.Complete() || !t.SearchedFor(facts_.caller_uid);
    });
  }

  Status OverBudget(uint64_t dev) const {
    const Target* named = nullptr;
    for (const auto& t : targets_) {
      if (!t.Complete() && t.SearchedFor(facts_.caller_uid) && (dev == 0 || t.dev == dev)) {
        named = &t;
        break;
      }
    }
    std::string what = "a Unix socket";
    if (named) {
      what += " bound on the host as '" + (named->names.empty() ? "" : *named->names.begin()) +
              "' (device " + DeviceNumberText(named->dev) + ", inode " + std::to_string(named->ino);
      if (named->owner) what += ", held by pid " + std::to_string(*named->owner);
      what += ")";
    }
    return Fail("sandbox", what +
                               " is not where its name says, and searching the sandbox's view "
                               "for it passed " +
                               std::to_string(max_entries_) +
                               " directory entries; too many to be sure it is hidden from the "
                               "sandbox (fix: stop the process that holds the socket, or run "
                               "with fewer or smaller readable roots)");
  }

  // Every mount of a file (its root in the file system is not "/") on a device with a socket
  // to find, where the view shows it: one lstat each; a socket there is that socket.
  void FileMounts() {
    std::set<uint64_t> devs;
    for (const auto& t : targets_) devs.insert(t.dev);
    for (size_t i = 0; i < mounts_.size(); ++i) {
      const HostMount& m = mounts_[i];
      if (m.root == "/" || !devs.count(m.dev) || !Visible(m.path) || MountOf(m.path) != i) {
        continue;
      }
      auto node = facts_.lstat(m.path);
      if (!node || node->type != PathNode::Type::kSocket) continue;
      auto it = by_ino_.find(Low32(node->ino));
      if (it == by_ino_.end()) continue;
      for (size_t t : it->second) {
        if (Matches(*node, targets_[t])) targets_[t].mounted.insert(m.path);
      }
    }
  }

  // Reads one directory, recording every socket in it; pushes its subdirectories onto `stack`
  // (when given) that the view shows and that are not another mount. Every directory above
  // `from` is known to be searchable (Blocked).
  Status ScanDirectory(const std::string& dir, std::vector<std::string>* stack,
                       const std::string& from, uint64_t dev = 0) {
    auto entries = facts_.list_dir(dir);
    if (!entries) {
      // Unreadable to the caller: another user's stays unread (docs/policy.md), the caller's
      // own may be locked.
      Blocked(dir, from, /*listing=*/true, dev);
      return Ok();
    }
    bool blocked = false;
    for (const auto& e : *entries) {
      if (++scanned_ > max_entries_) return OverBudget(dev);
      if (e.type_known && e.type == PathNode::Type::kOther) continue;
      if (e.type_known && e.type == PathNode::Type::kDirectory && !stack) continue;
      std::string path = Join(dir, e.name);
      std::optional<PathNode> node;
      PathNode::Type type = e.type;
      if (!e.type_known || type == PathNode::Type::kSocket) {
        node = facts_.lstat(path);
        if (!node) {
          if (!blocked) Blocked(dir, dir, /*listing=*/false, dev);  // listed, not searchable
          blocked = true;
          continue;
        }
        type = node->type;
      }
      if (type == PathNode::Type::kSocket) {
        Consider(path, *node);
      } else if (type == PathNode::Type::kDirectory && stack) {
        if (!mount_points_.count(path) && Visible(path)) stack->push_back(path);
      }
    }
    return Ok();
  }

  // The mount a path is on: the longest mount point above it (the last mounted on a tie).
  std::optional<size_t> MountOf(const std::string& path) const {
    std::optional<size_t> best;
    for (size_t i = 0; i < mounts_.size(); ++i) {
      if (!PathIsWithin(path, mounts_[i].path)) continue;
      if (!best || mounts_[i].path.size() >= mounts_[*best].path.size()) best = i;
    }
    return best;
  }

  // Whether a walk from `from` (no mount point crossed, nothing the view hides) reaches `to`.
  bool WalkReaches(const std::string& from, const std::string& to) const {
    if (!PathIsWithin(to, from)) return false;
    size_t pos = from == "/" ? 1 : from.size() + 1;
    while (pos <= to.size()) {
      size_t end = to.find('/', pos);
      if (end == std::string::npos) end = to.size();
      std::string prefix = to.substr(0, end);
      if (mount_points_.count(prefix) || !Visible(prefix)) return false;
      pos = end + 1;
    }
    return true;
  }

  // Where a search of `dev` starts: each of its mounts the view shows, and each region root
  // on one of its mounts; none that a walk from another already reaches.
  std::vector<std::string> SearchStarts(uint64_t dev) const {
    std::vector<std::string> starts;
    for (size_t i = 0; i < mounts_.size(); ++i) {
      const HostMount& m = mounts_[i];
      if (m.dev != dev || !Visible(m.path) || MountOf(m.path) != i) continue;
      starts.push_back(m.path);
    }
    for (const auto& r : regions_) {
      auto m = MountOf(r.root);
      if (m && mounts_[*m].dev == dev && Visible(r.root)) starts.push_back(r.root);
    }
    auto depth = [](const std::string& p) { return std::count(p.begin(), p.end(), '/'); };
    std::sort(starts.begin(), starts.end(), [&](const std::string& a, const std::string& b) {
      return depth(a) != depth(b) ? depth(a) < depth(b) : a < b;
    });
    starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
    std::vector<std::string> walks;
    for (const auto& s : starts) {
      bool covered = std::any_of(walks.begin(), walks.end(),
                                 [&](const std::string& w) { return WalkReaches(w, s); });
      if (!covered) walks.push_back(s);
    }
    return walks;
  }

  Status SearchDevice(uint64_t dev) {
    for (const auto& start : walks_[dev]) {
      std::vector<std::string> stack = {start};
      while (!stack.empty()) {
        if (DeviceComplete(dev)) return Ok();
        std::string dir = std::move(stack.back());
        stack.pop_back();
        ++search_.searched_dirs;
        // A start's way down is not known to be searchable (a mount beneath a locked
        // directory); any other directory's parent was listed.
        const std::string from = dir == start ? "/" : Parent(dir);
        ANVIL_RETURN_IF_ERROR(ScanDirectory(dir, &stack, from, dev));
      }
    }
    return Ok();
  }

  // The same file as the other mounts of its file system show it (a bind mount of a directory
  // above it), each checked to be the same file (`same`: the socket, the directory).
  std::vector<std::string> Aliases(const std::string& link,
                                   const std::function<bool(const PathNode&)>& same) const {
    std::vector<std::string> out;
    auto home = MountOf(link);
    if (!home) return out;
    const HostMount& m = mounts_[*home];
    std::string rel = link.substr(m.path == "/" ? 0 : m.path.size());  // "/..." within the mount
    std::string in_fs = m.root == "/" ? rel : m.root + rel;
    for (size_t i = 0; i < mounts_.size(); ++i) {
      const HostMount& other = mounts_[i];
      if (i == *home || other.dev != m.dev || !PathIsWithin(in_fs, other.root)) continue;
      std::string tail = in_fs.substr(other.root == "/" ? 0 : other.root.size());
      std::string alias = other.path == "/" ? tail : other.path + tail;
      if (alias == link) continue;
      auto node = facts_.lstat(alias);
      if (node && same(*node)) out.push_back(alias);
    }
    return out;
  }

  const HostSocketFacts& facts_;
  const size_t max_entries_;
  const std::vector<ViewRegion>& view_regions_;
  std::vector<ViewRegion> regions_;  // canonical
  std::vector<Target> targets_;
  std::map<uint64_t, std::vector<size_t>> by_ino_;
  std::vector<HostMount> mounts_;
  std::set<std::string> mount_points_;
  std::map<uint64_t, std::vector<std::string>> walks_;  // SearchStarts of each device
  size_t scanned_ = 0;
  HostSocketSearch& search_;
  std::set<std::string> named_locked_;                    // Blocked: a socket's name leads in
  std::map<std::string, std::set<uint64_t>> met_locked_;  // Blocked: met searching these devices
};

}  // namespace

std::vector<ViewRegion> ViewRegionsOf(const FileView& view) {
  std::vector<ViewRegion> regions;
  if (view.full_read) regions.push_back({"/", {"/dev", "/proc", "/tmp", "/run"}});
  for (const auto& r : view.read_roots) regions.push_back({r, {}});
  for (const auto& wr : view.writable_roots) regions.push_back({wr.root, {}});
  // The command's home and what is bound into it from elsewhere (policy/sandbox_home.h): found
  // at their host paths, covered at their view paths (MaskSocketsInMappedBinds).
  for (const auto& m : view.mapped_binds) regions.push_back({m.source, {}});
  return regions;
}

Result<HostSocketMasks> LocateHostSockets(const std::vector<ViewRegion>& regions,
                                          const HostSocketFacts& facts, size_t max_entries,
                                          HostSocketSearch* search) {
  HostSocketSearch ignored;
  return Locator(regions, facts, max_entries, search ? *search : ignored).Run();
}

}  // namespace anvil
