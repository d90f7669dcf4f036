// The refusal observer: records, as facts, the writes a sandboxed command made into read-only
// parts of its view and the connections its network mode cannot carry, so `anvil sandbox` can
// say afterwards what the sandbox refused and how to allow it (policy/refusals.h).
//
// Mechanism: the command, just before it execs, loads a second seccomp filter
// (RefusalObserverRules, seccomp_rules.h) with SECCOMP_FILTER_FLAG_NEW_LISTENER: write-intent
// syscalls (open* with a write access mode, O_CREAT or O_TRUNC — matched in the filter, so reads
// never stop — mkdir*, mknod*, unlink*, rmdir, rename*, link*, symlink*, truncate) and, unless the
// network is full, connect. It hands the listener to the sandbox's init (over a socketpair),
// which answers every notification with SECCOMP_USER_NOTIF_FLAG_CONTINUE: the answer never
// depends on what it reads, so the observer decides nothing and its time-of-check is
// irrelevant. Before answering, init copies the path (process_vm_readv) and opens the
// directory a relative path starts from (/proc/PID/cwd or /proc/PID/fd/N); afterwards it asks
// the kernel, in the view itself (init shares the command's mount namespace and root), whether
// the operation was refused: the mount holding the target or its directory is read-only
// (statvfs) and the target's existence makes the kernel report EROFS (an existing directory
// for mkdir is EEXIST, not a refusal). A write refused outside every root also gets what it was
// on the way to (Refusal::wanted): the deeper name the process tried first, or a path beneath it
// that the process's arguments or environment name (read from /proc/PID while it waits), so that
// the fix can name the host's directory beneath rather than its parent. For connect it reads the
// address: anything but loopback cannot be reached from the sandbox's own network namespace. A
// loopback port where nothing of the sandbox's is bound (a DNS query to 127.0.0.53, a client of a
// server on the host's loopback) is a hint, decided by LoopbackHints below: never looked up for
// the sandbox's own listeners or a port already found bound, and withdrawn when a later connect
// finds the port bound.
//
// Refusals deduplicated by (kind, path or address) go to the supervisor as records; at most
// kMaxRefusalRecords, the rest are counted. Observation is best effort and never fails a run:
// a command that cannot load the filter (a listener already in its seccomp chain, i.e. a
// sandbox inside a sandbox) runs unobserved.
#pragma once

#include <linux/filter.h>

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "policy/refusals.h"
#include "policy/sandbox_policy.h"

namespace anvil {

inline constexpr size_t kMaxRefusalRecords = 64;

// In the command, after its other layers and right before exec: loads the observer filter and
// sends the listener on `channel`. kNotLoaded: the filter could not be loaded (the command runs
// unobserved); kUnanswered: loaded but the listener could not be handed over — nobody would
// answer, so the command must not run. No allocation (runs in a vfork child).
enum class ObserverInstall { kObserved, kNotLoaded, kUnanswered };
ObserverInstall InstallRefusalObserver(int channel, bool watch_connect);

// The program InstallRefusalObserver loads (constants baked at build time), for the unit test.
std::vector<sock_filter> RefusalObserverProgram(bool watch_connect);

// In init: the listener the command sent on `channel`, or -1 when it sent none (blocks until
// the command has sent it or closed its end by exec or exit).
int ReceiveRefusalListener(int channel);

// What init makes of the connects to loopback ports (pure: the observer asks it, looks up what
// is bound, and tells it the answer). A connect to a port nothing of the sandbox's has bound is
// recorded as a hint (the server may be on the host's loopback, another namespace), per address
// tried. The lookup (/proc/net/{tcp,udp}{,6}) is never made for port 0, for the sandbox's own
// listeners (`own_ports`: the proxy's under --network proxy, every connection of a proxied
// command) or for a port a lookup already found bound in this run: that port is the sandbox's
// own, so no hint for it can be right. When a later connect finds the port bound (a client
// that retried until its own server was up), every hint recorded for the port is withdrawn.
class LoopbackHints {
 public:
  explicit LoopbackHints(const std::vector<uint16_t>& own_ports);
  bool NeedsLookup(uint16_t port) const;
  struct Step {
    bool record = false;                // a hint for `address`, the first one for it
    std::vector<std::string> withdraw;  // the hints recorded for the port, wrong now
  };
  // The lookup's answer for a connect to `address` (as shown: "127.0.0.1:8000"), port `port`.
  Step Looked(uint16_t port, const std::string& address, bool bound);

 private:
  std::bitset<65536> own_;
  std::bitset<65536> bound_;
  std::map<uint16_t, std::vector<std::string>> hinted_;  // at most kMaxRefusalRecords in all
  size_t hinted_count_ = 0;
};

class RefusalObserver {
 public:
  // `report` receives each new refusal (at most kMaxRefusalRecords; the rest are counted),
  // `withdraw` the address of a loopback hint reported earlier that a later connect to its port
  // proved wrong (LoopbackHints). `own_ports`: the loopback ports the sandbox itself listens on.
  RefusalObserver(int listener, const FileView& view, const SandboxPolicy& policy,
                  const std::vector<uint16_t>& own_ports,
                  std::function<void(const Refusal&)> report,
                  std::function<void(const std::string& address)> withdraw);
  ~RefusalObserver();
  RefusalObserver(const RefusalObserver&) = delete;
  RefusalObserver& operator=(const RefusalObserver&) = delete;

  // Blocks SIGCHLD and gives it a handler (without SA_NOCLDSTOP: with WUNTRACED a stop must
  // also end the wait): from here on it is let in only while WaitPid waits.
  //
  // waitpid(-1, status, flags), answering notifications while it waits. Returns what waitpid
  // returns (-1 with EINTR when a signal interrupted the wait). `exit_fd`, when not -1, is a
  // pidfd of the command: once it is readable with no child left to reap, returns 0 (a process
  // tracing the command holds its exit: RunInit, sandbox_init.cc).
  pid_t WaitPid(int* status, int flags = 0, int exit_fd = -1);
  size_t dropped() const { return dropped_; }

 private:
  void HandleOne();
  // Whether `refusal` is reported: once per kind, detail and subject, at most
  // kMaxRefusalRecords (the rest are counted).
  bool Keep(const Refusal& refusal);
  // `path` (lexical, absolute) has no parent directory in the view: kept unless it is the way to
  // the one kept already (the same process going up).
  void NoteMissingParent(pid_t pid, const std::string& path);

  int listener_;
  const FileView& view_;
  const SandboxPolicy& policy_;
  LoopbackHints loopback_;
  std::function<void(const Refusal&)> report_;
  std::function<void(const std::string&)> withdraw_;
  std::set<std::string> seen_;
  size_t dropped_ = 0;
  // The deepest name a process last tried to make where the view has no parent directory (the
  // first try of a `mkdir -p`): what a refusal of that process's higher up wanted
  // (Refusal::wanted).
  pid_t missing_pid_ = -1;
  std::string missing_;
  bool reap_pending_ = true;  // a child may be waiting to be reaped
};

}  // namespace anvil
