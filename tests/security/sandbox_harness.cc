#include "sandbox_harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace anvil::testing {

// ANVIL_TEST_BIN_DIR points the tests at other builds of the binaries (scripts/sanitizers.sh runs
// the dev test binaries against a ThreadSanitizer anvil-gateway).
std::string BinDir() {
  const char* dir = std::getenv("ANVIL_TEST_BIN_DIR");
  return dir != nullptr && *dir != '\0' ? dir : ANVIL_BIN_DIR;
}
std::string AnvilBin() { return BinDir() + "/anvil"; }
bool GatewayUnderTsan() {
  const char* v = std::getenv("ANVIL_TEST_GATEWAY_TSAN");
  return v != nullptr && std::string(v) == "1";
}

void ExecOrExit(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  std::vector<char*> a, e;
  for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  for (auto& s : env) e.push_back(const_cast<char*>(s.c_str()));
  e.push_back(nullptr);
  execve(a[0], a.data(), e.data());
  _exit(123);
}

RunResult Run(const std::vector<std::string>& argv, const RunOptions& options) {
  int out_pipe[2], err_pipe[2], in_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC) || pipe2(in_pipe, O_CLOEXEC)) {
    throw std::runtime_error("pipe");
  }
  std::vector<std::string> env = options.env;
  if (env.empty()) env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root", "LANG=C.UTF-8"};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(options.stdin_fd >= 0 ? options.stdin_fd : in_pipe[0], 0);
    dup2(options.stdout_fd >= 0 ? options.stdout_fd : out_pipe[1], 1);
    dup2(options.stderr_fd >= 0 ? options.stderr_fd : err_pipe[1], 2);
    setpgid(0, 0);
    if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) _exit(121);
    if (options.uid) {
      gid_t g = options.gid.value_or(*options.uid);
      if (setgroups(0, nullptr) != 0 || setgid(g) != 0 || setuid(*options.uid) != 0) _exit(122);
    }
    ExecOrExit(argv, env);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (options.stdin_fd < 0 && !options.stdin_data.empty()) {
    ssize_t ignored = write(in_pipe[1], options.stdin_data.data(), options.stdin_data.size());
    (void)ignored;
  }
  close(in_pipe[1]);
  RunResult result;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options.timeout_seconds);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_count = 2;
  bool killed = false;
  while (open_count > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      killed = true;
      break;
    }
    if (poll(fds, 2, static_cast<int>(left)) < 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd >= 0 && fds[i].revents) {
        char buf[65536];
        ssize_t n = read(fds[i].fd, buf, sizeof(buf));
        if (n <= 0) {
          close(fds[i].fd);
          fds[i].fd = -1;
          --open_count;
        } else {
          (i == 0 ? result.out : result.err).append(buf, n);
        }
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (killed) result.err += "\n[harness: killed after timeout]";
  return result;
}

RunResult SandboxSh(const std::string& workspace, const std::string& script,
                    const std::vector<std::string>& flags, const RunOptions& options) {
  std::vector<std::string> argv = {AnvilBin(), "sandbox", "--cwd", workspace};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
  return Run(argv, options);
}

RunResult Sandbox(const std::string& workspace, const std::vector<std::string>& flags,
                  const std::vector<std::string>& command, const RunOptions& options) {
  std::vector<std::string> argv = {AnvilBin(), "sandbox", "--cwd", workspace};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return Run(argv, options);
}

RunResult SandboxPython(const std::string& workspace, const std::string& script,
                        const std::vector<std::string>& flags, const RunOptions& options,
                        const std::vector<std::string>& args) {
  std::vector<std::string> command = {kPython, "-c", script};
  command.insert(command.end(), args.begin(), args.end());
  return Sandbox(workspace, flags, command, options);
}

TempDir::TempDir(const std::string& prefix, const std::string& base) {
  std::string templ = base + "/" + prefix + "-XXXXXX";
  char* made = mkdtemp(templ.data());
  if (!made) throw std::runtime_error("mkdtemp");
  path_ = made;
  chmod(path_.c_str(), 0755);
}

TempDir::~TempDir() {
  if (!path_.empty()) Shell("rm -rf '" + path_ + "'");
}

void WriteFile(const std::string& path, const std::string& data, int mode) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
  out.close();
  chmod(path.c_str(), mode);
}

