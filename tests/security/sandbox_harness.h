// Test harness: runs the real `anvil` binary (no mocks) and collects what it did.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace anvil::testing {

struct RunResult {
  int status = -1;  // exit status, or 128+signal
  std::string out;
  std::string err;
};

struct RunOptions {
  std::string cwd;               // default: current directory
  std::vector<std::string> env;  // full environment; empty: a small default
  std::optional<uid_t> uid;      // run as this user (test runs as root)
  std::optional<gid_t> gid;
  std::string stdin_data;
  int stdin_fd = -1;         // >= 0: becomes the child's stdin (stdin_data ignored)
  int stdout_fd = -1;        // >= 0: becomes the child's stdout (RunResult::out stays empty)
  int stderr_fd = -1;        // >= 0: becomes the child's stderr (RunResult::err stays empty)
  int timeout_seconds = 60;  // harness backstop; the test fails if it fires
};

// The interpreter the socket and syscall probes run inside the sandbox. Always the system one:
// a python3 found on PATH may live (pyenv) outside the sandbox's view.
inline constexpr char kPython[] = "/usr/bin/python3";

std::string BinDir();
// True when the binaries of ANVIL_TEST_BIN_DIR include a ThreadSanitizer anvil-gateway
// (scripts/sanitizers.sh tsan sets ANVIL_TEST_GATEWAY_TSAN=1): TSan makes it 5-15x slower, so
// the few wall-clock bounds on a gateway's answers widen there, and only there.
bool GatewayUnderTsan();
// Multiplier of the tests' bounds on a gateway's RSS growth: 3 against a TSan gateway, whose
// shadow memory counts in its RSS (150 MiB where the dev build grows 37-72 MiB), else 1.
inline long RssBoundScale() { return GatewayUnderTsan() ? 3 : 1; }
// In a forked child: execve(argv, env), or _exit(123) when that fails.
[[noreturn]] void ExecOrExit(const std::vector<std::string>& argv,
                             const std::vector<std::string>& env);
std::string AnvilBin();
RunResult Run(const std::vector<std::string>& argv, const RunOptions& options = {});
// `anvil sandbox ARGS... -- sh -c SCRIPT` in `workspace`.
RunResult SandboxSh(const std::string& workspace, const std::string& script,
                    const std::vector<std::string>& flags = {}, const RunOptions& options = {});
// `anvil sandbox --cwd WORKSPACE FLAGS... -- COMMAND...`.
RunResult Sandbox(const std::string& workspace, const std::vector<std::string>& flags,
                  const std::vector<std::string>& command, const RunOptions& options = {});
// `anvil sandbox --cwd WORKSPACE FLAGS... -- /usr/bin/python3 -c SCRIPT ARGS...`.
RunResult SandboxPython(const std::string& workspace, const std::string& script,
                        const std::vector<std::string>& flags = {}, const RunOptions& options = {},
                        const std::vector<std::string>& args = {});

// A directory removed (recursively) when the object dies. Mode 0755 so an unprivileged test
// user can traverse it. `base` is where it is made: secrets live outside /tmp so that the
// sandbox's private /tmp alone cannot be what hides them.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "anvil-test", const std::string& base = "/tmp");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

void WriteFile(const std::string& path, const std::string& data, int mode = 0644);
std::string ReadFile(const std::string& path);
bool Exists(const std::string& path);
// Runs a shell command outside any sandbox (test set-up); returns its exit status.
int Shell(const std::string& command);
// Single-quotes `text` for /bin/sh.
std::string ShellQuote(const std::string& text);
// A name no other test (or parallel run) uses: prefix-pid-counter-random.
std::string UniqueToken(const std::string& prefix);

// An unprivileged user for the tests that must also hold for non-root callers. Created once
// (useradd) if missing, and given search permission (an ACL entry for it alone) on any directory
// above the build or source tree that would stop it, e.g. a clone under `mktemp -d`. nullopt
// when it cannot be made (the test then reports a skip) or cannot reach the build (the test
// fails with UnprivilegedUserCannotReachTheBuild()).
struct TestUser {
  uid_t uid;
  gid_t gid;
  std::string name;
};
std::optional<TestUser> UnprivilegedUser();
// Why the test user cannot reach the build or source tree; empty when it can (or not yet asked).
const std::string& UnprivilegedUserCannotReachTheBuild();
void ChownTree(const std::string& path, const TestUser& user);

// Who runs `anvil`: the test's own root, or the unprivileged test user. Most attacks are tried
// as both, because the sandbox takes different paths (uid 0 mapped to itself vs. a user).
enum class Caller { kRoot, kUnprivileged };
const char* ToString(Caller caller);
inline constexpr Caller kAllCallers[] = {Caller::kRoot, Caller::kUnprivileged};

