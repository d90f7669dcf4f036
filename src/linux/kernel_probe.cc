#include "linux/kernel_probe.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/syscalls.h"
#include "common/unique_fd.h"
#include "linux/landlock.h"

namespace anvil {
namespace {

std::string ReadFirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Tries, in a throwaway child, to create the namespaces a sandbox uses. Returns "" on success,
// else the step and errno that failed.
std::string ProbeNamespaces(unsigned long flags) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return "pipe failed";
  pid_t pid = fork();
  if (pid == 0) {
    ::close(pipefd[0]);
    int err = 0;
    if (unshare(static_cast<int>(flags)) != 0) err = errno;
    if (err == 0 && (flags & CLONE_NEWNS)) {
      long fd = syscall(SYS_open_tree, AT_FDCWD, "/",
                        1 /*OPEN_TREE_CLONE*/ | O_CLOEXEC | 0x8000 /*AT_RECURSIVE*/);
      if (fd < 0) err = -errno;  // negative: the mount API, not unshare
    }
    ssize_t ignored = ::write(pipefd[1], &err, sizeof(err));
    (void)ignored;
    _exit(0);
  }
  ::close(pipefd[1]);
  int err = -1;
  ssize_t n = ::read(pipefd[0], &err, sizeof(err));
  ::close(pipefd[0]);
  int status;
  waitpid(pid, &status, 0);
  if (n != sizeof(err)) return "probe child failed";
  if (err == 0) return "";
  if (err < 0) return std::string("open_tree (new mount API, Linux 5.12+): ") + std::strerror(-err);
  return std::string("unshare: ") + std::strerror(err);
}

}  // namespace

bool KernelProbe::AllRequiredAvailable() const {
  for (const auto& l : layers) {
    if (l.required && !l.available) return false;
  }
  return true;
}

KernelProbe ProbeKernel() {
  KernelProbe probe;
  utsname u{};
  uname(&u);

  auto ll = landlock::ProbeAbi();
  probe.landlock_abi = ll.abi;
  {
    LayerProbe p{"landlock", ll.abi >= 1, true, "", "", ""};
    if (ll.abi >= 1) {
      p.detail = "ABI " + std::to_string(ll.abi) + " (files" +
                 std::string(ll.abi >= 4 ? ", TCP bind/connect" : "") +
                 std::string(ll.abi >= 6 ? ", signal and abstract-socket scoping" : "") + ")";
    } else {
      p.detail = ll.reason;
      p.fix = "boot a kernel with CONFIG_SECURITY_LANDLOCK=y and 'landlock' in lsm=";
    }
    p.check = "cat /sys/kernel/security/lsm; grep LANDLOCK /boot/config-$(uname -r)";
    probe.layers.push_back(p);
  }
  {
    LayerProbe p{"landlock-network", ll.abi >= 4, false, "", "", ""};
    p.detail = ll.abi >= 4 ? "TCP bind/connect confinement" : "needs Landlock ABI 4 (Linux 6.7)";
    if (ll.abi < 4)
      p.fix = "upgrade the kernel; seccomp and the network namespace still deny network";
    p.check = "uname -r   # Landlock ABI 4 needs Linux 6.7 or later";
    probe.layers.push_back(p);
  }
  {
    LayerProbe p{"landlock-scoping", ll.abi >= 6, false, "", "", ""};
    p.detail = ll.abi >= 6 ? "signals and abstract unix sockets scoped"
                           : "needs Landlock ABI 6 (Linux 6.12)";
    if (ll.abi < 6) p.fix = "upgrade the kernel; the pid and network namespaces still isolate";
    p.check = "uname -r   # Landlock ABI 6 needs Linux 6.12 or later";
    probe.layers.push_back(p);
  }
  {
    int mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
    std::string actions = ReadFirstLine("/proc/sys/kernel/seccomp/actions_avail");
    bool ok = mode >= 0 && (actions.empty() || (actions.find("errno") != std::string::npos &&
                                                actions.find("kill_process") != std::string::npos));
    LayerProbe p{"seccomp", ok, true, ok ? "filter mode, actions: " + actions : "unavailable",
                 "",        ""};
    if (!ok) p.fix = "boot a kernel with CONFIG_SECCOMP_FILTER=y";
    p.check =
        "grep Seccomp /proc/self/status; cat /proc/sys/kernel/seccomp/actions_avail; "
        "grep SECCOMP_FILTER /boot/config-$(uname -r)";
    probe.layers.push_back(p);
  }
  {
    std::string err =
        ProbeNamespaces(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC);
    // Root too: its sandbox runs as an unprivileged id inside a user namespace (root_remap.h).
    bool ok = err.empty();
    LayerProbe p{"namespaces", ok, true, "", "", ""};
    if (err.empty()) {
      p.detail = "user, mount, pid, net and ipc namespaces";
    } else {
      p.detail = err;
      std::string userns_sysctl = ReadFirstLine("/proc/sys/kernel/unprivileged_userns_clone");
      std::string apparmor =
          ReadFirstLine("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
      p.fix = geteuid() == 0
                  ? "root's sandbox runs its command as an unprivileged id inside a user namespace."
                  : "workspace-write needs a mount namespace; for an unprivileged user that means "
                    "user namespaces.";
      if (userns_sysctl == "0") p.fix += " Run: sudo sysctl kernel.unprivileged_userns_clone=1.";
      if (apparmor == "1") {
        p.fix +=
            " Ubuntu restricts them: sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0 "
            "(or an AppArmor profile allowing userns for anvil).";
      }
      std::string max = ReadFirstLine("/proc/sys/user/max_user_namespaces");
      if (max == "0") p.fix += " Run: sudo sysctl user.max_user_namespaces=15000.";
    }
    p.check =
        "unshare --user --map-root-user --mount --pid --net --ipc --fork true && echo ok; "
        "sysctl user.max_user_namespaces kernel.unprivileged_userns_clone "
        "kernel.apparmor_restrict_unprivileged_userns";
    probe.layers.push_back(p);
  }
  {
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    long fd = syscall(SYS_openat2, AT_FDCWD, ".", &how, sizeof(how));
    bool ok = fd >= 0;
    if (ok) ::close(static_cast<int>(fd));
    LayerProbe p{"openat2", ok, true, ok ? "RESOLVE_BENEATH available" : std::strerror(errno),
                 "",        ""};
    if (!ok) p.fix = "needs Linux 5.6+";
    p.check = "uname -r   # openat2 needs Linux 5.6 or later";
    probe.layers.push_back(p);
  }
  {
    long fd = syscall(SYS_pidfd_open, getpid(), 0);
    bool ok = fd >= 0;
    if (ok) ::close(static_cast<int>(fd));
    LayerProbe p{"pidfd", ok, true, ok ? "pidfd_open available" : std::strerror(errno), "", ""};
    if (!ok) p.fix = "needs Linux 5.3+";
    p.check = "uname -r   # pidfd_open needs Linux 5.3 or later";
    probe.layers.push_back(p);
  }
  {
    LayerProbe p{"kernel", true, false, std::string(u.sysname) + " " + u.release, "", ""};
    probe.layers.insert(probe.layers.begin(), p);
  }
  return probe;
}

}  // namespace anvil