std::string ReadFile(const std::string& path) {
  // POSIX reads: a /proc file of a process that exits meanwhile fails with ESRCH, which a
  // stream iterator would throw; here it ends the text.
  std::string out;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

bool Exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

int Shell(const std::string& command) {
  int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

namespace {

// Whether `user` may search (x) `dir`, asked of the kernel as that user: 0 yes, 1 no, or
// another value when the question could not be asked (switching to the user failed: 2; the
// child was lost: -1).
int UserCanSearch(const TestUser& user, const std::string& dir) {
  pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(user.gid) != 0 || setuid(user.uid) != 0) _exit(2);
    _exit(access(dir.c_str(), X_OK) == 0 ? 0 : 1);
  }
  int status = 0;
  pid_t waited;
  while ((waited = waitpid(child, &status, 0)) < 0 && errno == EINTR) {
  }
  if (waited != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// The unprivileged tests run the built binaries and read the source tree as the test user, so
// every directory above them must let that user through. A clone under `mktemp -d` (mode 0700)
// does not, and each such test would fail on its own control run (status 123). The test user
// alone is given search permission on each blocking directory, with an ACL entry (setfacl,
// package acl); nothing else changes. Empty when both trees are reachable, else what blocks.
std::string LetUserReachTheTrees(const TestUser& user) {
  for (const char* tree : {ANVIL_BIN_DIR, ANVIL_SOURCE_DIR}) {
    char* resolved = realpath(tree, nullptr);
    if (!resolved) return std::string("cannot resolve ") + tree + ": " + std::strerror(errno);
    const std::string path = resolved;
    std::free(resolved);
    std::vector<std::string> dirs{"/"};  // every directory from the root down to the tree
    for (std::size_t at = path.find('/', 1);; at = path.find('/', at + 1)) {
      dirs.push_back(at == std::string::npos ? path : path.substr(0, at));
      if (at == std::string::npos) break;
    }
    for (const std::string& dir : dirs) {
      int can = UserCanSearch(user, dir);
      if (can == 0) continue;
      if (can != 1) {
        return "cannot tell whether the unprivileged test user '" + user.name + "' can reach " +
               tree +
               (can == 2 ? ": switching to that user failed (the tests run as root)"
                         : ": the probe process was lost");
      }
      Shell("setfacl -m u:" + std::to_string(user.uid) + ":x " + ShellQuote(dir) +
            " >/dev/null 2>&1");
      if (UserCanSearch(user, dir) != 0) {
        return "the unprivileged test user '" + user.name + "' cannot reach " + tree + ": " + dir +
               " does not let it through, and adding an ACL entry for it failed (setfacl, "
               "package acl; a filesystem without ACL support?). Build and test from a "
               "directory that user can traverse (e.g. chmod o+x " +
               dir + ")";
      }
      std::fprintf(stderr, "[harness] gave '%s' search permission on %s (ACL entry)\n",
                   user.name.c_str(), dir.c_str());
    }
  }
  return {};
}

std::string& UnreachableTrees() {
  static std::string problem;
  return problem;
}

}  // namespace

std::optional<TestUser> UnprivilegedUser() {
  const char* name = "anviltest";
  passwd* pw = getpwnam(name);
  // Parallel tests may race to create the user; useradd then fails on the passwd lock.
  for (int attempt = 0; !pw && attempt < 5; ++attempt) {
    Shell("useradd --no-create-home --shell /usr/sbin/nologin anviltest >/dev/null 2>&1");
    pw = getpwnam(name);
    if (!pw) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (!pw) return std::nullopt;
  TestUser user{pw->pw_uid, pw->pw_gid, name};
  // Once per test process; concurrent processes add the same ACL entry (idempotent).
  static const bool reachable = [&] {
    UnreachableTrees() = LetUserReachTheTrees(user);
    return UnreachableTrees().empty();
  }();
  if (!reachable) return std::nullopt;
  return user;
}

const std::string& UnprivilegedUserCannotReachTheBuild() { return UnreachableTrees(); }

void ChownTree(const std::string& path, const TestUser& user) {
  Shell("chown -R " + std::to_string(user.uid) + ":" + std::to_string(user.gid) + " '" + path +
        "'");
}

std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string UniqueToken(const std::string& prefix) {
  static std::atomic<unsigned> counter{0};
  static std::mt19937_64 rng{std::random_device{}()};
  std::ostringstream out;
  out << prefix << "-" << getpid() << "-" << counter++ << "-" << std::hex << (rng() & 0xffffff);
  return out.str();
}

const char* ToString(Caller caller) { return caller == Caller::kRoot ? "Root" : "Unprivileged"; }

uid_t CallerIdentity::uid() const { return user ? user->uid : 0; }
gid_t CallerIdentity::gid() const { return user ? user->gid : 0; }

RunOptions CallerIdentity::Options(RunOptions base) const {
  if (user) {
    base.uid = user->uid;
    base.gid = user->gid;
  }
  return base;
}

void CallerIdentity::Give(const std::string& path) const {
  if (user) ChownTree(path, *user);
}

std::optional<CallerIdentity> MakeCaller(Caller caller) {
  CallerIdentity id;
  id.caller = caller;
  if (caller == Caller::kUnprivileged) {
    id.user = UnprivilegedUser();
    if (!id.user) return std::nullopt;
  }
  return id;
}

void CallerTest::SetUp() {
  ANVIL_CALLER_OR_END_TEST(id, GetParam());
  caller_ = *id;
}

std::string CallerParamName(const ::testing::TestParamInfo<Caller>& info) {
  return ToString(info.param);
}

namespace {

// The state letter of /proc/<pid>/stat, or 0 when the process does not exist.
char ProcessState(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return 0;
  auto paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return 0;
  return stat[paren + 2];
}

}  // namespace

bool ProcessAlive(pid_t pid) {
  char state = ProcessState(pid);
  return state != 0 && state != 'Z' && state != 'X';
}

std::vector<pid_t> ProcessesWithMarker(const std::string& marker) {
  std::vector<pid_t> found;
  DIR* dir = opendir("/proc");
  if (!dir) return found;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == getpid()) continue;
    std::string cmdline = ReadFile("/proc/" + std::string(e->d_name) + "/cmdline");
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    if (cmdline.find(marker) != std::string::npos && ProcessAlive(static_cast<pid_t>(pid))) {
      found.push_back(static_cast<pid_t>(pid));
    }
  }
  closedir(dir);
  return found;
}

bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

Spawned::Spawned(const std::vector<std::string>& argv, const RunOptions& options) {
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork");
  if (pid_ == 0) {
    int null_fd = open("/dev/null", O_RDWR);
    dup2(options.stdin_fd >= 0 ? options.stdin_fd : null_fd, 0);
    dup2(null_fd, 1);
    dup2(null_fd, 2);
    setpgid(0, 0);
    if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) _exit(121);
    if (options.uid) {
      gid_t g = options.gid.value_or(*options.uid);
      if (setgroups(0, nullptr) != 0 || setgid(g) != 0 || setuid(*options.uid) != 0) _exit(122);
    }
    std::vector<std::string> env = options.env;
    if (env.empty()) env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root", "LANG=C.UTF-8"};
    ExecOrExit(argv, env);
  }
  setpgid(pid_, pid_);  // also from here, so the group exists before anyone signals it
}

