#include "linux/sandbox_launch.h"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/sanitizer.h"
#include "ipc/fd_passing.h"
#include "linux/capabilities.h"
#include "linux/git_walk_cache.h"
#include "linux/host_socket_facts.h"
#include "linux/landlock.h"
#include "linux/landlock_rules.h"
#include "linux/loopback.h"
#include "linux/memory_cgroup.h"
#include "linux/mount_view.h"
#include "linux/pids_cgroup.h"
#include "linux/program_exec.h"
#include "linux/protected_placeholders.h"
#include "linux/refusal_observer.h"
#include "linux/root_remap.h"
#include "linux/seccomp.h"
#include "linux/terminal_relay.h"
#include "linux/trust_shield.h"
#include "linux/user_ns_limits.h"

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace anvil {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<char*> CStrings(std::vector<std::string>& strings);
bool IsScript(int fd);

// Messages from the sandbox's init and command processes to the supervisor, one pipe write
// each (smaller than PIPE_BUF, so never interleaved).
enum RecordKind : uint32_t {
  kSetupError = 1,
  kExecError = 2,
  kExitStatus = 3,
  kLayers = 4,
  kCallTaken = 5,  // warm start: init holds the call; the deadline starts now
  // With a pseudo-terminal: the command stopped (^Z), and anvil stops with it.
  kCommandStopped = 6,
  // With a pseudo-terminal: the command reached for it; anvil relays the user's keys from now on.
  kTerminalTaken = 7,
  kRefusal = 8,          // message: EncodeRefusal
  kRefusalsDropped = 9,  // value: refusals seen past the observer's cap
};
struct Record {
  uint32_t kind;
  int32_t value;
  int32_t err;
  uint32_t layers;
  char message[240];
};
static_assert(sizeof(Record) <= PIPE_BUF);

enum LayerBits : uint32_t {
  kBitUserNs = 1 << 0,
  kBitPidNs = 1 << 1,
  kBitMountNs = 1 << 2,
  kBitNetNs = 1 << 3,
  kBitSeccomp = 1 << 4,
  kBitNoNewPrivs = 1 << 5,
  kBitSubreaper = 1 << 6,
  kBitLandlockNet = 1 << 7,
  kBitLandlockScoped = 1 << 8,
  kBitProcessLimit = 1 << 9,
  kBitRefusalObserver = 1 << 10,
  // bits 16..23: Landlock ABI applied
};

void SendRecord(int fd, RecordKind kind, int value, int err, const std::string& message,
                uint32_t layers = 0) {
  Record r{};
  r.kind = kind;
  r.value = value;
  r.err = err;
  r.layers = layers;
  std::strncpy(r.message, message.c_str(), sizeof(r.message) - 1);
  ssize_t ignored = ::write(fd, &r, sizeof(r));
  (void)ignored;
}

// Everything decided before the clone; the children only read it.
struct Plan {
  LaunchSpec* spec = nullptr;
  bool confine_fs = false;
  FileView view;
  seccomp::Program filter;
  int landlock_abi = 0;
  bool userns = false, pidns = false, mountns = false, netns = false;
  uid_t uid = 0;
  gid_t gid = 0;
  int report_fd = -1;  // write end of the record pipe
  int alive_fd = -1;   // read end; HUP when the supervisor is gone
  int go_fd = -1;      // read end; one byte once init is in its pids cgroup (-1: no wait)
  // cgroup v1: `tasks` of the pids and memory cgroups, through which init joins them itself
  // (PidsCgroup/MemoryCgroup::OpenSelfAttach); -1 where the supervisor moves it instead.
  int cgroup_tasks_fds[2] = {-1, -1};
  bool program_is_script = false;
  bool process_limit = false;  // RLIMIT_NPROC in our user namespace, or a pids cgroup
  bool warm = false;           // spec->call_channel: the call arrives after the set-up
  // Root's sandbox (root_remap.h): its 0 maps to an unprivileged host id, the supervisor writes
  // the maps and hands init idmapped trees of these roots over remap_fd (init's end).
  bool remap_root = false;
  std::vector<std::string> idmapped_roots;
  int remap_fd = -1;
  // The sandbox's user namespace's share of the caller's per-user counts (user_ns_limits.h).
  std::vector<UserNsLimit> user_limits;
  int stdin_fd = -1;  // warm start: the call's stdin, made fd 0 of the command
  // Warm start: the write end of a pipe on which the command, before it execs, writes one byte
  // when it fails (a layer, or the exec): its exit status is then not the tool's.
  int command_failed_fd = -1;
  const ChildStdStreams* streams = nullptr;  // what the command's descriptors 0-2 become
  int terminal_slave = -1;                   // init: the pseudo-terminal's slave, for the command
  // LaunchSpec::observe_refusals: the two ends of the socketpair on which the command hands
  // its seccomp listener to init (linux/refusal_observer.h); -1 without.
  int observer_command_fd = -1;
  int observer_init_fd = -1;
  std::vector<char*> argv, envp;
};

void MarkCommandFailed(const Plan& plan) {
  if (plan.command_failed_fd < 0) return;
  ssize_t ignored = ::write(plan.command_failed_fd, "F", 1);
  (void)ignored;
}

[[noreturn]] void Die(const Plan& plan, const Error& error) {
  MarkCommandFailed(plan);
  SendRecord(plan.report_fd, kSetupError, 0, error.sys_errno, error.ToString());
  _exit(125);
}

Status InjectedFailure(const Plan& plan, const char* step) {
  if (plan.spec->fail_step_for_testing == step) {
    return Fail("sandbox", std::string("injected failure of the ") + step + " layer (test)");
  }
  return Ok();
}

Status WriteFile(const char* path, const std::string& text) {
  UniqueFd fd(::open(path, O_WRONLY | O_CLOEXEC));
  if (!fd) return SysFail("sandbox", std::string("open ") + path);
  if (::write(fd.Get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    return SysFail("sandbox", std::string("write ") + path);
  }
  return Ok();
}

Status MapIds(const Plan& plan) {
  // A single-ID map of our own uid/gid: no setuid helper needed, and no other host user can
  // be impersonated from inside.
  if (auto s = WriteFile("/proc/self/setgroups", "deny"); !s) return s;
  if (auto s = WriteFile("/proc/self/uid_map",
                         std::to_string(plan.uid) + " " + std::to_string(plan.uid) + " 1");
      !s)
    return s;
  return WriteFile("/proc/self/gid_map",
                   std::to_string(plan.gid) + " " + std::to_string(plan.gid) + " 1");
}

Status SetLimit(int resource, uint64_t value, const char* name) {
  rlimit current{};
  if (getrlimit(resource, &current) != 0)
    return SysFail("sandbox", std::string("getrlimit ") + name);
  rlim_t v = static_cast<rlim_t>(value);
  // Only ever lower a limit: the hard limit cannot be raised without privilege anyway.
  rlimit next{std::min(v, current.rlim_max), std::min(v, current.rlim_max)};
  if (setrlimit(resource, &next) != 0) return SysFail("sandbox", std::string("setrlimit ") + name);
  return Ok();
}

Status ApplyLimits(const Plan& plan) {
  const ResourceLimits& l = plan.spec->limits;
  if (auto s = SetLimit(RLIMIT_CORE, 0, "core"); !s) return s;
  // RLIMIT_NPROC counts per user *namespace*; outside one it would count every process of
  // the uid on the host, so it is only a per-sandbox bound when we made a user namespace.
  if (l.processes && plan.userns) {
    if (auto s = SetLimit(RLIMIT_NPROC, *l.processes, "nproc"); !s) return s;
  }
  if (l.open_files) {
    if (auto s = SetLimit(RLIMIT_NOFILE, *l.open_files, "nofile"); !s) return s;
  }
  if (l.address_space) {
    if (auto s = SetLimit(RLIMIT_AS, *l.address_space, "as"); !s) return s;
  }
  if (l.data) {
    if (auto s = SetLimit(RLIMIT_DATA, *l.data, "data"); !s) return s;
  }
  if (l.file_size) {
    if (auto s = SetLimit(RLIMIT_FSIZE, *l.file_size, "fsize"); !s) return s;
  }
  if (l.cpu_seconds) {
    if (auto s = SetLimit(RLIMIT_CPU, *l.cpu_seconds, "cpu"); !s) return s;
  }
  return Ok();
}

// The command's Landlock rule set (linux/landlock_rules.h), for the namespaces it ended up with.
landlock::RulesetPlan LandlockPlan(const Plan& plan) {
  return landlock::LandlockRulesFor(plan.view, plan.spec->policy.network, plan.landlock_abi,
                                    {plan.mountns, plan.pidns, plan.netns}, getpid(), kProxyPort);
}

Status ApplyLandlock(const Plan& plan, const landlock::RulesetPlan& rules) {
  if (auto s = InjectedFailure(plan, "landlock"); !s) return s;
  auto rs = landlock::Ruleset::Create(rules.abi, rules.handle_net, rules.scopes);
  if (!rs) return tl::unexpected(rs.error());
  for (uint16_t port : rules.tcp_connect_ports) {
    if (auto s = rs->AllowTcpConnect(port); !s) return s;
  }
  if (auto s = rs->AllowRules(rules.rules); !s) return s;
  return rs->Restrict();
}

[[noreturn]] void RunCommand(Plan& plan) {
  LaunchSpec& spec = *plan.spec;
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);

  // Never the caller's session: the caller's terminal is never its controlling terminal
  // (TIOCSTI, job-control signals), and its own process group is one group to kill. With a
  // terminal among the caller's descriptors 0-2, it is a job of the session of the sandbox's
  // pseudo-terminal instead (terminal_relay.h).
  if (auto s = EnterCommandSession(*plan.streams, plan.terminal_slave); !s) Die(plan, s.error());
  if (auto s = PlaceStdStreams(*plan.streams, plan.terminal_slave, plan.stdin_fd); !s) {
    Die(plan, s.error());
  }
  // No descriptor the caller leaked (a directory fd outside, a socket) crosses exec.
  if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    Die(plan, SysFail("sandbox", "close_range").value());
  }
  if (auto s = ApplyLimits(plan); !s) Die(plan, s.error());
  if (::chdir(spec.cwd.c_str()) != 0) {
    Die(plan, SysFail("sandbox", "working directory " + spec.cwd + " is not visible in the sandbox")
                  .value());
  }
  uint32_t layers = 0;
  bool harden = plan.confine_fs || !plan.filter.Empty();
  if (harden) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
      Die(plan, SysFail("sandbox", "no_new_privs").value());
    }
    layers |= kBitNoNewPrivs;
  }
  if (plan.confine_fs) {
    const landlock::RulesetPlan rules = LandlockPlan(plan);
    if (auto s = ApplyLandlock(plan, rules); !s) Die(plan, s.error());
    layers |= static_cast<uint32_t>(rules.abi) << 16;
    if (rules.handle_net) layers |= kBitLandlockNet;
    if (rules.scopes != 0) layers |= kBitLandlockScoped;
  }
  if (harden) {
    if (auto s = DropAllCapabilities(); !s) Die(plan, s.error());
  }
  if (!plan.filter.Empty()) {
    if (auto s = InjectedFailure(plan, "seccomp"); !s) Die(plan, s.error());
    if (auto s = plan.filter.Install(); !s) Die(plan, s.error());
    layers |= kBitSeccomp;
  }
  if (plan.observer_command_fd >= 0) {
    // Last: nothing between here and the exec may be a syscall the observer stops, since init
    // (suspended by vfork) can only answer once the exec is done.
    auto installed =
        InstallRefusalObserver(plan.observer_command_fd, spec.policy.network != NetworkMode::kFull);
    if (installed == ObserverInstall::kUnanswered) {
      Die(plan, Error{"sandbox", "refusal observer: cannot hand over its listener", 0});
    }
    if (installed == ObserverInstall::kObserved) layers |= kBitRefusalObserver;
  }
  if (plan.userns) layers |= kBitUserNs;
  if (plan.pidns) layers |= kBitPidNs;
  if (plan.mountns) layers |= kBitMountNs;
  if (plan.netns) layers |= kBitNetNs;
  if (!plan.pidns) layers |= kBitSubreaper;
  if (plan.process_limit) layers |= kBitProcessLimit;
  SendRecord(plan.report_fd, kLayers, 0, 0, "", layers);
  ExecFailure failed = ExecProgram(spec.program.Get(), spec.program_path, plan.program_is_script,
                                   plan.argv.data(), plan.envp.data());
  int err = failed.err;
  std::string why = std::string(spec.argv[0]) + ": " + std::strerror(err);
  if (failed.replaced) {
    why = spec.program_path +
          ": replaced after it was looked up (the path names another file in the sandbox "
          "than the one resolved outside); nothing ran";
  } else if (err == EACCES && plan.confine_fs) {
    why += " (outside the paths this policy can read? try --read-access full or a system path)";
  }
  MarkCommandFailed(plan);
  SendRecord(plan.report_fd, kExecError, 0, err, why);
  _exit(err == ENOENT ? 127 : 126);
}

