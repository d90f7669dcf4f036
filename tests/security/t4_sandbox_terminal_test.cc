// T4 for the command sandbox through the user's terminal: a command handed the caller's
// terminal could make it world-readable (fchmod(0, 0666): the keystrokes of every later
// program, sudo passwords included, readable by any user), chown it, chmod it through
// /proc/self/fd/N or /dev/stdin, or leave it in a mode it set (`stty -echo`, raw) after it
// exits, however it exits. The command gets the sandbox's own pseudo-terminal instead, which
// anvil relays (terminal_relay.h); next to each attack, the interactive work that must keep
// working: typed input, ^D, a shell with job control, window size, pipelines, ^Z of anvil.
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "sandbox_harness.h"
#include "terminal_harness.h"

namespace anvil::testing {
namespace t4_sandbox_terminal_test {
namespace {

class T4SandboxTerminal : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    if (!term_.ok()) GTEST_SKIP() << "SKIPPED: no pseudo-terminal could be opened here";
    caller_.Give(ws_.path());
    term_.GiveTo(caller_.uid(), caller_.gid());
    before_ = term_.Settings();
  }

  UserTerminal::Start SandboxStart(const std::vector<std::string>& flags,
                                   const std::vector<std::string>& command) const {
    UserTerminal::Start s;
    s.argv = {AnvilBin(), "sandbox", "--cwd", ws_.path()};
    s.argv.insert(s.argv.end(), flags.begin(), flags.end());
    s.argv.push_back("--");
    s.argv.insert(s.argv.end(), command.begin(), command.end());
    s.cwd = ws_.path();
    if (Unprivileged()) {
      s.uid = caller_.uid();
      s.gid = caller_.gid();
    }
    return s;
  }
  void ExpectSettingsAsBefore(const std::string& what) {
    termios after = term_.Settings();
    EXPECT_TRUE(SameSettings(before_, after))
        << what << ": the user's terminal was left changed\n  before: " << Describe(before_)
        << "\n  after:  " << Describe(after) << "\nscreen:\n"
        << term_.screen();
  }

