// T3/T4 for the command sandbox: a host daemon's Unix socket stays unreachable from inside
// whatever name it was bound under. connect(2) ignores read-only mounts, so a socket the view
// shows is a way out unless it is covered; the kernel's socket table names each socket as it
// was bound — a relative name, "/proc/self/fd/N/name" (systemd's long-path trick), a name that
// was renamed or hard-linked since — so Anvil finds sockets by device and inode instead. Each
// attack is tried in the workspace and under a read root the view shows (--read-access full),
// next to the benign neighbour: the command's own sockets work.
//
// The sockets live on a tmpfs that only this test's mount namespace has, so the sandboxes of
// other tests running meanwhile (which see every socket of the host's network namespace) have
// nothing to search for them.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace t3_sandbox_host_sockets_test {
namespace {

// argv: PATH PAYLOAD. Prints CONNECTED or "ERR <errno name>".
constexpr char kClient[] = R"py(
import errno, os, socket, sys
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    # Relative to its directory, so that a long path still fits in sun_path.
    os.chdir(os.path.dirname(sys.argv[1]))
    s.connect(os.path.basename(sys.argv[1]))
    s.sendall(sys.argv[2].encode())
    s.close()
    print("CONNECTED")
except OSError as e:
    print("ERR", errno.errorcode.get(e.errno, e.errno))
)py";

