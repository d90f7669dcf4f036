// Test harness: runs the real `anvil` binary (no mocks) and collects what it did.
#pragma once

#include <sys/types.h>

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
  std::string cwd;                       // default: current directory
  std::vector<std::string> env;          // full environment; empty: a small default
  std::optional<uid_t> uid;              // run as this user (test runs as root)
  std::optional<gid_t> gid;
  std::string stdin_data;
  int timeout_seconds = 60;              // harness backstop; the test fails if it fires
};

std::string BinDir();
std::string AnvilBin();
RunResult Run(const std::vector<std::string>& argv, const RunOptions& options = {});
// `anvil sandbox ARGS... -- sh -c SCRIPT` in `workspace`.
RunResult SandboxSh(const std::string& workspace, const std::string& script,
                    const std::vector<std::string>& flags = {}, const RunOptions& options = {});

// A directory removed (recursively) when the object dies. Mode 0755 so an unprivileged test
// user can traverse it.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "anvil-test");
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

// An unprivileged user for the tests that must also hold for non-root callers. Created once
// (useradd) if missing; nullopt when it cannot be made (the test then reports a skip).
struct TestUser {
  uid_t uid;
  gid_t gid;
  std::string name;
};
std::optional<TestUser> UnprivilegedUser();
void ChownTree(const std::string& path, const TestUser& user);

}  // namespace anvil::testing
