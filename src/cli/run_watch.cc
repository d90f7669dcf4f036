#include "cli/run_watch.h"

#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "common/fd_io.h"
#include "common/interrupt.h"
#include "common/unique_fd.h"
#include "session/plugin_watch.h"

namespace anvil::cli {
namespace {

constexpr uint32_t kWatchMask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE |
                                IN_DELETE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

// Watches the directory and its lib/ (the plugin's files: host/plugin_host.cc reads nothing
// else). Adding a watch that exists returns the same one, so this runs before every wait and
// picks up a lib/ created since. False when the directory itself cannot be watched.
bool AddWatches(int inotify, const std::string& dir, int* lib_wd) {
  if (inotify_add_watch(inotify, dir.c_str(), kWatchMask) < 0) return false;
  *lib_wd = inotify_add_watch(inotify, (dir + "/lib").c_str(), kWatchMask);
  return true;
}

// Reads every queued event; true when one of them is a change of the plugin
// (session::IsPluginFileChange).
bool Drain(int fd, int lib_wd) {
  bool changed = false;
  fd_io::ForEachInotifyEvent(fd, [&](const inotify_event& e) {
    if (e.mask & IN_IGNORED) return;
    const std::string_view name = e.len > 0 ? std::string_view(e.name) : std::string_view();
    changed = changed || session::IsPluginFileChange(e.wd == lib_wd, name);
  });
  return changed;
}

// Waits for `fd` or the signalfd: 0 timeout, 1 an event on fd, or the signal number.
int Wait(int fd, int signal_fd, int timeout_ms) {
  pollfd p[2] = {{fd, POLLIN, 0}, {signal_fd, POLLIN, 0}};
  while (true) {
    int n = ::poll(p, 2, timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 0;
    if (p[1].revents & POLLIN) {
      signalfd_siginfo info{};
      if (::read(signal_fd, &info, sizeof(info)) == sizeof(info)) {
        return static_cast<int>(info.ssi_signo);
      }
    }
    return p[0].revents ? -1 : 0;
  }
}

}  // namespace

int WatchAndRerun(const std::string& plugin_dir, bool clear, const std::function<int()>& run,
                  std::chrono::milliseconds debounce) {
  UniqueFd inotify(inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  int lib_wd = -1;
  if (!inotify || !AddWatches(inotify.Get(), plugin_dir, &lib_wd)) {
    std::cerr << "anvil run: io: cannot watch " << plugin_dir << ": " << std::strerror(errno)
              << " (fix: check fs.inotify.max_user_watches / max_user_instances, or run "
                 "without --watch)\n";
    return 125;
  }
  sigset_t stop, old;
  sigemptyset(&stop);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop, sig);
  // The signals are blocked only while waiting (a blocked mask is inherited by the session's
  // children, which must stay killable the ordinary way during a run).
  sigprocmask(SIG_BLOCK, &stop, &old);
  UniqueFd signals(signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK));
  sigprocmask(SIG_SETMASK, &old, nullptr);
  if (!signals) {
    std::cerr << "anvil run: io: signalfd: " << std::strerror(errno) << "\n";
    return 125;
  }
  const bool tty = ::isatty(STDOUT_FILENO) == 1;
  while (true) {
    if (clear && tty) {
      std::cout << "\x1b[H\x1b[2J\x1b[3J" << std::flush;
    }
    const int status = run();
    std::cout << std::flush;
    // Ctrl-C during a run (common/interrupt.h, when the caller catches it): that run's session
    // was stopped in order; the loop ends as it does between runs.
    if (const int sig = InterruptSignal(); sig != 0) {
      std::cerr << "anvil run: interrupted (" << SignalName(sig)
                << "); the plugin was stopped and the watch ended\n";
      return 128 + sig;
    }
    std::cerr << "anvil run: exit status " << status << "; watching " << plugin_dir
              << " for changes (Ctrl-C to stop)\n";
    sigprocmask(SIG_BLOCK, &stop, &old);
    int woke = 0;
    // Until something changes (events of the run itself included), then until the changes
    // have been quiet for `debounce`.
    bool changed = false, missing = false;
    while (true) {
      const bool watching = AddWatches(inotify.Get(), plugin_dir, &lib_wd);
      // The directory gone (moved away, or deleted to be made again): look each second, and
      // run once it is back.
      if (watching && missing) changed = true;
      missing = !watching;
      woke = Wait(inotify.Get(), signals.Get(),
                  missing   ? 1000
                  : changed ? static_cast<int>(debounce.count())
                            : -1);
      if (woke > 0) break;
      if (woke < 0) {
        if (Drain(inotify.Get(), lib_wd)) changed = true;
        continue;
      }
      if (changed && !missing) break;  // quiet for `debounce`
    }
    sigprocmask(SIG_SETMASK, &old, nullptr);
    if (woke > 0) {
      std::cerr << "anvil run: stopped watching\n";
      return 128 + woke;
    }
  }
}

}  // namespace anvil::cli