class T3SandboxHostSockets : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
    // A mount namespace of this test process's own (it stays in it: harmless for the tests
    // after it), with a tmpfs the host's other processes never see.
    static bool unshared = false;
    if (!unshared) {
      ASSERT_EQ(unshare(CLONE_NEWNS), 0) << "unshare: " << strerror(errno);
      ASSERT_EQ(mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0);
      unshared = true;
    }
    fs_ = std::make_unique<TempDir>("anvil-sockfs", "/var/tmp");
    ASSERT_EQ(mount("tmpfs", fs_->path().c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755"), 0)
        << strerror(errno);
    mounted_ = true;
    ws_ = fs_->path() + "/ws";
    outside_ = fs_->path() + "/outside";
    ASSERT_EQ(mkdir(ws_.c_str(), 0755), 0);
    ASSERT_EQ(mkdir(outside_.c_str(), 0777), 0);
    chmod(outside_.c_str(), 0777);
  }
  void TearDown() override {
    listeners_.clear();
    for (int fd : dir_fds_) close(fd);
    if (mounted_) umount2(fs_->path().c_str(), MNT_DETACH);
  }

  // Binds a listener in `dir` in one of the ways a daemon may, and returns the path at which a
  // client reaches it now.
  std::string Bind(const std::string& dir, const std::string& how) {
    std::string reach;
    std::unique_ptr<HostListener> l;
    if (how == "relative") {
      // Bound from inside `dir` by a process that has since moved on.
      char cwd[4096];
      EXPECT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
      EXPECT_EQ(chdir(dir.c_str()), 0);
      l = std::make_unique<HostListener>("rel.sock");
      EXPECT_EQ(chdir(cwd), 0);
      reach = dir + "/rel.sock";
    } else if (how == "proc-fd" || how == "proc-fd-closed") {
      // systemd's way past sun_path's 108 bytes: bind through a descriptor of the directory
      // (and close it afterwards).
      std::string sub = dir + "/" + how + "/d";
      EXPECT_EQ(Shell("mkdir -p '" + sub + "' && chmod -R 0777 '" + dir + "'"), 0);
      int fd = open(sub.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
      EXPECT_GE(fd, 0);
      l = std::make_unique<HostListener>("/proc/self/fd/" + std::to_string(fd) + "/fd.sock");
      if (how == "proc-fd") {
        dir_fds_.push_back(fd);
      } else {
        close(fd);
      }
      reach = sub + "/fd.sock";
    } else if (how == "renamed") {
      EXPECT_EQ(Shell("mkdir -p '" + dir + "/moved' && chmod 0777 '" + dir + "/moved'"), 0);
      l = std::make_unique<HostListener>(dir + "/bound.sock");
      EXPECT_EQ(rename((dir + "/bound.sock").c_str(), (dir + "/moved/api.sock").c_str()), 0);
      reach = dir + "/moved/api.sock";
    } else if (how == "linked") {
      // Two names for one socket: both must be covered.
      EXPECT_EQ(Shell("mkdir -p '" + dir + "/links' && chmod 0777 '" + dir + "/links'"), 0);
      l = std::make_unique<HostListener>(dir + "/first.sock");
      EXPECT_EQ(link((dir + "/first.sock").c_str(), (dir + "/links/second.sock").c_str()), 0);
      reach = dir + "/links/second.sock";
      by_path_[dir + "/first.sock"] = l.get();
    }
    EXPECT_TRUE(l && l->ok()) << how << " in " << dir << ": " << strerror(errno);
    chmod(reach.c_str(), 0777);
    by_path_[reach] = l.get();
    listeners_.push_back(std::move(l));
    return reach;
  }

  RunResult Connect(const std::vector<std::string>& flags, const std::string& path,
                    const std::string& payload) {
    return SandboxPython(ws_, kClient, flags, Opts(), {path, payload});
  }

  std::unique_ptr<TempDir> fs_;
  bool mounted_ = false;
  std::string ws_, outside_;
  std::vector<std::unique_ptr<HostListener>> listeners_;
  std::map<std::string, HostListener*> by_path_;  // every name a client reaches each by
  std::vector<int> dir_fds_;
};

const char* const kWays[] = {"relative", "proc-fd", "proc-fd-closed", "renamed", "linked"};

TEST_P(T3SandboxHostSockets, HostSocketsBoundUnderAnyNameAreUnreachableInTheWorkspace) {
  for (const char* how : kWays) Bind(ws_, how);
  caller_.Give(ws_);
  for (const auto& [target, listener_ptr] : by_path_) {
    HostListener& listener = *listener_ptr;
    // Control: the caller reaches it without the sandbox.
    auto control = ::anvil::testing::Run({kPython, "-c", kClient, target, "control"}, Opts());
    ASSERT_EQ(control.out, "CONNECTED\n") << target << ": " << control.err;
    ASSERT_EQ(listener.Received(2000).value_or("<nothing>"), "control") << target;
    for (const auto& flags : std::vector<std::vector<std::string>>{
             {}, {"--policy", "read-only"}, {"--network", "full"}}) {
      auto attack = Connect(flags, target, "attack");
      EXPECT_EQ(attack.out.rfind("ERR", 0), 0u)
          << target << " (" << (flags.empty() ? "default" : flags.back()) << "): " << attack.out
          << attack.err;
      EXPECT_FALSE(listener.Received(20)) << target << ": a connection reached the host daemon";
    }
  }
}

TEST_P(T3SandboxHostSockets, HostSocketsBoundUnderAnyNameAreUnreachableUnderAReadRoot) {
  for (const char* how : kWays) Bind(outside_, how);
  caller_.Give(ws_);
  for (const auto& [target, listener_ptr] : by_path_) {
    HostListener& listener = *listener_ptr;
    auto control = ::anvil::testing::Run({kPython, "-c", kClient, target, "control"}, Opts());
    ASSERT_EQ(control.out, "CONNECTED\n") << target << ": " << control.err;
    ASSERT_EQ(listener.Received(2000).value_or("<nothing>"), "control") << target;
    for (const auto& network : {"none", "full"}) {
      auto attack = Connect({"--read-access", "full", "--network", network}, target, "attack");
      EXPECT_EQ(attack.out.rfind("ERR", 0), 0u)
          << target << " (" << network << "): " << attack.out << attack.err;
      EXPECT_FALSE(listener.Received(20)) << target << ": a connection reached the host daemon";
    }
  }
}

TEST_P(T3SandboxHostSockets, TheCommandsOwnSocketsWorkInTheWorkspaceAndTmp) {
  // A host socket in the workspace is being hidden at the same time: the command's own are
  // created after the view was made and are never covered.
  Bind(ws_, "renamed");
  caller_.Give(ws_);
  const std::string own = R"py(
import os, socket, sys
for base in (os.getcwd(), "/tmp"):
    for how in ("absolute", "relative"):
        os.chdir(base)
        name = "own-%s-%d.sock" % (how, os.getpid())
        path = os.path.join(base, name) if how == "absolute" else name
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        srv.listen(1)
        os.rename(name, name + ".moved")
        cli = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        cli.connect(name + ".moved")
        conn, _ = srv.accept()
        cli.sendall(b"ok")
        print(base == "/tmp" and "tmp" or "ws", how, conn.recv(8).decode())
        os.unlink(name + ".moved")
)py";
  for (const auto& flags : std::vector<std::vector<std::string>>{{}, {"--read-access", "full"}}) {
    auto benign = SandboxPython(ws_, own, flags, Opts());
    EXPECT_EQ(benign.out, "ws absolute ok\nws relative ok\ntmp absolute ok\ntmp relative ok\n")
        << benign.err;
  }
}

