// The supervisor's StdStreamRelay (terminal_relay.h): the pipe relays, the pseudo-terminal's
// relay, and the user's terminal mode and signals while it runs. One class: its state is shared
// by all three. The caller's descriptors are probed, and the steps inside the sandbox are taken,
// in std_stream_setup.cc.
#include "linux/terminal_relay.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/fd_io.h"
#include "common/syscalls.h"
#include "ipc/fd_passing.h"

namespace anvil {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kChunk = 64 * 1024;
// The most one step moves before the supervisor's loop runs again: a command that writes without
// pause must not starve its timeout, the signals, or the user's ^C on the way in.
constexpr int kChunksPerStep = 16;
// How long the drain at the end waits for output while nothing arrives. Every writer is gone
// when the sandbox has ended (its pid namespace is torn down first), so EOF comes at once; this
// only bounds a descriptor kept alive some other way (in flight in a Unix socket's queue).
constexpr int kDrainIdleMs = 2000;
// How often a terminal in the background is checked for having been brought to the foreground
// (`fg` of a running job sends no signal).
constexpr int kForegroundCheckMs = 200;

bool IsPtyMaster(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 5 &&
         minor(st.st_rdev) == 2;
}

// Whether this process may use the terminal on `fd` now: it is in the terminal's foreground
// process group, or the terminal is not its controlling terminal (no job control applies).
bool InForeground(int fd) {
  pid_t group = ::tcgetpgrp(fd);
  if (group < 0) return errno == ENOTTY;
  return group == ::getpgrp();
}

// Writes all of `data` to one of the caller's descriptors, waiting while it cannot take more
// (a terminal or FIFO someone else made non-blocking); false on an error (the target is gone).
bool WriteAll(int fd, const char* data, size_t size) {
  return fd_io::WriteAll(fd, std::string_view(data, size)).ok();
}

// Raw mode as ssh makes it: no input translation, no echo, no signals from keys, no output
// processing; the character size and the rest of c_cflag stay.
termios RawFrom(const termios& saved) {
  termios t = saved;
  t.c_iflag |= IGNPAR;
  t.c_iflag &= ~static_cast<tcflag_t>(ISTRIP | INLCR | IGNCR | ICRNL | IXON | IXANY | IXOFF);
#ifdef IUCLC
  t.c_iflag &= ~static_cast<tcflag_t>(IUCLC);
#endif
  t.c_lflag &= ~static_cast<tcflag_t>(ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHONL | IEXTEN);
  t.c_oflag &= ~static_cast<tcflag_t>(OPOST);
  t.c_cc[VMIN] = 1;
  t.c_cc[VTIME] = 0;
  return t;
}

// The terminating signals anvil does not forward to the sandbox: if one arrives while the
// terminal is raw, the handler restores the terminal, then the signal takes its default course.
// (The forwarded ones are blocked and read from the supervisor's signalfd; a crash signal is a
// bug of anvil's, and a sanitizer's handler for it must stay.)
constexpr int kRestoreOnSignals[] = {SIGALRM, SIGUSR2,   SIGXCPU, SIGVTALRM,
                                     SIGPROF, SIGSTKFLT, SIGIO,   SIGPWR};
int g_restore_fd = -1;
termios g_restore_settings{};

void RestoreAndReraise(int sig) {
  if (g_restore_fd >= 0) ::tcsetattr(g_restore_fd, TCSANOW, &g_restore_settings);
  // SA_RESETHAND put the default back; SA_NODEFER lets it take effect right here.
  ::raise(sig);
}

struct PipeRelay {
  int caller_fd = -1;
  bool input = false;
  UniqueFd ours;    // output: the read end; input: the write end (both non-blocking)
  UniqueFd theirs;  // the command's end, until the clone
  bool regular = false;
  bool append = false;
  bool splice = true;  // until splice(2) says it cannot (O_APPEND, some devices)
  std::optional<uint64_t> cap;
  std::vector<char> buffer;  // input read from the caller that the pipe had no room for
  // Input from a regular file: a read end of the pipe of anvil's own, to count at the end what
  // the command never read (PutBackUnread).
  UniqueFd peek;
  uint64_t from_file = 0;  // input: bytes read from the caller's file in all
  size_t pending = 0;
  size_t offset = 0;
  bool done = false;
};

}  // namespace

struct StdStreamRelay::State {
  std::vector<PipeRelay> relays;

