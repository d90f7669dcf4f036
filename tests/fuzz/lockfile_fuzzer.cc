// The anvil.lock reader (src/policy/lockfile: lives in the workspace, so untrusted). Invariants:
// an accepted lock re-renders to text that parses back to the same value (the lock has one
// meaning), with valid ids, normalized paths and a code hash that matches its files.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fs/workspace_path.h"
#include "fuzz_util.h"
#include "policy/lockfile.h"
#include "policy/manifest.h"

using anvil::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto lock = anvil::ParseLockfile(anvil::fuzz::AsView(data, size));
  if (!lock) return 0;
  for (const auto& [id, hashes] : lock->plugins) {
    Require(anvil::ValidatePluginId(id).has_value(), "plugin id", id);
    Require(hashes.code_sha256 == anvil::CodeSha256(hashes.files), "code_sha256", id);
    for (const auto& [path, sha] : hashes.files) {
      auto normalized = anvil::NormalizeWorkspacePath(path);
      Require(normalized && *normalized == path, "file path", path);
      Require(sha.size() == 64, "file sha", sha);
    }
  }
  std::string rendered = anvil::RenderLockfile(*lock);
  auto again = anvil::ParseLockfile(rendered);
  Require(again.has_value(), "rendered lock does not parse",
          again ? std::string_view() : std::string_view(again.error().message));
  Require(*again == *lock, "render/parse round trip", rendered);
  Require(anvil::RenderLockfile(*again) == rendered, "render is deterministic");
  return 0;
}
