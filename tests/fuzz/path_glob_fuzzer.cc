// The grant glob matcher (src/fs/path_glob). Input: "glob\npath". Invariants: an invalid glob
// or an invalid path never matches; a literal glob matches only itself; the glob reaches every
// directory above a path it matches, and a directory it covers holds only paths it matches
// (what sys.exec's view is built from, fs/read_plan.h); a write to a protected path is granted
// only by a literal glob equal to it. Matching must stay fast (libFuzzer's
// -timeout catches exponential backtracking).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fs/path_glob.h"
#include "fs/workspace_path.h"
#include "fuzz_util.h"

using anvil::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parts = anvil::fuzz::Split(anvil::fuzz::AsView(data, size), '\n', 2);
  if (parts.size() != 2) return 0;
  const std::string& glob = parts[0];
  const std::string& path = parts[1];
  bool glob_ok = anvil::ValidateGlob(glob).has_value();
  auto normalized = anvil::NormalizeWorkspacePath(path, anvil::RootPolicy::kAllow);
  bool path_ok = normalized && *normalized == path;
  bool matches = anvil::GlobMatches(glob, path);
  if (matches) {
    Require(glob_ok, "invalid glob matched", glob);
    Require(path_ok, "invalid path matched", path);
    if (anvil::IsLiteralGlob(glob)) Require(glob == path, "literal glob matched another path");
  }
  if (path_ok && path != ".") {
    // Every directory above the path, from the root down.
    std::vector<std::string> above = {"."};
    for (std::size_t slash = path.find('/'); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
      above.push_back(path.substr(0, slash));
    }
    for (const auto& dir : above) {
      if (matches) {
        Require(anvil::GrantReaches({glob}, dir), "a match below a directory not reached",
                glob + " | " + path + " | " + dir);
      }
      if (anvil::GrantCoversSubtree({glob}, dir)) {
        Require(matches, "a covered directory holds a path that does not match",
                glob + " | " + path + " | " + dir);
      }
    }
  }
  if (anvil::IsLiteralGlob(glob)) Require(glob_ok, "literal glob is invalid", glob);
  bool write = anvil::GrantAllows({glob}, path, anvil::Access::kWrite);
  bool read = anvil::GrantAllows({glob}, path, anvil::Access::kRead);
  Require(read == matches, "read grant differs from the match");
  if (write) {
    Require(read, "write without read");
    if (anvil::IsProtectedPath(path)) {
      Require(anvil::IsLiteralGlob(glob) && glob == path, "wildcard grants a protected write",
              glob + " | " + path);
    }
  }
  return 0;
}