volatile sig_atomic_t g_command_pid = 0;
volatile sig_atomic_t g_kill_tree = 0;

void ForwardSignal(int sig) {
  if (g_command_pid > 0) kill(-g_command_pid, sig);
}
void RequestKillTree(int) { g_kill_tree = 1; }

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

// Proxy mode, in init (inside the new network namespace, still holding its capabilities there):
// bring loopback up, listen on 127.0.0.1 and ::1 at kProxyPort, and hand the listening sockets
// to anvil-proxy outside, which accepts on them. Nothing of the proxy runs in here.
Status HandOverProxyListeners(Plan& plan) {
  if (auto s = InjectedFailure(plan, "proxy"); !s) return s;
  if (auto s = BringLoopbackUp(); !s) return s;
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
  if (auto s = BringLoopbackUp(); !s) return s;
  auto filter = seccomp::BuildCommandFilter(NetworkMode::kNone, plan.confine_fs,
                                            /*own_network_namespace=*/true);
  if (!filter) return tl::unexpected(filter.error());
  plan.filter = std::move(*filter);
  return Ok();
}

// The wire form of a WarmCall: a fixed header (carrying the two descriptors), then the strings,
// each NUL-terminated: argv, then the readable paths.
struct WarmCallHeader {
  uint32_t magic;
  uint32_t argc;
  uint32_t plan_strings;  // two per read plan op (EncodeReadPlan)
  uint32_t runtime_files;
  uint32_t body_bytes;
};
constexpr uint32_t kWarmCallMagic = 0x414e5644;  // "ANVD"
constexpr uint32_t kMaxWarmCallBody = 16u << 20;