  // The pseudo-terminal.
  bool terminal = false;
  UniqueFd channel;        // where the master comes from
  UniqueFd child_channel;  // init's end, until the clone
  UniqueFd master;
  int in = -1;        // the caller's descriptor the user types on
  int out = -1;       // where the pseudo-terminal's output goes
  int settings = -1;  // the caller's descriptor the settings were read from
  termios saved{};    // the user's terminal as anvil found it when it entered raw mode
  bool raw = false;
  bool foreground = false;
  bool input_done = false;
  bool output_done = false;
  bool out_broken = false;
  bool hung_up = false;
  bool command_stopped = false;
  bool wanted = false;      // the command has reached for its terminal: relay the user's keys
  std::vector<char> typed;  // read from the user, not yet taken by the master
  size_t typed_len = 0;
  size_t typed_off = 0;
  int sandbox_pidfd = -1;
  std::array<struct sigaction, std::size(kRestoreOnSignals)> old_actions{};
  // With an output relay, a write past anvil's own RLIMIT_FSIZE must fail (EFBIG: that relay
  // ends) instead of killing anvil with the terminal raw and the rest of the output lost.
  bool xfsz_ignored = false;
  struct sigaction old_xfsz {};
  bool finished = false;

  // What AddPollFds added, for OnPoll.
  enum class Slot { kRelay, kChannel, kMaster, kTyping, kHangUp };
  std::vector<std::pair<Slot, size_t>> slots;

  // --- the pipes ---
  void StepOutput(PipeRelay& r) {
    for (int chunks = 0; chunks < kChunksPerStep && !r.done; ++chunks) {
      size_t want = kChunk;
      if (r.cap && r.regular) {
        off_t at;
        struct stat st {};
        if (r.append) {
          at = ::fstat(r.caller_fd, &st) == 0 ? st.st_size : 0;
        } else {
          at = ::lseek(r.caller_fd, 0, SEEK_CUR);
        }
        if (at >= 0 && static_cast<uint64_t>(at) >= *r.cap) {
          // --limit fsize: the file is as large as the command may make it. The command's next
          // write meets a closed pipe (EPIPE), as a write past RLIMIT_FSIZE would fail.
          Close(r);
          return;
        }
        if (at >= 0) want = std::min<uint64_t>(want, *r.cap - static_cast<uint64_t>(at));
      }
      ssize_t n;
      if (r.splice && r.regular && !r.append) {
        n = ::splice(r.ours.Get(), nullptr, r.caller_fd, nullptr, want,
                     SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n < 0 && errno == EINVAL) {
          r.splice = false;
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        if (n <= 0) {
          Close(r);  // EOF (every writer gone), or the file refused it
          return;
        }
        continue;
      }
      char buf[kChunk];
      n = ::read(r.ours.Get(), buf, want);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n <= 0 || !WriteAll(r.caller_fd, buf, static_cast<size_t>(n))) {
        Close(r);
        return;
      }
    }
  }

  void StepInput(PipeRelay& r) {
    for (int chunks = 0; chunks < 2 * kChunksPerStep && !r.done; ++chunks) {
      if (r.pending > r.offset) {
        ssize_t w = ::write(r.ours.Get(), r.buffer.data() + r.offset, r.pending - r.offset);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno == EAGAIN) return;
        if (w <= 0) {
          Close(r);  // the command closed its stdin
          return;
        }
        r.offset += static_cast<size_t>(w);
        continue;
      }
      if (r.splice && r.regular) {
        ssize_t n = ::splice(r.caller_fd, nullptr, r.ours.Get(), nullptr, kChunk,
                             SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n < 0 && errno == EINVAL) {
          r.splice = false;
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;  // the pipe is full
        if (n <= 0) {
          Close(r);  // end of the file (or it cannot be read): EOF for the command
          return;
        }
        r.from_file += static_cast<uint64_t>(n);
        continue;
      }
      if (!r.regular) {
        // A FIFO or device: read only what is there, so a caller's source with nothing to say
        // never blocks the supervisor.
        pollfd p{r.caller_fd, POLLIN, 0};
        if (::poll(&p, 1, 0) == 0) return;
      }
      if (r.buffer.size() < kChunk) r.buffer.resize(kChunk);
      ssize_t n = ::read(r.caller_fd, r.buffer.data(), kChunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n <= 0) {
        Close(r);
        return;
      }
      r.pending = static_cast<size_t>(n);
      r.offset = 0;
      r.from_file += static_cast<uint64_t>(n);
    }
  }

