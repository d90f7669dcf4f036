#include "host/lockdown.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "linux/landlock.h"
#include "linux/seccomp.h"
#include "linux/self_confinement.h"

namespace anvil::host {
namespace {

Status Limit(int resource, uint64_t value, const char* name) {
  rlimit current{};
  if (getrlimit(resource, &current) != 0)
    return SysFail("sandbox", std::string("getrlimit ") + name);
  rlim_t v = std::min<rlim_t>(value, current.rlim_max);
  rlimit next{v, v};
  if (setrlimit(resource, &next) != 0) return SysFail("sandbox", std::string("setrlimit ") + name);
  return Ok();
}

Status Injected(const LockdownOptions& o, const char* step) {
  if (o.fail_step_for_testing == step) {
    return Fail("sandbox", std::string("injected failure of the ") + step + " layer (test)");
  }
  return Ok();
}

}  // namespace

Status LockDown(const LockdownOptions& options) {
  ANVIL_RETURN_IF_ERROR(Injected(options, "rlimit"));
  ANVIL_RETURN_IF_ERROR(Limit(RLIMIT_CORE, 0, "core"));
  // Sanitizer builds only (seccomp::kSanitizerRuntimeAllowances): AddressSanitizer reserves
  // terabytes of shadow address space, so RLIMIT_AS cannot apply (the VM's own memory budget
  // still does). Every other build sets it.
  if (!seccomp::kSanitizerRuntimeAllowances && options.address_space != 0) {
    ANVIL_RETURN_IF_ERROR(Limit(RLIMIT_AS, options.address_space, "as"));
  }
  ANVIL_RETURN_IF_ERROR(Limit(RLIMIT_NOFILE, options.open_files, "nofile"));
  ANVIL_RETURN_IF_ERROR(Limit(RLIMIT_CPU, options.cpu_seconds, "cpu"));
  // No new processes (seccomp refuses fork/clone anyway; this also covers a uid-0 host, for
  // which RLIMIT_NPROC is not enforced, only through seccomp).
  ANVIL_RETURN_IF_ERROR(Limit(RLIMIT_NPROC, 0, "nproc"));
  if (prctl(PR_SET_DUMPABLE, 0) != 0) return SysFail("sandbox", "dumpable");
  confine::SelfConfinement plan;
  plan.no_landlock = [](const std::string& reason) {
    return "plugins need Landlock, and " + reason + " (see `anvil doctor`)";
  };
  // No rules at all: every handled right is denied everywhere.
  plan.landlock = [](int abi) {
    return confine::LandlockPlan{abi >= 4, landlock::ScopesForAbi(abi), {}};
  };
  plan.filter = confine::Filter::kPluginHost;
  plan.before_step = [&](const char* step) { return Injected(options, step); };
  ANVIL_RETURN_IF_ERROR(confine::ConfineSelf(plan));

  // Verify from the inside: the walls hold before any plugin code runs.
  int fd = ::open("/etc/hostname", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
    return Fail("sandbox", "lockdown verification failed: a file could still be opened");
  }
  int sock = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sock >= 0) {
    ::close(sock);
    return Fail("sandbox", "lockdown verification failed: a socket could still be made");
  }
  return Ok();
}

}  // namespace anvil::host