// Whether anything opened the directory `path` since the last call: the search of the view for
// a socket not where its name says reads every directory of it, this one included.
class DirOpenProbe {
 public:
  explicit DirOpenProbe(const std::string& path)
      : fd_(inotify_init1(IN_NONBLOCK | IN_CLOEXEC)),
        watch_(fd_ >= 0 ? inotify_add_watch(fd_, path.c_str(), IN_OPEN) : -1) {}
  ~DirOpenProbe() {
    if (fd_ >= 0) close(fd_);
  }
  DirOpenProbe(const DirOpenProbe&) = delete;
  DirOpenProbe& operator=(const DirOpenProbe&) = delete;
  bool ok() const { return watch_ >= 0; }
  bool Opened() {
    bool opened = false;
    alignas(inotify_event) char buf[4096];
    while (read(fd_, buf, sizeof(buf)) > 0) opened = true;
    return opened;
  }

 private:
  int fd_;
  int watch_;
};

TEST_P(T3SandboxHostSockets, AnotherUsersUnlinkedSocketDoesNotMakeTheStartSearchTheView) {
  // Any local user can bind a socket and unlink its name: the kernel still lists it, and no name
  // finds it. Searching every directory of the view for it at every start let one user slow
  // every other user's sandbox (seconds with full read) or, past the search's bound, stop them.
  // "nobody" holds it here, a user other than either caller.
  const std::string theirs = outside_ + "/nobody";
  ASSERT_EQ(mkdir(theirs.c_str(), 0700), 0);
  ASSERT_EQ(chown(theirs.c_str(), 65534, 65534), 0);
  const std::string holder_py = R"py(
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.listen(1)
os.unlink(sys.argv[1])
open(sys.argv[2], "w").write("ready")
time.sleep(120)
)py";
  const std::string ready = theirs + "/ready";
  RunOptions as_nobody;
  as_nobody.uid = 65534;
  as_nobody.gid = 65534;
  Spawned holder({kPython, "-c", holder_py, theirs + "/x.sock", ready}, as_nobody);
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(ready) == "ready"; })) << "the holder did not start";
  const std::string probe_dir = ws_ + "/src/deep/probe";
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(probe_dir)), 0);
  caller_.Give(ws_);
  DirOpenProbe probe(probe_dir);
  ASSERT_TRUE(probe.ok()) << strerror(errno);
  probe.Opened();
  // Read-only policies: a writable workspace is walked at every start for its repositories'
  // git metadata (docs/policy.md), which would open the probe whatever the socket search does.
  const std::vector<std::vector<std::string>> policies = {
      {"--policy", "read-only"}, {"--policy", "read-only", "--read-access", "full"}};
  for (const auto& flags : policies) {
    auto result = Sandbox(ws_, flags, {"/bin/true"}, Opts());
    EXPECT_EQ(result.status, 0) << result.err;
    EXPECT_FALSE(probe.Opened()) << "the start searched the view for nobody's unlinked socket ("
                                 << flags.back() << ")";
  }

  // Benign neighbour: a socket of root's (a daemon's), reachable only under a name it was given
  // after binding (linked, the bound name unlinked), is still searched for and masked.
  const std::string first = ws_ + "/first.sock";
  HostListener daemon(first);
  ASSERT_TRUE(daemon.ok());
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(ws_ + "/src/deep/links")), 0);
  const std::string second = ws_ + "/src/deep/links/second.sock";
  ASSERT_EQ(link(first.c_str(), second.c_str()), 0);
  ASSERT_EQ(unlink(first.c_str()), 0);
  chmod(second.c_str(), 0777);
  caller_.Give(ws_);
  auto control = ::anvil::testing::Run({kPython, "-c", kClient, second, "control"}, Opts());
  ASSERT_EQ(control.out, "CONNECTED\n") << control.err;
  ASSERT_EQ(daemon.Received(2000).value_or("<nothing>"), "control");
  probe.Opened();
  auto attack = Connect(policies[0], second, "attack");
  EXPECT_EQ(attack.out.rfind("ERR", 0), 0u) << attack.out << attack.err;
  EXPECT_FALSE(daemon.Received(20)) << "a connection reached the host daemon";
  EXPECT_TRUE(probe.Opened()) << "the probe saw no search: it proves nothing above";
}

