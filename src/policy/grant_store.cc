#include "policy/grant_store.h"

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <nlohmann/json.hpp>
#include <tuple>
#include <utility>

#include "fs/file_facts.h"
#include "fs/file_io.h"
#include "fs/workspace_path.h"
#include "policy/digest.h"
#include "policy/manifest.h"

namespace anvil {
namespace {

// 2: entries may record the copy approved (plugin_dir, code_sha256); 3: and which directory that
// was (plugin_dir_id). Older files are still read (version 1 entries grant no copy: asked once
// more; version 2 entries no directory: identical code only); an older Anvil refuses a newer
// file by its version instead of by an unknown key.
constexpr int kFormatVersion = 3;
constexpr int kOldestReadableVersion = 1;
// Far beyond any real number of grants; bounds what a damaged or hostile file can cost.
constexpr std::size_t kMaxStoreBytes = 16u << 20;

// Absolute, no empty/"."/".." components, no trailing '/', valid UTF-8: the form realpath(3)
// returns. Keys in any other spelling would silently never match.
bool IsCanonicalAbsolute(std::string_view path) {
  if (path.empty() || path.front() != '/') return false;
  if (path == "/") return true;
  if (path.back() == '/') return false;
  if (!IsValidUtf8(path) || path.find('\0') != std::string_view::npos) return false;
  std::size_t start = 1;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

// What fs/file_facts.h ObjectIdentity makes: short, digits, lower-case letters and ":,.".
bool IsDirIdentity(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == ':' || c == ',' || c == '.';
  });
}

std::string Damaged(const std::string& path, std::string_view what) {
  return QuotePathForMessage(path) + " is damaged: " + std::string(what) +
         " (fix: move the file aside; each plugin will ask for consent again)";
}

Result<GrantEntry> EntryFromJson(const nlohmann::json& json, const std::string& path) {
  if (!json.is_object()) return Fail("invalid", Damaged(path, "an entry is not an object"));
  for (auto it = json.begin(); it != json.end(); ++it) {
    const std::string& k = it.key();
    if (k != "workspace" && k != "plugin" && k != "manifest_sha256" && k != "granted_at" &&
        k != "grant" && k != "plugin_dir" && k != "code_sha256" && k != "plugin_dir_id") {
      return Fail("invalid", Damaged(path, "unknown key " + QuotePathForMessage(k)));
    }
  }
  auto string_field = [&](const char* key) -> Result<std::string> {
    const auto it = json.find(key);
    if (it == json.end() || !it->is_string()) {
      return Fail("invalid", Damaged(path, std::string("an entry lacks the string ") + key));
    }
    return it->get<std::string>();
  };
  GrantEntry entry;
  ANVIL_TRY(workspace, string_field("workspace"));
  ANVIL_TRY(plugin, string_field("plugin"));
  ANVIL_TRY(sha, string_field("manifest_sha256"));
  entry.workspace = std::move(*workspace);
  entry.plugin_id = std::move(*plugin);
  entry.manifest_sha256 = std::move(*sha);
  if (!IsCanonicalAbsolute(entry.workspace)) {
    return Fail("invalid", Damaged(path, "workspace is not a canonical absolute path"));
  }
  if (!ValidatePluginId(entry.plugin_id)) {
    return Fail("invalid", Damaged(path, "malformed plugin id"));
  }
  if (!IsSha256Hex(entry.manifest_sha256)) {
    return Fail("invalid", Damaged(path, "manifest_sha256 is not 64 lower-case hex digits"));
  }
  const auto time = json.find("granted_at");
  if (time == json.end() || !time->is_number_integer()) {
    return Fail("invalid", Damaged(path, "an entry lacks the integer granted_at"));
  }
  entry.granted_at = time->get<std::int64_t>();
  const auto grant = json.find("grant");
  if (grant == json.end()) return Fail("invalid", Damaged(path, "an entry lacks its grant"));
  auto parsed = GrantFromJson(*grant);
  if (!parsed) return Fail("invalid", Damaged(path, parsed.error().message));
  entry.grant = std::move(*parsed);
  // The copy approved: both keys or neither (an entry from before grants were pinned to one).
  const bool has_dir = json.contains("plugin_dir");
  if (has_dir != json.contains("code_sha256")) {
    return Fail("invalid", Damaged(path, "an entry has only one of plugin_dir and code_sha256"));
  }
  if (has_dir) {
    ANVIL_TRY(dir, string_field("plugin_dir"));
    ANVIL_TRY(code, string_field("code_sha256"));
    if (!IsCanonicalAbsolute(*dir)) {
      return Fail("invalid", Damaged(path, "plugin_dir is not a canonical absolute path"));
    }
    if (!IsSha256Hex(*code)) {
      return Fail("invalid", Damaged(path, "code_sha256 is not 64 lower-case hex digits"));
    }
    entry.copy = PluginCopy{std::move(*dir), std::move(*code), ""};
    if (json.contains("plugin_dir_id")) {
      ANVIL_TRY(id, string_field("plugin_dir_id"));
      if (!IsDirIdentity(*id)) {
        return Fail("invalid", Damaged(path, "plugin_dir_id is not a directory identity"));
      }
      entry.copy->dir_identity = std::move(*id);
    }
  } else if (json.contains("plugin_dir_id")) {
    return Fail("invalid", Damaged(path, "an entry has plugin_dir_id without plugin_dir"));
  }
  return entry;
}

Result<std::vector<GrantEntry>> ParseStore(std::string_view text, const std::string& path) {
  // allow_exceptions=false: a torn file is a value (discarded), never a throw.
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Fail("invalid", Damaged(path, "not valid JSON (torn write?)"));
  if (!doc.is_object()) return Fail("invalid", Damaged(path, "top level is not an object"));
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() != "version" && it.key() != "grants") {
      return Fail("invalid", Damaged(path, "unknown key " + QuotePathForMessage(it.key())));
    }
  }
  const auto version = doc.find("version");
  if (version == doc.end() || !version->is_number_integer() ||
      version->get<std::int64_t>() < kOldestReadableVersion ||
      version->get<std::int64_t>() > kFormatVersion) {
    return Fail("invalid", Damaged(path, "missing or unsupported version (expected 1 to 3)"));
  }
  const auto grants = doc.find("grants");
  if (grants == doc.end() || !grants->is_array()) {
    return Fail("invalid", Damaged(path, "grants is not a list"));
  }
  std::vector<GrantEntry> entries;
  for (const auto& item : *grants) {
    ANVIL_TRY(entry, EntryFromJson(item, path));
    // The writer keeps one entry per (workspace, plugin); two mean the file was not written by
    // Anvil, and picking one of them would be a guess.
    for (const GrantEntry& seen : entries) {
      if (seen.workspace == entry->workspace && seen.plugin_id == entry->plugin_id) {
        return Fail("invalid",
                    Damaged(path, "two entries for plugin " + QuotePathForMessage(seen.plugin_id)));
      }
    }
    entries.push_back(std::move(*entry));
  }
  return entries;
}