  TempDir ws_{"anvil-ws-terminal"};
  UserTerminal term_;
  termios before_{};
};

// fchmod/fchown through descriptors 0-2, chmod through /proc/self/fd/N and /dev/stdin: every
// one lands on the sandbox's own pseudo-terminal, never on the user's terminal.
TEST_P(T4SandboxTerminal, ModeAndOwnerChangesNeverReachTheUsersTerminal) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  struct stat st_before = term_.Stat();
  ASSERT_EQ(st_before.st_uid, caller_.uid()) << "the test's terminal must be the caller's own";
  term_.Run(SandboxStart({}, {kPython, "-c", R"py(
import os
done = []
for fd in (0, 1, 2):
    for name, call in (("fchmod666", lambda: os.fchmod(fd, 0o666)),
                       ("fchmod4777", lambda: os.fchmod(fd, 0o4777)),
                       ("fchown", lambda: os.fchown(fd, os.getuid(), os.getgid())),
                       ("proc", lambda: os.chmod("/proc/self/fd/%d" % fd, 0o666)),
                       ("dev", lambda: os.chmod(("/dev/stdin", "/dev/stdout", "/dev/stderr")[fd], 0o606))):
        try:
            call(); done.append(name + str(fd))
        except OSError as e:
            pass
print("attempted", len(done), "changed", flush=True)
)py"}));
  EXPECT_TRUE(term_.Expect("changed")) << term_.screen();
  EXPECT_EQ(term_.Wait(), 0) << term_.screen();
  struct stat st_after = term_.Stat();
  EXPECT_EQ(st_after.st_mode, st_before.st_mode) << "the user's terminal's mode was changed";
  EXPECT_EQ(st_after.st_uid, st_before.st_uid);
  EXPECT_EQ(st_after.st_gid, st_before.st_gid);
  EXPECT_EQ(st_after.st_ctim.tv_sec, st_before.st_ctim.tv_sec);
  EXPECT_EQ(st_after.st_ctim.tv_nsec, st_before.st_ctim.tv_nsec)
      << "the user's terminal's inode was changed (ctime)";
  ExpectSettingsAsBefore("after the mode changes");
}

// A line discipline other than the terminal's (n_hdlc, n_gsm: rarely exercised kernel code,
// loaded on demand where dev.tty.ldisc_autoload=1) cannot be set on any terminal the command
// holds: not its standard descriptors, not a pseudo-terminal it makes itself.
TEST_P(T4SandboxTerminal, LineDisciplinesCannotBeChanged) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  term_.Run(SandboxStart({}, {kPython, "-c", R"py(
import errno, fcntl, os, struct
def setd(fd):
    try:
        fcntl.ioctl(fd, 0x5423, struct.pack("i", 0))  # TIOCSETD, N_TTY
        return "changed"
    except OSError as e:
        return errno.errorcode[e.errno]
m, s = os.openpty()
print("stdin=%s own=%s" % (setd(0), setd(s)), flush=True)
)py"}));
  EXPECT_TRUE(term_.Expect("stdin=EPERM own=EPERM")) << term_.screen();
  EXPECT_EQ(term_.Wait(), 0) << term_.screen();
}

// The terminal is raw while anvil relays (checked mid-run), and comes back exactly as it was
// (tcgetattr before == after) however the run ends: the command's own exit, a non-zero one,
// after `stty -echo`/`stty raw` inside, the command SIGKILLed, --timeout, a layer failing to
// set up, an exec failure, and anvil itself getting SIGTERM, SIGINT or SIGHUP.
TEST_P(T4SandboxTerminal, SettingsComeBackExactlyHoweverTheRunEnds) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  // "waiting" only once the process the forwarded signal must end is the one waiting (a shell
  // that gets it between its echo and its next command may swallow it: dash does).
  const std::string kWaitForSignal =
      "stty -echo; exec " + std::string(kPython) +
      " -c 'import signal, time; signal.signal(signal.SIGINT, signal.SIG_DFL); "
      "print(\"waiting\", flush=True); time.sleep(100)'";
  struct Case {
    std::string name;
    std::vector<std::string> flags;
    std::string script;  // after "ready" it waits for a line
    int signal_anvil;    // sent to anvil once the script says "waiting"
    int status;
    bool runs = true;  // prints "ready" (false: the sandbox never runs it)
  };
  const Case cases[] = {
      {"exit 0", {}, "exit 0", 0, 0},
      {"exit 3 after stty -echo -icanon", {}, "stty -echo -icanon; exit 3", 0, 3},
      {"SIGKILL of the command after stty raw -echo", {}, "stty raw -echo; kill -9 $$", 0, 137},
      {"--timeout after stty -echo",
       {"--timeout", "5"},
       "stty -echo; echo waiting; sleep 100",
       0,
       124},
      {"SIGTERM to anvil", {}, kWaitForSignal, SIGTERM, 128 + SIGTERM},
      {"SIGINT to anvil", {}, kWaitForSignal, SIGINT, 128 + SIGINT},
      {"SIGHUP to anvil", {}, kWaitForSignal, SIGHUP, 128 + SIGHUP},
      {"a layer fails to set up", {"--unsafe-test-fail-layer", "seccomp"}, "exit 0", 0, 125, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    UserTerminal term;
    ASSERT_TRUE(term.ok());
    term.GiveTo(caller_.uid(), caller_.gid());
    const termios before = term.Settings();
    auto start = SandboxStart(c.flags, {"/bin/sh", "-c", "echo ready; read line; " + c.script});
    start.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "TERM=xterm", "ANVIL_ALLOW_TEST_FAULTS=1"};
    term.Run(start);
    if (c.runs) {
      ASSERT_TRUE(term.Expect("ready")) << term.screen();
      // Raw from when the command reads its terminal.
      EXPECT_TRUE(WaitUntil([&] {
        return (term.Settings().c_lflag & (ICANON | ECHO | ISIG)) == 0;
      })) << "the user's terminal is not raw while anvil relays: "
          << Describe(term.Settings());
      term.Send("go\n");
      if (c.signal_anvil != 0 || c.script.find("waiting") != std::string::npos) {
        ASSERT_TRUE(term.Expect("waiting")) << term.screen();
      }
      if (c.signal_anvil != 0) kill(term.pid(), c.signal_anvil);
    }
    EXPECT_EQ(term.Wait(), c.status) << term.screen();
    termios after = term.Settings();
    EXPECT_TRUE(SameSettings(before, after))
        << "the user's terminal was left changed\n  before: " << Describe(before)
        << "\n  after:  " << Describe(after) << "\nscreen:\n"
        << term.screen();
  }
}

// The benign neighbour: `anvil sandbox -- cat` on a terminal. Typed input reaches it (echoed by
// the pseudo-terminal, then printed by cat), ^D ends it, and its status is its own.
TEST_P(T4SandboxTerminal, TypedInputReachesCatAndCtrlDEndsIt) {
  term_.Run(SandboxStart({}, {"/bin/cat"}));
  term_.Send("hello typed\n");
  EXPECT_TRUE(term_.Expect("hello typed\r\nhello typed\r\n")) << term_.screen();
  term_.Send("\x04");
  EXPECT_EQ(term_.Wait(), 0) << term_.screen();
  ExpectSettingsAsBefore("after cat");
}

// The user's terminal goes away (its window is closed): the command gets SIGHUP, as it would
// have on the terminal itself, and anvil ends -- also when the terminal is only anvil's stdin,
// not its controlling terminal (no SIGHUP for anvil itself), and when the command never read it.
TEST_P(T4SandboxTerminal, AHungUpTerminalHangsUpTheCommand) {
  for (auto [controlling, then] :
       {std::pair{true, "exec cat"}, {false, "exec cat"}, {false, "exec sleep 100"}}) {
    SCOPED_TRACE(std::string(controlling ? "controlling terminal, " : "stdin only, ") + then);
    UserTerminal term;
    ASSERT_TRUE(term.ok());
    term.GiveTo(caller_.uid(), caller_.gid());
    auto start = SandboxStart({}, {"/bin/sh", "-c", std::string("echo ready; ") + then});
    start.controlling = controlling;
    term.Run(start);
    ASSERT_TRUE(term.Expect("ready")) << term.screen();
    term.HangUp();
    EXPECT_EQ(term.Wait(), 128 + SIGHUP) << term.screen();
  }
}

// An interactive shell inside has job control: its own terminal (`tty` names it), background
// jobs, `jobs`, `kill %1`, ^Z stops the foreground job and `bg`/`fg` move it, ^C reaches the
// foreground job (and not the shell), `exit N` is anvil's status.
TEST_P(T4SandboxTerminal, InteractiveShellHasJobControl) {
  if (!Exists("/bin/bash")) GTEST_SKIP() << "SKIPPED: /bin/bash is missing";
  auto start = SandboxStart({}, {"/bin/bash", "--norc", "--noprofile", "-i"});
  start.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "TERM=dumb", "HOME=/nonexistent",
               "PS1=PROMPT> "};
  term_.Run(start);
  ASSERT_TRUE(term_.Expect("PROMPT> ")) << term_.screen();
  term_.Send("tty; set -m; echo monitor=$-\n");
  EXPECT_TRUE(term_.Expect("/dev/pts/")) << term_.screen();
  EXPECT_TRUE(term_.Expect("monitor=")) << term_.screen();
  ASSERT_TRUE(term_.Expect("PROMPT> ")) << term_.screen();
  EXPECT_EQ(term_.screen().find("no job control"), std::string::npos)
      << "bash found no job control: " << term_.screen();
  term_.Send("sleep 100 &\n");
  ASSERT_TRUE(term_.Expect("PROMPT> "));
  term_.Send("jobs\n");
  EXPECT_TRUE(term_.Expect("Running")) << term_.screen();
  EXPECT_TRUE(term_.Expect("sleep 100 &")) << term_.screen();
  ASSERT_TRUE(term_.Expect("PROMPT> "));
  // kill %1 needs the job table; bash's own "Terminated" notice may come before or after the
  // next prompt (or be consumed by wait), so the test asks kill for its status instead.
  term_.Send("kill %1 && echo killed-by-jobspec; wait; jobs; echo listed\n");
  EXPECT_TRUE(term_.Expect("killed-by-jobspec")) << term_.screen();
  EXPECT_TRUE(term_.Expect("listed")) << term_.screen();
  ASSERT_TRUE(term_.Expect("PROMPT> "));
  term_.Send("jobs; echo none-left\n");
  EXPECT_TRUE(term_.Expect("none-left")) << term_.screen();
  ASSERT_TRUE(term_.Expect("PROMPT> "));

  // ^Z: the foreground job stops, the shell takes the terminal back.
  term_.Send("sleep 200; echo after-sleep\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  term_.Send("\x1a");
  EXPECT_TRUE(term_.Expect("Stopped")) << term_.screen();
  ASSERT_TRUE(term_.Expect("PROMPT> ")) << term_.screen();
  term_.Send("jobs\n");
  EXPECT_TRUE(term_.Expect("Stopped")) << term_.screen();
  ASSERT_TRUE(term_.Expect("PROMPT> "));
  term_.Send("bg\n");
  ASSERT_TRUE(term_.Expect("PROMPT> ")) << term_.screen();
  term_.Send("jobs\n");
  EXPECT_TRUE(term_.Expect("Running")) << term_.screen();
  ASSERT_TRUE(term_.Expect("PROMPT> "));
  // ^C: reaches the job brought back to the foreground, not the shell.
  term_.Send("fg\n");
  EXPECT_TRUE(term_.Expect("sleep 200")) << term_.screen();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  term_.Send("\x03");
  ASSERT_TRUE(term_.Expect("PROMPT> ")) << term_.screen();
  term_.Send("echo still-here; exit 3\n");
  EXPECT_TRUE(term_.Expect("still-here")) << term_.screen();
  EXPECT_EQ(term_.Wait(), 3) << term_.screen();
  ExpectSettingsAsBefore("after the interactive shell");
}

// A command that writes without pause (`yes`) cannot starve the relay's way in: ^C still
// reaches it, and --timeout still ends it.
TEST_P(T4SandboxTerminal, CtrlCAndTimeoutStillWorkWhileTheCommandFloodsTheTerminal) {
  term_.Run(SandboxStart({}, {"/usr/bin/yes"}));
  ASSERT_TRUE(term_.Expect("y\r\ny\r\ny\r\n")) << term_.screen().substr(0, 200);
  term_.Send("\x03");
  EXPECT_EQ(term_.Wait(), 128 + SIGINT);
  ExpectSettingsAsBefore("after ^C of yes");

  UserTerminal term;
  ASSERT_TRUE(term.ok());
  term.GiveTo(caller_.uid(), caller_.gid());
  term.Run(SandboxStart({"--timeout", "2"}, {"/usr/bin/yes"}));
  EXPECT_EQ(term.Wait(), 124);
}

// The pseudo-terminal has the user's window size at start and follows every change (SIGWINCH).
TEST_P(T4SandboxTerminal, WindowSizeFollowsTheUsersTerminal) {
  term_.SetSize(40, 100);
  term_.Run(SandboxStart({}, {"/bin/sh", "-c",
                              "trap 'echo size=$(stty size)' WINCH; echo size=$(stty size); "
                              "echo ready; read line; echo done"}));
  EXPECT_TRUE(term_.Expect("size=40 100")) << term_.screen();
  ASSERT_TRUE(term_.Expect("ready")) << term_.screen();
  term_.SetSize(50, 120);  // the kernel sends anvil (the foreground) SIGWINCH
  EXPECT_TRUE(term_.Expect("size=50 120")) << term_.screen();
  term_.Send("\n");
  EXPECT_TRUE(term_.Expect("done")) << term_.screen();
  EXPECT_EQ(term_.Wait(), 0) << term_.screen();
}

// `anvil sandbox -- cmd | less`: stdout is the pipe (passed as it is, byte for byte), stdin and
// stderr the terminal (the pseudo-terminal). A command that never reads its terminal leaves it
// alone: not raw, and what the user types there (keys for the pager) is not taken by anvil.
TEST_P(T4SandboxTerminal, PipelineStdoutStaysThePipeAndThePagersKeysStayThePagers) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  auto start = SandboxStart({}, {"/bin/sh", "-c",
                                 "printf 'line1\\nline2\\n'; echo to-terminal >&2; "
                                 "[ -t 0 ] && echo stdin-is-a-terminal >&2; "
                                 "[ -t 1 ] || echo stdout-is-no-terminal >&2; "
                                 "sleep 1; echo finished >&2"});
  start.fd_override[1] = p[1];
  term_.Run(start);
  close(p[1]);
  EXPECT_TRUE(term_.Expect("stdout-is-no-terminal")) << term_.screen();
  term_.Send("q\n");  // what a pager reading /dev/tty waits for
  EXPECT_TRUE(term_.Expect("finished")) << term_.screen();
  std::string piped;
  char buf[4096];
  ssize_t n;
  while ((n = read(p[0], buf, sizeof(buf))) > 0) piped.append(buf, static_cast<size_t>(n));
  close(p[0]);
  EXPECT_EQ(term_.Wait(), 0) << term_.screen();
  EXPECT_EQ(piped, "line1\nline2\n");
  EXPECT_NE(term_.screen().find("to-terminal"), std::string::npos) << term_.screen();
  EXPECT_NE(term_.screen().find("stdin-is-a-terminal"), std::string::npos) << term_.screen();
  // The keys are still in the user's terminal, for whoever reads it next.
  int flags = fcntl(term_.slave(), F_GETFL);
  fcntl(term_.slave(), F_SETFL, flags | O_NONBLOCK);
  n = read(term_.slave(), buf, sizeof(buf));
  fcntl(term_.slave(), F_SETFL, flags);
  EXPECT_EQ(n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string(), "q\n")
      << "anvil took keys meant for another reader of the terminal";
  ExpectSettingsAsBefore("after the pipeline");
}

// `anvil sandbox -- cat > notes.txt`: stdout is a file, stdin the terminal. The command reads
// its terminal, which hands it the terminal: from then on the user's keys reach it (raw), ^D
// ends it, and the file has exactly what was typed.
TEST_P(T4SandboxTerminal, TypedInputReachesACommandWhoseStdoutIsAFile) {
  TempDir out_dir{"anvil-terminal-out"};
  const std::string notes = out_dir / "notes.txt";
  WriteFile(notes, "");
  caller_.Give(out_dir.path());
  int fd = open(notes.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto start = SandboxStart({}, {"/bin/cat"});
  start.fd_override[1] = fd;
  term_.Run(start);
  close(fd);
  ASSERT_TRUE(WaitUntil([&] { return (term_.Settings().c_lflag & ICANON) == 0; }))
      << "cat read its terminal, yet anvil did not take the user's";
  term_.Send("first line\nsecond\n");
  EXPECT_TRUE(term_.Expect("second\r\n")) << "the pseudo-terminal's echo: " << term_.screen();
  term_.Send("\x04");
  EXPECT_EQ(term_.Wait(), 0) << term_.screen();
  EXPECT_EQ(ReadFile(notes), "first line\nsecond\n");
  ExpectSettingsAsBefore("after cat > file");
}

// A command that stops (^Z to a program that is not a job-control shell) stops anvil too, so the
// user's shell gets its terminal back -- restored, not raw -- and `fg` continues both, raw again.
// Here a small job-control shell (python) plays the user's: it runs anvil as a foreground job,
// and reports what it finds when the job stops and when it ends. The same for anvil stopped
// with SIGTSTP from outside.
TEST_P(T4SandboxTerminal, StoppedAnvilGivesTheTerminalBackAndFgResumesIt) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  const std::string shell = R"py(
import os, signal, sys, termios
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
before = termios.tcgetattr(0)
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    os.execv(sys.argv[1], sys.argv[1:])
try:
    os.setpgid(pid, pid)
except PermissionError:
    pass  # the child already ran execv, after its own setpgid: the group is set
os.tcsetpgrp(0, pid)
for round in range(3):
    _, status = os.waitpid(pid, os.WUNTRACED)
    os.tcsetpgrp(0, os.getpgrp())
    same = termios.tcgetattr(0) == before
    if os.WIFSTOPPED(status):
        print("JOB-STOPPED same=%s" % same, flush=True)
        sys.stdin.readline()
        os.tcsetpgrp(0, pid)
        os.kill(-pid, signal.SIGCONT)
        continue
    print("JOB-ENDED status=%d same=%s" % (os.waitstatus_to_exitcode(status), same), flush=True)
    break
)py";
  for (bool from_outside : {false, true}) {
    SCOPED_TRACE(from_outside ? "anvil stopped by SIGTSTP" : "the command stopped by ^Z");
    UserTerminal term;
    ASSERT_TRUE(term.ok());
    term.GiveTo(caller_.uid(), caller_.gid());
    auto anvil =
        SandboxStart({}, {"/bin/sh", "-c", "echo ready; read a; echo got-$a; read b; echo got-$b"});
    UserTerminal::Start start = anvil;
    start.argv = {kPython, "-c", shell};
    start.argv.insert(start.argv.end(), anvil.argv.begin(), anvil.argv.end());
    term.Run(start);
    ASSERT_TRUE(term.Expect("ready")) << term.screen();
    if (from_outside) {
      // anvil is the python shell's only child.
      std::ifstream children("/proc/" + std::to_string(term.pid()) + "/task/" +
                             std::to_string(term.pid()) + "/children");
      pid_t child = 0;
      ASSERT_TRUE(children >> child);
      kill(child, SIGTSTP);
    } else {
      term.Send("\x1a");
    }
    ASSERT_TRUE(term.Expect("JOB-STOPPED")) << term.screen();
    EXPECT_TRUE(term.Expect("same=True"))
        << "stopped anvil left the terminal changed: " << term.screen();
    term.Send("\n");  // the shell's `fg`
    // Raw again once continued in the foreground: the next line reaches the command.
    ASSERT_TRUE(WaitUntil([&] { return (term.Settings().c_lflag & ICANON) == 0; }))
        << "raw mode did not come back after fg";
    term.Send("one\n");
    EXPECT_TRUE(term.Expect("got-one")) << term.screen();
    term.Send("two\n");
    EXPECT_TRUE(term.Expect("got-two")) << term.screen();
    EXPECT_TRUE(term.Expect("JOB-ENDED status=0 same=True")) << term.screen();
    EXPECT_EQ(term.Wait(), 0) << term.screen();
  }
}