TEST_P(T3SandboxHostSockets, AnotherUsersSocketInTheirPrivateDirectoryDoesNotStopTheStart) {
  // Another user's daemon listens in a 0700 directory of theirs inside the workspace (a shared
  // project, /tmp as a writable root). Nothing of the sandbox can search that directory, and
  // only its owner could change its mode: the socket is out of the command's reach, so its mask
  // is not needed, and a start that insisted on it ("open mask target: Permission denied") let
  // any user stop everyone else's sandboxes.
  caller_.Give(ws_);
  const std::string theirs = ws_ + "/nobody";
  ASSERT_EQ(mkdir(theirs.c_str(), 0700), 0);
  ASSERT_EQ(chown(theirs.c_str(), 65534, 65534), 0);
  const std::string holder_py = R"py(
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.listen(1)
open(sys.argv[2], "w").write("ready")
time.sleep(120)
)py";
  const std::string ready = theirs + "/ready";
  RunOptions as_nobody;
  as_nobody.uid = 65534;
  as_nobody.gid = 65534;
  Spawned holder({kPython, "-c", holder_py, theirs + "/daemon.sock", ready}, as_nobody);
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(ready) == "ready"; })) << "the holder did not start";
  for (const auto& flags : std::vector<std::vector<std::string>>{
           {}, {"--policy", "read-only"}, {"--read-access", "full"}}) {
    auto result = Sandbox(ws_, flags, {"/bin/true"}, Opts());
    EXPECT_EQ(result.status, 0) << (flags.empty() ? "default" : flags.back()) << ": " << result.err;
  }

  // Its neighbour, a socket of the caller's own in the same workspace, stays unreachable.
  HostListener daemon(ws_ + "/own.sock");
  ASSERT_TRUE(daemon.ok());
  chmod((ws_ + "/own.sock").c_str(), 0777);
  caller_.Give(ws_ + "/own.sock");
  auto attack = Connect({}, ws_ + "/own.sock", "attack");
  EXPECT_EQ(attack.out.rfind("ERR", 0), 0u) << attack.out << attack.err;
  EXPECT_FALSE(daemon.Received(20)) << "a connection reached the host daemon";
}

