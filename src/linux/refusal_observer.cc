// One thing: the refusal observer (refusal_observer.h) -- its filter's install and hand-over,
// and init's answer to each notification: the syscall decoded, the path read from the command,
// the view asked whether it refused the operation, the fact recorded.
#include "linux/refusal_observer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string_view>
#include <vector>

#include "common/syscalls.h"
#include "common/unique_fd.h"
#include "policy/host_autorun.h"

namespace anvil {
namespace {

// Generated at build time by anvil-seccomp-gen (the table RefusalObserverRules).
#include "linux/seccomp_programs.inc"

// What a notified syscall does, by number.
enum class Op {
  kOpen,      // path, flags
  kCreate,    // a new name: mkdir, mknod, symlink's and link's new path
  kRemove,    // unlink, rmdir, rename's both names: refused by a read-only parent alone
  kTruncate,  // an existing file
  kConnect,
  kIgnore,
};

struct PathArg {
  int dirfd = AT_FDCWD;
  uint64_t address = 0;
};

struct Decoded {
  Op op = Op::kIgnore;
  const char* name = "";
  PathArg paths[2];
  int count = 0;
  uint64_t flags = 0;     // open flags
  uint64_t how = 0;       // openat2: address of struct open_how
  uint64_t sockaddr = 0;  // connect
  uint64_t addrlen = 0;
};

Decoded Decode(const seccomp_data& d) {
  Decoded x;
  const auto* a = d.args;
  auto path = [&](int dirfd, uint64_t addr) { x.paths[x.count++] = {dirfd, addr}; };
  auto fd = [](uint64_t v) { return static_cast<int>(static_cast<int32_t>(v)); };
  switch (d.nr) {
#ifdef SYS_open
    case SYS_open:
      x.op = Op::kOpen;
      x.name = "open";
      path(AT_FDCWD, a[0]);
      x.flags = a[1];
      break;
#endif
#ifdef SYS_creat
    case SYS_creat:
      x.op = Op::kOpen;
      x.name = "creat";
      path(AT_FDCWD, a[0]);
      x.flags = O_CREAT | O_WRONLY | O_TRUNC;
      break;
#endif
    case SYS_openat:
      x.op = Op::kOpen;
      x.name = "openat";
      path(fd(a[0]), a[1]);
      x.flags = a[2];
      break;
#ifdef SYS_openat2
    case SYS_openat2:
      x.op = Op::kOpen;
      x.name = "openat2";
      path(fd(a[0]), a[1]);
      x.how = a[2];
      break;
#endif
#ifdef SYS_mkdir
    case SYS_mkdir:
      x.op = Op::kCreate;
      x.name = "mkdir";
      path(AT_FDCWD, a[0]);
      break;
#endif
    case SYS_mkdirat:
      x.op = Op::kCreate;
      x.name = "mkdir";
      path(fd(a[0]), a[1]);
      break;
#ifdef SYS_mknod
    case SYS_mknod:
      x.op = Op::kCreate;
      x.name = "mknod";
      path(AT_FDCWD, a[0]);
      break;
#endif
    case SYS_mknodat:
      x.op = Op::kCreate;
      x.name = "mknod";
      path(fd(a[0]), a[1]);
      break;
#ifdef SYS_symlink
    case SYS_symlink:
      x.op = Op::kCreate;
      x.name = "symlink";
      path(AT_FDCWD, a[1]);
      break;
#endif
    case SYS_symlinkat:
      x.op = Op::kCreate;
      x.name = "symlink";
      path(fd(a[1]), a[2]);
      break;
#ifdef SYS_link
    case SYS_link:
      x.op = Op::kCreate;
      x.name = "link";
      path(AT_FDCWD, a[1]);
      break;
#endif
    case SYS_linkat:
      x.op = Op::kCreate;
      x.name = "link";
      path(fd(a[2]), a[3]);
      break;
#ifdef SYS_unlink
    case SYS_unlink:
      x.op = Op::kRemove;
      x.name = "unlink";
      path(AT_FDCWD, a[0]);
      break;
#endif
#ifdef SYS_rmdir
    case SYS_rmdir:
      x.op = Op::kRemove;
      x.name = "rmdir";
      path(AT_FDCWD, a[0]);
      break;
#endif
    case SYS_unlinkat:
      x.op = Op::kRemove;
      x.name = "unlink";
      path(fd(a[0]), a[1]);
      break;
#ifdef SYS_rename
    case SYS_rename:
      x.op = Op::kRemove;
      x.name = "rename";
      path(AT_FDCWD, a[0]);
      path(AT_FDCWD, a[1]);
      break;
#endif
    case SYS_renameat:
#ifdef SYS_renameat2
    case SYS_renameat2:
#endif
      x.op = Op::kRemove;
      x.name = "rename";
      path(fd(a[0]), a[1]);
      path(fd(a[2]), a[3]);
      break;
    case SYS_truncate:
      x.op = Op::kTruncate;
      x.name = "truncate";
      path(AT_FDCWD, a[0]);
      break;
    case SYS_connect:
      x.op = Op::kConnect;
      x.name = "connect";
      x.sockaddr = a[1];
      x.addrlen = a[2];
      break;
    default:
      break;
  }
  return x;
}

// Copies up to `max` bytes from the process's memory, page by page (a string that ends just
// before an unmapped page is still read).
size_t ReadRemote(pid_t pid, uint64_t address, char* into, size_t max) {
  size_t done = 0;
  const size_t page = 4096;
  while (done < max) {
    uint64_t at = address + done;
    size_t chunk = std::min(max - done, page - static_cast<size_t>(at % page));
    iovec local{into + done, chunk};
    iovec remote{reinterpret_cast<void*>(at), chunk};
    ssize_t n = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
    if (static_cast<size_t>(n) < chunk || std::memchr(into + done - n, '\0', n) != nullptr) break;
  }
  return done;
}

std::optional<std::string> ReadRemoteString(pid_t pid, uint64_t address) {
  if (address == 0) return std::nullopt;
  char buf[PATH_MAX];
  size_t n = ReadRemote(pid, address, buf, sizeof(buf));
  const void* nul = std::memchr(buf, '\0', n);
  if (nul == nullptr) return std::nullopt;
  return std::string(buf, static_cast<const char*>(nul) - buf);
}

// The directory a relative path of `pid` starts from, read now (the process is stopped in the
// syscall, so it is the directory the kernel will use), as its path in the view: init shares
// the command's root. Empty when it cannot be read.
std::string BasePath(pid_t pid, int dirfd) {
  std::string link = "/proc/" + std::to_string(pid) +
                     (dirfd == AT_FDCWD ? std::string("/cwd") : "/fd/" + std::to_string(dirfd));
  char buf[PATH_MAX];
  ssize_t n = ::readlink(link.c_str(), buf, sizeof(buf) - 1);
  if (n <= 0 || buf[0] != '/') return {};
  return std::string(buf, static_cast<size_t>(n));
}

std::string Dirname(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// `path` without "." components and with ".." taken lexically (the summary's view of it).
std::string Lexical(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string part = path.substr(start, end - start);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    start = end + 1;
  }
  std::string out;
  for (const auto& p : parts) out += "/" + p;
  return out.empty() ? "/" : out;
}

// The pinned placeholder (a dangling link that stands for a missing place the host runs,
// policy/host_autorun.h) at or above `path`, where nothing can be made; empty when none.
std::string PlaceholderAbove(const FileView& view, const std::string& path) {
  for (const auto& link : view.pinned_links) {
    if (!PathIsWithin(path, link)) continue;
    char target[PATH_MAX];
    const ssize_t n = ::readlink(link.c_str(), target, sizeof(target));
    if (n >= 0 && std::string_view(target, static_cast<size_t>(n)) == kAutorunPlaceholder) {
      return link;
    }
  }
  return {};
}

// A path strictly beneath `dir` that the process names in its arguments or its environment's
// values (`mkdir -p /srv/cc/0`, CCACHE_DIR=/srv/cc): what a write refused at `dir` was on the way
// to, when the process made the directories from the top (mkdir -p, ccache) and so tried nothing
// deeper first. The first found, arguments first; "" for none.
std::string PathNamedBeneath(pid_t pid, const std::string& dir) {
  constexpr size_t kMaxRead = 64 * 1024;
  for (const char* what : {"cmdline", "environ"}) {
    char proc[48];
    std::snprintf(proc, sizeof proc, "/proc/%d/%s", static_cast<int>(pid), what);
    UniqueFd fd(::open(proc, O_RDONLY | O_CLOEXEC));
    if (!fd) continue;
    std::string text(kMaxRead, '\0');
    size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::read(fd.Get(), text.data() + got, text.size() - got);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    text.resize(got);
    const bool environ = what[0] == 'e';
    bool after_dir = false;  // the previous argument is `dir` itself
    for (size_t at = 0; at < text.size();) {
      size_t end = text.find('\0', at);
      if (end == std::string::npos) end = text.size();
      std::string_view item(text.data() + at, end - at);
      at = end + 1;
      if (environ) {
        const size_t eq = item.find('=');
        if (eq == std::string_view::npos) continue;
        item.remove_prefix(eq + 1);
      }
      // `mkdir -p /srv/cc/0` writes a NUL over the slash after the directory it is making, in
      // its own argument: the arguments then read "/srv", "cc/0".
      if (after_dir && !item.empty() && item[0] != '/' && item[0] != '-' &&
          dir.size() + item.size() + 1 < PATH_MAX) {
        const std::string path = Lexical(dir + "/" + std::string(item));
        if (path != dir && PathIsWithin(path, dir)) return path;
      }
      after_dir = false;
      if (item.empty() || item[0] != '/' || item.size() >= PATH_MAX) continue;
      const std::string path = Lexical(std::string(item));
      after_dir = !environ && path == dir;
      if (path != dir && PathIsWithin(path, dir)) return path;
    }
  }
  return "";
}

bool ReadOnlyPath(const std::string& path, int* error = nullptr) {
  struct statvfs sv {};
  if (::statvfs(path.c_str(), &sv) != 0) {
    if (error) *error = errno;
    return false;
  }
  if (error) *error = 0;
  return (sv.f_flag & ST_RDONLY) != 0;
}

std::string FdPath(int fd) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), buf, sizeof(buf) - 1);
  if (n <= 0) return {};
  return std::string(buf, static_cast<size_t>(n));
}