std::optional<int> Spawned::Wait(std::chrono::milliseconds limit) {
  if (reaped_) return std::nullopt;
  int status = 0;
  bool ended = WaitUntil(
      [&] {
        pid_t r = waitpid(pid_, &status, WNOHANG);
        return r == pid_;
      },
      limit);
  if (!ended) return std::nullopt;
  reaped_ = true;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Spawned::~Spawned() {
  if (pid_ > 0 && !reaped_) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

bool CompileC(const std::string& source, const std::string& output,
              const std::string& extra_flags) {
  std::string src = output + ".c";
  WriteFile(src, source);
  int rc = Shell("gcc -O1 -w " + extra_flags + " -o " + ShellQuote(output) + " " + ShellQuote(src) +
                 " >/dev/null 2>&1");
  std::remove(src.c_str());
  return rc == 0;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

nlohmann::json JsonReport(const RunResult& result) {
  auto lines = Lines(result.err);
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.empty()) return nlohmann::json::value_t::discarded;
  return nlohmann::json::parse(lines.back(), nullptr, /*allow_exceptions=*/false);
}

nlohmann::json ProbeLayers(const std::vector<std::string>& flags, const RunOptions& options) {
  std::vector<std::string> all = {"--json"};
  all.insert(all.end(), flags.begin(), flags.end());
  TempDir ws("anvil-probe");
  if (options.uid && chown(ws.path().c_str(), *options.uid, options.gid.value_or(*options.uid))) {
    return nlohmann::json::object();
  }
  auto result = Sandbox(ws.path(), all, {"/bin/true"}, options);
  auto report = JsonReport(result);
  if (report.is_discarded() || !report.contains("layers")) return nlohmann::json::object();
  return report["layers"];
}

HostListener::HostListener(const std::string& path, bool world_connectable) {
  fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (fd_ < 0 || path.size() >= sizeof(addr.sun_path)) return;
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd_, 16) != 0) {
    close(fd_);
    fd_ = -1;
    return;
  }
  if (world_connectable) chmod(path.c_str(), 0777);
}

HostListener::~HostListener() {
  if (fd_ >= 0) close(fd_);
}

std::optional<std::string> HostListener::Received(int ms) const {
  pollfd p{fd_, POLLIN, 0};
  if (poll(&p, 1, ms) <= 0) return std::nullopt;
  int conn = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (conn < 0) return std::nullopt;
  pollfd c{conn, POLLIN, 0};
  poll(&c, 1, 2000);
  char buf[256];
  ssize_t n = recv(conn, buf, sizeof(buf), MSG_DONTWAIT);
  close(conn);
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

}  // namespace anvil::testing
