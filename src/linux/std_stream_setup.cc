// The caller's descriptors probed (ProbeStdStreams), and the steps of terminal_relay.h inside
// the sandbox: init's pseudo-terminal and its hand-over, the command's session, its descriptors
// 0-2 put in place. The supervisor's relays are in terminal_relay.cc.
#include <fcntl.h>
#include <linux/kcmp.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "common/syscalls.h"
#include "ipc/fd_passing.h"
#include "linux/terminal_relay.h"

namespace anvil {

std::array<StdStreamFacts, 3> ProbeStdStreams() {
  std::array<StdStreamFacts, 3> facts{};
  struct stat st[3] = {};
  for (int fd = 0; fd < 3; ++fd) {
    StdStreamFacts& f = facts[fd];
    if (::fstat(fd, &st[fd]) != 0) continue;
    int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0) continue;
    f.open = true;
    f.access = flags & O_ACCMODE;
    f.type = st[fd].st_mode & S_IFMT;
    if (f.type == S_IFCHR || f.type == S_IFBLK) f.rdev = st[fd].st_rdev;
    if (f.type == S_IFCHR && ViewDeviceIndex(f.rdev) < 0) f.terminal = ::isatty(fd) == 1;
    if (f.type == S_IFIFO) {
      struct statfs fs {};
      f.anonymous = ::fstatfs(fd, &fs) == 0 && fs.f_type == PIPEFS_MAGIC;
    }
  }
  auto relayed = [&](const StdStreamFacts& f) {
    return f.open && !f.terminal && f.type != S_IFSOCK && !(f.type == S_IFIFO && f.anonymous) &&
           !(f.type == S_IFCHR && ViewDeviceIndex(f.rdev) >= 0);
  };
  for (int fd = 1; fd < 3; ++fd) {
    if (!relayed(facts[fd])) continue;
    for (int prev = 0; prev < fd; ++prev) {
      if (!relayed(facts[prev]) || st[prev].st_dev != st[fd].st_dev ||
          st[prev].st_ino != st[fd].st_ino) {
        continue;
      }
      const pid_t self = ::getpid();
      long same = ::syscall(SYS_kcmp, self, self, KCMP_FILE, prev, fd);
      // Without kcmp (a kernel without CONFIG_KCMP), one inode with the same flags counts as
      // one description: a shared relay keeps the order, which is what `2>&1` means.
      if (same == 0 || (same < 0 && ::fcntl(prev, F_GETFL) == ::fcntl(fd, F_GETFL))) {
        facts[fd].same_as = prev;
        break;
      }
    }
  }
  return facts;
}

