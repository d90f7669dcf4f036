// The plugin manifest parser (src/policy/manifest, anvil-plugin.toml: untrusted, written by the
// plugin author). Invariants for an accepted manifest: every value satisfies the grammar the
// rest of Anvil relies on (id, entry beneath the plugin dir with the runtime's extension, valid
// globs, hosts and exec names, bounded lists), and the hash is of exactly the bytes parsed.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "fs/path_glob.h"
#include "fs/workspace_path.h"
#include "fuzz_util.h"
#include "policy/manifest.h"

using anvil::fuzz::Require;

namespace {
void CheckList(const std::vector<std::string>& list, const char* what) {
  Require(list.size() <= anvil::kMaxPermissionEntries, what, "too many entries");
  std::set<std::string> seen(list.begin(), list.end());
  Require(seen.size() == list.size(), what, "duplicate entry");
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = anvil::fuzz::AsView(data, size);
  auto manifest = anvil::ParseManifest(text, "fuzz.toml");
  if (!manifest) {
    Require(!manifest.error().code.empty(), "error without a code");
    return 0;
  }
  const anvil::Manifest& m = *manifest;
  Require(anvil::ValidatePluginId(m.id).has_value(), "id", m.id);
  Require(!m.version.empty() && m.version.size() <= 64, "version", m.version);
  auto entry = anvil::NormalizeWorkspacePath(m.entry);
  Require(entry && *entry == m.entry, "entry is not a normalized path", m.entry);
  Require(m.entry.ends_with(anvil::EntryExtension(m.runtime)), "entry extension", m.entry);
  for (const auto& g : m.requested.fs_read) Require(anvil::ValidateGlob(g).has_value(), "glob", g);
  for (const auto& g : m.requested.fs_write) Require(anvil::ValidateGlob(g).has_value(), "glob", g);
  for (const auto& h : m.requested.net_hosts) {
    Require(anvil::ValidateGrantHost(h).has_value(), "host", h);
  }
  for (const auto& e : m.requested.exec) Require(anvil::ValidateExecName(e).has_value(), "exec", e);
  CheckList(m.requested.fs_read, "fs.read");
  CheckList(m.requested.fs_write, "fs.write");
  CheckList(m.requested.net_hosts, "net.hosts");
  CheckList(m.requested.exec, "exec");
  Require(m.sha256 == anvil::ManifestSha256(text), "sha256 of the parsed bytes");
  // Parsing is deterministic.
  auto again = anvil::ParseManifest(text, "fuzz.toml");
  Require(again && again->requested == m.requested && again->entry == m.entry, "reparse");
  return 0;
}
