// What a sandboxed command gets as its descriptors 0-2, decided from what the caller's are.
//
// A descriptor carries its open file description, and through it the object's inode: a command
// handed the caller's terminal or a redirected file could fchmod/fchown it, chmod it through
// /proc/self/fd/N, or leave the terminal in a mode it set, and every such change outlives the
// command on an object outside its view. So under a confining policy only objects whose
// attributes name nothing outside reach the command as they are (an anonymous pipe, a socket);
// a terminal becomes the slave of the sandbox's own pseudo-terminal, a memory device
// (/dev/null, ...) the view's own node, and anything else (a regular file, a named FIFO, a
// directory, another device) a pipe the supervisor relays. Pure: ProbeStdStreams
// (terminal_relay.h) gathers the facts and the relay carries the plan out.
#pragma once

#include <sys/types.h>

#include <array>
#include <string_view>
#include <vector>

namespace anvil {

// What one of the caller's descriptors 0-2 is.
struct StdStreamFacts {
  bool open = false;
  mode_t type = 0;         // st_mode & S_IFMT
  dev_t rdev = 0;          // character and block devices
  bool terminal = false;   // isatty
  bool anonymous = false;  // an S_IFIFO on pipefs (pipe(2)), not a named FIFO on a file system
  int access = 0;          // O_RDONLY, O_WRONLY or O_RDWR
  // The lowest other standard descriptor on the same open file description (`2>&1`), or -1.
  int same_as = -1;
};

enum class StdStreamAction {
  kClosed,      // closed in the caller: closed for the command too
  kPass,        // the caller's own descriptor (an anonymous pipe, a socket; or no confinement)
  kTerminal,    // the slave of the sandbox's pseudo-terminal, relayed to the caller's terminal
  kViewDevice,  // the view's own node of the same memory device, opened with the same access
  kRelayIn,     // a pipe the supervisor fills from the caller's descriptor
  kRelayOut,    // a pipe the supervisor empties into the caller's descriptor
};

// The memory devices every view has (mount_view.cc, BuildDev), by device number.
struct ViewDevice {
  unsigned major;
  unsigned minor;
  const char* path;
};
inline constexpr ViewDevice kViewDevices[] = {{1, 3, "/dev/null"},
                                              {1, 5, "/dev/zero"},
                                              {1, 7, "/dev/full"},
                                              {1, 8, "/dev/random"},
                                              {1, 9, "/dev/urandom"}};
// The index in kViewDevices of a character device number, or -1.
int ViewDeviceIndex(dev_t rdev);

struct StdStreamPlan {
  struct Relay {
    int caller_fd;  // the caller's descriptor the supervisor reads (input) or writes (output)
    bool input;
  };
  std::array<StdStreamAction, 3> action{StdStreamAction::kClosed, StdStreamAction::kClosed,
                                        StdStreamAction::kClosed};
  // kRelayIn/kRelayOut: the index in `relays` (descriptors on one open file description share
  // one relay, so `2>&1` keeps stdout and stderr in order); kViewDevice: the index in
  // kViewDevices; otherwise -1.
  std::array<int, 3> index{-1, -1, -1};
  std::vector<Relay> relays;
  // With a kTerminal descriptor: the caller's descriptor the user types on (its input is relayed
  // to the pseudo-terminal; -1 when descriptor 0 is not a terminal), and the one the
  // pseudo-terminal's output goes to (-1: nowhere the caller can write, the output is read and
  // dropped). The caller's terminal settings are copied from terminal_in, else terminal_out.
  int terminal_in = -1;
  int terminal_out = -1;

  bool UsesTerminal() const;
  // Nothing for the supervisor or the command to do: every descriptor kPass or kClosed.
  bool AllPass() const;
};

// `confine`: the policy confines the file system (read-only, workspace-write). Without that
// every open descriptor passes: the command can reach every host object by its path anyway.
StdStreamPlan PlanStdStreams(const std::array<StdStreamFacts, 3>& facts, bool confine);

std::string_view ToString(StdStreamAction action);

}  // namespace anvil