bool ReadOnlyMount(int fd) {
  struct statvfs sv {};
  return ::fstatvfs(fd, &sv) == 0 && (sv.f_flag & ST_RDONLY) != 0;
}

struct Target {
  UniqueFd parent;   // the directory holding the name (O_PATH)
  std::string name;  // last component; empty when the path names the directory itself
  std::string parent_path;
};

// Splits `path` into its directory (opened from `base`, or the root for an absolute path, as
// the kernel walks it for the command) and its last component.
std::optional<Target> Locate(int base, std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path.empty()) return std::nullopt;
  Target t;
  auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  t.name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (t.name == "." || t.name == ".." || t.name.empty()) return std::nullopt;
  const int from = dir[0] == '/' ? AT_FDCWD : base;
  if (from < 0 && from != AT_FDCWD) return std::nullopt;
  t.parent = UniqueFd(::openat(from, dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!t.parent) return std::nullopt;
  t.parent_path = FdPath(t.parent.Get());
  if (t.parent_path.empty() || t.parent_path[0] != '/') return std::nullopt;
  return t;
}

std::string Join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

// Whether a local socket in this network namespace (init's, which is the command's) is bound
// to `port` (TCP or UDP, IPv4 or IPv6).
bool LocalPortBound(uint16_t port) {
  char hex[8];
  std::snprintf(hex, sizeof(hex), ":%04X", port);
  for (const char* table : {"/proc/net/udp", "/proc/net/udp6", "/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      // "  sl  local_address rem_address ...": the local address is the second field.
      auto start = line.find_first_not_of(' ', line.find(':') + 1);
      if (start == std::string::npos) continue;
      auto end = line.find(' ', start);
      std::string local = line.substr(start, end - start);
      if (local.size() >= 5 && local.compare(local.size() - 5, 5, hex) == 0) return true;
    }
  }
  return false;
}

