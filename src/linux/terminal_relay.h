// Carries out a StdStreamPlan (std_streams.h): the supervisor's relays for the command's
// descriptors 0-2, and the two steps inside the sandbox (init makes the pseudo-terminal, the
// command puts its descriptors in place). The relays are terminal_relay.cc; the probe and the
// steps inside the sandbox, std_stream_setup.cc.
//
// The pseudo-terminal comes from the sandbox's own devpts instance (mount_view.cc), so its slave
// is a node no host path names; init passes the master out to the supervisor (SCM_RIGHTS). The
// command is a session leader with the slave as its controlling terminal, so job control works
// for a shell inside. While the supervisor relays, the user's terminal is in raw mode (every
// key, ^C and ^Z included, goes to the pseudo-terminal, whose line discipline turns it into the
// inside job's signal); its settings are restored exactly as they were read (tcgetattr before,
// tcsetattr after) when the relay ends, when anvil is stopped (and raw mode comes back when it
// is continued in the foreground), and on a terminating signal that anvil does not forward.
// When the command itself stops (^Z to a program that is not a job-control shell), anvil stops
// too, so the user's shell gets the terminal back, and `fg` continues both.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "linux/std_streams.h"

namespace anvil {

// The facts of the caller's descriptors 0-2 (fstat; isatty only for character devices; fstatfs
// only for FIFOs; kcmp only for two relayed descriptors on one inode).
std::array<StdStreamFacts, 3> ProbeStdStreams();

// What the sandbox's init and command processes need; they only read it. Plain data: it lives in
// the launch plan, which the command shares with init until it execs (vfork).
struct ChildStdStreams {
  std::array<StdStreamAction, 3> action{StdStreamAction::kPass, StdStreamAction::kPass,
                                        StdStreamAction::kPass};
  std::array<int, 3> source{-1, -1, -1};  // kRelayIn/kRelayOut: the command's end of the pipe
  std::array<int, 3> access{0, 0, 0};     // kViewDevice: O_ACCMODE of the caller's descriptor
  std::array<int, 3> device{-1, -1, -1};  // kViewDevice: index in kViewDevices
  // The supervisor's ends (relay pipes, the terminal channel): init closes its copies first
  // thing, or a command reading stdin would never see EOF (init would hold a write end).
  std::array<int, 5> supervisor_fds{-1, -1, -1, -1, -1};
  bool terminal = false;
  // The command is the terminal's foreground job from the start (GrantTerminal otherwise).
  bool terminal_foreground = false;
  int terminal_channel = -1;  // init sends the pseudo-terminal's master here
  bool settings_valid = false;
  termios settings{};  // the caller's terminal settings, for the slave
  winsize size{};      // the caller's window size
};

// In init, once the view is entered: opens a pseudo-terminal (/dev/ptmx, the view's devpts),
// gives the slave the caller's settings and window size, sends the master to the supervisor, and
// makes init the leader of a new session whose controlling terminal the slave is (as a login
// shell is of its terminal's). Returns the slave (close-on-exec) for the command.
Result<UniqueFd> OpenSandboxTerminal(const ChildStdStreams& child);

// In the command, first. Without a terminal: a session of its own (setsid). With one: a process
// group of its own in init's session -- a job of init's, as a shell's job is of the shell's, so
// that a stop signal from the terminal (^Z) stops it (the kernel discards one sent to a session
// leader's own group, which has no parent in its session to resume it). The job is the
// terminal's foreground job from the start when the user's terminal is also its stdout (the
// user works with it there), else it starts in the background: see GrantTerminal.
Status EnterCommandSession(const ChildStdStreams& child, int terminal_slave);

// In init, when the command stopped. A background job that reads its terminal or changes its
// modes is stopped by the kernel (SIGTTIN, SIGTTOU): that is how anvil learns that a command
// whose stdout is not the terminal wants the user's keys, and only then does it put the user's
// terminal in raw mode and read it, so `anvil sandbox -- make | less` leaves it to less. Makes the
// command the pseudo-terminal's foreground job and continues it; true when that is what the stop
// was (otherwise it was ^Z or a stop signal: anvil stops too).
bool GrantTerminal(int terminal_slave, pid_t command, int stop_signal);

// In the command, after EnterCommandSession and before the Landlock rules: puts descriptors 0-2
// in place. `call_stdin` (warm start, >= 0) replaces descriptor 0: a pipe, a socket or a memory
// device (the view's own node); anything else is refused.
Status PlaceStdStreams(const ChildStdStreams& child, int terminal_slave, int call_stdin);

// In init after starting the command: its copies of the command's ends are no longer needed.
void CloseCommandEnds(const ChildStdStreams& child);

// The supervisor's side. Single-threaded: it runs inside the supervisor's poll loop.
class StdStreamRelay {
 public:
  // Probes the caller's descriptors, plans, and makes the pipes and the terminal channel the plan
  // needs. `file_size_limit` (--limit fsize) also bounds a relayed regular output file.
  static Result<StdStreamRelay> Prepare(bool confine, std::optional<uint64_t> file_size_limit);

  StdStreamRelay();
  StdStreamRelay(StdStreamRelay&&) noexcept;
  StdStreamRelay& operator=(StdStreamRelay&&) noexcept;
  StdStreamRelay(const StdStreamRelay&) = delete;
  StdStreamRelay& operator=(const StdStreamRelay&) = delete;
  ~StdStreamRelay();  // Finish() if not done: the user's terminal is never left raw

  const ChildStdStreams& Child() const { return child_; }
  bool UsesTerminal() const { return child_.terminal; }
  // Signals the supervisor must block and pass to OnSignal (the terminal's: SIGWINCH, the stop
  // signals, SIGCONT). Adds nothing without a terminal.
  void AddSignals(sigset_t* set) const;

  // After the clone: closes the supervisor's copies of the command's ends. `sandbox_pidfd`
  // (the init process) is where a continued command's SIGCONT goes.
  void Started(int sandbox_pidfd);
  // Appends the descriptors to poll; OnPoll gets the same entries back after poll(2).
  void AddPollFds(std::vector<pollfd>& fds);
  void OnPoll(const pollfd* fds, size_t count);
  // -1, or how soon OnPoll must run again even without events (a terminal in the background is
  // checked for being brought to the foreground).
  int PollTimeoutMs() const;
  // True when the relay took the signal (it must not be forwarded to the sandbox).
  bool OnSignal(int sig);
  // The command (the terminal's foreground job) was stopped: stop anvil too; continue it with
  // anvil.
  void OnCommandStopped();
  // The command reached for its terminal (GrantTerminal): relay the user's keys from now on.
  void OnTerminalTaken();
  // The sandbox has ended: stop reading input, relay the output that is left (until every
  // writer is gone, bounded if one never goes), restore the user's terminal. Idempotent.
  void Finish();

 private:
  struct State;
  ChildStdStreams child_;
  std::unique_ptr<State> state_;  // null when every descriptor passes: nothing to relay
};

}  // namespace anvil
