// The command process of the sandbox (sandbox_launch.h): from init's vfork to its exec,
// ConfineAndExec, an ordered list of steps that each fail closed.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/syscalls.h"
#include "linux/capabilities.h"
#include "linux/landlock.h"
#include "linux/landlock_rules.h"
#include "linux/program_exec.h"
#include "linux/refusal_observer.h"
#include "linux/sandbox_process.h"
#include "linux/sandbox_report.h"
#include "linux/terminal_relay.h"

namespace anvil::launch {
namespace {

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
  ANVIL_RETURN_IF_ERROR(SetLimit(RLIMIT_CORE, 0, "core"));
  // RLIMIT_NPROC counts per user *namespace*; outside one it would count every process of
  // the uid on the host, so it is only a per-sandbox bound when we made a user namespace.
  if (l.processes && plan.userns) {
    ANVIL_RETURN_IF_ERROR(SetLimit(RLIMIT_NPROC, *l.processes, "nproc"));
  }
  if (l.open_files) {
    ANVIL_RETURN_IF_ERROR(SetLimit(RLIMIT_NOFILE, *l.open_files, "nofile"));
  }
  if (l.address_space) {
    ANVIL_RETURN_IF_ERROR(SetLimit(RLIMIT_AS, *l.address_space, "as"));
  }
  if (l.data) {
    ANVIL_RETURN_IF_ERROR(SetLimit(RLIMIT_DATA, *l.data, "data"));
  }
  if (l.file_size) {
    ANVIL_RETURN_IF_ERROR(SetLimit(RLIMIT_FSIZE, *l.file_size, "fsize"));
  }
  if (l.cpu_seconds) {
    ANVIL_RETURN_IF_ERROR(SetLimit(RLIMIT_CPU, *l.cpu_seconds, "cpu"));
  }
  return Ok();
}

// The command's Landlock rule set (linux/landlock_rules.h), for the namespaces it ended up with.
landlock::RulesetPlan LandlockPlan(const Plan& plan) {
  return landlock::LandlockRulesFor(plan.view, plan.spec->policy.network, plan.landlock_abi,
                                    {plan.mountns, plan.pidns, plan.netns}, getpid(), kProxyPort);
}

Status ApplyLandlock(const Plan& plan, const landlock::RulesetPlan& rules) {
  ANVIL_RETURN_IF_ERROR(InjectedFailure(plan, "landlock"));
  ANVIL_TRY(rs, landlock::Ruleset::Create(rules.abi, rules.handle_net, rules.scopes));
  for (uint16_t port : rules.tcp_connect_ports) {
    ANVIL_RETURN_IF_ERROR(rs->AllowTcpConnect(port));
  }
  ANVIL_RETURN_IF_ERROR(rs->AllowRules(rules.rules));
  return rs->Restrict();
}

// --- the steps of ConfineAndExec, in its order -------------------------------------------------
// Each takes the plan and the layer bits so far (LayerBits: what is in force, for the report).

// Default dispositions and nothing blocked: the command starts as a fresh process would.
Status ResetSignals(Plan&, uint32_t&) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  return Ok();
}

// Never the caller's session: the caller's terminal is never its controlling terminal
// (TIOCSTI, job-control signals), and its own process group is one group to kill. With a
// terminal among the caller's descriptors 0-2, it is a job of the session of the sandbox's
// pseudo-terminal instead (terminal_relay.h).
Status EnterSession(Plan& plan, uint32_t&) {
  return EnterCommandSession(*plan.streams, plan.terminal_slave);
}

Status PlaceStreams(Plan& plan, uint32_t&) {
  return PlaceStdStreams(*plan.streams, plan.terminal_slave, plan.stdin_fd);
}

// No descriptor the caller leaked (a directory fd outside, a socket) crosses exec.
Status CloseInheritedDescriptors(Plan&, uint32_t&) {
  if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    return SysFail("sandbox", "close_range");
  }
  return Ok();
}

// The Landlock rule set is made here, before the rlimits: making it allocates (a rule per path of
// the view), and after an address-space limit a sanitizer runtime cannot map the memory it needs.
Status PlanFileRules(Plan& plan, uint32_t&) {
  if (plan.confine_fs) plan.landlock_rules = LandlockPlan(plan);
  return Ok();
}

Status SetLimits(Plan& plan, uint32_t&) { return ApplyLimits(plan); }

// The directory by the workspace's logical path (LaunchSpec::logical_cwd), when it leads to the
// same directory as the workspace's own path does: whatever the link is now, it can only take
// the command where the view lets it go, and it is entered only if that is its directory.
bool EnteredByTheLogicalPath(const LaunchSpec& spec) {
  struct stat real {};
  struct stat here {};
  if (spec.logical_cwd.empty() || ::stat(spec.cwd.c_str(), &real) != 0) return false;
  if (::chdir(spec.logical_cwd.c_str()) != 0 || ::stat(".", &here) != 0) return false;
  return here.st_dev == real.st_dev && here.st_ino == real.st_ino;
}

Status EnterWorkingDirectory(Plan& plan, uint32_t&) {
  if (EnteredByTheLogicalPath(*plan.spec)) return Ok();
  if (plan.pwd_index >= 0) plan.envp[plan.pwd_index] = plan.pwd_fallback.data();
  if (::chdir(plan.spec->cwd.c_str()) != 0) {
    return SysFail("sandbox",
                   "working directory " + plan.spec->cwd + " is not visible in the sandbox");
  }
  return Ok();
}