void SortEntries(std::vector<GrantEntry>& entries) {
  std::sort(entries.begin(), entries.end(), [](const GrantEntry& a, const GrantEntry& b) {
    return std::tie(a.workspace, a.plugin_id) < std::tie(b.workspace, b.plugin_id);
  });
}

}  // namespace

Result<std::string> CanonicalWorkspacePath(const std::string& path) {
  auto resolved = RealPath(path);
  if (!resolved) {
    const int e = resolved.error().sys_errno;
    return SysFail(e == ENOENT ? Code::kNotFound : Code::kInvalid,
                   "workspace " + QuotePathForMessage(path), e);
  }
  std::string out = std::move(*resolved);
  if (!IsCanonicalAbsolute(out)) {
    return Fail("invalid", "workspace path is not valid UTF-8: " + QuotePathForMessage(out));
  }
  return out;
}

Result<std::string> GrantStore::DefaultPath() {
  // XDG Base Directory: a relative XDG_STATE_HOME is invalid and must be ignored (it would be
  // resolved against whatever directory Anvil happens to run in, e.g. a hostile repository).
  const std::string state = XdgStateHome();
  if (!state.empty()) return state + "/anvil/grants.json";
  const std::string home_dir = AnvilUserHome();
  if (home_dir.empty()) {
    return Fail("not_found",
                "cannot find a home directory for the grant store (fix: set HOME or "
                "XDG_STATE_HOME)");
  }
  return home_dir + "/.local/state/anvil/grants.json";
}

GrantStore::GrantStore(std::string path, std::string file_name, UniqueFd dir)
    : path_(std::move(path)), file_name_(std::move(file_name)), dir_(std::move(dir)) {}

