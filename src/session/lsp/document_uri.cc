#include "session/lsp/document_uri.h"

#include "fs/workspace_path.h"

namespace anvil::session {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Result<std::string> WorkspacePathOfUri(std::string_view uri, std::string_view workspace) {
  std::string_view rest = uri;
  if (rest.substr(0, 7) != "file://") {
    return Fail("denied", "only file:// buffers inside the workspace are shared with plugins");
  }
  rest.remove_prefix(7);
  if (rest.substr(0, 9) == "localhost") rest.remove_prefix(9);
  if (rest.empty() || rest[0] != '/') return Fail("denied", "not a local file URI");
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return Fail("denied", "a file URI with a query or fragment is not shared with plugins");
  }
  std::string path;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%') {
      int hi = i + 2 < rest.size() ? HexValue(rest[i + 1]) : -1;
      int lo = i + 2 < rest.size() ? HexValue(rest[i + 2]) : -1;
      if (hi < 0 || lo < 0) return Fail("invalid", "bad percent-encoding in URI");
      path.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      path.push_back(rest[i]);
    }
  }
  std::string prefix = std::string(workspace) + "/";
  if (path.compare(0, prefix.size(), prefix) != 0) {
    return Fail("denied", "the buffer is outside the workspace");
  }
  auto normalized = NormalizeWorkspacePath(std::string_view(path).substr(prefix.size()));
  if (!normalized) return Fail("denied", "buffer path: " + normalized.error().message);
  return *normalized;
}

}  // namespace anvil::session