  // What the command never read of a regular file goes back to the caller: the file's offset
  // (shared with the caller's shell, `while read f; do anvil sandbox -- CMD; done < list`) ends
  // where the command's reads left it, as if it had been handed the descriptor, however far
  // ahead the relay read.
  static void PutBackUnread(PipeRelay& r) {
    if (!r.input || !r.regular || !r.peek) return;
    int queued = 0;
    if (::ioctl(r.peek.Get(), FIONREAD, &queued) != 0 || queued < 0) queued = 0;
    const size_t buffered = r.pending > r.offset ? r.pending - r.offset : 0;
    // Never back past where this run started: the command can write into its own stdin pipe
    // (reopening /proc/self/fd/0), and what it put there was never read from the file. The
    // caller then sees at most what it would have seen had the command read less.
    const uint64_t unread =
        std::min<uint64_t>(static_cast<uint64_t>(queued) + buffered, r.from_file);
    if (unread > 0) (void)::lseek(r.caller_fd, -static_cast<off_t>(unread), SEEK_CUR);
    r.peek.Reset();
  }

  static void Close(PipeRelay& r) {
    r.done = true;
    r.ours.Reset();
    r.buffer.clear();
    r.buffer.shrink_to_fit();
  }

  // --- the terminal ---
  bool IsForeground() const { return InForeground(in >= 0 ? in : settings); }

  void EnterRaw() {
    if (raw || in < 0 || !wanted || hung_up || finished) return;
    // Read now, not at start: what is restored is what the terminal was when anvil took it (a
    // pager in the same pipeline, or the user's shell while anvil was stopped, may have set it).
    if (::tcgetattr(in, &saved) != 0) return;
    termios t = RawFrom(saved);
    g_restore_fd = in;
    g_restore_settings = saved;
    struct sigaction restore {};
    restore.sa_handler = RestoreAndReraise;
    restore.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigemptyset(&restore.sa_mask);
    for (size_t i = 0; i < std::size(kRestoreOnSignals); ++i) {
      ::sigaction(kRestoreOnSignals[i], nullptr, &old_actions[i]);
      // A signal the caller made anvil ignore stays ignored.
      if (old_actions[i].sa_handler == SIG_IGN) continue;
      ::sigaction(kRestoreOnSignals[i], &restore, nullptr);
    }
    if (::tcsetattr(in, TCSADRAIN, &t) == 0) raw = true;
    if (!raw) LeaveRawHandlers();
  }

  void LeaveRawHandlers() {
    for (size_t i = 0; i < std::size(kRestoreOnSignals); ++i) {
      if (old_actions[i].sa_handler == SIG_IGN) continue;
      ::sigaction(kRestoreOnSignals[i], &old_actions[i], nullptr);
    }
    g_restore_fd = -1;
  }

  void LeaveRaw() {
    if (!raw) return;
    while (::tcsetattr(in, TCSADRAIN, &saved) != 0 && errno == EINTR) {
    }
    raw = false;
    LeaveRawHandlers();
  }

  void CopyWindowSize() {
    if (!master) return;
    winsize size{};
    if (::ioctl(settings, TIOCGWINSZ, &size) == 0) ::ioctl(master.Get(), TIOCSWINSZ, &size);
  }

  // The user's terminal is gone: what the kernel tells the processes of a terminal that hangs up
  // (SIGHUP, which init passes on), or a command waiting for input from it would wait forever.
  void HangUp() {
    if (hung_up || finished) return;
    hung_up = true;
    ::syscall(SYS_pidfd_send_signal, sandbox_pidfd, SIGHUP, nullptr, 0);
  }

  // Back from a stop, or a check: in the foreground, raw mode and the stopped command resume.
  void Resume() {
    if (finished) return;
    foreground = IsForeground();
    if (!foreground || !master) return;
    EnterRaw();
    CopyWindowSize();
    if (command_stopped) {
      command_stopped = false;
      ::syscall(SYS_pidfd_send_signal, sandbox_pidfd, SIGCONT, nullptr, 0);
    }
  }

