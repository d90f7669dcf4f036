// The grant JSON readers (src/policy/grant: GrantFromJson; src/policy/grant_store: the
// grants.json file GrantStore::Open reads). Invariants: a grant that parses round-trips through
// GrantToJson, and a store file that opens lists only well-formed entries. The first input byte
// picks the target so one corpus covers both.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "fuzz_util.h"
#include "policy/grant.h"
#include "policy/grant_store.h"
#include "policy/manifest.h"

using anvil::fuzz::Require;

namespace {

const std::string& StoreFile() {
  static const std::string path = [] {
    char dir[] = "/tmp/anvil-grant-fuzz.XXXXXX";
    if (mkdtemp(dir) == nullptr) std::abort();
    return std::string(dir) + "/grants.json";
  }();
  return path;
}

void FuzzStore(std::string_view text) {
  const std::string& path = StoreFile();
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) std::abort();
  if (write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) std::abort();
  close(fd);
  auto store = anvil::GrantStore::Open(path);
  if (!store) return;
  for (const auto& entry : store->List("")) {
    Require(!entry.workspace.empty() && entry.workspace[0] == '/', "workspace", entry.workspace);
    Require(anvil::ValidatePluginId(entry.plugin_id).has_value(), "plugin id", entry.plugin_id);
    Require(entry.manifest_sha256.size() == 64, "sha", entry.manifest_sha256);
    auto found = store->Find(entry.workspace, entry.plugin_id, entry.manifest_sha256);
    Require(found && *found == entry.grant, "Find disagrees with List", entry.plugin_id);
    // A grant pinned to a copy applies to that copy (and its directory) only; an entry from
    // before copies were recorded applies to none.
    if (entry.copy) {
      Require(entry.copy->dir[0] == '/' && entry.copy->code_sha256.size() == 64, "copy",
              entry.copy->dir);
      auto same =
          store->FindForCopy(entry.workspace, entry.plugin_id, entry.manifest_sha256, *entry.copy);
      Require(same && *same == entry.grant, "FindForCopy misses its own copy", entry.plugin_id);
    }
    const anvil::PluginCopy stranger{"/nonexistent/other-copy", std::string(64, '0'), ""};
    if (!entry.copy || !entry.copy->Matches(stranger)) {
      Require(
          !store->FindForCopy(entry.workspace, entry.plugin_id, entry.manifest_sha256, stranger),
          "a grant applies to another copy", entry.plugin_id);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string_view text = anvil::fuzz::AsView(data + 1, size - 1);
  if (data[0] & 1) {
    FuzzStore(text);
    return 0;
  }
  auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return 0;
  auto grant = anvil::GrantFromJson(json);
  if (!grant) return 0;
  auto again = anvil::GrantFromJson(anvil::GrantToJson(*grant));
  Require(again && *again == *grant, "GrantToJson/GrantFromJson round trip", json.dump());
  return 0;
}
