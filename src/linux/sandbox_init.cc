// The sandbox's init (sandbox_launch.h): pid 1 of the sandbox's pid namespace (or a subreaper),
// which builds the file view, takes a warm call, starts the command and reaps.
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>

#include "common/sanitizer.h"
#include "ipc/fd_passing.h"
#include "linux/loopback.h"
#include "linux/mount_view.h"
#include "linux/refusal_observer.h"
#include "linux/root_remap.h"
#include "linux/sandbox_plan.h"
#include "linux/sandbox_process.h"
#include "linux/sandbox_report.h"
#include "linux/terminal_relay.h"
#include "linux/warm_call.h"

namespace anvil::launch {
namespace {

Status MapIds(const Plan& plan) {
  // A single-ID map of our own uid/gid: no setuid helper needed, and no other host user can
  // be impersonated from inside.
  ANVIL_RETURN_IF_ERROR(WriteFile("/proc/self/setgroups", "deny"));
  ANVIL_RETURN_IF_ERROR(WriteFile(
      "/proc/self/uid_map", std::to_string(plan.uid) + " " + std::to_string(plan.uid) + " 1"));
  return WriteFile("/proc/self/gid_map",
                   std::to_string(plan.gid) + " " + std::to_string(plan.gid) + " 1");
}

volatile sig_atomic_t g_command_pid = 0;
volatile sig_atomic_t g_kill_tree = 0;

void ForwardSignal(int sig) {
  if (g_command_pid > 0) kill(-g_command_pid, sig);
}
void RequestKillTree(int) { g_kill_tree = 1; }

// Without the refusal observer (which has its own): SIGCHLD ends WaitChild's sleep.
volatile sig_atomic_t g_child_changed = 0;
void OnChild(int) { g_child_changed = 1; }

// Descendants of this process by walking /proc/<pid>/task/<tid>/children.
void CollectDescendants(pid_t pid, std::vector<pid_t>& out) {
  std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(task_dir.c_str());
  if (!dir) return;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(task_dir + "/" + e->d_name + "/children");
    pid_t child;
    while (in >> child) {
      out.push_back(child);
      CollectDescendants(child, out);
    }
  }
  closedir(dir);
}

// Subreaper mode: stop, then kill, every descendant; repeat until none is left (a process
// that forked between the walk and the kill is reparented to us and found next round).
void KillDescendants() {
  for (int round = 0; round < 1000; ++round) {
    std::vector<pid_t> pids;
    CollectDescendants(getpid(), pids);
    for (pid_t p : pids) kill(p, SIGSTOP);
    for (pid_t p : pids) kill(p, SIGKILL);
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    if (pids.empty()) {
      while (waitpid(-1, nullptr, 0) > 0) {
      }
      return;
    }
  }
}

// One round of KillDescendants, without reaping: the command's exit, which a tracer among them
// held, comes to init once that tracer is gone, and the wait loop takes it.
void KillOthers(const Plan& plan) {
  if (plan.pidns) {
    kill(-1, SIGKILL);  // every process of the pid namespace but init
    return;
  }
  std::vector<pid_t> pids;
  CollectDescendants(getpid(), pids);
  for (pid_t p : pids) kill(p, SIGKILL);
}

// The observer's WaitPid without an observer: waitpid(-1, status, flags), which also returns 0
// once `exit_fd` (the command's pidfd) is readable and no child is left to reap. Without a
// pidfd, a plain waitpid, as before tracing was allowed. SIGCHLD is blocked but here (OnChild).
pid_t WaitChild(int* status, int flags, int exit_fd, bool& reap_pending) {
  if (exit_fd < 0) return waitpid(-1, status, flags);
  if (reap_pending || g_child_changed) {
    // Only after a SIGCHLD (or a reap, which may have left more).
    g_child_changed = 0;
    pid_t r = waitpid(-1, status, flags | WNOHANG);
    reap_pending = r != 0;
    if (r != 0) return r;
  }
  pollfd p{exit_fd, POLLIN, 0};
  sigset_t open_mask;
  sigemptyset(&open_mask);
  if (ppoll(&p, 1, nullptr, &open_mask) < 0) {
    if (errno == EINTR) return -1;      // SIGCHLD (OnChild), or a signal init forwards
    return waitpid(-1, status, flags);  // cannot poll: wait as before
  }
  pid_t r = waitpid(-1, status, flags | WNOHANG);  // the command's (or another) exit; 0: held
  reap_pending = r > 0;
  return r;
}

// Proxy mode, in init (inside the new network namespace, still holding its capabilities there):
// bring loopback up, listen on 127.0.0.1 and ::1 at kProxyPort, and hand the listening sockets
// to anvil-proxy outside, which accepts on them. Nothing of the proxy runs in here.
Status HandOverProxyListeners(Plan& plan) {
  ANVIL_RETURN_IF_ERROR(InjectedFailure(plan, "proxy"));
  ANVIL_RETURN_IF_ERROR(BringLoopbackUp());
  std::vector<UniqueFd> listeners;
  {
    UniqueFd v4(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(kProxyPort);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (!v4 || ::bind(v4.Get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        ::listen(v4.Get(), 128) != 0) {
      return SysFail("sandbox", "proxy: listen on 127.0.0.1:" + std::to_string(kProxyPort));
    }
    listeners.push_back(std::move(v4));
  }
  {
    // IPv6 loopback is optional (a kernel booted with ipv6.disable=1 has none).
    UniqueFd v6(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(kProxyPort);
    a.sin6_addr = in6addr_loopback;
    int one = 1;
    if (v6 && ::setsockopt(v6.Get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) == 0 &&
        ::bind(v6.Get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
        ::listen(v6.Get(), 128) == 0) {
      listeners.push_back(std::move(v6));
    }
  }
  const char byte = 'L';
  std::vector<int> fds;
  for (const auto& l : listeners) fds.push_back(l.Get());
  if (ipc::SendWithFds(plan.spec->proxy_channel.Get(), &byte, 1, fds) != 1) {
    return SysFail("sandbox", "proxy: hand the listeners to anvil-proxy");
  }
  plan.spec->proxy_channel.Reset();
  return Ok();
}

// Network none in a network namespace the clone really made: its loopback comes up and the
// command gets the filter that allows IP sockets there (only loopback exists to reach). Without
// that namespace (read-only's fallback) the filter and Landlock keep refusing IP.
Status UseOwnLoopback(Plan& plan) {
  if (!plan.netns || plan.spec->policy.network != NetworkMode::kNone || plan.filter.Empty()) {
    return Ok();
  }
  ANVIL_RETURN_IF_ERROR(BringLoopbackUp());
  ANVIL_TRY(filter,
            seccomp::BuildCommandFilter(NetworkMode::kNone, plan.confine_fs,
                                        /*own_network_namespace=*/true, plan.allow_tracing));
  plan.filter = std::move(*filter);
  return Ok();
}

// Warm start, in init: waits for the call, takes its descriptors, argv, read plan and runtime
// files, completes the file view with them, and tells the supervisor (deadline) and the caller
// (kWarmCallTaken). EOF instead of a call: nothing to run, the sandbox ends quietly.
void TakeWarmCall(Plan& plan) {
  LaunchSpec& spec = *plan.spec;
  const int channel = spec.call_channel.Get();
  WarmCallHeader header{};
  std::vector<int> fds;
  int msg_flags = 0;
  ssize_t n =
      ipc::ReceiveWithFds(channel, &header, sizeof(header), fds, 2, MSG_WAITALL, &msg_flags);
  if (n == 0) _exit(0);
  if (n != static_cast<ssize_t>(sizeof(header)) || (msg_flags & (MSG_CTRUNC | MSG_TRUNC)) ||
      fds.size() != 2 || header.magic != kWarmCallMagic || header.argc == 0 ||
      header.body_bytes > kMaxWarmCallBody) {
    Die(plan, Error{"sandbox", "malformed call for the warm sandbox", 0});
  }
  spec.program = UniqueFd(fds[0]);
  plan.stdin_fd = fds[1];
  std::string body(header.body_bytes, '\0');
  if (auto s = ReadExactly(channel, body.data(), body.size()); !s) Die(plan, s.error());
  std::vector<std::string> strings;
  size_t start = 0;
  while (start < body.size()) {
    size_t end = body.find('\0', start);
    if (end == std::string::npos) Die(plan, Error{"sandbox", "malformed call strings", 0});
    strings.push_back(body.substr(start, end - start));
    start = end + 1;
  }
  if (strings.size() !=
      static_cast<size_t>(header.argc) + header.plan_strings + header.runtime_files) {
    Die(plan, Error{"sandbox", "malformed call strings", 0});
  }
  auto at = strings.begin();
  spec.argv.assign(at, at + header.argc);
  at += header.argc;
  auto ops = DecodeReadPlan(std::vector<std::string>(at, at + header.plan_strings));
  at += header.plan_strings;
  if (!ops) Die(plan, ops.error());
  // Checked here too: the view is built from it, whoever sent it.
  if (auto s = ValidateReadPlan(*ops); !s) Die(plan, s.error());
  FileView& view = plan.view;
  if (!view.runtime_from_call && header.runtime_files != 0) {
    Die(plan, Error{"sandbox", "runtime files in a call for a sandbox with runtime roots", 0});
  }
  for (; at != strings.end(); ++at) {
    if (auto s = ValidateRuntimeFile(*at); !s) Die(plan, s.error());
    view.runtime_files.push_back(*at);
  }
  if (view.runtime_from_call && view.runtime_files.empty()) {
    Die(plan, Error{"sandbox", "a call without the tool's runtime files", 0});
  }
  const bool masks = std::any_of(ops->begin(), ops->end(), [](const ReadOp& op) {
    return op.kind == ReadOpKind::kMaskFile || op.kind == ReadOpKind::kMaskDir;
  });
  if (!plan.mountns && masks) {
    // Landlock alone cannot take a file out of a tree it allows.
    Die(plan, Error{"sandbox",
                    "the workspace holds files sys.fs.read refuses (hard-linked, special or "
                    "badly named) beneath a granted directory, which only a mount namespace "
                    "can hide; user namespaces are not available here (see `anvil doctor`)",
                    0});
  }
  view.workspace_plan = std::move(*ops);
  // The call is ours: the caller stops waiting, the supervisor starts the deadline.
  if (::write(channel, &kWarmCallTaken, 1) != 1) _exit(0);  // the caller is gone
  SendRecord(plan.report_fd, kCallTaken, 0, 0, "");
  // Kept (close-on-exec, so never the command's) for kWarmCallDone.
  if (plan.mountns) {
    if (auto s = FinishMountView(view, plan.idmapped_roots); !s) Die(plan, s.error());
    if (auto s = VerifyMountView(view); !s) Die(plan, s.error());
  }
  // Without runtime roots the view has no /proc to look at the program through; the broker
  // resolved it as an ELF executable (linux/tool_runtime.h), never a script.
  plan.program_is_script = view.runtime_from_call ? false : IsScript(spec.program.Get());
  plan.argv = CStrings(spec.argv);
}

}  // namespace

[[noreturn]] void RunInit(Plan& plan) {
  // The supervisor's ends of the command's stdio: with a copy here, a command reading its stdin
  // would never see EOF.
  for (int fd : plan.streams->supervisor_fds) {
    if (fd >= 0) ::close(fd);
  }
  // Dies with the supervisor. In a pid namespace SIGKILL of init takes every process in it;
  // without one, SIGUSR2 asks this init to kill the tree first.
  prctl(PR_SET_PDEATHSIG, plan.pidns ? SIGKILL : SIGUSR2);
  // The sandboxed tree is the OOM killer's first choice, before the user's editor or shell
  // (raising needs no privilege; the command inherits it). First: once init changes its ids or
  // stops being dumpable, its /proc/self files belong to root.
  if (auto s = WriteFile("/proc/self/oom_score_adj", "1000"); !s) Die(plan, s.error());
  for (int fd : plan.cgroup_tasks_fds) {
    // Before anything forks: every process of the sandbox is born in its cgroups.
    if (fd < 0) continue;
    if (::write(fd, "0", 1) != 1)
      Die(plan, SysFail("sandbox", "join the sandbox's cgroup").value());
    ::close(fd);
  }
  pollfd alive{plan.alive_fd, POLLIN, 0};
  if (poll(&alive, 1, 0) > 0) _exit(125);  // supervisor already gone
  std::vector<UniqueFd> idmapped_trees;
  if (plan.userns) {
    if (auto s = InjectedFailure(plan, "userns"); !s) Die(plan, s.error());
    if (plan.remap_root) {
      auto trees = TakeRemappedIdentity(plan.remap_fd, plan.idmapped_roots.size());
      if (!trees) Die(plan, trees.error());
      idmapped_trees = std::move(*trees);
      ::close(plan.remap_fd);
      // Changing ids cleared the parent-death signal: again, then the supervisor may not have
      // gone in between.
      prctl(PR_SET_PDEATHSIG, plan.pidns ? SIGKILL : SIGUSR2);
      if (poll(&alive, 1, 0) > 0) _exit(125);
    } else if (auto s = MapIds(plan); !s) {
      Die(plan, s.error());
    }
    // Before the command can make inotify instances or namespaces: they count against the
    // caller's quota too.
    if (auto s = ApplyUserNsLimits(plan.user_limits); !s) Die(plan, s.error());
  }
  // After the id maps (which need our own /proc/self files): nothing in the sandbox may
  // attach to or read the memory of its init.
  prctl(PR_SET_DUMPABLE, 0);
  if (plan.mountns) {
    if (auto s = InjectedFailure(plan, "mount"); !s) Die(plan, s.error());
    MountViewOptions options;
    options.mount_proc = plan.pidns && !plan.view.runtime_from_call;
    options.tmp_size = plan.spec->limits.tmp_size;
    options.shm_size = plan.shm_size;
    options.defer_workspace_paths = plan.warm;
    options.idmapped_roots = plan.idmapped_roots;
    for (const auto& tree : idmapped_trees) options.idmapped_trees.push_back(tree.Get());
    options.terminal = plan.streams->terminal;
    if (auto s = BuildMountView(plan.view, options); !s) Die(plan, s.error());
    idmapped_trees.clear();  // attached: the view holds them now
    if (!plan.warm) {
      if (auto s = VerifyMountView(plan.view); !s) Die(plan, s.error());
    }
  }
  if (plan.spec->proxy_channel) {
    if (auto s = HandOverProxyListeners(plan); !s) Die(plan, s.error());
  }
  if (auto s = UseOwnLoopback(plan); !s) Die(plan, s.error());
  if (!plan.pidns) prctl(PR_SET_CHILD_SUBREAPER, 1);
  if (plan.go_fd >= 0) {
    // Nothing may fork before the supervisor has put us in the pids cgroup.
    char go = 0;
    if (::read(plan.go_fd, &go, 1) != 1 || go != 'g') _exit(125);
    ::close(plan.go_fd);
  }
  if (plan.warm) TakeWarmCall(plan);
  if (plan.streams->terminal) {
    auto slave = OpenSandboxTerminal(*plan.streams);
    if (!slave) Die(plan, slave.error());
    plan.terminal_slave = slave->Release();
    ::close(plan.streams->terminal_channel);
  }

  struct sigaction fwd {};
  fwd.sa_handler = ForwardSignal;
  // SIGCONT: the supervisor continues a command that stopped (^Z) when it is itself continued.
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGWINCH, SIGCONT})
    sigaction(sig, &fwd, nullptr);
  struct sigaction killer {};
  killer.sa_handler = RequestKillTree;
  sigaction(SIGUSR2, &killer, nullptr);

  // vfork: the command shares init's memory until it execs, so starting it copies no page
  // tables and costs init no copy-on-write faults afterwards. Safe here: init is single-threaded
  // and suspended until the exec (or _exit), every signal is still blocked (ConfineAndExec resets
  // the handlers before unblocking), and ConfineAndExec never returns.
  UniqueFd failed_r, failed_w;
  if (plan.warm) {
    int failed[2];
    if (pipe2(failed, O_CLOEXEC | O_NONBLOCK) != 0) Die(plan, SysFail("sandbox", "pipe").value());
    failed_r = UniqueFd(failed[0]);
    failed_w = UniqueFd(failed[1]);
    plan.command_failed_fd = failed_w.Get();
  }
#if ANVIL_SANITIZED
  // Sanitizer runtimes keep shadow state for the stack the vfork child would share: fork.
  pid_t command = fork();
#else
  pid_t command = vfork();
#endif
  if (command < 0) Die(plan, SysFail("sandbox", "start the command").value());
  if (command == 0) ConfineAndExec(plan);
  g_command_pid = command;
  failed_w.Reset();
  // Where the command may trace (LaunchSpec::allow_tracing), a process tracing it that never
  // waits keeps its exit from init: the kernel reports a traced process's exit to its tracer
  // only, and hands it to the parent once the tracer has waited for it or is gone. Its pidfd
  // is readable at the exit all the same: the wait below watches it, and when nothing is left
  // to reap, the run ends as at any exit of the command. The filter keeps every other sandbox
  // (sys.exec's tools) from tracing: no pidfd there. Without pidfd_open (Linux < 5.3) or with
  // no descriptor left, -1: the plain wait of before, which such a tracer can still hold until
  // it ends or the deadline.
  UniqueFd command_exit;
  if (plan.allow_tracing)
    command_exit = UniqueFd(static_cast<int>(syscall(SYS_pidfd_open, command, 0)));
  sigset_t mask;
  sigemptyset(&mask);
  if (command_exit) sigaddset(&mask, SIGCHLD);  // let in only while the wait sleeps
  sigprocmask(SIG_SETMASK, &mask, nullptr);
  std::optional<RefusalObserver> observer;
  if (plan.observer_init_fd >= 0) {
    ::close(plan.observer_command_fd);  // the command's copy is its own (closed at its exec)
    int listener = ReceiveRefusalListener(plan.observer_init_fd);
    ::close(plan.observer_init_fd);
    if (listener >= 0) {
      // The proxy's listeners (HandOverProxyListeners) are the sandbox's own loopback port.
      std::vector<uint16_t> own_ports;
      if (plan.spec->policy.network == NetworkMode::kProxy) own_ports.push_back(kProxyPort);
      observer.emplace(
          listener, plan.view, plan.spec->policy, own_ports,
          [&plan](const Refusal& r) {
            SendRecord(plan.report_fd, kRefusal, 0, 0,
                       EncodeRefusal(r, sizeof(Record::message) - 1));
          },
          [&plan](const std::string& address) {
            SendRecord(plan.report_fd, kRefusalWithdrawn, 0, 0, address);
          });
    }
  }
  if (command_exit && !observer) {
    struct sigaction chld {};
    chld.sa_handler = OnChild;
    sigaction(SIGCHLD, &chld, nullptr);
  }
  ::close(plan.alive_fd);
  plan.spec->program.Reset();
  if (plan.stdin_fd >= 0) ::close(plan.stdin_fd);
  CloseCommandEnds(*plan.streams);  // init keeps the terminal's slave: GrantTerminal

  int command_status = 0;
  bool command_done = false;
  bool reap_pending = false;  // WaitChild's
  // With a pseudo-terminal, a stopped command is reported, so that anvil stops with it.
  const int wait_flags = plan.streams->terminal ? WUNTRACED : 0;
  while (!command_done) {
    int status = 0;
    pid_t r = observer ? observer->WaitPid(&status, wait_flags, command_exit.Get())
                       : WaitChild(&status, wait_flags, command_exit.Get(), reap_pending);
    if (r == 0) {
      // The command has exited, and a process tracing it holds the exit (it never waits). End
      // the rest of the sandbox, as the command's exit would: with its tracer gone the kernel
      // hands the exit, its status intact, to init, which a plain wait then takes (the pidfd
      // stays readable: no longer watched).
      KillOthers(plan);
      command_exit.Reset();
      continue;
    }
    if (r < 0) {
      if (errno == EINTR) {
        if (g_kill_tree) break;
        continue;
      }
      break;  // ECHILD: nothing left
    }
    if (WIFSTOPPED(status) && ptrace(PTRACE_DETACH, r, nullptr,
                                     reinterpret_cast<void*>(static_cast<long>(
                                         ReleasedTraceeSignal(WSTOPSIG(status))))) == 0) {
      continue;  // init was its tracer (ReleasedTraceeSignal); a job-control stop is not ours
    }
    if (r == command && WIFSTOPPED(status)) {
      const bool taken = GrantTerminal(plan.terminal_slave, command, WSTOPSIG(status));
      SendRecord(plan.report_fd, taken ? kTerminalTaken : kCommandStopped, WSTOPSIG(status), 0, "");
      continue;
    }
    if (r == command) {
      command_status = status;
      command_done = true;
    }
  }
  if (!plan.pidns) KillDescendants();
  if (observer && observer->dropped() > 0) {
    SendRecord(plan.report_fd, kRefusalsDropped, static_cast<int>(observer->dropped()), 0, "");
  }
  if (command_done) {
    SendRecord(plan.report_fd, kExitStatus, command_status, 0, "");
    char failed = 0;
    bool command_failed = failed_r && ::read(failed_r.Get(), &failed, 1) == 1;
    if (plan.warm && !command_failed) {
      // Warm start: end every other process of the sandbox now (the pid namespace's teardown
      // would, but only after the mount namespace's), then tell the caller the call is over,
      // so its answer does not wait for the teardown (sandbox_launch.h, kWarmCallDone).
      if (plan.pidns) kill(-1, SIGKILL);
      while (waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
      }
      char done[1 + sizeof(int32_t)];
      done[0] = kWarmCallDone;
      int32_t status = command_status;
      std::memcpy(done + 1, &status, sizeof(status));
      ssize_t ignored = ::send(plan.spec->call_channel.Get(), done, sizeof(done), MSG_NOSIGNAL);
      (void)ignored;
    }
  }
  RemoveWorkspaceLink();
  _exit(command_done ? 0 : 124);
}

}  // namespace anvil::launch