  // Stops anvil with `sig` (its default action), the terminal restored meanwhile. In an orphaned
  // process group the kernel discards the stop, and this returns at once.
  void Suspend(int sig) {
    LeaveRaw();
    struct sigaction dfl {};
    struct sigaction old {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(sig, nullptr, &old);
    if (old.sa_handler == SIG_IGN) return;
    ::sigaction(sig, &dfl, nullptr);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    ::sigprocmask(SIG_UNBLOCK, &one, nullptr);
    ::kill(::getpid(), sig);
    ::sigprocmask(SIG_BLOCK, &one, nullptr);
    ::sigaction(sig, &old, nullptr);
  }

  void OnMaster() {
    std::vector<int> fds;
    char byte = 0;
    ssize_t n = ipc::ReceiveWithFds(channel.Get(), &byte, 1, fds, 1);
    channel.Reset();  // one master per sandbox; EOF or an error: init failed, it reports why
    if (n != 1 || fds.size() != 1) {
      for (int fd : fds) ::close(fd);
      return;
    }
    UniqueFd fd(fds[0]);
    if (!IsPtyMaster(fd.Get())) return;
    int flags = ::fcntl(fd.Get(), F_GETFL);
    if (flags < 0 || ::fcntl(fd.Get(), F_SETFL, flags | O_NONBLOCK) != 0) return;
    master = std::move(fd);
    typed.resize(4096);
    Resume();
  }

  void StepMasterOutput() {
    char buf[kChunk];
    for (int chunks = 0; chunks < kChunksPerStep && master && !output_done; ++chunks) {
      ssize_t n = ::read(master.Get(), buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n <= 0) {
        output_done = true;  // EIO: no slave is open any more
        return;
      }
      if (out >= 0 && !out_broken && !WriteAll(out, buf, static_cast<size_t>(n))) {
        out_broken = true;  // the user's terminal is gone: keep draining, drop the bytes
        HangUp();
      }
    }
  }

  void StepTypedInput() {
    while (master && !output_done) {
      if (typed_len > typed_off) {
        ssize_t w = ::write(master.Get(), typed.data() + typed_off, typed_len - typed_off);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno == EAGAIN) return;  // the command is not reading
        if (w <= 0) {
          typed_len = typed_off = 0;
          return;
        }
        typed_off += static_cast<size_t>(w);
        continue;
      }
      if (input_done || !foreground || !raw) return;
      pollfd p{in, POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0) return;
      ssize_t n = ::read(in, typed.data(), typed.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n < 0 && errno == EIO && !IsForeground()) {
        // Put in the background meanwhile (SIGTTIN is blocked, so the read failed instead).
        foreground = false;
        LeaveRaw();
        return;
      }
      if (n <= 0) {
        input_done = true;  // the user's terminal hung up
        HangUp();
        return;
      }
      typed_len = static_cast<size_t>(n);
      typed_off = 0;
    }
  }

  void Finish() {
    if (finished) return;
    for (auto& r : relays) {
      if (!r.input) continue;
      PutBackUnread(r);
      Close(r);
    }
    input_done = true;
    channel.Reset();
    auto idle_since = Clock::now();
    while (true) {
      std::vector<pollfd> fds;
      std::vector<PipeRelay*> which;
      for (auto& r : relays) {
        if (r.done) continue;
        fds.push_back({r.ours.Get(), POLLIN, 0});
        which.push_back(&r);
      }
      if (master && !output_done) {
        fds.push_back({master.Get(), POLLIN, 0});
        which.push_back(nullptr);
      }
      if (fds.empty()) break;
      int left =
          kDrainIdleMs - static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                              Clock::now() - idle_since)
                                              .count());
      if (left <= 0) break;
      int n = ::poll(fds.data(), fds.size(), left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      for (size_t i = 0; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        if (which[i]) {
          StepOutput(*which[i]);
        } else {
          StepMasterOutput();
        }
      }
      idle_since = Clock::now();
    }
    for (auto& r : relays) Close(r);
    LeaveRaw();
    master.Reset();
    if (xfsz_ignored) ::sigaction(SIGXFSZ, &old_xfsz, nullptr);
    xfsz_ignored = false;
    finished = true;
  }
};

StdStreamRelay::StdStreamRelay() = default;
StdStreamRelay::StdStreamRelay(StdStreamRelay&&) noexcept = default;
StdStreamRelay& StdStreamRelay::operator=(StdStreamRelay&& other) noexcept {
  if (this != &other) {
    Finish();
    child_ = other.child_;
    state_ = std::move(other.state_);
  }
  return *this;
}
StdStreamRelay::~StdStreamRelay() { Finish(); }

