#include "linux/user_ns_limits.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "common/unique_fd.h"

namespace anvil {
namespace {

constexpr const char* kNames[] = {
    "max_inotify_instances", "max_inotify_watches", "max_fanotify_groups",   "max_fanotify_marks",
    "max_user_namespaces",   "max_mnt_namespaces",  "max_pid_namespaces",    "max_net_namespaces",
    "max_ipc_namespaces",    "max_uts_namespaces",  "max_cgroup_namespaces", "max_time_namespaces"};

std::string Path(const std::string& name) { return "/proc/sys/user/" + name; }

}  // namespace

std::vector<UserNsLimit> SandboxUserNsLimits(const std::vector<UserNsLimit>& caller) {
  std::vector<UserNsLimit> out;
  for (const auto& limit : caller) {
    const uint64_t share =
        limit.value == 0 ? 0 : std::max<uint64_t>(1, limit.value / kSandboxShareDivisor);
    out.push_back({limit.name, share});
  }
  return out;
}

std::vector<UserNsLimit> ReadUserNsLimits() {
  std::vector<UserNsLimit> out;
  for (const char* name : kNames) {
    UniqueFd fd(::open(Path(name).c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) continue;
    char buf[32];
    ssize_t n = ::read(fd.Get(), buf, sizeof(buf) - 1);
    if (n <= 0) continue;
    buf[n] = '\0';
    char* end = nullptr;
    errno = 0;
    unsigned long long value = std::strtoull(buf, &end, 10);
    if (errno != 0 || end == buf) continue;
    out.push_back({name, value});
  }
  return out;
}

Status ApplyUserNsLimits(const std::vector<UserNsLimit>& limits) {
  for (const auto& limit : limits) {
    const std::string path = Path(limit.name);
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    const std::string text = std::to_string(limit.value);
    if (!fd || ::write(fd.Get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      return SysFail("sandbox", "cannot lower " + path +
                                    " in the sandbox's user namespace (it "
                                    "keeps the sandbox from using up the caller's " +
                                    limit.name +
                                    " quota). fix: a kernel with per-user-namespace limits (4.9+), "
                                    "or --policy danger-full-access to run without a sandbox");
    }
  }
  return Ok();
}

}  // namespace anvil
