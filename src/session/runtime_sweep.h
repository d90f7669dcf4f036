// The runtime directories of sessions that are gone. A session's gateway keeps its directory
// (<base>/<session>, holding its plugin socket) with a shared flock on it for as long as it
// lives (gateway/runtime_dir.h); the trusted side removes the directory when it stops the
// gateway. A trusted side that was killed (SIGKILL, a crash) removes nothing, so each stop also
// sweeps a bounded number of its dead siblings.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace anvil::session {

// True for a name the gateway gives a session's directory: 16 lowercase hex digits. Pure.
bool IsSessionDirName(std::string_view name);

// In `base` (the directory holding the sessions' directories: $XDG_RUNTIME_DIR/anvil or
// /tmp/anvil-UID), removes the directories of sessions that are gone: named as a session's,
// not `own`, a directory of this user's not changed for `min_age`, whose lock no gateway holds,
// holding nothing or only a `gateway.sock` that nobody listens on (connecting is refused; a
// gateway of an older Anvil that took no lock still answers). Looks at no more than
// `max_looked_at` entries and never follows a symbolic link; anything else in a directory keeps
// it. Returns how many were removed. Best effort: an error leaves that entry.
int SweepDeadRuntimeDirs(const std::string& base, std::string_view own,
                         std::chrono::seconds min_age, int max_looked_at);

}  // namespace anvil::session