std::string Key(const Refusal& r) {
  return std::to_string(static_cast<int>(r.kind)) + "|" + r.detail + "|" + r.subject;
}

// The name (comm) of the task `pid`; empty when it is gone.
std::string ProgramOf(pid_t pid) {
  char comm_path[40];
  std::snprintf(comm_path, sizeof comm_path, "/proc/%d/comm", static_cast<int>(pid));
  UniqueFd comm(::open(comm_path, O_RDONLY | O_CLOEXEC));
  char name[32];
  const ssize_t n = comm ? ::read(comm.Get(), name, sizeof name) : -1;
  if (n <= 0) return {};
  return std::string(name, static_cast<size_t>(name[n - 1] == '\n' ? n - 1 : n));
}

}  // namespace

LoopbackHints::LoopbackHints(const std::vector<uint16_t>& own_ports) {
  for (uint16_t port : own_ports) own_.set(port);
}

bool LoopbackHints::NeedsLookup(uint16_t port) const {
  return port != 0 && !own_.test(port) && !bound_.test(port);
}

LoopbackHints::Step LoopbackHints::Looked(uint16_t port, const std::string& address, bool bound) {
  Step step;
  if (!NeedsLookup(port)) return step;
  auto it = hinted_.find(port);
  if (bound) {
    bound_.set(port);
    if (it != hinted_.end()) {
      hinted_count_ -= it->second.size();
      step.withdraw = std::move(it->second);
      hinted_.erase(it);
    }
    return step;
  }
  if (it != hinted_.end() &&
      std::find(it->second.begin(), it->second.end(), address) != it->second.end()) {
    return step;
  }
  step.record = true;
  // Past the cap the hint goes to the observer's count of dropped ones anyway.
  if (hinted_count_ < kMaxRefusalRecords) {
    hinted_[port].push_back(address);
    ++hinted_count_;
  }
  return step;
}

