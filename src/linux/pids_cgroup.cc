#include "linux/pids_cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

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

// The directory of this process's pids cgroup, or "" when there is no usable one.
std::string FindPidsCgroupDir(const CgroupFacts& facts) {
  const CgroupPlaces p = LocateController(facts, "pids");
  if (!p.v1_mount.empty() && !p.v1_path.empty()) {
    return p.v1_mount + (p.v1_path == "/" ? "" : p.v1_path);
  }
  if (p.have_v2 && !p.v2_mount.empty()) {
    // A child gets pids.max only where the parent delegates the controller: our own cgroup,
    // or else the hierarchy's root (systemd enables pids there; a scope usually does not).
    for (const std::string& dir : {p.v2_mount + (p.v2_path == "/" ? "" : p.v2_path), p.v2_mount}) {
      std::string subtree = " " + ReadLine(dir + "/cgroup.subtree_control") + " ";
      if (subtree.find(" pids ") != std::string::npos) return dir;
    }
  }
  return "";
}

// An anvil that was SIGKILLed never ran its destructor: its empty anvil-PID-N directory stays.
// Removes every such directory of `parent` whose creator PID is gone and that is older than a
// minute (a younger one may belong to a sandbox being set up by an anvil in another pid
// namespace, whose PID means nothing here). rmdir removes only an empty cgroup, so a cgroup that
// still holds processes is never touched.
void SweepStale(const std::string& parent) {
  DIR* dir = ::opendir(parent.c_str());
  if (!dir) return;
  const time_t now = ::time(nullptr);
  while (dirent* e = ::readdir(dir)) {
    const char* name = e->d_name;
    if (std::strncmp(name, "anvil-", 6) != 0) continue;
    char* end = nullptr;
    long pid = std::strtol(name + 6, &end, 10);
    if (pid <= 0 || end == name + 6 || *end != '-' || pid == ::getpid()) continue;
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

}  // namespace

Result<PidsCgroup> PidsCgroup::Create(uint64_t limit, const CgroupFacts& facts) {
  std::string parent = FindPidsCgroupDir(facts);
  if (parent.empty()) return Fail("sandbox", "no pids cgroup controller is available to this user");
  static std::atomic<unsigned> counter{0};
  std::string path =
      parent + "/anvil-" + std::to_string(getpid()) + "-" + std::to_string(counter.fetch_add(1));
  if (::mkdir(path.c_str(), 0755) != 0) return SysFail("sandbox", "mkdir " + path);
  PidsCgroup cgroup(path);
  SweepStale(parent);
  ANVIL_RETURN_IF_ERROR(WriteText(path + "/pids.max", std::to_string(limit)));
  return cgroup;
}

Status PidsCgroup::Attach(pid_t pid) const {
  return WriteText(path_ + "/cgroup.procs", std::to_string(pid));
}

UniqueFd PidsCgroup::OpenSelfAttach() const {
  return UniqueFd(::open((path_ + "/tasks").c_str(), O_WRONLY | O_CLOEXEC));
}

PidsCgroup::~PidsCgroup() {
  // Empty once the sandbox's pid namespace is gone. One left by a SIGKILLed anvil is removed by
  // a later Create (SweepStale).
  if (!path_.empty()) ::rmdir(path_.c_str());
}

}  // namespace anvil
