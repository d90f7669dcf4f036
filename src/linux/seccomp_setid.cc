#include "linux/seccomp_setid.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>

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

void AppendSetIdRules(std::vector<SyscallRule>& rules) {
  for (const ModeSyscall& call : SetIdModeSyscalls()) {
    for (uint64_t bit : {uint64_t{S_ISUID}, uint64_t{S_ISGID}}) {
      const ArgCond mode{ArgCond::kMaskedEq, call.mode_arg, bit, bit};
      if (call.flags_arg < 0) {
        rules.push_back({call.name, Errno(EPERM), {mode}, true});
        continue;
      }
      // open/openat use the mode only when they create: O_CREAT, or an O_TMPFILE inode.
      for (uint64_t creating : {uint64_t{O_CREAT}, kTmpfileBit}) {
        const ArgCond flags{ArgCond::kMaskedEq, static_cast<unsigned>(call.flags_arg), creating,
                            creating};
        rules.push_back({call.name, Errno(EPERM), {flags, mode}, true});
      }
    }
  }
  // openat2 passes its mode inside struct open_how, which a filter cannot read. ENOSYS, as for
  // a kernel older than 5.6: libc and programs that try openat2 first fall back to openat.
  rules.push_back({"openat2", Errno(ENOSYS), {}, true});
}

}  // namespace anvil::seccomp
