#include "linux/memory_cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <vector>

#include "common/unique_fd.h"

namespace anvil {
namespace {

Status WriteText(const std::string& path, const std::string& text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return SysFail("sandbox", "open " + path);
  if (::write(fd.Get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    return SysFail("sandbox", "write " + path);
  }
  return Ok();
}

std::string ReadLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

struct Candidate {
  std::string dir;
  bool v2 = false;
};

// Where a memory cgroup of ours can go: the caller's v1 memory cgroup; or, on v2, the caller's
// cgroup or its parent (a delegated subtree) or the hierarchy's root, whichever has memory in
// its subtree_control.
std::vector<Candidate> FindParents(const CgroupFacts& facts) {
  const CgroupPlaces p = LocateController(facts, "memory");
  const std::string& v1_mount = p.v1_mount;
  const std::string& v1_path = p.v1_path;
  const std::string& v2_mount = p.v2_mount;
  const std::string& v2_path = p.v2_path;
  const bool have_v2 = p.have_v2;
  std::vector<Candidate> out;
  if (!v1_mount.empty() && !v1_path.empty()) {
    out.push_back({v1_mount + (v1_path == "/" ? "" : v1_path), false});
    return out;
  }
  if (have_v2 && !v2_mount.empty()) {
    std::string own = v2_mount + (v2_path == "/" ? "" : v2_path);
    std::vector<std::string> dirs = {own};
    if (own != v2_mount) dirs.push_back(own.substr(0, own.rfind('/')));
    dirs.push_back(v2_mount);
    for (const auto& dir : dirs) {
      std::string subtree = " " + ReadLine(dir + "/cgroup.subtree_control") + " ";
      if (subtree.find(" memory ") != std::string::npos) out.push_back({dir, true});
    }
  }
  return out;
}

// An anvil that was SIGKILLed never ran its destructor: its empty anvil-mem-PID-N stays. Removes
// those whose creator is gone and that are older than a minute (pids_cgroup.cc does the same
// for its own); rmdir removes only an empty cgroup.
void SweepStale(const std::string& parent) {
  DIR* dir = ::opendir(parent.c_str());
  if (!dir) return;
  const time_t now = ::time(nullptr);
  while (dirent* e = ::readdir(dir)) {
    const char* name = e->d_name;
    if (std::strncmp(name, "anvil-mem-", 10) != 0) continue;
    char* end = nullptr;
    long pid = std::strtol(name + 10, &end, 10);
    if (pid <= 0 || end == name + 10 || *end != '-' || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    struct stat st;
    if (::fstatat(::dirfd(dir), name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
        now - st.st_mtime < 60) {
      continue;
    }
    ::unlinkat(::dirfd(dir), name, AT_REMOVEDIR);
  }
  ::closedir(dir);
}

Status WriteCeiling(const std::string& dir, bool v2, uint64_t limit) {
  const std::string value = std::to_string(limit);
  if (v2) {
    ANVIL_RETURN_IF_ERROR(WriteText(dir + "/memory.max", value));
    // The ceiling is on memory, not memory plus swap: a flood must not move to swap instead.
    if (Exists(dir + "/memory.swap.max")) return WriteText(dir + "/memory.swap.max", "0");
    return Ok();
  }
  ANVIL_RETURN_IF_ERROR(WriteText(dir + "/memory.limit_in_bytes", value));
  if (Exists(dir + "/memory.memsw.limit_in_bytes")) {
    ANVIL_RETURN_IF_ERROR(WriteText(dir + "/memory.memsw.limit_in_bytes", value));
  }
  // v1 counts socket buffers only once a TCP limit is written (v2 counts them in memory.max):
  // without it, a command queues unbounded loopback TCP (and UDP) buffers past the ceiling. The
  // sandbox's sockets are all made after this, so all of them are counted.
  if (Exists(dir + "/memory.kmem.tcp.limit_in_bytes")) {
    return WriteText(dir + "/memory.kmem.tcp.limit_in_bytes", value);
  }
  return Ok();
}

}  // namespace

uint64_t PhysicalMemory() {
  struct sysinfo info {};
  if (::sysinfo(&info) != 0) return 0;
  return static_cast<uint64_t>(info.totalram) * info.mem_unit;  // MemTotal
}

uint64_t DefaultMemoryCeiling() { return PhysicalMemory() / 2; }

uint64_t DevShmSize(std::optional<uint64_t> asked, uint64_t ceiling, uint64_t physical) {
  if (asked) return *asked;
  if (ceiling == 0) return kFallbackDevShmSize;
  const uint64_t memory = physical == 0 || ceiling < physical ? ceiling : physical;
  return std::max<uint64_t>(memory / 2, 1);
}

Result<MemoryCgroup> MemoryCgroup::Create(uint64_t limit, const CgroupFacts& facts,
                                          const std::string& pids_cgroup) {
  if (!pids_cgroup.empty() && Exists(pids_cgroup + "/memory.max")) {
    // cgroup v2 with both controllers: the pids cgroup is the sandbox's only cgroup.
    ANVIL_RETURN_IF_ERROR(WriteCeiling(pids_cgroup, true, limit));
    return MemoryCgroup(pids_cgroup, /*owned=*/false, /*v2=*/true);
  }
  static std::atomic<unsigned> counter{0};
  std::optional<Error> last;
  for (const auto& parent : FindParents(facts)) {
    std::string path = parent.dir + "/anvil-mem-" + std::to_string(getpid()) + "-" +
                       std::to_string(counter.fetch_add(1));
    if (::mkdir(path.c_str(), 0755) != 0) {
      last = SysFail("sandbox", "mkdir " + path).value();
      continue;
    }
    MemoryCgroup cgroup(path, true, parent.v2);
    SweepStale(parent.dir);
    if (auto s = WriteCeiling(path, parent.v2, limit); !s) {
      last = s.error();
      continue;  // the destructor removes it
    }
    return cgroup;
  }
  if (last) return tl::unexpected(*last);
  return Fail("sandbox", "no memory cgroup controller is available to this user");
}

Status MemoryCgroup::Attach(pid_t pid) const {
  return WriteText(path_ + "/cgroup.procs", std::to_string(pid));
}

UniqueFd MemoryCgroup::OpenSelfAttach() const {
  if (v2_) return UniqueFd();
  return UniqueFd(::open((path_ + "/tasks").c_str(), O_WRONLY | O_CLOEXEC));
}

uint64_t MemoryCgroup::OomKills() const {
  std::ifstream in(path_ + (v2_ ? "/memory.events" : "/memory.oom_control"));
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value) {
    if (key == "oom_kill") return value;
  }
  return 0;
}

MemoryCgroup::~MemoryCgroup() {
  if (!path_.empty() && owned_) ::rmdir(path_.c_str());
}

}  // namespace anvil