std::vector<sock_filter> RefusalObserverProgram(bool watch_connect) {
  if (watch_connect) {
    return {std::begin(kRefusalObserverConnect), std::end(kRefusalObserverConnect)};
  }
  return {std::begin(kRefusalObserver), std::end(kRefusalObserver)};
}

ObserverInstall InstallRefusalObserver(int channel, bool watch_connect) {
  const sock_filter* insns = watch_connect ? kRefusalObserverConnect : kRefusalObserver;
  const size_t count =
      watch_connect ? std::size(kRefusalObserverConnect) : std::size(kRefusalObserver);
  sock_fprog prog{static_cast<unsigned short>(count), const_cast<sock_filter*>(insns)};
  long listener =
      syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
  if (listener < 0) return ObserverInstall::kNotLoaded;
  // Sent before anything of the command's runs: every notification finds init listening.
  char byte = 'L';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  int fd = static_cast<int>(listener);
  std::memcpy(CMSG_DATA(c), &fd, sizeof(fd));
  ssize_t sent;
  do {
    sent = ::sendmsg(channel, &msg, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  ::close(fd);
  // Unsent, the filter stays and nobody answers it: every write would fail with ENOSYS.
  return sent == 1 ? ObserverInstall::kObserved : ObserverInstall::kUnanswered;
}

int ReceiveRefusalListener(int channel) {
  char byte = 0;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = ::recvmsg(channel, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n != 1) return -1;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (c == nullptr || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
      c->cmsg_len != CMSG_LEN(sizeof(int))) {
    return -1;
  }
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(c), sizeof(fd));
  // The waiting command is switched to directly (Linux 6.6+; older kernels: the usual wake-up).
  uint64_t flags = SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP;
  (void)::ioctl(fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, flags);
  return fd;
}

namespace {
volatile sig_atomic_t g_child_signalled = 0;
void OnChild(int) { g_child_signalled = 1; }
}  // namespace

RefusalObserver::RefusalObserver(int listener, const FileView& view, const SandboxPolicy& policy,
                                 const std::vector<uint16_t>& own_ports,
                                 std::function<void(const Refusal&)> report,
                                 std::function<void(const std::string&)> withdraw)
    : listener_(listener),
      view_(view),
      policy_(policy),
      loopback_(own_ports),
      report_(std::move(report)),
      withdraw_(std::move(withdraw)) {
  // WaitPid sleeps in ppoll: SIGCHLD must wake it, and may arrive only there.
  struct sigaction chld {};
  chld.sa_handler = OnChild;
  sigaction(SIGCHLD, &chld, nullptr);
  sigset_t child;
  sigemptyset(&child);
  sigaddset(&child, SIGCHLD);
  sigprocmask(SIG_BLOCK, &child, nullptr);
}

RefusalObserver::~RefusalObserver() {
  if (listener_ >= 0) ::close(listener_);
}

pid_t RefusalObserver::WaitPid(int* status, int flags, int exit_fd) {
  while (true) {
    // Without the listener, a plain waitpid: the filter's last user is gone (below), so no
    // process of the command's is left to trace it and hold its exit.
    if (listener_ < 0) return ::waitpid(-1, status, flags);
    if (reap_pending_ || g_child_signalled) {
      // Only after a SIGCHLD (or a reap, which may have left more): not once per notification.
      g_child_signalled = 0;
      pid_t r = ::waitpid(-1, status, flags | WNOHANG);
      reap_pending_ = r != 0;
      if (r != 0) return r;
    }
    pollfd p[2] = {{listener_, POLLIN, 0}, {exit_fd, POLLIN, 0}};  // poll skips a -1
    sigset_t open_mask;
    sigemptyset(&open_mask);  // SIGCHLD (blocked otherwise) may end the wait
    int n = ::ppoll(p, 2, nullptr, &open_mask);
    if (n < 0) {
      if (errno == EINTR) return -1;
      ::close(listener_);
      listener_ = -1;
      continue;
    }
    if (p[0].revents & POLLIN) HandleOne();
    if (p[0].revents & (POLLHUP | POLLERR | POLLNVAL)) {
      // No task uses the filter any more.
      ::close(listener_);
      listener_ = -1;
      continue;
    }
    if (p[1].revents) {
      // The command has exited: its status, another child's, or 0 when nothing is waitable.
      pid_t r = ::waitpid(-1, status, flags | WNOHANG);
      reap_pending_ = r > 0;
      return r;
    }
  }
}

void RefusalObserver::NoteMissingParent(pid_t pid, const std::string& path) {
  if (pid == missing_pid_ && PathIsWithin(missing_, path)) return;
  missing_pid_ = pid;
  missing_ = path;
}

void RefusalObserver::HandleOne() {
  seccomp_notif req{};
  if (::ioctl(listener_, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) return;  // it died meanwhile
  const pid_t pid = static_cast<pid_t>(req.pid);
  Decoded d = Decode(req.data);
  std::optional<std::string> paths[2];  // absolute, in the view
  char address[sizeof(sockaddr_storage)] = {};
  size_t address_len = 0;
  if (d.op == Op::kConnect) {
    size_t want = std::min<uint64_t>(d.addrlen, sizeof(address));
    if (d.sockaddr != 0 && want >= sizeof(sa_family_t)) {
      address_len = ReadRemote(pid, d.sockaddr, address, want);
    }
  } else if (d.op != Op::kIgnore) {
    if (d.how != 0) {
      uint64_t flags = 0;
      if (ReadRemote(pid, d.how, reinterpret_cast<char*>(&flags), sizeof(flags)) == sizeof(flags)) {
        d.flags = flags;
      }
    }
    for (int i = 0; i < d.count; ++i) {
      paths[i] = ReadRemoteString(pid, d.paths[i].address);
      if (paths[i] && !paths[i]->empty() && (*paths[i])[0] != '/') {
        std::string base = BasePath(pid, d.paths[i].dirfd);
        if (base.empty()) {
          paths[i].reset();
        } else {
          paths[i] = (base == "/" ? "" : base) + "/" + *paths[i];
        }
      }
    }
  }
  // What was read belongs to the task that is still waiting for this very notification. It
  // waits on until this is classified, so that a refused task is still there to be named
  // (/proc/PID/comm) when it is recorded: once answered, git failing on its index.lock exits
  // at once. Every path out of here answers exactly once.
  uint64_t id = req.id;
  const bool valid = ::ioctl(listener_, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
  bool answered = false;
  auto answer = [&] {
    if (answered) return;
    answered = true;
    seccomp_notif_resp resp{};
    resp.id = req.id;
    resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    (void)::ioctl(listener_, SECCOMP_IOCTL_NOTIF_SEND, &resp);
  };
  struct AnswerOnReturn {
    decltype(answer)& f;
    ~AnswerOnReturn() { f(); }
  } answer_on_return{answer};
  if (!valid || d.op == Op::kIgnore) return;

  std::optional<Refusal> refusal;
  if (d.op == Op::kConnect) {
    if (address_len < sizeof(sa_family_t)) return;
    sa_family_t family;
    std::memcpy(&family, address, sizeof(family));
    char text[INET6_ADDRSTRLEN] = {};
    uint16_t port = 0;
    bool loopback = false;
    std::string shown;
    if (family == AF_INET && address_len >= sizeof(sockaddr_in)) {
      sockaddr_in in{};
      std::memcpy(&in, address, sizeof(in));
      uint32_t a = ntohl(in.sin_addr.s_addr);
      loopback = (a >> 24) == 127 || a == 0;
      port = ntohs(in.sin_port);
      ::inet_ntop(AF_INET, &in.sin_addr, text, sizeof(text));
      shown = std::string(text) + ":" + std::to_string(port);
    } else if (family == AF_INET6 && address_len >= sizeof(sockaddr_in6)) {
      sockaddr_in6 in6{};
      std::memcpy(&in6, address, sizeof(in6));
      const auto& a = in6.sin6_addr;
      bool mapped = IN6_IS_ADDR_V4MAPPED(&a);
      loopback = IN6_IS_ADDR_LOOPBACK(&a) || IN6_IS_ADDR_UNSPECIFIED(&a) ||
                 (mapped && (a.s6_addr[12] == 127 ||
                             (a.s6_addr[12] | a.s6_addr[13] | a.s6_addr[14] | a.s6_addr[15]) == 0));
      port = ntohs(in6.sin6_port);
      ::inet_ntop(AF_INET6, &a, text, sizeof(text));
      shown = "[" + std::string(text) + "]:" + std::to_string(port);
    } else {
      return;  // Unix sockets and the rest: not the network
    }
    if (!loopback) {
      refusal = Refusal{Refusal::Kind::kNetwork, "", shown, port == 53 ? "dns" : "direct",
                        WriteArea::kOutside,     "", ""};
    } else if (loopback_.NeedsLookup(port)) {
      // Nothing of the sandbox's listening there: the host's resolver at a loopback address
      // (systemd-resolved's 127.0.0.53), or a server on the host's loopback (a dev server, a
      // database), is in another network namespace. Only a hint (LoopbackHints). Looked up while
      // the task waits: once let go on, a server of its own that answers once and exits with
      // it would be gone when looked for.
      const LoopbackHints::Step step = loopback_.Looked(port, shown, LocalPortBound(port));
      const std::string detail = port == 53 ? "dns" : "loopback";
      for (const std::string& address : step.withdraw) {
        seen_.erase(Key(
            Refusal{Refusal::Kind::kNetwork, "", address, detail, WriteArea::kOutside, "", ""}));
        withdraw_(address);
      }
      if (step.record) {
        refusal = Refusal{Refusal::Kind::kNetwork, "", shown, detail, WriteArea::kOutside, "", ""};
      }
    }
  } else {
    std::string refused_path;
    for (int i = 0; i < d.count && refused_path.empty(); ++i) {
      if (!paths[i] || paths[i]->empty()) continue;
      // One statvfs for the usual case, a write where the mount is writable; only a read-only
      // mount leads to the exact check below.
      const std::string& path = *paths[i];
      if (!view_.pinned_links.empty() &&
          (d.op == Op::kCreate || (d.op == Op::kOpen && (d.flags & O_CREAT) != 0))) {
        // Made at or beneath a placeholder: nothing can be (it is refused ENOENT or EACCES).
        const std::string lexical = Lexical(path);
        if (!PlaceholderAbove(view_, lexical).empty()) {
          refused_path = lexical;
          continue;
        }
      }
      bool maybe = false;
      int parent_error = 0;
      if (d.op == Op::kOpen || d.op == Op::kTruncate) {
        int error = 0;
        maybe = ReadOnlyPath(path, &error);
        if (error == ENOENT && d.op == Op::kOpen && (d.flags & O_CREAT) != 0) {
          maybe = ReadOnlyPath(Dirname(path), &parent_error);
          if (parent_error == ENOENT) NoteMissingParent(pid, Lexical(path));
        }
      } else {
        maybe = ReadOnlyPath(Dirname(path), &parent_error);
        if (parent_error == ENOENT && d.op == Op::kCreate) NoteMissingParent(pid, Lexical(path));
        if (!maybe && d.op == Op::kRemove) {
          // A read-only bind in a writable directory (~/.gitconfig): removing or renaming over
          // its mount point is refused too (EBUSY).
          UniqueFd self(::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
          maybe = self && ReadOnlyMount(self.Get());
        }
      }
      if (!maybe) continue;
      auto target = Locate(-1, path);
      if (!target) continue;
      struct stat st {};
      const bool follow = d.op == Op::kOpen ? (d.flags & O_NOFOLLOW) == 0 : d.op == Op::kTruncate;
      const bool exists = ::fstatat(target->parent.Get(), target->name.c_str(), &st,
                                    follow ? 0 : AT_SYMLINK_NOFOLLOW) == 0;
      const std::string lexical = Join(target->parent_path, target->name);
      switch (d.op) {
        case Op::kOpen: {
          const bool writes = (d.flags & (O_WRONLY | O_RDWR | O_TRUNC)) != 0;
          if (exists) {
            if (!writes || !S_ISREG(st.st_mode) ||
                (d.flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL)) {
              break;
            }
            UniqueFd file(::openat(target->parent.Get(), target->name.c_str(),
                                   O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW)));
            if (file && ReadOnlyMount(file.Get())) {
              std::string resolved = FdPath(file.Get());
              refused_path = resolved.empty() || resolved[0] != '/' ? lexical : resolved;
            }
          } else if ((d.flags & O_CREAT) != 0 && ReadOnlyMount(target->parent.Get())) {
            refused_path = lexical;
          }
          break;
        }
        case Op::kCreate:
          // An existing name is EEXIST, which comes before the read-only check.
          if (!exists && ReadOnlyMount(target->parent.Get())) refused_path = lexical;
          break;
        case Op::kRemove:
          // unlink, rmdir and rename take write access to the mount before they look up; in a
          // writable directory, a name that is a read-only bind is a mount point (EBUSY).
          if (ReadOnlyMount(target->parent.Get())) {
            refused_path = lexical;
          } else if (exists) {
            UniqueFd self(::openat(target->parent.Get(), target->name.c_str(),
                                   O_PATH | O_NOFOLLOW | O_CLOEXEC));
            if (self && ReadOnlyMount(self.Get())) refused_path = lexical;
          }
          break;
        case Op::kTruncate:
          if (exists && S_ISREG(st.st_mode)) {
            UniqueFd file(::openat(target->parent.Get(), target->name.c_str(), O_PATH | O_CLOEXEC));
            if (file && ReadOnlyMount(file.Get())) refused_path = lexical;
          }
          break;
        default:
          break;
      }
    }
    if (refused_path.empty()) return;
    WriteClass c = ClassifyWrite(view_, policy_, refused_path);
    refusal = Refusal{Refusal::Kind::kWrite, "", refused_path, d.name, c.area, c.root, ""};
    if (pid == missing_pid_ && missing_ != refused_path && PathIsWithin(missing_, refused_path)) {
      refusal->wanted = missing_;
    } else if (c.area == WriteArea::kOutside) {
      refusal->wanted = PathNamedBeneath(pid, refused_path);
    }
  }
  if (!refusal || !Keep(*refusal)) return;
  refusal->program = ProgramOf(pid);
  answer();
  report_(*refusal);
}

bool RefusalObserver::Keep(const Refusal& refusal) {
  const std::string key = Key(refusal);
  if (seen_.count(key)) return false;
  if (seen_.size() >= kMaxRefusalRecords) {
    ++dropped_;
    return false;
  }
  seen_.insert(key);
  return true;
}

}  // namespace anvil
