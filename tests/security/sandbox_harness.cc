#include "sandbox_harness.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace anvil::testing {

std::string BinDir() { return ANVIL_BIN_DIR; }
std::string AnvilBin() { return BinDir() + "/anvil"; }

RunResult Run(const std::vector<std::string>& argv, const RunOptions& options) {
  int out_pipe[2], err_pipe[2], in_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC) || pipe2(in_pipe, O_CLOEXEC)) {
    throw std::runtime_error("pipe");
  }
  std::vector<std::string> env = options.env;
  if (env.empty()) env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root", "LANG=C.UTF-8"};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    setpgid(0, 0);
    if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) _exit(121);
    if (options.uid) {
      gid_t g = options.gid.value_or(*options.uid);
      if (setgroups(0, nullptr) != 0 || setgid(g) != 0 || setuid(*options.uid) != 0) _exit(122);
    }
    std::vector<char*> a, e;
    for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    for (auto& s : env) e.push_back(const_cast<char*>(s.c_str()));
    e.push_back(nullptr);
    execve(a[0], a.data(), e.data());
    _exit(123);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (!options.stdin_data.empty()) {
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

TempDir::TempDir(const std::string& prefix) {
  std::string templ = "/tmp/" + prefix + "-XXXXXX";
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
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) {
  struct stat st{};
  return lstat(path.c_str(), &st) == 0;
}

int Shell(const std::string& command) {
  int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

std::optional<TestUser> UnprivilegedUser() {
  const char* name = "anviltest";
  passwd* pw = getpwnam(name);
  if (!pw) {
    Shell("useradd --no-create-home --shell /usr/sbin/nologin anviltest >/dev/null 2>&1");
    pw = getpwnam(name);
  }
  if (!pw) return std::nullopt;
  return TestUser{pw->pw_uid, pw->pw_gid, name};
}

void ChownTree(const std::string& path, const TestUser& user) {
  Shell("chown -R " + std::to_string(user.uid) + ":" + std::to_string(user.gid) + " '" + path + "'");
}

}  // namespace anvil::testing