Result<GrantStore> GrantStore::Open(const std::string& path_override) {
  std::string path = path_override;
  if (path.empty()) {
    ANVIL_TRY(default_path, DefaultPath());
    path = std::move(*default_path);
  }
  const auto slash = path.rfind('/');
  const std::string dir_path =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string file_name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (file_name.empty() || file_name == "." || file_name == "..") {
    return Fail("invalid", "grant store path " + QuotePathForMessage(path) + " names no file");
  }
  // XDG: the state directory is private to the user.
  ANVIL_RETURN_IF_ERROR(MakePrivateDirs(dir_path, "create directory "));

  // O_NOFOLLOW on the directory itself: a symlink planted as ~/.local/state/anvil would redirect
  // every grant to a place someone else chose.
  auto dir = OpenDirectory(dir_path, DirOpen::kReadNoFollow);
  if (!dir) {
    const int e = dir.error().sys_errno;
    if (e == ELOOP || e == ENOTDIR) {
      return Fail("denied", "grant store directory " + QuotePathForMessage(dir_path) +
                                " is a symbolic link or not a directory; refusing it");
    }
    return SysFail("io", "open grant store directory " + QuotePathForMessage(dir_path), e);
  }
  ANVIL_TRY(owner, OwnerOfFd(dir->Get(), dir_path));
  if (!owner->Mine()) {
    return Fail("denied", "grant store directory " + QuotePathForMessage(dir_path) +
                              " is owned by uid " + std::to_string(owner->uid) +
                              ", not by you (uid " + std::to_string(owner->euid) +
                              "); refusing grants another user controls");
  }
  if (owner->others_may_write) {
    return Fail("denied", "grant store directory " + QuotePathForMessage(dir_path) +
                              " is writable by other users (fix: chmod 700 it)");
  }
  GrantStore store(path, file_name, std::move(*dir));
  ANVIL_RETURN_IF_ERROR(store.Reload());
  return store;
}

Status GrantStore::Reload() {
  OwnerFacts owner;
  auto text = ReadRegularFileNoFollowOwned(dir_.Get(), file_name_, kMaxStoreBytes, owner);
  if (!text) {
    if (text.error().code == "not_found") {
      entries_.clear();
      return Ok();
    }
    Error error = text.error();
    error.message = "grant store: " + error.message;
    return tl::unexpected(std::move(error));
  }
  // Checked on the opened file, not by name: what was read is what was vetted.
  if (!owner.Mine()) {
    return Fail("denied", QuotePathForMessage(path_) + " is owned by uid " +
                              std::to_string(owner.uid) + ", not by you (uid " +
                              std::to_string(owner.euid) +
                              "); refusing grants another user could have written");
  }
  if (owner.others_may_write) {
    return Fail("denied", QuotePathForMessage(path_) +
                              " is writable by other users; refusing grants they could have "
                              "written (fix: chmod 600 it after checking its contents)");
  }
  ANVIL_TRY(entries, ParseStore(*text, path_));
  entries_ = std::move(*entries);
  return Ok();
}

Status GrantStore::Save() const {
  nlohmann::json grants = nlohmann::json::array();
  for (const Entry& entry : entries_) {
    nlohmann::json item = {{"workspace", entry.workspace},
                           {"plugin", entry.plugin_id},
                           {"manifest_sha256", entry.manifest_sha256},
                           {"granted_at", entry.granted_at},
                           {"grant", GrantToJson(entry.grant)}};
    if (entry.copy) {
      item["plugin_dir"] = entry.copy->dir;
      item["code_sha256"] = entry.copy->code_sha256;
      if (!entry.copy->dir_identity.empty()) item["plugin_dir_id"] = entry.copy->dir_identity;
    }
    grants.push_back(std::move(item));
  }
  const nlohmann::json doc = {{"version", kFormatVersion}, {"grants", std::move(grants)}};
  // error_handler_t::replace: dump never throws; every key string was validated as UTF-8.
  const std::string text =
      doc.dump(2, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace) + "\n";
  return WriteFileAtomically(dir_.Get(), file_name_, text, 0600);
}

std::optional<Grant> GrantStore::Find(std::string_view workspace, std::string_view plugin_id,
                                      std::string_view manifest_sha256) const {
  for (const Entry& entry : entries_) {
    if (entry.workspace == workspace && entry.plugin_id == plugin_id &&
        entry.manifest_sha256 == manifest_sha256) {
      return entry.grant;
    }
  }
  return std::nullopt;
}

