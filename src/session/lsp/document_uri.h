// Editor document URIs and the workspace paths plugins are granted (T1/T8 for buffers): a
// plugin sees an open buffer only when it is a file:// URI beneath the workspace whose path its
// fs.read grant matches, so a buffer cannot become a way around the grant (an editor may have
// ~/.ssh/config or an untitled scratch buffer with a pasted secret open).
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace anvil::session {

// "file:///ws/src/a.c" (or file://localhost/...) -> "src/a.c" for workspace "/ws": percent-
// decoded, then validated as a workspace path (no "..", NUL, control characters; see
// fs/workspace_path.h). "denied" for other schemes and for paths outside the workspace.
Result<std::string> WorkspacePathOfUri(std::string_view uri, std::string_view workspace);

}  // namespace anvil::session
