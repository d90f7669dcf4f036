#include "linux/landlock.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "common/syscalls.h"
#include "linux/open_beneath.h"

namespace anvil::landlock {
namespace {

constexpr uint32_t kCreateRulesetVersion = 1U << 0;
constexpr int kRulePathBeneath = 1;
constexpr int kRuleNetPort = 2;

// The kernel accepts a smaller struct from older user space: pass only the fields the ABI has,
// so an ABI 1..3 kernel does not reject non-zero trailing bytes with E2BIG.
struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;  // ABI 4
  uint64_t scoped;              // ABI 6
};

struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
};

struct NetPortAttr {
  uint64_t allowed_access;
  uint64_t port;
};

long CreateRuleset(const RulesetAttr* attr, size_t size, uint32_t flags) {
  return syscall(__NR_landlock_create_ruleset, attr, size, flags);
}

}  // namespace

uint64_t FsRightsForAbi(int abi) {
  if (abi <= 0) return 0;
  uint64_t rights = (1ULL << 13) - 1;  // ABI 1: execute .. make_sym
  if (abi >= 2) rights |= kFsRefer;
  if (abi >= 3) rights |= kFsTruncate;
  if (abi >= 5) rights |= kFsIoctlDev;
  return rights;
}

uint64_t NetRightsForAbi(int abi) { return abi >= 4 ? (kNetBindTcp | kNetConnectTcp) : 0; }

uint64_t ScopesForAbi(int abi) { return abi >= 6 ? (kScopeAbstractUnixSocket | kScopeSignal) : 0; }

AbiProbe ProbeAbi() {
  long abi = CreateRuleset(nullptr, 0, kCreateRulesetVersion);
  if (abi >= 1) return {static_cast<int>(abi), ""};
  if (errno == ENOSYS)
    return {0, "the kernel has no Landlock (needs Linux 5.13+ with CONFIG_SECURITY_LANDLOCK)"};
  if (errno == EOPNOTSUPP) {
    return {0,
            "Landlock is built in but disabled: add 'landlock' to the lsm= kernel boot parameter"};
  }
  return {0, std::string("landlock_create_ruleset failed: errno ") + std::to_string(errno)};
}

Result<Ruleset> Ruleset::Create(int abi, bool handle_net, uint64_t scopes) {
  if (abi < 1) return Fail("sandbox", "Landlock is not available");
  if (handle_net && abi < 4) {
    return Fail("sandbox",
                "network confinement by Landlock needs ABI 4 (Linux 6.7); kernel has ABI " +
                    std::to_string(abi));
  }
  if (scopes != 0 && (scopes & ~ScopesForAbi(abi)) != 0) {
    return Fail("sandbox",
                "Landlock scoping needs ABI 6 (Linux 6.12); kernel has ABI " + std::to_string(abi));
  }
  RulesetAttr attr{};
  attr.handled_access_fs = FsRightsForAbi(abi);
  attr.handled_access_net = handle_net ? NetRightsForAbi(abi) : 0;
  attr.scoped = scopes;
  size_t size = abi >= 6 ? sizeof(RulesetAttr) : abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
  long fd = CreateRuleset(&attr, size, 0);
  if (fd < 0) return SysFail("sandbox", "landlock_create_ruleset");
  return Ruleset(UniqueFd(static_cast<int>(fd)), abi, attr.handled_access_fs,
                 attr.handled_access_net);
}

Status Ruleset::AllowPath(const std::string& path, uint64_t rights, bool optional) {
  UniqueFd dir(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!dir) {
    if (optional && errno == ENOENT) return Ok();
    return SysFail("sandbox", "landlock: open " + path);
  }
  return AllowFd(dir.Get(), rights, path);
}