struct CallerIdentity {
  Caller caller = Caller::kRoot;
  std::optional<TestUser> user;  // set for kUnprivileged

  uid_t uid() const;
  gid_t gid() const;
  // `base` with uid/gid set so that `anvil` runs as this caller.
  RunOptions Options(RunOptions base = {}) const;
  // Gives `path` (recursively) to the caller: the files an attack targets must be the
  // caller's own, so that only the sandbox stands between the caller and the attack.
  void Give(const std::string& path) const;
};
// nullopt when the unprivileged user cannot be made (the test then skips loudly).
std::optional<CallerIdentity> MakeCaller(Caller caller);
// In a test body or SetUp: `var` = MakeCaller(caller), or the test ends here: failed when the
// test user exists but cannot reach the build (UnprivilegedUserCannotReachTheBuild), skipped
// loudly when the user cannot be made.
#define ANVIL_CALLER_OR_END_TEST(var, caller)                                                 \
  auto var = ::anvil::testing::MakeCaller(caller);                                            \
  if (!var && !::anvil::testing::UnprivilegedUserCannotReachTheBuild().empty()) {             \
    GTEST_FAIL() << ::anvil::testing::UnprivilegedUserCannotReachTheBuild();                  \
  }                                                                                           \
  if (!var) {                                                                                 \
    GTEST_SKIP() << "SKIPPED: cannot create the unprivileged test user 'anviltest' (useradd " \
                    "failed); the unprivileged half of this attack was NOT tried";            \
  }

// Base of the tests parameterized over the caller. SetUp skips loudly when the unprivileged
// user cannot be made; a derived SetUp calls it first and returns if IsSkipped().
class CallerTest : public ::testing::TestWithParam<Caller> {
 protected:
  void SetUp() override;
  RunOptions Opts(RunOptions base = {}) const { return caller_.Options(std::move(base)); }
  bool Unprivileged() const { return caller_.caller == Caller::kUnprivileged; }
  CallerIdentity caller_;
};
std::string CallerParamName(const ::testing::TestParamInfo<Caller>& info);

// Live (not zombie) processes whose command line contains `marker`, excluding this process.
std::vector<pid_t> ProcessesWithMarker(const std::string& marker);
bool ProcessAlive(pid_t pid);
// Polls `done` every 20 ms until it holds or `limit` passes; returns the last answer. A bound
// against hanging, not a timing assertion.
bool WaitUntil(const std::function<bool()>& done,
               std::chrono::milliseconds limit = std::chrono::seconds(10));

// A process started in the background (own process group); killed and reaped on destruction.
class Spawned {
 public:
  Spawned(const std::vector<std::string>& argv, const RunOptions& options = {});
  ~Spawned();
  Spawned(const Spawned&) = delete;
  Spawned& operator=(const Spawned&) = delete;
  pid_t pid() const { return pid_; }
  // Waits for the process to end (bounded); returns its status as RunResult::status does.
  std::optional<int> Wait(std::chrono::milliseconds limit);

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// Compiles C `source` with the host's gcc, outside any sandbox. False if gcc fails.
bool CompileC(const std::string& source, const std::string& output,
              const std::string& extra_flags = "");

// Whether `needle` shows up anywhere in what the command printed (stdout or stderr).
inline bool Printed(const RunResult& r, const std::string& needle) {
  return r.out.find(needle) != std::string::npos || r.err.find(needle) != std::string::npos;
}

// Lines of `text`, without the newline characters.
std::vector<std::string> Lines(const std::string& text);

// The `--json` report: the last line of stderr parsed as JSON (discarded() when it is not).
nlohmann::json JsonReport(const RunResult& result);
// The layers object of `anvil sandbox --json FLAGS -- /bin/true` run by `options`' caller, to
// skip loudly when the kernel lacks a feature a test needs.
nlohmann::json ProbeLayers(const std::vector<std::string>& flags = {},
                           const RunOptions& options = {});

// A listening Unix socket of a "host daemon" (the test process), bound at `path` (relative to
// the working directory when not absolute); `world_connectable` opens the socket file to every
// user (a caller test's unprivileged user). Received: what one connection brought within `ms`.
class HostListener {
 public:
  explicit HostListener(const std::string& path, bool world_connectable = false);
  ~HostListener();
  HostListener(const HostListener&) = delete;
  HostListener& operator=(const HostListener&) = delete;
  bool ok() const { return fd_ >= 0; }
  std::optional<std::string> Received(int ms) const;

 private:
  int fd_ = -1;
};

}  // namespace anvil::testing
