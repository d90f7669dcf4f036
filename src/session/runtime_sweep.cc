#include "session/runtime_sweep.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "fs/file_facts.h"

namespace anvil::session {

namespace {

constexpr const char* kSocketName = "gateway.sock";
// The most names of a base read in one sweep.
constexpr size_t kMaxNames = 65536;

// True when `dir` (opened, locked) holds nothing but, at most, a socket named kSocketName; its
// presence in `*has_socket`.
bool HoldsOnlyASocket(int dir, bool* has_socket) {
  *has_socket = false;
  const Status only = ForEachName(dir, "list", [&](const std::string& name) -> Status {
    struct stat st {};
    if (name == kSocketName && ::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISSOCK(st.st_mode)) {
      *has_socket = true;
      return Ok();
    }
    return Fail("invalid", "holds more than the socket");
  });
  return only.has_value();
}

// True when connecting to `path` is refused at once: a socket file that nothing listens on. A
// listener that does not accept (its backlog full, a stopped process) is not waited for: a
// non-blocking connect that would wait counts as someone listening, so a stop never hangs here.
bool NobodyListens(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return false;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!s) return false;
  const int r = ::connect(s.Get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  return r != 0 && errno == ECONNREFUSED;
}

}  // namespace

bool IsSessionDirName(std::string_view name) {
  return name.size() == 16 && std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

int SweepDeadRuntimeDirs(const std::string& base, std::string_view own,
                         std::chrono::seconds min_age, int max_looked_at) {
  UniqueFd b(::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!b) return 0;
  // The names first, then a random few of them: entries that cannot be removed (another
  // user's, a live session's) never keep the sweep from the rest in later stops.
  std::vector<std::string> names;
  (void)ForEachName(b.Get(), "list", [&](const std::string& name) -> Status {
    if (IsSessionDirName(name) && name != own) names.push_back(name);
    if (names.size() >= kMaxNames) return Fail("limit", "enough names");
    return Ok();
  });
  std::minstd_rand pick(static_cast<uint32_t>(::getpid()) ^ static_cast<uint32_t>(::time(nullptr)));
  std::shuffle(names.begin(), names.end(), pick);
  if (names.size() > static_cast<size_t>(std::max(0, max_looked_at))) {
    names.resize(static_cast<size_t>(std::max(0, max_looked_at)));
  }
  const uid_t me = ::geteuid();
  const time_t before = ::time(nullptr) - static_cast<time_t>(min_age.count());
  int removed = 0;
  for (const std::string& name : names) {
    struct stat st {};
    if (::fstatat(b.Get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != me || st.st_mtime > before) {
      continue;
    }
    UniqueFd dir(::openat(b.Get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    // A live gateway holds a shared lock; this one is held until the directory is gone.
    if (!dir || ::flock(dir.Get(), LOCK_EX | LOCK_NB) != 0) continue;
    bool has_socket = false;
    if (!HoldsOnlyASocket(dir.Get(), &has_socket)) continue;
    if (has_socket) {
      const std::string path = base + "/" + name + "/" + kSocketName;
      if (!NobodyListens(path) || ::unlinkat(dir.Get(), kSocketName, 0) != 0) continue;
    }
    if (::unlinkat(b.Get(), name.c_str(), AT_REMOVEDIR) == 0) ++removed;
  }
  return removed;
}

}  // namespace anvil::session