// Started in the background from an interactive shell (`anvil sandbox -- cmd &`): anvil runs
// without touching the terminal (the shell's line editor has it), the command's output still
// shows, and `fg` hands it the terminal: typed input reaches the command, ^D ends it, the shell's
// prompt comes back. (The markers are computed by the shells so that echoed input never matches.)
TEST_P(T4SandboxTerminal, StartedInTheBackgroundItTakesTheTerminalOnFg) {
  if (!Exists("/bin/bash")) GTEST_SKIP() << "SKIPPED: /bin/bash is missing";
  UserTerminal::Start start = SandboxStart({}, {});
  start.argv = {"/bin/bash", "--norc", "--noprofile", "-i"};
  start.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "TERM=dumb", "HOME=/nonexistent", "PS1=OUT> "};
  term_.Run(start);
  ASSERT_TRUE(term_.Expect("OUT> ")) << term_.screen();
  term_.Send(AnvilBin() + " sandbox --cwd " + ws_.path() +
             " -- sh -c 'sleep 1; echo bg-$((40+2)); cat; echo cat-$((1+1))' &\n");
  ASSERT_TRUE(term_.Expect("OUT> ")) << term_.screen();
  EXPECT_TRUE(term_.Expect("bg-42")) << "no output from the background: " << term_.screen();
  term_.Send("\n");
  ASSERT_TRUE(term_.Expect("OUT> ")) << term_.screen();
  term_.Send("fg\n");
  ASSERT_TRUE(term_.Expect("cat-$((1+1))'\r\n")) << "bash did not run fg: " << term_.screen();
  ASSERT_TRUE(WaitUntil([&] { return (term_.Settings().c_lflag & ICANON) == 0; }))
      << "anvil did not take the terminal after fg: " << term_.screen();
  term_.Send("typed\n");
  EXPECT_TRUE(term_.Expect("typed\r\ntyped\r\n"))
      << "echo (the pseudo-terminal's) and cat's copy: " << term_.screen();
  term_.Send("\x04");
  EXPECT_TRUE(term_.Expect("cat-2")) << term_.screen();
  ASSERT_TRUE(term_.Expect("OUT> ")) << term_.screen();
  term_.Send("echo status=$((0+$?)); exit\n");
  EXPECT_TRUE(term_.Expect("status=0")) << term_.screen();
  EXPECT_EQ(term_.Wait(), 0) << term_.screen();
}

