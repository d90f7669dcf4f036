// sys.exec (threat model T3): the gateway decides, the exec broker starts, anvil-exec-runner
// confines. The broker is a small process forked from the gateway *before* the gateway hardens
// itself: the runner needs user/mount/pid namespaces and mounts, which the gateway's own Landlock
// domain forbids to every descendant. What the broker may start is bounded by the broker itself,
// not by what the gateway asks:
//
//   gateway worker ──(socketpair end, SCM_RIGHTS)──▶ broker ──hands it to──▶ warm job
//                                                                     │ re-checks program + argv
//                                                                     │ against the executable
//                                                                     │ policy table, opens the
//                                                                     │ program by its fixed path
//                                                                     └─ anvil-exec-runner
//                                                                          (--call-fd, read-only
//                                                                          workspace, no network,
//                                                                          minimal env, own pid ns)
//
// Warm start (Chromium-zygote style, each used once): the broker keeps TWO warm jobs forked ahead
// of the next calls, and each has already started its anvil-exec-runner, which has made its
// namespaces, pids cgroup and file view (all but the workspace's readable paths) and waits on its
// call channel. A call's connection goes to the oldest warm job; the broker forks its replacement
// when that call is answered (the job says so on its link), so that the next sandbox's set-up does
// not take CPU from the running call (2 cores: it cost the call several ms; the second warm job
// serves a call that follows an answer at once). A call that finds no warm job gets one started for
// it. The job sends the runner the program fd, stdin, argv and the readable paths; the runner's
// init binds those paths, enters the view, and the command applies Landlock (narrowed to those
// paths), no_new_privs, rlimits and seccomp, then execveat. When the command exits, init kills and
// reaps everything else in the sandbox and tells the job (kWarmCallDone, with the status): the job
// answers then, and reaps the runner after, so the answer does not wait for the namespaces'
// teardown. A runner serves one call (fresh pid/mount/net/ipc namespaces and /tmp per call). A warm
// runner that died while waiting is replaced for the call; one whose set-up failed fails the call
// closed with its report's reason (the layer). Shutdown: EOF on the broker's channel makes the warm
// jobs close their runners' call channels, so the unused sandboxes end without running anything.
//
// One connection per exec: the job process reads one request, runs it, writes one response.
// Closing the connection is the cancel: the job process kills the runner's process group, whose
// pid-namespace init takes every descendant with it. The job process also enforces the output
// caps (kill when a cap is passed; what was read is returned, marked truncated) and a wall-clock
// backstop beyond the runner's own timeout (which counts from the call). The broker dies with
// the gateway; jobs die with the broker; runners die with their job (PR_SET_PDEATHSIG at each
// step).
//
// Here: the broker's process and its client (ExecBroker). The call and its wire form are in
// exec_request.h, the job's check in exec_job_check.h, the job in exec_job.h, its runner in
// exec_warm_runner.h.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "gateway/exec_request.h"
#include "linux/tool_runtime.h"

namespace anvil::gateway {

struct ExecBrokerConfig {
  std::string workspace;    // canonical
  std::string runner_path;  // anvil-exec-runner; opened once at start
  ExecLimits limits;
  // Test-only (ANVIL_TEST_HOOKS builds): make the runner fail this sandbox layer.
  std::string fail_layer_for_testing;
  // Filled by the broker at start (not by the caller): each table tool's runtime files, by
  // executable path. A job resolves a tool again when its executable changed since.
  std::map<std::string, ToolRuntime> tool_runtimes;
};

class ExecBroker {
 public:
  ExecBroker(const ExecBroker&) = delete;
  ExecBroker& operator=(const ExecBroker&) = delete;
  // Closes the channel (the broker exits and takes its jobs with it) and reaps the broker.
  ~ExecBroker();

  // Forks the broker. Call while the process has a single thread and before any Landlock or
  // seccomp is applied to it. Fails when the runner cannot be opened.
  static Result<std::unique_ptr<ExecBroker>> Start(const ExecBrokerConfig& config);

  // Thread-safe. Blocks until the tool ends. Errors (code: message): "busy" (concurrency cap),
  // "denied"/"invalid"/"not_found" (the broker's own table check), "timeout" (the call passed
  // its deadline; the tree was killed), "cancelled" (`cancelled` became true; the tree was
  // killed), "sandbox" (the runner could not confine the tool: nothing ran), "io".
  Result<ExecResult> Run(const ExecRequest& request, const std::atomic<bool>* cancelled) const;

 private:
  ExecBroker(UniqueFd channel, pid_t pid, ExecLimits limits)
      : channel_(std::move(channel)), pid_(pid), limits_(limits) {}
  UniqueFd channel_;  // SOCK_SEQPACKET to the broker: carries one fd per exec
  pid_t pid_ = -1;
  ExecLimits limits_;
  mutable std::atomic<uint32_t> running_{0};
};

}  // namespace anvil::gateway