std::optional<Grant> GrantStore::FindForCopy(std::string_view workspace, std::string_view plugin_id,
                                             std::string_view manifest_sha256,
                                             const PluginCopy& copy) const {
  for (const Entry& entry : entries_) {
    if (entry.workspace == workspace && entry.plugin_id == plugin_id &&
        entry.manifest_sha256 == manifest_sha256 && entry.copy && entry.copy->Matches(copy)) {
      return entry.grant;
    }
  }
  return std::nullopt;
}

std::optional<GrantEntry> GrantStore::FindLatest(std::string_view workspace,
                                                 std::string_view plugin_id) const {
  const Entry* latest = nullptr;
  for (const Entry& entry : entries_) {
    if (entry.workspace == workspace && entry.plugin_id == plugin_id &&
        (latest == nullptr || entry.granted_at >= latest->granted_at)) {
      latest = &entry;
    }
  }
  if (latest == nullptr) return std::nullopt;
  return *latest;
}

Status GrantStore::Approve(std::string_view workspace, std::string_view plugin_id,
                           std::string_view manifest_sha256, const Grant& grant) {
  return Approve(workspace, plugin_id, manifest_sha256, grant, std::optional<PluginCopy>());
}

Status GrantStore::Approve(std::string_view workspace, std::string_view plugin_id,
                           std::string_view manifest_sha256, const Grant& grant,
                           const PluginCopy& copy) {
  if (!IsCanonicalAbsolute(copy.dir)) {
    return Fail("invalid", "plugin directory " + QuotePathForMessage(copy.dir) +
                               " is not a canonical absolute path");
  }
  if (!IsSha256Hex(copy.code_sha256)) {
    return Fail("invalid", "code hash is not 64 lower-case hex digits");
  }
  if (!copy.dir_identity.empty() && !IsDirIdentity(copy.dir_identity)) {
    return Fail("invalid", "plugin directory identity " + QuotePathForMessage(copy.dir_identity) +
                               " is malformed");
  }
  return Approve(workspace, plugin_id, manifest_sha256, grant, std::optional<PluginCopy>(copy));
}

Status GrantStore::Approve(std::string_view workspace, std::string_view plugin_id,
                           std::string_view manifest_sha256, const Grant& grant,
                           const std::optional<PluginCopy>& copy) {
  if (!IsCanonicalAbsolute(workspace)) {
    return Fail("invalid", "workspace " + QuotePathForMessage(workspace) +
                               " is not a canonical absolute path (use CanonicalWorkspacePath)");
  }
  ANVIL_RETURN_IF_ERROR(ValidatePluginId(plugin_id));
  if (!IsSha256Hex(manifest_sha256)) {
    return Fail("invalid", "manifest hash is not 64 lower-case hex digits");
  }
  ANVIL_TRY(lock, DirLock::Acquire(dir_.Get(), "lock the grant store directory"));
  ANVIL_RETURN_IF_ERROR(Reload());
  std::vector<Entry> before = entries_;
  std::erase_if(entries_, [&](const Entry& e) {
    return e.workspace == workspace && e.plugin_id == plugin_id;
  });
  entries_.push_back(Entry{std::string(workspace), std::string(plugin_id),
                           std::string(manifest_sha256), grant,
                           static_cast<std::int64_t>(std::time(nullptr)), copy});
  SortEntries(entries_);
  if (auto saved = Save(); !saved) {
    entries_ = std::move(before);  // memory stays what the disk holds
    return saved;
  }
  return Ok();
}

Result<std::vector<GrantEntry>> GrantStore::Revoke(std::string_view workspace,
                                                   std::string_view plugin_id) {
  ANVIL_TRY(lock, DirLock::Acquire(dir_.Get(), "lock the grant store directory"));
  ANVIL_RETURN_IF_ERROR(Reload());
  std::vector<Entry> before = entries_;
  std::vector<Entry> removed;
  std::erase_if(entries_, [&](const Entry& e) {
    if (e.workspace != workspace || e.plugin_id != plugin_id) return false;
    removed.push_back(e);
    return true;
  });
  if (removed.empty()) {
    return Fail("not_found", "no grant for plugin " + QuotePathForMessage(plugin_id) +
                                 " in workspace " + QuotePathForMessage(workspace));
  }
  if (auto saved = Save(); !saved) {
    entries_ = std::move(before);
    return tl::unexpected(saved.error());
  }
  return removed;
}

std::vector<GrantEntry> GrantStore::List(std::string_view workspace) const {
  std::vector<Entry> out;
  for (const Entry& entry : entries_) {
    if (workspace.empty() || entry.workspace == workspace) out.push_back(entry);
  }
  SortEntries(out);
  return out;
}

}  // namespace anvil