TEST_P(T3SandboxHostSockets, ASocketInADirectoryTheCallerMadeUnsearchableIsUnreachable) {
  // The caller owns a directory and may make it unsearchable (mode 0): the start's search of
  // the view cannot look beneath it, and the command, its owner, can chmod it back. One run may
  // do it to a directory holding a host daemon's socket, the next run find nothing there.
  caller_.Give(ws_);
  // What the command looks at: whether it can open the directory up again, and what is in it.
  const std::string look = R"py(
import errno, os, sys
try:
    os.chmod(sys.argv[1], 0o700)
    print("chmod ok")
except OSError as e:
    print("chmod", errno.errorcode.get(e.errno, e.errno))
print(sorted(os.listdir(sys.argv[1])))
)py";
  // Benign: such a directory with no socket that could be beneath it is shown as it is.
  const std::string mine = ws_ + "/private";
  ASSERT_EQ(mkdir(mine.c_str(), 0700), 0);
  WriteFile(mine + "/notes", "mine", 0644);
  caller_.Give(mine);
  ASSERT_EQ(chmod(mine.c_str(), 0), 0);
  auto benign = SandboxPython(ws_, look, {}, Opts(), {mine});
  EXPECT_EQ(benign.out, "chmod ok\n['notes']\n") << benign.err;
  ASSERT_EQ(chmod(mine.c_str(), 0), 0);

  // Its neighbour fails closed: a socket in a directory the caller owns but made unsearchable
  // (mode 0) is masked all the same, since the command, its owner, could chmod the directory.
  const std::string own = ws_ + "/closed";
  ASSERT_EQ(mkdir(own.c_str(), 0700), 0);
  HostListener daemon(own + "/own.sock");
  ASSERT_TRUE(daemon.ok());
  chmod((own + "/own.sock").c_str(), 0777);
  caller_.Give(own);
  ASSERT_EQ(chmod(own.c_str(), 0), 0);
  // The chmod fails where the directory is covered (a read-only mount): the attack goes on.
  auto attack = SandboxPython(
      ws_,
      std::string("import os, sys\ntry:\n    os.chmod(sys.argv[3], 0o700)\nexcept OSError:\n"
                  "    pass\nsys.argv = sys.argv[:3]\n") +
          kClient,
      {}, Opts(), {own + "/own.sock", "attack", own});
  EXPECT_EQ(attack.out.rfind("ERR", 0), 0u) << attack.out << attack.err;
  EXPECT_FALSE(daemon.Received(20)) << "a connection reached the host daemon";

  // While a socket may be beneath a locked directory of the file system, every one of the
  // caller's there is covered by an empty read-only directory, the benign one too (the search
  // cannot tell them apart). Root searches everything: nothing is locked for it.
  benign = SandboxPython(ws_, look, {}, Opts(), {mine});
  EXPECT_EQ(benign.out, Unprivileged() ? "chmod EROFS\n[]\n" : "chmod ok\n['notes']\n")
      << benign.err;
}

TEST_P(T3SandboxHostSockets, ASocketReachableOnlyThroughAFileBindMountIsUnreachable) {
  // mount --bind /run/x.sock ws/s.sock, then rm /run/x.sock: the mount still leads to the
  // socket, and no name of it is left for a search to find. Also with the name still there,
  // where the mount is covered like any other way to the socket.
  for (bool unlink_source : {true, false}) {
    const std::string source = outside_ + (unlink_source ? "/bm-gone.sock" : "/bm-kept.sock");
    const std::string target = ws_ + (unlink_source ? "/s-gone.sock" : "/s-kept.sock");
    HostListener daemon(source);
    ASSERT_TRUE(daemon.ok());
    chmod(source.c_str(), 0777);
    WriteFile(target, "", 0644);
    ASSERT_EQ(mount(source.c_str(), target.c_str(), nullptr, MS_BIND, nullptr), 0)
        << strerror(errno);
    if (unlink_source) {
      ASSERT_EQ(unlink(source.c_str()), 0);
    }
    caller_.Give(ws_);
    auto control = ::anvil::testing::Run({kPython, "-c", kClient, target, "control"}, Opts());
    EXPECT_EQ(control.out, "CONNECTED\n") << control.err;
    EXPECT_EQ(daemon.Received(2000).value_or("<nothing>"), "control");
    for (const auto& flags : std::vector<std::vector<std::string>>{
             {}, {"--policy", "read-only"}, {"--read-access", "full"}}) {
      const std::string where = target + " (" + (flags.empty() ? "default" : flags.back()) + "): ";
      auto attack = Connect(flags, target, "attack");
      if (unlink_source) {
        // Nothing can be mounted over a deleted entry, nor can the mount be taken away inside:
        // the sandbox does not start, and says which mount and what to do.
        EXPECT_EQ(attack.status, 125) << where << attack.out << attack.err;
        EXPECT_NE(attack.err.find(target), std::string::npos) << where << attack.err;
        EXPECT_NE(attack.err.find("fix:"), std::string::npos) << where << attack.err;
      } else {
        EXPECT_EQ(attack.out.rfind("ERR", 0), 0u) << where << attack.out << attack.err;
      }
      EXPECT_FALSE(daemon.Received(20)) << where << "a connection reached the host daemon";
    }
    umount2(target.c_str(), MNT_DETACH);
  }
}

INSTANTIATE_TEST_SUITE_P(Callers, T3SandboxHostSockets, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t3_sandbox_host_sockets_test
}  // namespace anvil::testing