Status ReadExactly(int fd, char* into, size_t n) {
  size_t off = 0;
  while (off < n) {
    ssize_t r = ::read(fd, into + off, n - off);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return SysFail("sandbox", "read the call");
    if (r == 0) return Fail("sandbox", "the call was cut short");
    off += static_cast<size_t>(r);
  }
  return Ok();
}

// A runtime file named by the call: an absolute, plain path (the view shows it at that path).
Status ValidateRuntimeFile(const std::string& path) {
  if (path.size() < 2 || path[0] != '/' || path.size() > 4096 || path.back() == '/' ||
      path.find("/./") != std::string::npos || path.find("/../") != std::string::npos ||
      path.find("//") != std::string::npos ||
      (path.size() >= 3 && path.compare(path.size() - 3, 3, "/..") == 0) ||
      (path.size() >= 2 && path.compare(path.size() - 2, 2, "/.") == 0)) {
    return Fail("sandbox", "malformed runtime file in the call: " + path);
  }
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
  // and suspended until the exec (or _exit), every signal is still blocked (RunCommand resets
  // the handlers before unblocking), and RunCommand never returns.
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
  if (command == 0) RunCommand(plan);
  g_command_pid = command;
  failed_w.Reset();
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  std::optional<RefusalObserver> observer;
  if (plan.observer_init_fd >= 0) {
    ::close(plan.observer_command_fd);  // the command's copy is its own (closed at its exec)
    int listener = ReceiveRefusalListener(plan.observer_init_fd);
    ::close(plan.observer_init_fd);
    if (listener >= 0) {
      observer.emplace(listener, plan.view, plan.spec->policy, [&plan](const Refusal& r) {
        SendRecord(plan.report_fd, kRefusal, 0, 0, EncodeRefusal(r, sizeof(Record::message) - 1));
      });
    }
  }
  ::close(plan.alive_fd);
  plan.spec->program.Reset();
  if (plan.stdin_fd >= 0) ::close(plan.stdin_fd);
  CloseCommandEnds(*plan.streams);  // init keeps the terminal's slave: GrantTerminal

  int command_status = 0;
  bool command_done = false;
  // With a pseudo-terminal, a stopped command is reported, so that anvil stops with it.
  const int wait_flags = plan.streams->terminal ? WUNTRACED : 0;
  while (!command_done) {
    int status = 0;
    pid_t r = observer ? observer->WaitPid(&status, wait_flags) : waitpid(-1, &status, wait_flags);
    if (r < 0) {
      if (errno == EINTR) {
        if (g_kill_tree) break;
        continue;
      }
      break;  // ECHILD: nothing left
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
  _exit(command_done ? 0 : 124);
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

bool IsScript(int fd) {
  UniqueFd f(::open(("/proc/self/fd/" + std::to_string(fd)).c_str(), O_RDONLY | O_CLOEXEC));
  char magic[2] = {};
  return f && ::read(f.Get(), magic, 2) == 2 && magic[0] == '#' && magic[1] == '!';
}

SandboxOutcome SetupFailure(std::string message, Clock::time_point start) {
  SandboxOutcome out;
  out.kind = SandboxOutcome::Kind::kSetupFailed;
  out.error = std::move(message);
  out.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return out;
}

}  // namespace

Status SendWarmCall(int channel, int program_fd, int stdin_fd, const WarmCall& call) {
  if (call.argv.empty()) return Fail("invalid", "a call needs argv[0]");
  std::string body;
  auto add = [&body](const std::string& s) -> Status {
    if (s.find('\0') != std::string::npos) return Fail("invalid", "NUL in a call string");
    body += s;
    body.push_back('\0');
    return Ok();
  };
  const std::vector<std::string> plan = EncodeReadPlan(call.read_plan);
  for (const auto& list : {&call.argv, &plan, &call.runtime_files}) {
    for (const auto& item : *list) {
      if (auto s = add(item); !s) return s;
    }
  }
  if (body.size() > kMaxWarmCallBody) return Fail("limit", "call too large for the sandbox");
  WarmCallHeader header{
      kWarmCallMagic, static_cast<uint32_t>(call.argv.size()), static_cast<uint32_t>(plan.size()),
      static_cast<uint32_t>(call.runtime_files.size()), static_cast<uint32_t>(body.size())};
  const int fds[2] = {program_fd, stdin_fd};
  ssize_t n = ipc::SendWithFds(channel, &header, sizeof(header), fds);
  if (n != static_cast<ssize_t>(sizeof(header))) {
    return SysFail("io", "the sandbox is gone before the call");
  }
  size_t off = 0;
  while (off < body.size()) {
    ssize_t w = ::send(channel, body.data() + off, body.size() - off, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return SysFail("io", "the sandbox is gone before the call");
    off += static_cast<size_t>(w);
  }
  return Ok();
}

int SandboxOutcome::ShellStatus() const {
  switch (kind) {
    case Kind::kExited:
      return exit_status;
    case Kind::kSignaled:
      return 128 + exit_status;
    case Kind::kTimedOut:
      return 124;
    case Kind::kSetupFailed:
      return 125;
    case Kind::kExecFailed:
      return exec_errno == ENOENT ? 127 : 126;
  }
  return 125;
}

Result<UniqueFd> OpenExecutable(const std::string& command, const std::string& path_env,
                                const std::string& cwd) {
  auto program = ResolveProgram(command, path_env, cwd);
  if (!program) return tl::unexpected(program.error());
  return std::move(program->fd);
}

SandboxOutcome RunSandboxed(LaunchSpec spec) {
  const auto start = Clock::now();
  Plan plan;
  plan.spec = &spec;
  plan.uid = geteuid();
  plan.gid = getegid();
  const SandboxPolicy& policy = spec.policy;
  if (policy.network == NetworkMode::kProxy &&
      (!spec.proxy_channel || !policy.ConfinesFilesystem())) {
    return SetupFailure(
        "sandbox: --network proxy needs the proxy (anvil-proxy) and a read-only or "
        "workspace-write policy",
        start);
  }
  plan.warm = static_cast<bool>(spec.call_channel);
  if (plan.warm) {
    // The call brings the program, argv and readable paths; everything else is set up first.
    if (spec.program || !spec.argv.empty() || !policy.workspace_read_subpaths ||
        !policy.workspace_read_subpaths->empty()) {
      return SetupFailure(
          "sandbox: a warm start takes the program, argv and readable paths from the call only",
          start);
    }
  } else {
    if (!spec.program) return SetupFailure("sandbox: no program to run", start);
    if (spec.argv.empty()) return SetupFailure("sandbox: empty argv", start);
    plan.program_is_script = IsScript(spec.program.Get());
  }

  plan.confine_fs = policy.ConfinesFilesystem();
  // Lives until the command and every process of its pid namespace are gone (the returns below
  // come after that), then removes the placeholders it made.
  ProtectedPlaceholders placeholders;
  // Declared after `placeholders`: ends first, so its locks are gone when they are removed.
  std::optional<GitGuard> git;
  std::optional<GitWalkCache> walk_cache;  // the walk kept for the next run (git_walk_cache.h)
  size_t walk_cached_dirs = 0;
  if (plan.confine_fs) {
    HostFs host = RealHostFs();
    host.bound_unix_sockets = HostSocketLocator();
    auto view = ComputeFileView(policy, host);
    if (!view) return SetupFailure(view.error().ToString(), start);
    if (!view->writable_roots.empty()) {
      // A .git missing from a writable root becomes an empty directory the view binds
      // read-only, so the command cannot create one with hooks (protected_placeholders.h).
      // (.anvil has no placeholder: nothing reads a workspace's .anvil that the command made.)
      std::vector<std::string> roots, names;
      for (const auto& wr : view->writable_roots) roots.push_back(wr.root);
      if (!policy.writable_git) names.emplace_back(".git");
      auto made = ProtectedPlaceholders::Create(roots, names);
      if (!made) return SetupFailure(made.error().ToString(), start);
      placeholders = std::move(*made);
      // Kept out of the command's reach in every run, --writable-git or not: a later run
      // trusts it.
      walk_cache.emplace(GitWalkCache::Open());
      const std::vector<std::string> covered =
          view->private_tmp ? std::vector<std::string>{"/tmp"} : std::vector<std::string>{};
      auto shield = ShieldFor(*walk_cache, roots, covered);
      if (!shield) return SetupFailure(shield.error().ToString(), start);
      // Anvil's own rules, keys, config and grants: read-only whatever root holds them.
      auto trust = ShieldAnvilTrustDirs(AnvilTrustDirs(TrustEnvFromProcess()), roots, covered);
      if (!trust) return SetupFailure(trust.error().ToString(), start);
      MergeShield(*shield, *trust);
      if (!policy.writable_git) {
        // Every repository in the writable roots and what its config names (git_guard.h).
        auto cached = walk_cache->Load(roots);
        if (cached) walk_cached_dirs = cached->dirs.size();
        auto guard = GitGuard::Prepare(roots, spec.git_scan_limits, GitEnvFromProcess(),
                                       RealGitFs(), cached ? &*cached : nullptr);
        if (!guard) return SetupFailure(guard.error().ToString(), start);
        git.emplace(std::move(*guard));
      }
      // Again even when this run made none: another run may have made one (now held by this
      // run's lock) after the first computation looked.
      std::vector<std::string> read_only = shield->read_only;
      if (git) {
        read_only.insert(read_only.end(), git->ReadOnlyPaths().begin(), git->ReadOnlyPaths().end());
      }
      view = ComputeFileView(policy, host, read_only);
      if (!view) return SetupFailure(view.error().ToString(), start);
      view->pinned_dirs = shield->pinned;
    }
    plan.view = std::move(*view);
    auto probe = landlock::ProbeAbi();
    if (probe.abi < 1) {
      return SetupFailure("sandbox: Landlock is required for policy " +
                              std::string(ToString(policy.kind)) + " but " + probe.reason +
                              " (see `anvil doctor`)",
                          start);
    }
    plan.landlock_abi = probe.abi;
  }
  // Every policy but danger-full-access gets a filter: at least the set-id rules
  // (seccomp_setid.h) and, without the full network, the socket rules.
  if (policy.kind != PolicyKind::kDangerFullAccess) {
    auto filter = seccomp::BuildCommandFilter(policy.network, /*deny_list=*/plan.confine_fs);
    if (!filter) return SetupFailure(filter.error().ToString(), start);
    plan.filter = std::move(*filter);
  }

  // Root's sandbox runs as an unprivileged host id (root_remap.h), which RLIMIT_NPROC in its
  // user namespace bounds; its pids cgroup is a second bound that does not depend on the id
  // mapping (pids_cgroup.h).
  std::optional<PidsCgroup> pids;
  if (plan.confine_fs && spec.limits.processes && geteuid() == 0) {
    auto cg = PidsCgroup::Create(*spec.limits.processes);
    if (cg) pids.emplace(std::move(*cg));
  }
  UniqueFd pids_tasks;
  if (pids) pids_tasks = pids->OpenSelfAttach();
  plan.cgroup_tasks_fds[0] = pids_tasks.Get();
  std::optional<MemoryCgroup> memory;
  const uint64_t memory_limit = spec.limits.memory == ResourceLimits::kDefaultMemoryCeiling
                                    ? DefaultMemoryCeiling()
                                    : spec.limits.memory;
  UniqueFd memory_tasks;
  if (plan.confine_fs && memory_limit > 0) {
    auto cg = MemoryCgroup::Create(memory_limit, pids ? pids->path() : "");
    if (cg) memory.emplace(std::move(*cg));
    if (memory) memory_tasks = memory->OpenSelfAttach();
    plan.cgroup_tasks_fds[1] = memory_tasks.Get();
  }
  // What the command's descriptors 0-2 become (std_streams.h); relayed from the loop below.
  auto prepared = StdStreamRelay::Prepare(plan.confine_fs, spec.limits.file_size);
  if (!prepared) return SetupFailure(prepared.error().ToString(), start);
  StdStreamRelay relay = std::move(*prepared);
  plan.streams = &relay.Child();

  int go[2] = {-1, -1};
  if (((pids && !pids_tasks) || (memory && !memory_tasks)) && pipe2(go, O_CLOEXEC) != 0) {
    return SetupFailure("sandbox: pipe failed", start);
  }
  UniqueFd go_read(go[0]), go_write(go[1]);
  plan.go_fd = go_read.Get();

  UniqueFd observer_command, observer_init;
  if (spec.observe_refusals && plan.confine_fs && !plan.warm) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
      return SetupFailure("sandbox: socketpair failed", start);
    }
    observer_command = UniqueFd(sv[0]);
    observer_init = UniqueFd(sv[1]);
    plan.observer_command_fd = observer_command.Get();
    plan.observer_init_fd = observer_init.Get();
  }
  int report[2], alive[2];
  if (pipe2(report, O_CLOEXEC) != 0) return SetupFailure("sandbox: pipe failed", start);
  UniqueFd report_read(report[0]), report_write(report[1]);
  if (pipe2(alive, O_CLOEXEC) != 0) return SetupFailure("sandbox: pipe failed", start);
  UniqueFd alive_read(alive[0]), alive_write(alive[1]);
  plan.report_fd = report_write.Get();
  plan.alive_fd = alive_read.Get();
  plan.argv = CStrings(spec.argv);
  plan.envp = CStrings(spec.env);
  UniqueFd remap_parent, remap_child;
  if (plan.confine_fs && geteuid() == 0) {
    plan.remap_root = true;
    plan.idmapped_roots = IdmappedRoots(plan.view);
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
      return SetupFailure("sandbox: socketpair failed", start);
    }
    remap_parent = UniqueFd(pair[0]);
    remap_child = UniqueFd(pair[1]);
    plan.remap_fd = remap_child.Get();
  }

  sigset_t forwarded, saved;
  sigemptyset(&forwarded);
  // SIGPIPE too: writing the go byte to an init that already failed must be an EPIPE, not
  // the death of the supervisor (the loop below drains it from the signalfd).
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGWINCH, SIGCHLD, SIGPIPE}) {
    sigaddset(&forwarded, sig);
  }
  relay.AddSignals(&forwarded);
  sigprocmask(SIG_BLOCK, &forwarded, &saved);

  unsigned long flags = 0;
  if (plan.confine_fs) {
    plan.user_limits = SandboxUserNsLimits(ReadUserNsLimits());
    flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC;
    if (policy.network != NetworkMode::kFull) flags |= CLONE_NEWNET;
  }
  int pidfd = -1;
  long pid = -1;
  auto try_clone = [&](unsigned long f) {
    plan.userns = f & CLONE_NEWUSER;
    plan.pidns = f & CLONE_NEWPID;
    plan.mountns = f & CLONE_NEWNS;
    plan.netns = f & CLONE_NEWNET;
    // RLIMIT_NPROC counts per user namespace, and binds root's sandbox too (its host id is
    // not 0).
    plan.process_limit = pids.has_value() || ((f & CLONE_NEWUSER) && spec.limits.processes);
    if (spec.fail_step_for_testing == "clone" && (f & CLONE_NEWUSER)) {
      errno = EPERM;
      return -1L;
    }
    return syscall(SYS_clone, f | CLONE_PIDFD | SIGCHLD, nullptr, &pidfd, nullptr, 0);
  };
  pid = try_clone(flags);
  int clone_errno = errno;
  // Root has no fallback: without a user namespace its command would be host uid 0, the owner
  // of every root-only file (root_remap.h).
  if (pid < 0 && (flags & CLONE_NEWUSER) && !plan.remap_root &&
      policy.kind == PolicyKind::kReadOnly && policy.network != NetworkMode::kProxy) {
    // Read-only needs no mount view: Landlock alone denies every write and every read
    // outside the roots; a subreaper replaces the pid namespace. /tmp is then not writable.
    pid = try_clone(0);
  }
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &saved, nullptr);
    std::string why = std::strerror(clone_errno);
    if (plan.remap_root) {
      return SetupFailure(
          "sandbox: cannot create the user namespace root's sandbox runs in (" + why +
              "): a command started by root runs as an unprivileged id inside one, so that it "
              "cannot read root's files (docs/policy.md, \"Root's sandbox\"). fix: allow user "
              "namespaces (sysctl user.max_user_namespaces > 0). See `anvil doctor`.",
          start);
    }
    return SetupFailure(
        "sandbox: cannot create the user/mount/pid namespaces this policy needs (" + why +
            "). The writable view with read-only .git needs a mount namespace; as an "
            "unprivileged user that needs user namespaces (sysctl "
            "kernel.unprivileged_userns_clone=1, "
            "or on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0). See `anvil doctor`.",
        start);
  }
  if (pid == 0) {
    report_read.Release();  // never closed explicitly in the child: it execs or _exits
    RunInit(plan);
  }
  UniqueFd init_fd(pidfd);
  relay.Started(init_fd.Get());
  report_write.Reset();
  observer_command.Reset();
  observer_init.Reset();
  // Init holds the only other end: its death is an EOF/EPIPE for whoever sends the call.
  spec.call_channel.Reset();
  alive_read.Reset();
  go_read.Reset();
  pids_tasks.Reset();
  remap_child.Reset();
  // A step of the supervisor failed: init never runs the command. When init failed first (its
  // step is why ours did), its own error is the one to report.
  auto abandon_init = [&](const Error& error) {
    syscall(SYS_pidfd_send_signal, init_fd.Get(), SIGKILL, nullptr, 0);
    while (waitpid(static_cast<pid_t>(pid), nullptr, 0) < 0 && errno == EINTR) {
    }
    sigprocmask(SIG_SETMASK, &saved, nullptr);
    std::string message = error.ToString();
    Record r;
    fcntl(report_read.Get(), F_SETFL, O_NONBLOCK);
    while (::read(report_read.Get(), &r, sizeof(r)) == static_cast<ssize_t>(sizeof(r))) {
      if (r.kind == kSetupError) {
        message.assign(r.message, strnlen(r.message, sizeof(r.message)));
        break;
      }
    }
    return SetupFailure(message, start);
  };
  if (plan.remap_root) {
    if (auto s =
            PrepareRemappedInit(static_cast<pid_t>(pid), plan.idmapped_roots, remap_parent.Get());
        !s) {
      return abandon_init(s.error());
    }
    remap_parent.Reset();
  }
  if (pids && plan.cgroup_tasks_fds[0] < 0) {
    if (auto s = pids->Attach(static_cast<pid_t>(pid)); !s) return abandon_init(s.error());
  }
  // Best effort, like the cgroup itself: where init cannot be moved there is no ceiling, and the
  // report says so.
  if (memory && plan.cgroup_tasks_fds[1] < 0 && !memory->Attach(static_cast<pid_t>(pid))) {
    memory.reset();
  }
  memory_tasks.Reset();
  if (go_write) {
    ssize_t ignored = ::write(go_write.Get(), "g", 1);
    (void)ignored;
    go_write.Reset();
  }

  UniqueFd sigfd(signalfd(-1, &forwarded, SFD_CLOEXEC | SFD_NONBLOCK));
  std::optional<Clock::time_point> deadline;
  if (spec.timeout && !plan.warm) deadline = start + *spec.timeout;
  auto call_start = start;
  bool timed_out = false;
  std::optional<Clock::time_point> kill_at;  // subreaper mode: grace before SIGKILL
  std::vector<Record> records;
  auto read_records = [&] {
    Record r;
    while (true) {
      ssize_t n = ::read(report_read.Get(), &r, sizeof(r));
      if (n == static_cast<ssize_t>(sizeof(r))) {
        records.push_back(r);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      return n == 0;  // EOF
    }
  };
  fcntl(report_read.Get(), F_SETFL, O_NONBLOCK);
  bool report_eof = false;
  while (true) {
    int wait_ms = -1;
    auto now = Clock::now();
    auto next = kill_at ? kill_at : (timed_out ? std::nullopt : deadline);
    if (next) {
      wait_ms =
          *next <= now
              ? 0
              : static_cast<int>(
                    std::chrono::duration_cast<std::chrono::milliseconds>(*next - now).count() + 1);
    }
    std::vector<pollfd> fds = {{init_fd.Get(), POLLIN, 0},
                               {report_eof ? -1 : report_read.Get(), POLLIN, 0},
                               {sigfd.Get(), POLLIN, 0}};
    relay.AddPollFds(fds);
    if (int relay_ms = relay.PollTimeoutMs(); relay_ms >= 0) {
      wait_ms = wait_ms < 0 ? relay_ms : std::min(wait_ms, relay_ms);
    }
    int n = poll(fds.data(), fds.size(), wait_ms);
    if (n < 0 && errno != EINTR) break;
    relay.OnPoll(fds.data() + 3, fds.size() - 3);
    if (fds[1].revents) {
      size_t before = records.size();
      report_eof = read_records();
      for (size_t i = before; i < records.size(); ++i) {
        if (records[i].kind == kCommandStopped) relay.OnCommandStopped();
        if (records[i].kind == kTerminalTaken) relay.OnTerminalTaken();
        if (records[i].kind == kCallTaken) {
          // Warm start: the call's time (deadline, duration) starts when init takes it.
          call_start = Clock::now();
          if (spec.timeout) deadline = call_start + *spec.timeout;
        }
      }
    }
    if (fds[2].revents) {
      signalfd_siginfo si;
      while (::read(sigfd.Get(), &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo != SIGCHLD && si.ssi_signo != SIGPIPE && !relay.OnSignal(si.ssi_signo)) {
          syscall(SYS_pidfd_send_signal, init_fd.Get(), si.ssi_signo, nullptr, 0);
        }
      }
    }
    if (fds[0].revents) break;
    now = Clock::now();
    if (kill_at && now >= *kill_at) {
      syscall(SYS_pidfd_send_signal, init_fd.Get(), SIGKILL, nullptr, 0);
      kill_at.reset();
    } else if (deadline && !timed_out && now >= *deadline) {
      timed_out = true;
      if (plan.pidns) {
        syscall(SYS_pidfd_send_signal, init_fd.Get(), SIGKILL, nullptr, 0);
      } else {
        syscall(SYS_pidfd_send_signal, init_fd.Get(), SIGUSR2, nullptr, 0);
        kill_at = Clock::now() + std::chrono::seconds(2);
      }
    }
  }
  int init_status = 0;
  while (waitpid(static_cast<pid_t>(pid), &init_status, 0) < 0 && errno == EINTR) {
  }
  // Every process of the sandbox is gone: the rest of its output, then the user's terminal back.
  relay.Finish();
  fcntl(report_read.Get(), F_SETFL, 0);
  if (!report_eof) read_records();
  {
    // A SIGPIPE of ours still pending must not fire when the caller's mask comes back.
    sigset_t pipe_only;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    timespec zero{0, 0};
    while (sigtimedwait(&pipe_only, nullptr, &zero) > 0) {
    }
  }
  sigprocmask(SIG_SETMASK, &saved, nullptr);

  SandboxOutcome out;
  out.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - call_start).count();
  out.layers.memory_limit = memory ? memory_limit : 0;
  out.out_of_memory = memory && memory->OomKills() > 0;
  bool have_exit = false;
  for (const Record& r : records) {
    std::string message(r.message, strnlen(r.message, sizeof(r.message)));
    switch (r.kind) {
      case kLayers:
        out.layers.user_namespace = r.layers & kBitUserNs;
        out.layers.pid_namespace = r.layers & kBitPidNs;
        out.layers.mount_namespace = r.layers & kBitMountNs;
        out.layers.net_namespace = r.layers & kBitNetNs;
        out.layers.seccomp = r.layers & kBitSeccomp;
        out.layers.no_new_privs = r.layers & kBitNoNewPrivs;
        out.layers.subreaper = r.layers & kBitSubreaper;
        out.layers.landlock_net = r.layers & kBitLandlockNet;
        out.layers.landlock_scoped = r.layers & kBitLandlockScoped;
        out.layers.landlock_abi = static_cast<int>((r.layers >> 16) & 0xff);
        out.layers.process_limit = r.layers & kBitProcessLimit;
        out.layers.refusal_observer = r.layers & kBitRefusalObserver;
        break;
      case kRefusal: {
        Refusal refusal;
        if (DecodeRefusal(message, refusal)) out.refusals.push_back(std::move(refusal));
        break;
      }
      case kRefusalsDropped:
        out.refusals_dropped = static_cast<size_t>(std::max(0, r.value));
        break;
      case kSetupError:
        out.kind = SandboxOutcome::Kind::kSetupFailed;
        out.error = message;
        return out;
      case kExecError:
        out.kind = SandboxOutcome::Kind::kExecFailed;
        out.exec_errno = r.err;
        out.error = (r.err == ENOENT ? "not_found: " : "not_executable: ") + message;
        return out;
      case kExitStatus:
        have_exit = true;
        if (WIFSIGNALED(r.value)) {
          out.kind = SandboxOutcome::Kind::kSignaled;
          out.exit_status = WTERMSIG(r.value);
        } else {
          out.kind = SandboxOutcome::Kind::kExited;
          out.exit_status = WEXITSTATUS(r.value);
        }
        break;
      default:
        break;
    }
  }
  if (git) {
    // Every process of the command is gone (init was pid 1 of its namespace, or killed and
    // reaped them all): what it left can be checked without a race.
    git->CheckAfterRun();
    out.git = git->Report();
    if (walk_cache && (out.git.listed > 0 || out.git.check_listed > 0 ||
                       git->Memo().dirs.size() != walk_cached_dirs)) {
      walk_cache->Save(git->Roots(), git->Memo());
    }
  }
  if (out.out_of_memory && !timed_out) {
    out.error = "limit: the sandbox reached its memory ceiling (" +
                std::to_string(memory_limit >> 20) +
                " MiB) and the kernel killed a process in it (fix: --limit mem=SIZE)";
  }
  if (timed_out) {
    out.kind = SandboxOutcome::Kind::kTimedOut;
    out.error = "timeout: command passed its deadline and was killed";
  } else if (!have_exit) {
    out.kind = SandboxOutcome::Kind::kSignaled;
    out.exit_status = WIFSIGNALED(init_status) ? WTERMSIG(init_status) : SIGKILL;
    out.error = "sandbox: init ended without reporting the command's status";
  }
  return out;
}

}  // namespace anvil