Result<StdStreamRelay> StdStreamRelay::Prepare(bool confine,
                                               std::optional<uint64_t> file_size_limit) {
  StdStreamRelay relay;
  // Every descriptor passes (PlanStdStreams): nothing to probe.
  if (!confine) return relay;
  const auto facts = ProbeStdStreams();
  const StdStreamPlan plan = PlanStdStreams(facts, confine);
  ChildStdStreams& child = relay.child_;
  child.action = plan.action;
  if (plan.AllPass()) return relay;

  auto state = std::make_unique<State>();
  size_t supervisor_slot = 0;
  for (const auto& planned : plan.relays) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return SysFail("sandbox", "pipe for the command's stdio");
    PipeRelay r;
    r.caller_fd = planned.caller_fd;
    r.input = planned.input;
    r.ours = UniqueFd(planned.input ? p[1] : p[0]);
    r.theirs = UniqueFd(planned.input ? p[0] : p[1]);
    if (::fcntl(r.ours.Get(), F_SETFL, O_NONBLOCK) != 0) {
      return SysFail("sandbox", "pipe for the command's stdio");
    }
    struct stat st {};
    r.regular = ::fstat(r.caller_fd, &st) == 0 && S_ISREG(st.st_mode);
    r.append = (::fcntl(r.caller_fd, F_GETFL) & O_APPEND) != 0;
    if (!r.input) r.cap = file_size_limit;
    child.supervisor_fds[supervisor_slot++] = r.ours.Get();
    if (r.input && r.regular) {
      r.peek = UniqueFd(::fcntl(r.theirs.Get(), F_DUPFD_CLOEXEC, 3));
      if (!r.peek) return SysFail("sandbox", "pipe for the command's stdin");
      child.supervisor_fds[supervisor_slot++] = r.peek.Get();
    }
    state->relays.push_back(std::move(r));
  }
  for (const auto& r : state->relays) {
    if (r.input || state->xfsz_ignored) continue;
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    state->xfsz_ignored = ::sigaction(SIGXFSZ, &ignore, &state->old_xfsz) == 0;
  }
  for (int fd = 0; fd < 3; ++fd) {
    switch (plan.action[fd]) {
      case StdStreamAction::kRelayIn:
      case StdStreamAction::kRelayOut:
        child.source[fd] = state->relays[static_cast<size_t>(plan.index[fd])].theirs.Get();
        break;
      case StdStreamAction::kViewDevice:
        child.device[fd] = plan.index[fd];
        child.access[fd] = facts[fd].access;
        break;
      default:
        break;
    }
  }
  if (plan.UsesTerminal()) {
    State& s = *state;
    s.terminal = true;
    s.in = plan.terminal_in;
    s.out = plan.terminal_out;
    s.settings = s.in >= 0 ? s.in : s.out;
    for (int fd = 0; s.settings < 0 && fd < 3; ++fd) {
      if (plan.action[fd] == StdStreamAction::kTerminal) s.settings = fd;
    }
    // The pseudo-terminal starts with the user's settings. In the background (`anvil sandbox
    // -- cmd &`) they are the user's shell's instead (a line editor's raw mode at its prompt):
    // then with the kernel's defaults.
    child.terminal = true;
    child.settings_valid =
        InForeground(s.settings) && ::tcgetattr(s.settings, &child.settings) == 0;
    // The user works with the command on this terminal (it is its stdout too), or never types
    // to it: the command is the foreground job at once and anvil relays keys from the start.
    // Otherwise (`cmd | less`, `cmd > file`) the command takes the terminal when it reaches for
    // it; until then output from the background is all it does (`make` in `make | less`), and
    // with TOSTOP that would stop it and take the terminal.
    child.terminal_foreground = s.in < 0 || plan.action[1] == StdStreamAction::kTerminal;
    s.wanted = child.terminal_foreground;
    if (!child.terminal_foreground) child.settings.c_lflag &= ~static_cast<tcflag_t>(TOSTOP);
    if (s.in < 0) {
      // Nobody types into it, so the user's terminal stays as it is (cooked) and does its own
      // output processing; the pseudo-terminal's would double it ("\r\r\n").
      child.settings.c_oflag &= ~static_cast<tcflag_t>(OPOST);
    }
    ::ioctl(s.settings, TIOCGWINSZ, &child.size);
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
      return SysFail("sandbox", "channel for the command's pseudo-terminal");
    }
    s.channel = UniqueFd(sv[0]);
    s.child_channel = UniqueFd(sv[1]);
    child.terminal_channel = sv[1];
    child.supervisor_fds[supervisor_slot++] = sv[0];
  }
  relay.state_ = std::move(state);
  return relay;
}

