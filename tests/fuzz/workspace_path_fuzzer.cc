// The workspace path validator (src/fs/workspace_path, threat model T1). Invariants for an
// accepted path: it is relative, has no empty, "." or ".." component (so resolving it lexically
// beneath any root never leaves the root), is strict UTF-8 within the length limits, is the
// input itself (nothing is rewritten) and normalizing it again is the identity. Quoted messages
// carry no control or bidirectional formatting character.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "fs/utf8.h"
#include "fs/workspace_path.h"
#include "fuzz_util.h"

using anvil::fuzz::Require;

namespace {

void CheckAccepted(std::string_view raw, const std::string& path, anvil::RootPolicy policy) {
  if (path == anvil::kWorkspaceRootPath) {
    Require(policy == anvil::RootPolicy::kAllow, "root accepted under kReject", raw);
    return;
  }
  Require(path == raw, "accepted path was rewritten", raw);
  Require(!path.empty() && path.front() != '/' && path.back() != '/', "shape", path);
  Require(path.size() <= anvil::kMaxWorkspacePathBytes, "too long", path);
  Require(anvil::IsValidUtf8(path), "not UTF-8", path);
  Require(path.find('\0') == std::string::npos, "NUL", path);
  for (const auto& component : anvil::fuzz::Split(path, '/')) {
    Require(!component.empty() && component != "." && component != "..", "component", path);
    Require(component.size() <= anvil::kMaxPathComponentBytes, "component length", path);
    Require(anvil::ValidatePathComponent(component).has_value(), "component rule", component);
  }
  // Beneath the root: the lexically normal join stays under it.
  const std::filesystem::path root = "/workspace/root";
  std::string joined = (root / path).lexically_normal().string();
  Require(joined.starts_with("/workspace/root/"), "escapes the root", joined);
  auto again = anvil::NormalizeWorkspacePath(path, policy);
  Require(again && *again == path, "not idempotent", path);
  auto [parent, name] = anvil::SplitParent(path);
  Require(!name.empty() && name.find('/') == std::string_view::npos, "SplitParent name", path);
  Require(parent == "." || std::string(parent) + "/" + std::string(name) == path,
          "SplitParent parent", path);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view raw = anvil::fuzz::AsView(data, size);
  for (auto policy : {anvil::RootPolicy::kReject, anvil::RootPolicy::kAllow}) {
    auto r = anvil::NormalizeWorkspacePath(raw, policy);
    if (r) CheckAccepted(raw, *r, policy);
  }
  if (raw.find('/') == std::string_view::npos && anvil::ValidatePathComponent(raw)) {
    auto r = anvil::NormalizeWorkspacePath(raw);
    Require(r.has_value(), "valid component is not a valid path", raw);
  }
  // Messages: valid UTF-8 with no C0/C1 control, DEL or bidirectional formatting character
  // (they would act on the user's terminal or reorder an audit line), and bounded.
  std::string quoted = anvil::QuotePathForMessage(raw);
  Require(anvil::IsValidUtf8(quoted), "message is not UTF-8", quoted);
  for (size_t i = 0; i < quoted.size();) {
    char32_t c = 0;
    size_t len = anvil::fs_internal::DecodeUtf8(quoted, i, &c);
    Require(len > 0, "message is not UTF-8", quoted);
    Require(!anvil::fs_internal::IsControl(c) && !anvil::fs_internal::IsBidiControl(c),
            "control character in message", quoted);
    i += len;
  }
  Require(quoted.size() <= 1024, "message not bounded");
  return 0;
}