// Whether the command gets walls at all (danger-full-access gets none).
bool Hardened(const Plan& plan) { return plan.confine_fs || !plan.filter.Empty(); }

Status SetNoNewPrivs(Plan& plan, uint32_t& layers) {
  if (!Hardened(plan)) return Ok();
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
    return SysFail("sandbox", "no_new_privs");
  }
  layers |= kBitNoNewPrivs;
  return Ok();
}

Status RestrictFiles(Plan& plan, uint32_t& layers) {
  if (!plan.confine_fs) return Ok();
  const landlock::RulesetPlan& rules = plan.landlock_rules;
  ANVIL_RETURN_IF_ERROR(ApplyLandlock(plan, rules));
  layers |= static_cast<uint32_t>(rules.abi) << 16;
  if (rules.handle_net) layers |= kBitLandlockNet;
  if (rules.scopes != 0) layers |= kBitLandlockScoped;
  return Ok();
}

Status DropCapabilities(Plan& plan, uint32_t&) {
  if (!Hardened(plan)) return Ok();
  return DropAllCapabilities();
}

Status FilterSyscalls(Plan& plan, uint32_t& layers) {
  if (plan.filter.Empty()) return Ok();
  ANVIL_RETURN_IF_ERROR(InjectedFailure(plan, "seccomp"));
  ANVIL_RETURN_IF_ERROR(plan.filter.Install());
  layers |= kBitSeccomp;
  return Ok();
}

// Last: nothing between here and the exec may be a syscall the observer stops, since init
// (suspended by vfork) can only answer once the exec is done.
Status ObserveRefusals(Plan& plan, uint32_t& layers) {
  if (plan.observer_command_fd < 0) return Ok();
  auto installed = InstallRefusalObserver(plan.observer_command_fd,
                                          plan.spec->policy.network != NetworkMode::kFull);
  if (installed == ObserverInstall::kUnanswered) {
    return Fail("sandbox", "refusal observer: cannot hand over its listener");
  }
  if (installed == ObserverInstall::kObserved) layers |= kBitRefusalObserver;
  return Ok();
}

// The walls the command's process puts up, in order; the namespaces, the mount view and the
// cgroups are already in place (init and the supervisor made them).
using Step = Status (*)(Plan& plan, uint32_t& layers);
constexpr Step kSteps[] = {
    ResetSignals,
    EnterSession,  // its own session (or the sandbox terminal's)
    PlaceStreams,  // descriptors 0-2 (std_streams.h)
    CloseInheritedDescriptors,
    PlanFileRules,  // the Landlock rules to apply below, made while memory is unlimited
    SetLimits,      // rlimits
    EnterWorkingDirectory,
    SetNoNewPrivs,  // before Landlock and seccomp, which need it
    RestrictFiles,  // Landlock (landlock_rules.h)
    DropCapabilities,
    FilterSyscalls,   // seccomp (seccomp_rules.h)
    ObserveRefusals,  // the refusal observer's listener, last
};

// Tells the supervisor which layers are in force, then execs; a failed exec is reported.
[[noreturn]] void Exec(Plan& plan, uint32_t layers) {
  LaunchSpec& spec = *plan.spec;
  if (plan.userns) layers |= kBitUserNs;
  if (plan.pidns) layers |= kBitPidNs;
  if (plan.mountns) layers |= kBitMountNs;
  if (plan.netns) layers |= kBitNetNs;
  if (!plan.pidns) layers |= kBitSubreaper;
  if (plan.process_limit) layers |= kBitProcessLimit;
  SendRecord(plan.report_fd, kLayers, 0, 0, "", layers);
  ExecFailure failed = ExecProgram(spec.program.Get(), spec.program_path, spec.program_is_link,
                                   plan.program_is_script, plan.argv.data(), plan.envp.data());
  int err = failed.err;
  std::string why = std::string(spec.argv[0]) + ": " + std::strerror(err);
  if (failed.replaced) {
    why = spec.program_path +
          ": replaced after it was looked up (the path names another file in the sandbox "
          "than the one resolved outside); nothing ran";
  } else if (failed.hidden || (err == EACCES && plan.confine_fs)) {
    // Name the directory the view lacks, and the fix that shows just it.
    const std::string dir = ProgramDirectory(spec.program_path, spec.cwd);
    struct stat st {};
    if (!dir.empty() && ::stat(dir.c_str(), &st) != 0) {
      // The report's message has room for sizeof(Record::message) - 1 bytes: a long path gives
      // way, never the fix.
      why = NotInViewMessage(spec.argv[0], dir, failed.hidden, sizeof(Record::message) - 1,
                             spec.program_environment);
    } else {
      why +=
          " (outside the paths this policy can read? fix: --readable-root DIR for its "
          "directory, readable_roots in config.toml, or --read-access full)";
    }
  }
  MarkCommandFailed(plan);
  SendRecord(plan.report_fd, kExecError, 0, err, why);
  _exit(err == ENOENT ? 127 : 126);
}

}  // namespace

[[noreturn]] void ConfineAndExec(Plan& plan) {
  uint32_t layers = 0;
  for (Step step : kSteps) {
    if (auto s = step(plan, layers); !s) Die(plan, s.error());
  }
  Exec(plan, layers);
}

}  // namespace anvil::launch