Result<UniqueFd> OpenSandboxTerminal(const ChildStdStreams& child) {
  UniqueFd master(::open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!master) {
    return SysFail("sandbox",
                   "open /dev/ptmx for the command's pseudo-terminal (a terminal on stdin, "
                   "stdout or stderr needs one; fix: redirect them, e.g. `</dev/null | cat`)");
  }
  int unlock = 0;
  if (::ioctl(master.Get(), TIOCSPTLCK, &unlock) != 0) {
    return SysFail("sandbox", "unlock the command's pseudo-terminal");
  }
  UniqueFd slave(::ioctl(master.Get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!slave) return SysFail("sandbox", "open the command's pseudo-terminal (TIOCGPTPEER)");
  if (child.settings_valid && ::tcsetattr(slave.Get(), TCSANOW, &child.settings) != 0) {
    return SysFail("sandbox", "copy the terminal's settings to the pseudo-terminal");
  }
  if (child.size.ws_row != 0 || child.size.ws_col != 0) {
    ::ioctl(slave.Get(), TIOCSWINSZ, &child.size);
  }
  if (::setsid() < 0 || ::ioctl(slave.Get(), TIOCSCTTY, 0) != 0) {
    return SysFail("sandbox", "make the pseudo-terminal the sandbox's controlling terminal");
  }
  // Init hands the terminal to the command from the background later (GrantTerminal); ignored,
  // SIGTTOU lets tcsetpgrp through instead of stopping init (which, as pid 1, would only loop).
  // The command's dispositions are reset before it runs.
  ::signal(SIGTTOU, SIG_IGN);
  const char byte = 'M';
  const int fds[1] = {master.Get()};
  if (ipc::SendWithFds(child.terminal_channel, &byte, 1, fds) != 1) {
    return SysFail("sandbox", "hand the pseudo-terminal to the supervisor");
  }
  return slave;
}

Status EnterCommandSession(const ChildStdStreams& child, int terminal_slave) {
  if (!child.terminal) {
    if (::setsid() < 0) return SysFail("sandbox", "setsid");
    return Ok();
  }
  if (::setpgid(0, 0) != 0) return SysFail("sandbox", "a process group for the command");
  if (!child.terminal_foreground) return Ok();
  // Taking the foreground from the background: SIGTTOU would stop it, unless blocked.
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  ::sigprocmask(SIG_BLOCK, &ttou, &old);
  int r = ::tcsetpgrp(terminal_slave, ::getpid());
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  if (r != 0) return SysFail("sandbox", "make the command the pseudo-terminal's foreground job");
  return Ok();
}

bool GrantTerminal(int terminal_slave, pid_t command, int stop_signal) {
  if (terminal_slave < 0 || (stop_signal != SIGTTIN && stop_signal != SIGTTOU)) return false;
  if (::tcgetpgrp(terminal_slave) == command) return false;  // already its: a stop signal
  if (::tcsetpgrp(terminal_slave, command) != 0) return false;
  ::kill(-command, SIGCONT);
  return true;
}

Status PlaceStdStreams(const ChildStdStreams& child, int terminal_slave, int call_stdin) {
  int source[3] = {0, 1, 2};
  int opened_device[3] = {-1, -1, -1};
  int opened_access[3] = {-1, -1, -1};
  int opened_fd[3] = {-1, -1, -1};
  // One open per device and access mode (`</dev/null >/dev/null 2>&1` opens it twice).
  auto open_device = [&](int index, int access) -> int {
    int slot = 0;
    for (; slot < 3 && opened_fd[slot] >= 0; ++slot) {
      if (opened_device[slot] == index && opened_access[slot] == access) return opened_fd[slot];
    }
    int fd = ::open(kViewDevices[index].path, access | O_NOCTTY | O_CLOEXEC);
    if (fd >= 0 && slot < 3) {
      opened_device[slot] = index;
      opened_access[slot] = access;
      opened_fd[slot] = fd;
    }
    return fd;
  };
  for (int fd = call_stdin >= 0 ? 1 : 0; fd < 3; ++fd) {
    switch (child.action[fd]) {
      case StdStreamAction::kPass:
        break;
      case StdStreamAction::kClosed:
        source[fd] = -1;
        break;
      case StdStreamAction::kTerminal:
        source[fd] = terminal_slave;
        break;
      case StdStreamAction::kRelayIn:
      case StdStreamAction::kRelayOut:
        source[fd] = child.source[fd];
        break;
      case StdStreamAction::kViewDevice:
        source[fd] = open_device(child.device[fd], child.access[fd]);
        if (source[fd] < 0) {
          return SysFail("sandbox", std::string("open the view's ") +
                                        kViewDevices[child.device[fd]].path +
                                        " for the command's descriptor " + std::to_string(fd));
        }
        break;
    }
  }
  if (call_stdin >= 0) {
    // The gateway's call: a pipe carrying the request's stdin, or /dev/null (its own node,
    // outside the view: the command gets the view's).
    struct stat st {};
    if (::fstat(call_stdin, &st) != 0) return SysFail("sandbox", "stdin of the call");
    int device = S_ISCHR(st.st_mode) ? ViewDeviceIndex(st.st_rdev) : -1;
    struct statfs fs {};
    bool pipe =
        S_ISFIFO(st.st_mode) && ::fstatfs(call_stdin, &fs) == 0 && fs.f_type == PIPEFS_MAGIC;
    if (device >= 0) {
      source[0] = open_device(device, O_RDONLY);
      if (source[0] < 0) return SysFail("sandbox", "open the view's device for the call's stdin");
    } else if (pipe || S_ISSOCK(st.st_mode)) {
      source[0] = call_stdin;
    } else {
      return Fail("sandbox", "the call's stdin must be a pipe or /dev/null");
    }
  }
  // A source may sit on 0-2 itself (the caller had that descriptor closed): lift it first, so
  // no dup2 below overwrites a source that is still to be placed.
  for (int fd = 0; fd < 3; ++fd) {
    if (source[fd] >= 0 && source[fd] != fd && source[fd] < 3) {
      source[fd] = ::fcntl(source[fd], F_DUPFD_CLOEXEC, 3);
      if (source[fd] < 0) return SysFail("sandbox", "place the command's descriptors");
    }
  }
  for (int fd = 0; fd < 3; ++fd) {
    if (source[fd] >= 0 && source[fd] != fd && ::dup2(source[fd], fd) != fd) {
      return SysFail("sandbox", "place the command's descriptor " + std::to_string(fd));
    }
  }
  for (int fd = 0; fd < 3; ++fd) {
    if (source[fd] < 0) ::close(fd);
  }
  // The devices opened above are close-on-exec; their dup2 copies on 0-2 are not.
  return Ok();
}

void CloseCommandEnds(const ChildStdStreams& child) {
  for (int fd : child.source) {
    if (fd >= 0) ::close(fd);
  }
}

}  // namespace anvil
