// The refusal observer's seccomp rules (linux/refusal_observer.h), compiled at build time like
// the other policies (anvil-seccomp-gen; a unit test checks the baked constants).
#pragma once

#include <linux/filter.h>

#include <vector>

#include "common/result.h"

namespace anvil::seccomp {

// SECCOMP_RET_USER_NOTIF for the syscalls that can be refused as a write — open/openat/creat
// with a write access mode, O_CREAT or O_TRUNC (flag bits matched in the filter, so reads never
// stop), openat2 (its flags are in memory), mkdir*, mknod*, unlink*, rmdir, rename*, link*,
// symlink*, truncate — and, with `watch_connect`, connect. Everything else: allow (the command
// filter decides). The answer is always "continue": the observer only records.
Result<std::vector<sock_filter>> CompileRefusalObserverFilter(bool watch_connect);

}  // namespace anvil::seccomp