// Programs inside get their own pseudo-terminals (script, expect, tmux, python's pty) from the
// sandbox's private devpts, which holds nothing of the host's: the user's terminal has no path
// inside. With no terminal around at all (as in CI) too.
TEST_P(T4SandboxTerminal, ProgramsInsideMakeTheirOwnPseudoTerminalsButSeeNoneOfTheHosts) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  const std::string host_index = term_.path().substr(term_.path().rfind('/') + 1);
  auto r = SandboxPython(ws_.path(), R"py(
import os, sys
m, s = os.openpty()
print(os.ttyname(s))
print(sorted(os.listdir("/dev/pts")))
if sys.argv[1] == "0":
    print("host terminal: same index as the sandbox's own, not tried")
else:
    try:
        os.open("/dev/pts/" + sys.argv[1], os.O_RDWR)
        print("host terminal opened")
    except OSError as e:
        print("host terminal:", e.strerror)
)py",
                         {}, Opts(), {host_index});
  EXPECT_EQ(r.status, 0) << r.err;
  auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out << r.err;
  EXPECT_EQ(lines[0], "/dev/pts/0");
  EXPECT_EQ(lines[1], "['0', 'ptmx']");
  EXPECT_NE(lines[2], "host terminal opened");
  if (Exists("/usr/bin/script")) {
    auto s = Sandbox(ws_.path(), {}, {"/usr/bin/script", "-qec", "tty", "/dev/null"}, Opts());
    EXPECT_EQ(s.status, 0) << s.err;
    EXPECT_NE(s.out.find("/dev/pts/0"), std::string::npos) << s.out << s.err;
  }
}

INSTANTIATE_TEST_SUITE_P(Callers, T4SandboxTerminal, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t4_sandbox_terminal_test
}  // namespace anvil::testing