void StdStreamRelay::AddSignals(sigset_t* set) const {
  if (!child_.terminal) return;
  for (int sig : {SIGWINCH, SIGTSTP, SIGTTIN, SIGTTOU, SIGCONT}) sigaddset(set, sig);
}

void StdStreamRelay::Started(int sandbox_pidfd) {
  if (!state_) return;
  for (auto& r : state_->relays) r.theirs.Reset();
  state_->child_channel.Reset();
  state_->sandbox_pidfd = sandbox_pidfd;
}

void StdStreamRelay::AddPollFds(std::vector<pollfd>& fds) {
  if (!state_) return;
  State& s = *state_;
  s.slots.clear();
  for (size_t i = 0; i < s.relays.size(); ++i) {
    PipeRelay& r = s.relays[i];
    if (r.done) continue;
    short events = r.input ? POLLOUT : POLLIN;
    int fd = r.ours.Get();
    if (r.input && r.pending <= r.offset && !r.regular) {
      fd = r.caller_fd;  // nothing buffered: wait for the caller's source
      events = POLLIN;
    }
    fds.push_back({fd, events, 0});
    s.slots.emplace_back(State::Slot::kRelay, i);
  }
  if (s.channel) {
    fds.push_back({s.channel.Get(), POLLIN, 0});
    s.slots.emplace_back(State::Slot::kChannel, 0);
  }
  if (s.master && !s.output_done) {
    short events = POLLIN;
    if (s.typed_len > s.typed_off) events |= POLLOUT;
    fds.push_back({s.master.Get(), events, 0});
    s.slots.emplace_back(State::Slot::kMaster, 0);
    if (s.typed_len <= s.typed_off && s.foreground && s.raw && !s.input_done) {
      fds.push_back({s.in, POLLIN, 0});
      s.slots.emplace_back(State::Slot::kTyping, 0);
    } else if (s.in >= 0 && !s.input_done) {
      // Not read now, but its hang-up (POLLHUP, reported whatever the events) still matters.
      fds.push_back({s.in, 0, 0});
      s.slots.emplace_back(State::Slot::kHangUp, 0);
    }
  }
}

void StdStreamRelay::OnPoll(const pollfd* fds, size_t count) {
  if (!state_) return;
  State& s = *state_;
  for (size_t i = 0; i < count && i < s.slots.size(); ++i) {
    if (!fds[i].revents) continue;
    auto [slot, index] = s.slots[i];
    switch (slot) {
      case State::Slot::kRelay: {
        PipeRelay& r = s.relays[index];
        if (r.input) {
          s.StepInput(r);
        } else {
          s.StepOutput(r);
        }
        break;
      }
      case State::Slot::kChannel:
        s.OnMaster();
        break;
      case State::Slot::kMaster:
        s.StepMasterOutput();
        s.StepTypedInput();
        break;
      case State::Slot::kTyping:
        s.StepTypedInput();
        break;
      case State::Slot::kHangUp:
        if (fds[i].revents & (POLLHUP | POLLERR)) {
          s.input_done = true;
          s.HangUp();
        }
        break;
    }
  }
  if (s.terminal && s.master && !s.foreground && ((s.in >= 0 && s.wanted) || s.command_stopped)) {
    s.Resume();
  }
}

int StdStreamRelay::PollTimeoutMs() const {
  if (!state_) return -1;
  const State& s = *state_;
  if (s.terminal && s.master && !s.foreground && !s.finished &&
      ((s.in >= 0 && s.wanted) || s.command_stopped)) {
    return kForegroundCheckMs;
  }
  return -1;
}

bool StdStreamRelay::OnSignal(int sig) {
  if (!state_ || !state_->terminal) return false;
  State& s = *state_;
  switch (sig) {
    case SIGWINCH:
      s.CopyWindowSize();
      return true;
    case SIGTSTP:
    case SIGTTIN:
    case SIGTTOU:
      s.Suspend(sig);
      s.Resume();
      return true;
    case SIGCONT:
      s.Resume();
      return true;
    default:
      return false;
  }
}

void StdStreamRelay::OnCommandStopped() {
  if (!state_ || !state_->terminal || state_->finished) return;
  State& s = *state_;
  s.command_stopped = true;
  s.Suspend(SIGTSTP);
  s.Resume();
}

void StdStreamRelay::OnTerminalTaken() {
  if (!state_ || !state_->terminal || state_->finished) return;
  state_->wanted = true;
  state_->Resume();
}

void StdStreamRelay::Finish() {
  if (state_) state_->Finish();
}

}  // namespace anvil
