// T1 for the command sandbox through descriptors 0-2: a redirected file, device node, named
// FIFO or directory lives outside the view (the view's read-only mounts do not cover it), and a
// command handed the caller's descriptor could fchmod/fchown it or chmod it through
// /proc/self/fd/N and /dev/stdout: a setuid bit or world-writable mode left on a host file after
// the command is gone. The command gets a pipe that anvil relays (or the view's own device node)
// instead (std_streams.h); beside each attack, the redirections that must keep working byte for
// byte (`> file`, `>> file`, `2>&1`, `< file`, /dev/null, pipes) with the command's exit status.
#include <fcntl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "sandbox_harness.h"

namespace anvil::testing {
namespace t1_sandbox_std_streams_test {
namespace {

// Tries every way to change the mode or owner of what descriptors 0-2 name, and writes what
// worked to ws/attempts.txt (not to 0-2: a write would change the target's times itself).
constexpr char kChangeEverything[] = R"py(
import os
done = []
for fd in (0, 1, 2):
    tries = (("fchmod666", lambda: os.fchmod(fd, 0o666)),
             ("fchmod4755", lambda: os.fchmod(fd, 0o4755)),
             ("fchown", lambda: os.fchown(fd, os.getuid(), os.getgid())),
             ("proc-chmod", lambda: os.chmod("/proc/self/fd/%d" % fd, 0o606)),
             ("proc-chown", lambda: os.chown("/proc/self/fd/%d" % fd, os.getuid(), os.getgid())),
             ("dev-chmod", lambda: os.chmod(("/dev/stdin", "/dev/stdout", "/dev/stderr")[fd], 0o660)))
    for name, call in tries:
        try:
            call(); done.append("%s:%d" % (name, fd))
        except OSError:
            pass
with open("attempts.txt", "w") as f:
    f.write(" ".join(done) + "\n")
)py";

struct Snapshot {
  mode_t mode;
  uid_t uid;
  gid_t gid;
  timespec ctime;
};
Snapshot Take(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return {st.st_mode, st.st_uid, st.st_gid, st.st_ctim};
}
void ExpectUnchanged(const std::string& path, const Snapshot& before) {
  Snapshot after = Take(path);
  EXPECT_EQ(after.mode, before.mode)
      << path << ": mode changed from " << std::oct << before.mode << " to " << after.mode;
  EXPECT_EQ(after.uid, before.uid) << path;
  EXPECT_EQ(after.gid, before.gid) << path;
  EXPECT_TRUE(after.ctime.tv_sec == before.ctime.tv_sec &&
              after.ctime.tv_nsec == before.ctime.tv_nsec)
      << path << ": its inode was changed (ctime)";
}

class T1SandboxStdStreams : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
    caller_.Give(ws_.path());
  }
  // A file outside the view (not beneath the workspace), the caller's own, mode 0600.
  std::string OutsideFile(const std::string& name, const std::string& content) {
    std::string path = out_ / name;
    WriteFile(path, content, 0600);
    caller_.Give(path);
    return path;
  }
  std::string Attempts() { return ReadFile(ws_ / "attempts.txt"); }

  TempDir ws_{"anvil-ws-stdio"};
  TempDir out_{"anvil-stdio-outside"};
};

