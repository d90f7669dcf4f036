#include "linux/capabilities.h"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace anvil {

Status DropAllCapabilities() {
  for (int cap = 0; cap <= 63; ++cap) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      if (errno == EINVAL) break;  // past CAP_LAST_CAP
      // Without CAP_SETPCAP the bounding set cannot shrink. A non-root uid gains nothing
      // from it on exec (no_new_privs stops setuid and file capabilities); uid 0 would.
      if (geteuid() != 0 && getuid() != 0) continue;
      if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) != 0) {
        return SysFail("sandbox", "drop bounding capability " + std::to_string(cap));
      }
    }
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    return SysFail("sandbox", "clear ambient capabilities");
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capset, &header, data) != 0) return SysFail("sandbox", "capset");
  __user_cap_data_struct check[2] = {};
  if (syscall(SYS_capget, &header, check) != 0) return SysFail("sandbox", "capget");
  for (const auto& d : check) {
    if (d.effective || d.permitted || d.inheritable) {
      return Fail("sandbox", "capabilities still present after dropping them");
    }
  }
  return Ok();
}

}  // namespace anvil