Status Ruleset::AllowFd(int fd, uint64_t rights, const std::string& path) {
  constexpr uint64_t kFileRights =
      kFsExecute | kFsWriteFile | kFsReadFile | kFsTruncate | kFsIoctlDev;
  uint64_t allowed = rights & handled_fs_;
  // Directory-only rights on a file are rejected by the kernel (EINVAL): keep the file ones.
  // Only a rule that has some needs the file type (the device rules have none: no fstat).
  if ((allowed & ~kFileRights) != 0) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return SysFail("sandbox", "landlock: stat " + path);
    if (!S_ISDIR(st.st_mode)) allowed &= kFileRights;
  }
  if (allowed == 0) return Ok();
  PathBeneathAttr attr{allowed, fd};
  if (syscall(__NR_landlock_add_rule, fd_.Get(), kRulePathBeneath, &attr, 0) != 0) {
    return SysFail("sandbox", "landlock_add_rule " + path);
  }
  return Ok();
}

Status Ruleset::AllowBeneath(const std::string& base, const std::string& relative,
                             uint64_t rights) {
  ANVIL_TRY(target, OpenBeneath(base, relative));
  if (!*target) return Ok();  // missing, or leads outside: nothing to allow
  return AllowFd(target->Get(), rights, base + "/" + relative);
}

Status Ruleset::AllowPlanned(int base, const Rule& rule) {
  UniqueFd target;
  if (rule.path == ".") {
    target = UniqueFd(fcntl(base, F_DUPFD_CLOEXEC, 0));
  } else {
    open_how how{};
    how.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    long fd = -1;
    for (int attempt = 0; attempt < 64 && fd < 0; ++attempt) {
      fd = syscall(SYS_openat2, base, rule.path.c_str(), &how, sizeof(how));
      if (fd < 0 && errno != EAGAIN && errno != EINTR) break;
    }
    if (fd >= 0) target = UniqueFd(static_cast<int>(fd));
  }
  if (!target) return Ok();  // not there (as the plan says): nothing to allow
  struct stat st {};
  if (::fstat(target.Get(), &st) != 0) return SysFail("sandbox", "landlock: stat " + rule.path);
  const bool ok = rule.kind == RuleKind::kPlanDir    ? S_ISDIR(st.st_mode)
                  : rule.kind == RuleKind::kPlanFile ? S_ISREG(st.st_mode) && st.st_nlink == 1
                                                     : S_ISREG(st.st_mode);
  if (!ok) return Ok();  // changed since the plan: the mount view left it out too
  return AllowFd(target.Get(), rule.rights, rule.base + "/" + rule.path);
}

Status Ruleset::AllowRules(const std::vector<Rule>& rules) {
  UniqueFd base;  // the read plan's base, opened once for all its rules
  std::string base_path;
  for (const Rule& rule : rules) {
    Status s = Ok();
    switch (rule.kind) {
      case RuleKind::kPath:
        s = AllowPath(rule.path, rule.rights, rule.optional);
        break;
      case RuleKind::kBeneath:
        s = AllowBeneath(rule.base, rule.path, rule.rights);
        break;
      case RuleKind::kPlanDir:
      case RuleKind::kPlanFile:
      case RuleKind::kPlanLinkedFile:
        if (!base || base_path != rule.base) {
          base = UniqueFd(::open(rule.base.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
          if (!base) return SysFail("sandbox", "landlock: open " + rule.base);
          base_path = rule.base;
        }
        s = AllowPlanned(base.Get(), rule);
        break;
    }
    if (!s) return s;
  }
  return Ok();
}

Status Ruleset::AllowTcpConnect(uint16_t port) {
  if ((handled_net_ & kNetConnectTcp) == 0) return Ok();
  NetPortAttr attr{kNetConnectTcp, port};
  if (syscall(__NR_landlock_add_rule, fd_.Get(), kRuleNetPort, &attr, 0) != 0) {
    return SysFail("sandbox", "landlock_add_rule tcp port " + std::to_string(port));
  }
  return Ok();
}

Status Ruleset::Restrict() {
  if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
    return Fail("sandbox", "landlock: no_new_privs must be set before restricting");
  }
  if (syscall(__NR_landlock_restrict_self, fd_.Get(), 0) != 0) {
    return SysFail("sandbox", "landlock_restrict_self");
  }
  fd_.Reset();
  return Ok();
}

}  // namespace anvil::landlock