// `< in.txt > out.txt 2>> err.log`, all three outside the view and the caller's own.
TEST_P(T1SandboxStdStreams, ModeAndOwnerChangesNeverReachRedirectedFiles) {
  const std::string in = OutsideFile("in.txt", "input\n"), out = OutsideFile("out.txt", ""),
                    err = OutsideFile("err.log", "earlier\n");
  UniqueFd fd_in(open(in.c_str(), O_RDONLY | O_CLOEXEC));
  UniqueFd fd_out(open(out.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  UniqueFd fd_err(open(err.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
  Snapshot in0 = Take(in), out0 = Take(out), err0 = Take(err);  // after O_TRUNC's own change
  RunOptions o;
  o.stdin_fd = fd_in.Get();
  o.stdout_fd = fd_out.Get();
  o.stderr_fd = fd_err.Get();
  auto r = SandboxPython(ws_.path(), kChangeEverything, {}, Opts(o));
  EXPECT_EQ(r.status, 0);
  ASSERT_TRUE(Exists(ws_ / "attempts.txt")) << "the probe never ran";
  ExpectUnchanged(in, in0);
  ExpectUnchanged(out, out0);
  ExpectUnchanged(err, err0);
  EXPECT_EQ(ReadFile(out), "");
  EXPECT_EQ(ReadFile(err), "earlier\n");
}

// `> out.txt 2>&1` (one open file description on two descriptors) and `>&` the same file twice.
TEST_P(T1SandboxStdStreams, ModeChangesNeverReachAFileSharedByStdoutAndStderr) {
  const std::string out = OutsideFile("both.txt", "");
  Snapshot before = Take(out);
  UniqueFd fd(open(out.c_str(), O_WRONLY | O_CLOEXEC));
  RunOptions o;
  o.stdout_fd = fd.Get();
  o.stderr_fd = fd.Get();
  auto r = SandboxPython(ws_.path(), kChangeEverything, {}, Opts(o));
  EXPECT_EQ(r.status, 0);
  ASSERT_TRUE(Exists(ws_ / "attempts.txt"));
  ExpectUnchanged(out, before);
}

// Not only regular files: a host device node (here a copy of /dev/null's, outside the view), a
// named FIFO and a directory, each the caller's own. The device becomes the view's own
// /dev/null; the FIFO and the directory are relayed.
TEST_P(T1SandboxStdStreams, ModeChangesNeverReachHostDevicesFifosOrDirectories) {
  const std::string dir = out_ / "dir", fifo = out_ / "fifo", node = out_ / "null-copy";
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(mknod(node.c_str(), S_IFCHR | 0600, makedev(1, 3)), 0) << "mknod needs root";
  for (const auto& p : {dir, fifo, node}) caller_.Give(p);
  Snapshot dir0 = Take(dir), fifo0 = Take(fifo), node0 = Take(node);
  UniqueFd fd_dir(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  UniqueFd fd_fifo(open(fifo.c_str(), O_RDWR | O_CLOEXEC));  // reader and writer
  UniqueFd fd_node(open(node.c_str(), O_WRONLY | O_CLOEXEC));
  RunOptions o;
  o.stdin_fd = fd_dir.Get();
  o.stdout_fd = fd_fifo.Get();
  o.stderr_fd = fd_node.Get();
  auto r = SandboxPython(ws_.path(), kChangeEverything, {}, Opts(o));
  EXPECT_EQ(r.status, 0);
  ASSERT_TRUE(Exists(ws_ / "attempts.txt"));
  ExpectUnchanged(dir, dir0);
  ExpectUnchanged(fifo, fifo0);
  ExpectUnchanged(node, node0);
}

// --- the benign neighbours -----------------------------------------------------------------

// `> file` with 3 MiB (more than any pipe holds: the relay runs while the command writes),
// `>> file` onto existing content, `< file` of 2 MiB back out through a pipe: byte for byte.
TEST_P(T1SandboxStdStreams, RedirectionsKeepEveryByteAndAppendStaysAppend) {
  std::string big(3 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 7919) % 251);
  const std::string out = OutsideFile("big.bin", "");
  const std::string log = OutsideFile("log.txt", "first\n");
  const std::string in = OutsideFile("in.bin", big.substr(0, 2 << 20));
  {
    UniqueFd fd_out(open(out.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
    UniqueFd fd_log(open(log.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
    RunOptions o;
    o.stdout_fd = fd_out.Get();
    o.stderr_fd = fd_log.Get();
    auto r = SandboxPython(ws_.path(), R"py(
import sys
data = bytes((i * 7919) % 251 for i in range(3 << 20))
for i in range(0, len(data), 100000):
    sys.stdout.buffer.write(data[i:i + 100000]); sys.stdout.flush()
sys.stderr.write("second\n")
sys.exit(3)
)py",
                           {}, Opts(o));
    EXPECT_EQ(r.status, 3) << "the command's own exit status";
  }
  EXPECT_TRUE(ReadFile(out) == big) << "stdout file differs: " << ReadFile(out).size() << " bytes";
  EXPECT_EQ(ReadFile(log), "first\nsecond\n");
  {
    UniqueFd fd_in(open(in.c_str(), O_RDONLY | O_CLOEXEC));
    RunOptions o;
    o.stdin_fd = fd_in.Get();
    auto r = Sandbox(ws_.path(), {}, {"/bin/cat"}, Opts(o));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.out == big.substr(0, 2 << 20)) << "stdin from a file differs: " << r.out.size();
  }
}

// Input from a regular file is relayed ahead of the command, but the caller's offset in it ends
// where the command's reads left it: `while read f; do anvil sandbox -- CMD; done < list` runs
// CMD once per line (it ran once: the first run swallowed the list), and a command that reads
// one line leaves the rest to the caller's next reader.
TEST_P(T1SandboxStdStreams, AFileOnStdinIsLeftWhereTheCommandStoppedReading) {
  std::string list;
  for (int i = 0; i < 20000; ++i) list += "line" + std::to_string(i) + "\n";
  const std::string in = OutsideFile("list.txt", list);
  for (const auto& [script, offset] : std::vector<std::pair<std::string, size_t>>{
           {"true", 0}, {"read x; echo \"$x\"", 6}, {"cat >/dev/null", list.size()}}) {
    SCOPED_TRACE(script);
    UniqueFd fd_in(open(in.c_str(), O_RDONLY | O_CLOEXEC));
    RunOptions o;
    o.stdin_fd = fd_in.Get();
    auto r = SandboxSh(ws_.path(), script, {}, Opts(o));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(static_cast<size_t>(lseek(fd_in.Get(), 0, SEEK_CUR)), offset);
  }
  // Never back past where the run started: a command that writes into its own stdin pipe
  // (through /proc/self/fd/0) must not make the caller's shell read again what it read before
  // the run (a `while read` loop replaying its earlier lines, `bash < script` re-running them).
  {
    UniqueFd fd_in(open(in.c_str(), O_RDONLY | O_CLOEXEC));
    const off_t start = static_cast<off_t>(list.size() / 2);
    ASSERT_EQ(lseek(fd_in.Get(), start, SEEK_SET), start);
    RunOptions o;
    o.stdin_fd = fd_in.Get();
    SandboxSh(ws_.path(),
              "cat >/dev/null; dd if=/dev/zero of=/proc/self/fd/0 bs=1000 count=60 2>/dev/null; "
              "true",
              {}, Opts(o));
    EXPECT_GE(lseek(fd_in.Get(), 0, SEEK_CUR), start);
  }
  // The loop itself, as a shell runs it.
  const std::string loop = "n=0; while read l; do " + ShellQuote(AnvilBin()) +
                           " sandbox --quiet -- true </dev/null >/dev/null; " +
                           ShellQuote(AnvilBin()) +
                           " sandbox --quiet -- true; n=$((n+1)); [ $n -ge 3 ] && break; done < " +
                           ShellQuote(in) + "; echo runs=$n";
  RunOptions o;
  o.cwd = ws_.path();
  auto r = ::anvil::testing::Run({"/bin/sh", "-c", loop}, Opts(o));
  EXPECT_NE(r.out.find("runs=3"), std::string::npos) << r.out << r.err;
}

// `> file 2>&1`: one relay for the one open file description, so the lines stay in the order
// the command wrote them.
TEST_P(T1SandboxStdStreams, StdoutAndStderrIntoOneFileKeepTheirOrder) {
  const std::string out = OutsideFile("merged.txt", "");
  UniqueFd fd(open(out.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  RunOptions o;
  o.stdout_fd = fd.Get();
  o.stderr_fd = fd.Get();
  auto r = SandboxSh(ws_.path(),
                     "i=0; while [ $i -lt 200 ]; do echo out$i; echo err$i >&2; i=$((i+1)); done",
                     {}, Opts(o));
  EXPECT_EQ(r.status, 0);
  std::string expected;
  for (int i = 0; i < 200; ++i) {
    expected += "out" + std::to_string(i) + "\nerr" + std::to_string(i) + "\n";
  }
  EXPECT_EQ(ReadFile(out), expected);
}

// Nothing written before the end is lost: not when --timeout kills the command, not when it is
// SIGKILLed, not from a background process still writing when the command exits.
TEST_P(T1SandboxStdStreams, OutputWrittenBeforeTheEndIsAllThere) {
  struct Case {
    std::string script;
    std::vector<std::string> flags;
    int status;
    std::string expected;
  };
  const Case cases[] = {
      {"head -c 200000 /dev/zero | tr '\\0' a; echo; sleep 100",
       {"--timeout", "2"},
       124,
       std::string(200000, 'a') + "\n"},
      {"echo before-kill; kill -9 $$", {}, 137, "before-kill\n"},
      {"(sleep 0.2; echo from-background) & echo from-command; wait",
       {},
       0,
       "from-command\nfrom-background\n"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.script);
    const std::string out = OutsideFile("end.txt", "");
    UniqueFd fd(open(out.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
    RunOptions o;
    o.stdout_fd = fd.Get();
    auto r = SandboxSh(ws_.path(), c.script, c.flags, Opts(o));
    EXPECT_EQ(r.status, c.status) << r.err;
    EXPECT_TRUE(ReadFile(out) == c.expected) << ReadFile(out).size() << " bytes";
  }
}

// --limit fsize bounds a redirected stdout file too, as it bounded the command's own writes to
// it before the relay: the file stops at the limit and the command's next write fails.
TEST_P(T1SandboxStdStreams, FileSizeLimitAlsoBoundsARedirectedStdoutFile) {
  for (auto [size, ok] : {std::pair{std::string("512K"), true}, {std::string("8M"), false}}) {
    SCOPED_TRACE(size);
    const std::string out = OutsideFile("sized.bin", "");
    UniqueFd fd(open(out.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
    RunOptions o;
    o.stdout_fd = fd.Get();
    auto r =
        SandboxSh(ws_.path(), "head -c " + size + " /dev/zero", {"--limit", "fsize=1M"}, Opts(o));
    struct stat st {};
    ASSERT_EQ(stat(out.c_str(), &st), 0);
    if (ok) {
      EXPECT_EQ(r.status, 0) << r.err;
      EXPECT_EQ(st.st_size, 512 * 1024);
    } else {
      EXPECT_NE(r.status, 0);
      EXPECT_EQ(st.st_size, 1 << 20);
    }
  }
}

// `< /dev/null > /dev/null`: the view's own /dev/null (no relay): reads end at once, writes
// vanish, the status is the command's.
TEST_P(T1SandboxStdStreams, DevNullStaysDevNull) {
  UniqueFd in(open("/dev/null", O_RDONLY | O_CLOEXEC));
  UniqueFd out(open("/dev/null", O_WRONLY | O_CLOEXEC));
  RunOptions o;
  o.stdin_fd = in.Get();
  o.stdout_fd = out.Get();
  auto r = SandboxSh(ws_.path(),
                     "n=$(wc -c); echo discarded; echo read=$n >&2; "
                     "readlink /proc/self/fd/0 >&2; exit 4",
                     {}, Opts(o));
  EXPECT_EQ(r.status, 4);
  EXPECT_EQ(r.err, "read=0\n/dev/null\n");
}

// Pipes and sockets pass as they are (`cmd | less`, socket activation): the same pipe, bytes in
// order. Their inodes are the pipe's and socket's own (no path names them), so a mode the
// command sets on one is no way in for anyone: a process of another user still cannot open it
// through /proc/PID/fd (that needs ptrace rights over a holder), whatever its mode says.
TEST_P(T1SandboxStdStreams, PipesAndSocketsPassAndTheirModeGrantsNothing) {
  int p[2], s[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s), 0);
  UniqueFd pr(p[0]), pw(p[1]), s0(s[0]), s1(s[1]);
  struct stat pipe_st {};
  ASSERT_EQ(fstat(pw.Get(), &pipe_st), 0);
  RunOptions o;
  o.stdout_fd = pw.Get();
  o.stdin_fd = s1.Get();
  auto r = SandboxPython(ws_.path(), R"py(
import os
print(os.readlink("/proc/self/fd/1"), flush=True)
for fd in (0, 1):
    try:
        os.fchmod(fd, 0o666)  # the caller's own pipe and socket: the test made them as root
    except PermissionError:
        pass
print("modes tried", flush=True)
)py",
                         {}, Opts(o));
  pw.Reset();
  s1.Reset();
  std::string piped;
  char buf[4096];
  ssize_t n;
  while ((n = read(pr.Get(), buf, sizeof(buf))) > 0) piped.append(buf, static_cast<size_t>(n));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(piped, "pipe:[" + std::to_string(pipe_st.st_ino) + "]\nmodes tried\n")
      << "stdout was not the caller's own pipe";
  // Whatever mode the pipe and socket now have: another user cannot reach them.
  auto other = UnprivilegedUser();
  if (!other) GTEST_SKIP() << "SKIPPED: no unprivileged user to try the pipe's mode with";
  for (int fd : {pr.Get(), s0.Get()}) {
    const std::string path = "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(fd);
    pid_t child = fork();
    if (child == 0) {
      if (setgroups(0, nullptr) != 0 || setgid(other->gid) != 0 || setuid(other->uid) != 0) {
        _exit(2);
      }
      _exit(open(path.c_str(), O_RDWR) < 0 ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "another user opened " << path << " after the command's chmod";
  }
}

INSTANTIATE_TEST_SUITE_P(Callers, T1SandboxStdStreams, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t1_sandbox_std_streams_test
}  // namespace anvil::testing
