#include "linux/seccomp_setid.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <string>

namespace anvil::seccomp {
namespace {

// O_TMPFILE is __O_TMPFILE | O_DIRECTORY; the rule tests the bit that is O_TMPFILE's alone.
constexpr uint64_t kTmpfileBit = 020000000;

}  // namespace

const std::vector<ModeSyscall>& SetIdModeSyscalls() {
  static const std::vector<ModeSyscall> kCalls = {
      {"chmod", 1, -1},   {"fchmod", 1, -1}, {"fchmodat", 2, -1}, {"fchmodat2", 2, -1},
      {"creat", 1, -1},   {"open", 2, 1},    {"openat", 3, 2},    {"mkdir", 1, -1},
      {"mkdirat", 2, -1}, {"mknod", 1, -1},  {"mknodat", 2, -1}};
  return kCalls;
}

Status AddSetIdRules(scmp_filter_ctx ctx) {
  auto check = [](int rc, const std::string& what) -> Status {
    if (rc < 0) return SysFail("sandbox", "seccomp: " + what, -rc);
    return Ok();
  };
  for (const ModeSyscall& call : SetIdModeSyscalls()) {
    int nr = seccomp_syscall_resolve_name(call.name);
    if (nr == __NR_SCMP_ERROR) {
      // Unknown to this libseccomp: the call would pass unfiltered. Refuse to build.
      return Fail("sandbox", std::string("seccomp: libseccomp does not know ") + call.name +
                                 "; a newer libseccomp is needed to filter its mode");
    }
    for (uint64_t bit : {uint64_t{S_ISUID}, uint64_t{S_ISGID}}) {
      scmp_arg_cmp mode{call.mode_arg, SCMP_CMP_MASKED_EQ, bit, bit};
      if (call.flags_arg < 0) {
        if (auto s = check(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, mode), call.name);
            !s)
          return s;
        continue;
      }
      // open/openat use the mode only when they create: O_CREAT, or an O_TMPFILE inode.
      for (uint64_t creating : {uint64_t{O_CREAT}, kTmpfileBit}) {
        scmp_arg_cmp flags{static_cast<unsigned>(call.flags_arg), SCMP_CMP_MASKED_EQ, creating,
                           creating};
        if (auto s =
                check(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 2, flags, mode), call.name);
            !s)
          return s;
      }
    }
  }
  // openat2 passes its mode inside struct open_how, which a filter cannot read. ENOSYS, as for
  // a kernel older than 5.6: libc and programs that try openat2 first fall back to openat.
  int openat2 = seccomp_syscall_resolve_name("openat2");
  if (openat2 == __NR_SCMP_ERROR) {
    return Fail("sandbox", "seccomp: libseccomp does not know openat2");
  }
  return check(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), openat2, 0), "openat2");
}

}  // namespace anvil::seccomp
