// A pseudo-terminal that plays the user's terminal for `anvil` in the terminal tests: the test
// holds the master (what a terminal emulator holds: it types and reads the screen) and the slave
// (to read its settings and owner with tcgetattr/stat before and after, as the user's shell
// would find them).
#pragma once

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {

// Field by field: tcgetattr's struct has padding, so no memcmp.
inline bool SameSettings(const termios& a, const termios& b) {
  return a.c_iflag == b.c_iflag && a.c_oflag == b.c_oflag && a.c_cflag == b.c_cflag &&
         a.c_lflag == b.c_lflag && a.c_line == b.c_line &&
         std::memcmp(a.c_cc, b.c_cc, sizeof(a.c_cc)) == 0 && cfgetispeed(&a) == cfgetispeed(&b) &&
         cfgetospeed(&a) == cfgetospeed(&b);
}
inline std::string Describe(const termios& t) {
  std::ostringstream o;
  o << std::hex << "iflag=" << t.c_iflag << " oflag=" << t.c_oflag << " cflag=" << t.c_cflag
    << " lflag=" << t.c_lflag << std::dec << " icanon=" << ((t.c_lflag & ICANON) != 0)
    << " echo=" << ((t.c_lflag & ECHO) != 0) << " isig=" << ((t.c_lflag & ISIG) != 0)
    << " opost=" << ((t.c_oflag & OPOST) != 0) << " vmin=" << int(t.c_cc[VMIN]);
  return o.str();
}

class UserTerminal {
 public:
  struct Start {
    std::vector<std::string> argv;
    std::vector<std::string> env;  // empty: PATH, TERM=xterm, HOME=/nonexistent, LANG
    std::string cwd;
    std::optional<uid_t> uid;
    std::optional<gid_t> gid;
    // >= 0: the child's descriptor N is this instead of the terminal (a pipe, a file).
    int fd_override[3] = {-1, -1, -1};
    // false: the terminal is only the program's descriptors, not its controlling terminal (as
    // when a program hands its terminal to a child in another session).
    bool controlling = true;
  };

  UserTerminal() {
    master_ = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master_ < 0 || grantpt(master_) != 0 || unlockpt(master_) != 0) return;
    const char* name = ptsname(master_);
    if (name == nullptr) return;
    path_ = name;
    slave_ = open(path_.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC);
    fcntl(master_, F_SETFL, fcntl(master_, F_GETFL) | O_NONBLOCK);
  }
  ~UserTerminal() {
    if (pid_ > 0) {
      kill(-pid_, SIGKILL);
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (slave_ >= 0) close(slave_);
    if (master_ >= 0) close(master_);
  }
  UserTerminal(const UserTerminal&) = delete;
  UserTerminal& operator=(const UserTerminal&) = delete;

  bool ok() const { return master_ >= 0 && slave_ >= 0; }
  int master() const { return master_; }
  int slave() const { return slave_; }
  const std::string& path() const { return path_; }
  pid_t pid() const { return pid_; }

  // The terminal becomes the caller's, as login makes it (owner, mode 0620).
  void GiveTo(uid_t uid, gid_t gid) {
    if (fchown(slave_, uid, gid) != 0 || fchmod(slave_, 0620) != 0) {
      ADD_FAILURE() << "cannot give " << path_ << " to uid " << uid;
    }
  }
  termios Settings() const {
    termios t{};
    tcgetattr(slave_, &t);
    return t;
  }
  struct stat Stat() const {
    struct stat st {};
    stat(path_.c_str(), &st);
    return st;
  }
  void SetSize(unsigned short rows, unsigned short cols) {
    winsize ws{};
    ws.ws_row = rows;
    ws.ws_col = cols;
    ioctl(master_, TIOCSWINSZ, &ws);
  }

  // Starts the program as the session leader with this terminal as its controlling terminal
  // (so it is the foreground process group, as a command the user's shell runs would be).
  void Run(const Start& start) {
    std::vector<std::string> env = start.env;
    if (env.empty()) {
      env = {"PATH=/usr/local/bin:/usr/bin:/bin", "TERM=xterm", "HOME=/nonexistent",
             "LANG=C.UTF-8"};
    }
    pid_ = fork();
    if (pid_ != 0) return;
    setsid();
    if (start.controlling && ioctl(slave_, TIOCSCTTY, 0) != 0) _exit(120);
    for (int fd = 0; fd < 3; ++fd) {
      dup2(start.fd_override[fd] >= 0 ? start.fd_override[fd] : slave_, fd);
    }
    if (!start.cwd.empty() && chdir(start.cwd.c_str()) != 0) _exit(121);
    if (start.uid) {
      gid_t g = start.gid.value_or(*start.uid);
      if (setgroups(0, nullptr) != 0 || setgid(g) != 0 || setuid(*start.uid) != 0) _exit(122);
    }
    ExecOrExit(start.argv, env);
  }

  void Send(const std::string& keys) {
    size_t off = 0;
    while (off < keys.size()) {
      ssize_t n = write(master_, keys.data() + off, keys.size() - off);
      if (n > 0) {
        off += static_cast<size_t>(n);
      } else {
        pollfd p{master_, POLLOUT, 0};
        poll(&p, 1, 100);
      }
    }
  }

  // Reads what the terminal shows until `needle` appears after the previous match (bounded).
  bool Expect(const std::string& needle,
              std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (true) {
      size_t at = screen_.find(needle, cursor_);
      if (at != std::string::npos) {
        cursor_ = at + needle.size();
        return true;
      }
      if (std::chrono::steady_clock::now() >= deadline) return false;
      ReadSome(50);
    }
  }

  // Waits for the program to end (bounded), reading the screen meanwhile; its status as
  // RunResult::status gives it. nullopt: it did not end in time (it is then killed).
  std::optional<int> Wait(std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (pid_ > 0) {
      int status = 0;
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        ReadSome(0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (std::chrono::steady_clock::now() >= deadline) break;
      ReadSome(20);
    }
    if (pid_ > 0) {
      kill(-pid_, SIGKILL);
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    return std::nullopt;
  }

  const std::string& screen() const { return screen_; }

  // The terminal goes away, as when its window is closed: the master is closed.
  void HangUp() {
    if (master_ >= 0) close(master_);
    master_ = -1;
  }

 private:
  void ReadSome(int timeout_ms) {
    if (master_ < 0) {
      usleep(static_cast<useconds_t>(timeout_ms) * 1000);
      return;
    }
    pollfd p{master_, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return;
    char buf[4096];
    while (true) {
      ssize_t n = read(master_, buf, sizeof(buf));
      if (n <= 0) return;
      screen_.append(buf, static_cast<size_t>(n));
    }
  }

  int master_ = -1;
  int slave_ = -1;
  std::string path_;
  pid_t pid_ = -1;
  std::string screen_;
  size_t cursor_ = 0;
};

}  // namespace anvil::testing
