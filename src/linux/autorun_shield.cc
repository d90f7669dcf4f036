#include "linux/autorun_shield.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "linux/owner_write.h"
#include "linux/protected_placeholders.h"
#include "policy/sandbox_policy.h"

namespace anvil {
namespace {

// Each round makes one more level of every place; a home is not this deep.
constexpr int kMaxRounds = 32;

std::string ParentOf(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

std::string NameOf(const std::string& path) { return path.substr(path.rfind('/') + 1); }

std::string JoinPath(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

bool CannotCreate(int error) { return error == EACCES || error == EPERM || error == EROFS; }

// A directory the caller cannot open: nobody with its credentials (nor fewer) can make a name
// in it either, unless it may write and search it without reading it.
bool CannotCreateIn(const std::string& dir, int open_error) {
  return (open_error == EACCES || open_error == EPERM) &&
         ::faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) != 0;
}

// `name` in `parent` is still the directory `dir` refers to.
bool StillNamed(int parent, const std::string& name, int dir) {
  struct stat by_name {
  }, by_fd{};
  return ::fstatat(parent, name.c_str(), &by_name, AT_SYMLINK_NOFOLLOW) == 0 &&
         ::fstat(dir, &by_fd) == 0 && by_name.st_dev == by_fd.st_dev &&
         by_name.st_ino == by_fd.st_ino;
}

bool IsPlaceholderLink(int dir, const char* name) {
  char target[PATH_MAX];
  const ssize_t n = ::readlinkat(dir, name, target, sizeof(target));
  return n >= 0 && std::string_view(target, static_cast<size_t>(n)) == kAutorunPlaceholder;
}

// Every placeholder link in `dir` (it is locked exclusively: no run uses any of them).
void RemovePlaceholderLinks(int dir) {
  UniqueFd copy(::fcntl(dir, F_DUPFD_CLOEXEC, 0));
  if (!copy) return;
  DIR* stream = ::fdopendir(copy.Get());
  if (stream == nullptr) return;
  copy.Release();
  ::rewinddir(stream);
  while (const dirent* entry = ::readdir(stream)) {
    if (entry->d_type != DT_LNK && entry->d_type != DT_UNKNOWN) continue;
    if (IsPlaceholderLink(dir, entry->d_name)) (void)::unlinkat(dir, entry->d_name, 0);
  }
  ::closedir(stream);
}

}  // namespace

AutorunFs RealAutorunFs() {
  AutorunFs fs;
  fs.lstat = [](const std::string& path) {
    AutorunFs::Node node;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return node;
    node.links = st.st_nlink;
    if (S_ISDIR(st.st_mode)) {
      node.kind = AutorunFs::Kind::kDirectory;
    } else if (S_ISREG(st.st_mode)) {
      node.kind = AutorunFs::Kind::kFile;
    } else if (S_ISLNK(st.st_mode)) {
      node.kind = AutorunFs::Kind::kSymlink;
      char target[PATH_MAX];
      const ssize_t n = ::readlink(path.c_str(), target, sizeof(target));
      if (n > 0 && static_cast<size_t>(n) < sizeof(target)) node.target.assign(target, n);
    } else {
      node.kind = AutorunFs::Kind::kOther;
    }
    return node;
  };
  return fs;
}

AutorunFs ListingAutorunFs() {
  // Directory -> its names with their d_type; nullopt: not listed, ask with lstat.
  using Listing = std::optional<std::unordered_map<std::string, unsigned char>>;
  auto listings = std::make_shared<std::unordered_map<std::string, Listing>>();
  const AutorunFs real = RealAutorunFs();
  auto list = [](const std::string& dir) -> Listing {
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return std::nullopt;
    DIR* stream = ::fdopendir(fd.Get());
    if (stream == nullptr) return std::nullopt;
    fd.Release();
    std::unordered_map<std::string, unsigned char> names;
    bool complete = true;
    errno = 0;
    while (const dirent* entry = ::readdir(stream)) {
      if (names.size() >= kListedEntries) {
        complete = false;
        break;
      }
      names.emplace(entry->d_name, entry->d_type);
    }
    if (errno != 0) complete = false;
    ::closedir(stream);
    if (!complete) return std::nullopt;
    return names;
  };
  AutorunFs fs;
  fs.lstat = [listings, real, list](const std::string& path) {
    const auto slash = path.rfind('/');
    const std::string name = slash == std::string::npos ? "" : path.substr(slash + 1);
    if (slash == std::string::npos || name.empty() || name == "." || name == "..") {
      return real.lstat(path);
    }
    const std::string dir = ParentOf(path);
    auto it = listings->find(dir);
    if (it == listings->end()) it = listings->emplace(dir, list(dir)).first;
    if (!it->second) return real.lstat(path);
    const auto entry = it->second->find(name);
    if (entry == it->second->end()) return AutorunFs::Node{};  // kMissing
    switch (entry->second) {
      case DT_DIR:
        return AutorunFs::Node{AutorunFs::Kind::kDirectory, 1, {}};
      case DT_LNK: {
        char target[PATH_MAX];
        const ssize_t n = ::readlink(path.c_str(), target, sizeof(target));
        // Gone or no longer a link since the listing: asked again.
        if (n <= 0 || static_cast<size_t>(n) >= sizeof(target)) return real.lstat(path);
        return AutorunFs::Node{AutorunFs::Kind::kSymlink, 1, std::string(target, n)};
      }
      case DT_REG:      // its hard links
      case DT_UNKNOWN:  // a file system that does not say
        return real.lstat(path);
      default:
        return AutorunFs::Node{AutorunFs::Kind::kOther, 1, {}};
    }
  };
  return fs;
}

Result<std::vector<std::string>> OtherHardLinks(const std::string& path,
                                                const std::vector<std::string>& roots,
                                                const std::vector<std::string>& skip,
                                                size_t max_entries) {
  struct stat file {};
  if (::lstat(path.c_str(), &file) != 0 || !S_ISREG(file.st_mode)) {
    return Fail("sandbox", path + " changed while the sandbox started. fix: run it again");
  }
  std::vector<std::string> out;
  size_t entries = 0;
  auto all_found = [&] { return out.size() + 1 >= file.st_nlink; };
  auto skipped = [&](const std::string& dir) {
    return std::any_of(skip.begin(), skip.end(),
                       [&](const std::string& c) { return PathIsWithin(dir, c); });
  };
  for (const auto& root : roots) {
    std::vector<std::string> todo{root};
    while (!todo.empty() && !all_found()) {
      const std::string dir = todo.back();
      todo.pop_back();
      UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!fd) continue;  // gone, or not the caller's to open: the command cannot either
      UniqueFd copy(::fcntl(fd.Get(), F_DUPFD_CLOEXEC, 0));
      DIR* stream = copy ? ::fdopendir(copy.Get()) : nullptr;
      if (stream == nullptr) continue;
      copy.Release();
      while (const dirent* entry = ::readdir(stream)) {
        const std::string_view name = entry->d_name;
        if (name == "." || name == "..") continue;
        if (++entries > max_entries) {
          ::closedir(stream);
          return Fail("sandbox",
                      path + ", which the host runs, has " + std::to_string(file.st_nlink) +
                          " hard links, and a writable root holds it; the search for its other "
                          "names stopped after " +
                          std::to_string(max_entries) +
                          " entries, so one of them could still be written. fix: make it a file "
                          "of its own (cp -p it aside and mv the copy back), or choose a "
                          "workspace that does not hold it");
        }
        const std::string child = JoinPath(dir, entry->d_name);
        unsigned char type = entry->d_type;
        if (type == DT_UNKNOWN || entry->d_ino == file.st_ino) {
          struct stat st {};
          if (::fstatat(fd.Get(), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
          if (S_ISREG(st.st_mode) && st.st_dev == file.st_dev && st.st_ino == file.st_ino) {
            if (child != path) out.push_back(child);
            continue;
          }
          type = S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
        }
        if (type == DT_DIR && !skipped(child)) todo.push_back(child);
      }
      ::closedir(stream);
    }
  }
  return out;
}

Result<AutorunShield> AutorunShield::Prepare(const std::vector<std::string>& places,
                                             const std::vector<std::string>& writable_roots,
                                             const std::vector<std::string>& covered,
                                             const std::vector<std::string>& caches,
                                             size_t link_search_entries) {
  AutorunShield shield;
  std::vector<std::string> unmakeable;
  for (int round = 0; round < kMaxRounds; ++round) {
    // Listed afresh each round: the last one made names.
    const AutorunFs fs = ListingAutorunFs();
    ANVIL_TRY(plan, PlanAutorunShield(places, writable_roots, covered, fs, unmakeable, caches));
    bool settled = plan->make.empty();
    for (const auto& make : plan->make) {
      ANVIL_TRY(made, make.directory ? shield.MakeDirectory(make) : shield.MakeLink(make));
      // The caller cannot make it there, so the command cannot either.
      if (*made == Outcome::kCannot) unmakeable.push_back(JoinPath(make.parent, make.name));
    }
    // Held before the view is computed, so that no other run removes one while this one
    // binds it; a placeholder gone meanwhile is made again in the next round.
    for (const auto& link : plan->placeholders) {
      const bool pinned = std::find(plan->pinned_links.begin(), plan->pinned_links.end(), link) !=
                          plan->pinned_links.end();
      ANVIL_TRY(held, shield.HoldLink(link, pinned));
      if (!*held && pinned) settled = false;
    }
    if (!settled) continue;
    for (const auto& dir : plan->pinned_dirs) {
      ANVIL_RETURN_IF_ERROR(shield.AdoptMarked(dir));
    }
    // A cache place an earlier run made (a killed one left it, or a concurrent one will remove
    // it when it ends): held, so that it is neither removed while this run binds over it nor
    // left in the home after. And any other directory an earlier run made and left, where no
    // root of this run holds it: removed after the run like a placeholder link.
    for (const auto& shadow : plan->shadowed) {
      ANVIL_RETURN_IF_ERROR(shield.AdoptMarked(shadow.path));
    }
    for (const auto& dir : plan->met_dirs) {
      ANVIL_RETURN_IF_ERROR(shield.AdoptMarked(dir));
    }
    // The other names of a hard-linked file, where a root shows them: read-only too.
    std::vector<std::string> skip = covered;
    for (const auto& s : plan->shadowed) skip.push_back(s.path);
    for (const auto& hard : plan->hard_linked) {
      ANVIL_TRY(names, OtherHardLinks(hard.path, writable_roots, skip, link_search_entries));
      for (const auto& n : *names) {
        if (std::find(plan->read_only.begin(), plan->read_only.end(), n) == plan->read_only.end()) {
          plan->read_only.push_back(n);
        }
      }
    }
    shield.plan_ = std::move(*plan);
    return shield;
  }
  return Fail("sandbox",
              "the places the host runs from the home kept changing while the sandbox started "
              "(another program making and removing them?). fix: run it again");
}

Result<int> AutorunShield::Hold(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) return -1;
    if (CannotCreateIn(path, errno)) return -2;
    return SysFail("sandbox", "open " + path);
  }
  struct stat st {};
  if (::fstat(fd.Get(), &st) != 0) return SysFail("sandbox", "stat " + path);
  for (size_t i = 0; i < dirs_.size(); ++i) {
    struct stat have {};
    if (::fstat(dirs_[i].fd.Get(), &have) == 0 && have.st_dev == st.st_dev &&
        have.st_ino == st.st_ino) {
      return static_cast<int>(i);
    }
  }
  // Waits only while a finishing run holds it exclusively, removing its placeholders.
  while (::flock(fd.Get(), LOCK_SH) != 0) {
    if (errno != EINTR) return SysFail("sandbox", "lock " + path);
  }
  dirs_.push_back(HeldDir{path, std::move(fd), UniqueFd(), false, false, false});
  return static_cast<int>(dirs_.size() - 1);
}

Result<AutorunShield::Outcome> AutorunShield::MakeLink(const AutorunMake& make) {
  ANVIL_TRY(dir, Hold(make.parent));
  if (*dir == -2) return Outcome::kCannot;
  if (*dir < 0) return Outcome::kChanged;
  const std::string placeholder(kAutorunPlaceholder);
  if (::symlinkat(placeholder.c_str(), dirs_[*dir].fd.Get(), make.name.c_str()) != 0) {
    if (errno == EEXIST) return Outcome::kChanged;
    if (CannotCreate(errno)) return Outcome::kCannot;
    return SysFail("sandbox", "make the placeholder " + JoinPath(make.parent, make.name));
  }
  dirs_[*dir].holds_links = true;
  made_links_.push_back(JoinPath(make.parent, make.name));
  return Outcome::kMade;
}

Result<AutorunShield::Outcome> AutorunShield::MakeDirectory(const AutorunMake& make) {
  const std::string path = JoinPath(make.parent, make.name);
  UniqueFd parent(::open(make.parent.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!parent) {
    if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) return Outcome::kChanged;
    if (CannotCreateIn(make.parent, errno)) return Outcome::kCannot;
    return SysFail("sandbox", "open " + make.parent);
  }
  // Marked before its name exists, so a concurrent run never takes it for the user's (best
  // effort: a file system without user xattrs leaves an unmarked one behind only when a killed
  // run could not remove it).
  if (const int err = MakeMarkedPlaceholder(parent.Get(), make.name, true, 0700); err != 0) {
    errno = err;
    if (errno == EEXIST) return Outcome::kChanged;
    if (CannotCreate(errno)) return Outcome::kCannot;
    return SysFail("sandbox", "make " + path);
  }
  UniqueFd fd(
      ::openat(parent.Get(), make.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return SysFail("sandbox", "open " + path);
  while (::flock(fd.Get(), LOCK_SH) != 0) {
    if (errno != EINTR) return SysFail("sandbox", "lock " + path);
  }
  const bool ours = StillNamed(parent.Get(), make.name, fd.Get());
  dirs_.push_back(HeldDir{path, std::move(fd), std::move(parent), ours, ours, false});
  return ours ? Outcome::kMade : Outcome::kChanged;
}

Result<bool> AutorunShield::HoldLink(const std::string& path, bool pinned) {
  auto dir = Hold(ParentOf(path));
  if (!dir) {
    // One an earlier run left where this run needs nothing: cleaning it up can wait.
    if (!pinned) return false;
    return tl::unexpected(dir.error());
  }
  if (*dir == -2) return true;  // nor can the command remove or make a name there
  if (*dir < 0) return false;
  if (!IsPlaceholderLink(dirs_[*dir].fd.Get(), NameOf(path).c_str())) return false;
  dirs_[*dir].holds_links = true;
  return true;
}

Status AutorunShield::AdoptMarked(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd || ::fgetxattr(fd.Get(), kPlaceholderXattr, nullptr, 0) < 0) return Ok();
  fd.Reset();
  ANVIL_TRY(held, Hold(dir));
  if (*held < 0) return Ok();
  HeldDir& d = dirs_[*held];
  if (d.placeholder) return Ok();
  UniqueFd parent(::open(ParentOf(dir).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!parent || !StillNamed(parent.Get(), NameOf(dir), d.fd.Get())) return Ok();
  d.parent = std::move(parent);
  d.placeholder = true;
  return Ok();
}

AutorunShield& AutorunShield::operator=(AutorunShield&& other) noexcept {
  if (this != &other) {
    Release();
    dirs_ = std::move(other.dirs_);
    made_links_ = std::move(other.made_links_);
    plan_ = std::move(other.plan_);
    other.dirs_.clear();
    other.made_links_.clear();
  }
  return *this;
}

AutorunShield::~AutorunShield() { Release(); }

void AutorunShield::Release() {
  // Deepest first: the links out of their directories, then the directories out of theirs.
  std::vector<size_t> order(dirs_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  auto depth = [this](size_t i) {
    return std::count(dirs_[i].path.begin(), dirs_[i].path.end(), '/');
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return depth(a) > depth(b); });
  for (size_t i : order) {
    HeldDir& d = dirs_[i];
    if (!d.holds_links && !d.placeholder) continue;
    // Another run still holds it (and binds what is in it): that run removes them.
    if (::flock(d.fd.Get(), LOCK_EX | LOCK_NB) != 0) continue;
    // The command may have taken the owner's permissions off these directories (chmod 0):
    // given back for the removal, and set again after it.
    if (d.holds_links) {
      const OwnerAccess access(d.fd.Get());
      RemovePlaceholderLinks(d.fd.Get());
    }
    // Fails (ENOTEMPTY) when something was put in it meanwhile: then it is the user's.
    if (d.placeholder && d.parent) {
      const OwnerAccess access(d.parent.Get());
      if (StillNamed(d.parent.Get(), NameOf(d.path), d.fd.Get())) {
        (void)::unlinkat(d.parent.Get(), NameOf(d.path).c_str(), AT_REMOVEDIR);
      }
    }
  }
  dirs_.clear();  // closing the descriptors releases the locks
  made_links_.clear();
}

std::vector<std::string> AutorunShield::Made() const {
  std::vector<std::string> out = made_links_;
  for (const auto& d : dirs_) {
    if (d.made) out.push_back(d.path);
  }
  return out;
}

}  // namespace anvil
