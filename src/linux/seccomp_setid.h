// The seccomp rules that keep a sandboxed command from making a set-user-ID or set-group-ID
// file: every system call that takes a file mode refuses (EPERM) a mode with S_ISUID or S_ISGID,
// and openat2, whose mode lives in memory BPF cannot read, is answered ENOSYS so that libc and
// programs fall back to openat. Part of every command filter (confining policies and
// external-sandbox); rows of its table (seccomp_rules.h), compiled at build time with the rest.
#pragma once

#include <vector>

#include "linux/seccomp_rules.h"

namespace anvil::seccomp {

// One system call that takes a mode: which argument holds it and, for the open family, which
// holds the flags (the mode only counts with O_CREAT or O_TMPFILE); -1 when there is none.
struct ModeSyscall {
  const char* name;
  unsigned mode_arg;
  int flags_arg;
};
// chmod, fchmod, fchmodat, fchmodat2, creat, open, openat, mkdir, mkdirat, mknod, mknodat.
const std::vector<ModeSyscall>& SetIdModeSyscalls();

// Appends the rules, each required: a libseccomp that cannot name one of the calls fails the
// build of the program (the call would be left unfiltered).
void AppendSetIdRules(std::vector<SyscallRule>& rules);

}  // namespace anvil::seccomp
