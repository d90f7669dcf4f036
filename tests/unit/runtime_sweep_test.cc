// The sweep of dead sessions' runtime directories (session/runtime_sweep.h): which names are a
// session's, and on real directories what is removed and what is left — a live session's
// (its gateway's lock held, or a socket that still answers), a young one, one holding anything
// else, a symbolic link, another name.
#include "session/runtime_sweep.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/unique_fd.h"

namespace anvil::session {
namespace runtime_sweep_test {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

// A fresh directory under /tmp (short: a socket's path must fit in sun_path), removed after.
class Base {
 public:
  Base() {
    char pattern[] = "/tmp/anvil-sweep-XXXXXX";
    path_ = ::mkdtemp(pattern) != nullptr ? pattern : "";
  }
  ~Base() {
    std::error_code ignored;
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(RuntimeSweep, OnlyTheGatewaysNamesAreSessions) {
  struct Row {
    std::string name;
    bool session;
  } rows[] = {
      {"0123456789abcdef", true},
      {"ffffffffffffffff", true},
      {"0123456789ABCDEF", false},
      {"0123456789abcde", false},
      {"0123456789abcdef0", false},
      {"0123456789abcdeg", false},
      {"", false},
      {"..", false},
      {"gateway.sock", false},
      {"anvil", false},
  };
  for (const auto& row : rows) EXPECT_EQ(IsSessionDirName(row.name), row.session) << row.name;
}

// A socket bound at `path` and then closed: the file stays, nobody listens.
void DeadSocket(const std::string& path) {
  UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(::bind(s.Get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << path;
}

// A listening socket at `path`, open while the returned descriptor is.
UniqueFd LiveSocket(const std::string& path) {
  UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  EXPECT_EQ(::bind(s.Get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << path;
  EXPECT_EQ(::listen(s.Get(), 4), 0);
  return s;
}

void MakeOld(const fs::path& p) {
  const timespec old[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), old, AT_SYMLINK_NOFOLLOW), 0) << p;
}

TEST(RuntimeSweep, RemovesDeadSessionsAndLeavesEverythingElse) {
  Base tmp;
  const fs::path base = tmp.path();
  ASSERT_FALSE(base.empty());
  auto dir = [&](const char* name) {
    fs::create_directory(base / name);
    return base / name;
  };
  const fs::path dead_socket = dir("00000000000000a1");
  DeadSocket(dead_socket / "gateway.sock");
  const fs::path dead_empty = dir("00000000000000a2");
  const fs::path locked = dir("00000000000000a3");  // a live gateway's lock
  DeadSocket(locked / "gateway.sock");
  UniqueFd lock(::open(locked.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_EQ(::flock(lock.Get(), LOCK_SH | LOCK_NB), 0);
  const fs::path answering = dir("00000000000000a4");  // an older gateway: no lock, answers
  UniqueFd listening = LiveSocket(answering / "gateway.sock");
  // A listener that never accepts, its backlog full (a stopped older gateway): left, and the
  // sweep does not wait for it.
  const fs::path stuck = dir("00000000000000a9");
  UniqueFd stuck_listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, (stuck / "gateway.sock").c_str());
    ASSERT_EQ(::bind(stuck_listener.Get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ASSERT_EQ(::listen(stuck_listener.Get(), 0), 0);
  }
  std::vector<UniqueFd> fillers;
  for (int i = 0; i < 4; ++i) {
    UniqueFd c(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, (stuck / "gateway.sock").c_str());
    (void)::connect(c.Get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    fillers.push_back(std::move(c));
  }
  const fs::path with_audit = dir("00000000000000a5");
  DeadSocket(with_audit / "gateway.sock");
  std::ofstream(with_audit / "audit.jsonl") << "{}\n";
  const fs::path young = dir("00000000000000a6");
  DeadSocket(young / "gateway.sock");
  const fs::path own = dir("00000000000000a7");
  const fs::path other_name = dir("not-a-session");
  const fs::path target = dir("00000000000000b0");
  fs::create_directory_symlink(target, base / "00000000000000a8");
  for (const fs::path& p : {dead_socket, dead_empty, locked, answering, stuck, with_audit, own,
                            other_name, target, base / "00000000000000a8"}) {
    MakeOld(p);
  }
  fs::remove(target);  // the link now leads nowhere; a dead-looking name that is not a directory

  EXPECT_EQ(SweepDeadRuntimeDirs(base, "00000000000000a7", seconds(60), 64), 2);
  EXPECT_FALSE(fs::exists(dead_socket));
  EXPECT_FALSE(fs::exists(dead_empty));
  EXPECT_TRUE(fs::exists(locked / "gateway.sock"));
  EXPECT_TRUE(fs::exists(answering / "gateway.sock"));
  EXPECT_TRUE(fs::exists(stuck / "gateway.sock"));
  EXPECT_TRUE(fs::exists(with_audit / "audit.jsonl"));
  EXPECT_TRUE(fs::exists(with_audit / "gateway.sock"));
  EXPECT_TRUE(fs::exists(young / "gateway.sock"));
  EXPECT_TRUE(fs::exists(own));
  EXPECT_TRUE(fs::exists(other_name));
  EXPECT_TRUE(fs::is_symlink(base / "00000000000000a8"));

  // Once the lock is let go, that one is dead too.
  lock.Reset();
  EXPECT_EQ(SweepDeadRuntimeDirs(base, "00000000000000a7", seconds(60), 64), 1);
  EXPECT_FALSE(fs::exists(locked));
}

TEST(RuntimeSweep, LooksAtABoundedNumberEachTimeAndGetsThroughThemAll) {
  Base tmp;
  const fs::path base = tmp.path();
  ASSERT_FALSE(base.empty());
  for (int i = 0; i < 40; ++i) {
    char name[17];
    std::snprintf(name, sizeof name, "%016x", i + 1);
    fs::create_directory(base / name);
    MakeOld(base / name);
  }
  // Five the sweep cannot remove, among them.
  for (int i = 0; i < 5; ++i) {
    char name[17];
    std::snprintf(name, sizeof name, "%016x", 1000 + i);
    fs::create_directory(base / name);
    std::ofstream(base / name / "keep") << "x";
    MakeOld(base / name);
  }
  int removed = 0, sweeps = 0;
  while (removed < 40 && sweeps < 200) {
    const int now = SweepDeadRuntimeDirs(base, "", seconds(60), 8);
    EXPECT_LE(now, 8);
    removed += now;
    ++sweeps;
  }
  EXPECT_EQ(removed, 40);
  int left = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(base)) ++left;
  EXPECT_EQ(left, 5);
}

}  // namespace
}  // namespace runtime_sweep_test
}  // namespace anvil::session
