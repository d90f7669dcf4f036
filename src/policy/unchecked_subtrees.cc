#include "policy/unchecked_subtrees.h"

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/json_depth.h"
#include "fs/file_facts.h"
#include "fs/file_io.h"
#include "fs/workspace_path.h"
#include "policy/digest.h"
#include "policy/grant_store.h"
#include "policy/sandbox_policy.h"

namespace anvil {
namespace {

constexpr std::string_view kPrefix = "unchecked-";
constexpr std::string_view kSuffix = ".json";

bool AbsoluteClean(const std::string& p) {
  if (p.empty() || p[0] != '/' || p.size() > 4096) return false;
  if (p != "/" && p.back() == '/') return false;
  return p.find('\0') == std::string::npos && p.find("//") == std::string::npos &&
         p.find("/./") == std::string::npos && p.find("/../") == std::string::npos &&
         !p.ends_with("/.") && !p.ends_with("/..");
}

void AddOnce(std::vector<UncheckedSubtree>& into, UncheckedSubtree s) {
  // A path longer than a record may hold (a command nested its directories past PATH_MAX) is
  // recorded as its deepest directory that fits: more is then unchecked, never less, and the
  // record stays one the next run reads (one it refused stopped every later run: review s15).
  while (s.path.size() > 4096) {
    const auto slash = s.path.rfind('/', 4096);
    s.path = slash == 0 || slash == std::string::npos ? "/" : s.path.substr(0, slash);
  }
  for (const auto& have : into) {
    if (have.path == s.path) return;
  }
  into.push_back(std::move(s));
}

UncheckedRecord WholeRoots(const std::vector<std::string>& roots, const std::string& why) {
  UncheckedRecord r;
  r.roots = roots;
  for (const auto& root : roots) r.subtrees.push_back({root, why});
  return r;
}

// None of the record's roots exists any more (a workspace removed): nothing is left there to
// check, and a directory made there later is the user's.
bool RootsGone(const UncheckedRecord& r) {
  return std::all_of(r.roots.begin(), r.roots.end(), [](const std::string& root) {
    auto real = RealPath(root);
    return !real && (real.error().sys_errno == ENOENT || real.error().sys_errno == ENOTDIR);
  });
}

// A record found gone is removed only when every root was in a temporary directory: a
// workspace elsewhere may be missing only for a while (a drive or network share unmounted, a
// locked encrypted directory, a rename and back), and its record must still apply when it
// comes back. Elsewhere a gone record is left out of each load and kept.
bool RemovableWhenGone(const UncheckedRecord& r) {
  return !r.roots.empty() &&
         std::all_of(r.roots.begin(), r.roots.end(), [](const std::string& root) {
           for (const char* tmp : {"/tmp/", "/var/tmp/", "/dev/shm/"}) {
             if (root.starts_with(tmp) && root.size() > std::char_traits<char>::length(tmp))
               return true;
           }
           return false;
         });
}

}  // namespace

std::optional<UncheckedRecord> UncheckedAfterRun(const UncheckedFacts& f) {
  if (f.unwalked_total == 0 && f.unwalked.empty() && f.names_left.empty() &&
      f.check_error.empty() && f.quarantine_failures.empty()) {
    return std::nullopt;
  }
  if (!f.check_error.empty()) return WholeRoots(f.roots, "not checked: " + f.check_error);
  if (!f.quarantine_failures.empty()) {
    return WholeRoots(f.roots, "could not be moved aside: " + f.quarantine_failures.front());
  }
  if (f.unwalked_total > f.unwalked.size()) {
    return WholeRoots(f.roots, "more than " + std::to_string(f.unwalked.size()) +
                                   " subtrees were not walked, first " +
                                   (f.unwalked.empty() ? std::string("?") : f.unwalked[0].path));
  }
  UncheckedRecord r;
  r.roots = f.roots;
  for (const auto& u : f.unwalked) AddOnce(r.subtrees, {u.path, "not walked: " + u.why});
  for (const auto& n : f.names_left) AddOnce(r.subtrees, {n.path, "left in place: " + n.why});
  if (r.subtrees.size() > kMaxUncheckedSubtrees) {
    return WholeRoots(f.roots, "more than " + std::to_string(kMaxUncheckedSubtrees) +
                                   " subtrees were not checked");
  }
  return r;
}

RunTrust BoundedRunTrust(RunTrust trust) {
  if (trust.ids.size() > kMaxTrustedIds || trust.names.size() > kMaxTrustedNames) return {};
  return trust;
}

bool RootsOverlap(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (const auto& x : a) {
    for (const auto& y : b) {
      if (PathIsWithin(x, y) || PathIsWithin(y, x)) return true;
    }
  }
  return false;
}

UncheckedRecord MergeUncheckedRecords(const UncheckedRecord& older, const UncheckedRecord& newer) {
  UncheckedRecord out = newer;
  out.trusted.reset();  // a live run's, never a settled record's
  for (const auto& s : older.subtrees) AddOnce(out.subtrees, s);
  if (out.subtrees.size() > kMaxUncheckedSubtrees) {
    return WholeRoots(out.roots, "more than " + std::to_string(kMaxUncheckedSubtrees) +
                                     " subtrees were not checked");
  }
  return out;
}

std::string EncodeUncheckedRecord(const UncheckedRecord& record) {
  nlohmann::json subtrees = nlohmann::json::array();
  for (const auto& s : record.subtrees) subtrees.push_back({{"path", s.path}, {"why", s.why}});
  nlohmann::json j = {{"version", 1}, {"roots", record.roots}, {"subtrees", subtrees}};
  if (record.trusted) {
    nlohmann::json ids = nlohmann::json::array();
    for (const auto& [dev, ino] : record.trusted->ids) ids.push_back({dev, ino});
    j["trusted"] = {{"ids", ids}, {"names", record.trusted->names}};
    // A live run's: read by programs only, and it may be long.
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::optional<UncheckedRecord> DecodeUncheckedRecord(std::string_view text) {
  nlohmann::json j = ParseBoundedJson(text);
  if (!j.is_object() || !j.contains("version") || j["version"] != 1 || !j.contains("roots") ||
      !j["roots"].is_array() || !j.contains("subtrees") || !j["subtrees"].is_array()) {
    return std::nullopt;
  }
  UncheckedRecord r;
  for (const auto& root : j["roots"]) {
    if (!root.is_string() || !AbsoluteClean(root.get<std::string>())) return std::nullopt;
    r.roots.push_back(root.get<std::string>());
  }
  for (const auto& s : j["subtrees"]) {
    if (!s.is_object() || !s.contains("path") || !s["path"].is_string() || !s.contains("why") ||
        !s["why"].is_string() || !AbsoluteClean(s["path"].get<std::string>())) {
      return std::nullopt;
    }
    r.subtrees.push_back({s["path"].get<std::string>(), s["why"].get<std::string>()});
  }
  if (r.roots.empty() || r.subtrees.empty()) return std::nullopt;
  if (j.contains("trusted")) {
    const auto& t = j["trusted"];
    if (!t.is_object() || !t.contains("ids") || !t["ids"].is_array() || !t.contains("names") ||
        !t["names"].is_array() || t["ids"].size() > kMaxTrustedIds ||
        t["names"].size() > kMaxTrustedNames) {
      return std::nullopt;
    }
    RunTrust trust;
    for (const auto& id : t["ids"]) {
      if (!id.is_array() || id.size() != 2 || !id[0].is_number_unsigned() ||
          !id[1].is_number_unsigned()) {
        return std::nullopt;
      }
      trust.ids.emplace_back(id[0].get<uint64_t>(), id[1].get<uint64_t>());
    }
    for (const auto& n : t["names"]) {
      if (!n.is_string() || !AbsoluteClean(n.get<std::string>())) return std::nullopt;
      trust.names.push_back(n.get<std::string>());
    }
    r.trusted = std::move(trust);
  }
  return r;
}

std::string UncheckedRecordFileName(const std::vector<std::string>& roots) {
  std::string joined;
  for (const auto& r : roots) {
    joined += r;
    joined.push_back('\0');
  }
  return std::string(kPrefix) + Sha256Hex(joined).substr(0, 32) + std::string(kSuffix);
}

bool IsUncheckedRecordFileName(std::string_view name) {
  if (name.size() != kPrefix.size() + 32 + kSuffix.size() || !name.starts_with(kPrefix) ||
      !name.ends_with(kSuffix)) {
    return false;
  }
  const std::string_view hex = name.substr(kPrefix.size(), 32);
  return std::all_of(hex.begin(), hex.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::optional<UncheckedHit> UncheckedSubtreeFor(const std::vector<UncheckedRecord>& records,
                                                std::string_view workspace,
                                                std::string_view plugin_dir) {
  for (const auto& r : records) {
    for (const auto& s : r.subtrees) {
      if (PathIsWithin(workspace, s.path) || PathIsWithin(s.path, workspace) ||
          (!plugin_dir.empty() && PathIsWithin(plugin_dir, s.path))) {
        std::string root = s.path;
        for (const auto& candidate : r.roots) {
          if (PathIsWithin(s.path, candidate)) root = candidate;
        }
        return UncheckedHit{s, root};
      }
    }
  }
  return std::nullopt;
}

std::string UncheckedRefusal(const UncheckedHit& hit) {
  return "a sandboxed command's run left " + QuotePathForMessage(hit.subtree.path) +
         " unchecked (" + hit.subtree.why +
         "): an Anvil.toml, anvil.lock, .anvil or plugin code there may be the command's, so no "
         "plugin runs there. Look at it and remove what you did not make, then run `anvil "
         "sandbox --cwd " +
         QuotePathForMessage(hit.root) +
         " -- true` once (it starts once the subtree is within the bounds, --git-scan-limit): "
         "its check moves aside what runs code or configures Anvil there, and clears this";
}

std::vector<std::string> SuspectUncheckedSubtrees(const std::vector<UncheckedRecord>& records,
                                                  const std::vector<std::string>& roots) {
  std::vector<std::string> out;
  for (const auto& r : records) {
    for (const auto& s : r.subtrees) {
      const bool inside = std::any_of(roots.begin(), roots.end(), [&](const std::string& root) {
        return PathIsWithin(s.path, root);
      });
      if (inside && std::find(out.begin(), out.end(), s.path) == out.end()) out.push_back(s.path);
    }
  }
  return out;
}

std::optional<UncheckedRecord> UncheckedLeftAfter(const UncheckedRecord& record,
                                                  const std::vector<std::string>& roots) {
  UncheckedRecord left;
  left.roots = record.roots;
  for (const auto& s : record.subtrees) {
    const bool inside = std::any_of(roots.begin(), roots.end(), [&](const std::string& root) {
      return PathIsWithin(s.path, root);
    });
    if (!inside) left.subtrees.push_back(s);
  }
  if (left.subtrees.empty()) return std::nullopt;
  return left;
}

std::string UncheckedRecordsDir() {
  auto grants = GrantStore::DefaultPath();
  if (!grants) return "";
  const auto slash = grants->rfind('/');
  if (slash == std::string::npos || slash == 0) return "";
  return grants->substr(0, slash) + "/unchecked";
}

Result<std::vector<LoadedUncheckedRecord>> LoadUncheckedRecords(
    const std::string& dir, const UncheckedLiveFn& live, std::vector<LoadedUncheckedRecord>* gone) {
  std::vector<LoadedUncheckedRecord> out;
  auto fd = OpenDirectory(dir, DirOpen::kReadNoFollow);
  if (!fd) {
    // Missing, or not this user's to read (a HOME of another user's): no run of this user
    // could have written a record there either.
    const int e = fd.error().sys_errno;
    if (e == ENOENT || e == EACCES || e == EPERM) return out;
    return SysFail("io", "open the record of unchecked subtrees " + QuotePathForMessage(dir),
                   fd.error().sys_errno);
  }
  std::vector<std::string> names;
  if (auto s = ForEachName(fd->Get(), "list " + dir,
                           [&](const std::string& name) -> Status {
                             if (IsUncheckedRecordFileName(name)) names.push_back(name);
                             return Ok();
                           });
      !s) {
    return tl::unexpected(s.error());
  }
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    if (live && live(fd->Get(), name)) continue;
    auto shown = [&] { return QuotePathForMessage(dir + "/" + name); };
    OwnerFacts owner;
    auto text = ReadRegularFileNoFollowOwned(fd->Get(), name, kMaxUncheckedRecordBytes, owner);
    if (!text) {
      if (text.error().code == "not_found") continue;  // resolved meanwhile
      return Fail("invalid", "cannot read the record of unchecked subtrees " + shown() + " (" +
                                 text.error().message + "); remove it once you have looked");
    }
    auto record = DecodeUncheckedRecord(*text);
    if (!owner.Mine() || owner.others_may_write || !record) {
      return Fail("invalid", "the record of unchecked subtrees " + shown() +
                                 " is not one of yours (owner, mode or contents); remove it "
                                 "once you have looked at what it names");
    }
    if (RootsGone(*record)) {
      if (gone != nullptr && RemovableWhenGone(*record)) {
        gone->push_back({name, std::move(*text), std::move(*record)});
      }
      continue;
    }
    out.push_back({name, std::move(*text), std::move(*record)});
  }
  return out;
}

Status MakeUncheckedRecordsDir(const std::string& dir) {
  // Nothing is made in a tree that is not the caller's (root with another user's $HOME would
  // leave root-owned directories there that break that user's own runs).
  std::string existing = dir;
  auto fd = OpenDirectory(existing, DirOpen::kPath);
  while (!fd && fd.error().sys_errno == ENOENT && existing.size() > 1) {
    const auto slash = existing.rfind('/');
    existing = slash == 0 || slash == std::string::npos ? "/" : existing.substr(0, slash);
    fd = OpenDirectory(existing, DirOpen::kPath);
  }
  if (!fd) return tl::unexpected(fd.error());
  ANVIL_TRY(owner, OwnerOfFd(fd->Get(), existing));
  if (!owner->Mine()) {
    return Fail("invalid", QuotePathForMessage(existing) + " is not yours (owner uid " +
                               std::to_string(owner->uid) + "); no record is made there");
  }
  return MakePrivateDirs(dir, "create directory ");
}

Status SaveUncheckedRecord(const std::string& dir, const UncheckedRecord& record) {
  if (auto made = MakeUncheckedRecordsDir(dir); !made) return made;
  ANVIL_TRY(fd, OpenDirectory(dir, DirOpen::kReadNoFollow));
  ANVIL_TRY(lock, DirLock::Acquire(fd->Get(), "lock " + dir));
  const std::string name = UncheckedRecordFileName(record.roots);
  UncheckedRecord merged = record;
  OwnerFacts owner;
  if (auto old = ReadRegularFileNoFollowOwned(fd->Get(), name, kMaxUncheckedRecordBytes, owner);
      old) {
    if (auto older = DecodeUncheckedRecord(*old)) merged = MergeUncheckedRecords(*older, record);
  }
  ANVIL_RETURN_IF_ERROR(WriteFileAtomically(fd->Get(), name, EncodeUncheckedRecord(merged), 0600));
  // Best effort: the records of workspaces that no longer exist.
  std::vector<std::string> gone;
  (void)ForEachName(fd->Get(), "list " + dir, [&](const std::string& other) -> Status {
    if (other == name || !IsUncheckedRecordFileName(other)) return Ok();
    OwnerFacts o;
    auto text = ReadRegularFileNoFollowOwned(fd->Get(), other, kMaxUncheckedRecordBytes, o);
    auto r = text ? DecodeUncheckedRecord(*text) : std::nullopt;
    if (r && RemovableWhenGone(*r) && RootsGone(*r)) gone.push_back(other);
    return Ok();
  });
  for (const auto& g : gone) (void)RemoveFileAt(fd->Get(), g);
  return Ok();
}

void RemoveGoneUncheckedRecords(const std::string& dir,
                                const std::vector<LoadedUncheckedRecord>& gone) {
  if (gone.empty()) return;
  auto fd = OpenDirectory(dir, DirOpen::kReadNoFollow);
  if (!fd) return;
  // Under the lock SaveUncheckedRecord and ResolveUncheckedRecord take: a record rewritten
  // meanwhile (its text changed) is not the one found gone, and stays.
  auto lock = DirLock::Acquire(fd->Get(), "lock " + dir);
  if (!lock) return;
  for (const auto& loaded : gone) {
    OwnerFacts owner;
    auto now =
        ReadRegularFileNoFollowOwned(fd->Get(), loaded.file, kMaxUncheckedRecordBytes, owner);
    if (!now || *now != loaded.text || !RemovableWhenGone(loaded.record) ||
        !RootsGone(loaded.record)) {
      continue;
    }
    (void)RemoveFileAt(fd->Get(), loaded.file);
  }
}

Status ResolveUncheckedRecord(const std::string& dir, const LoadedUncheckedRecord& loaded,
                              const std::vector<std::string>& roots) {
  const auto left = UncheckedLeftAfter(loaded.record, roots);
  if (left && left->subtrees.size() == loaded.record.subtrees.size()) return Ok();
  ANVIL_TRY(fd, OpenDirectory(dir, DirOpen::kReadNoFollow));
  ANVIL_TRY(lock, DirLock::Acquire(fd->Get(), "lock " + dir));
  OwnerFacts owner;
  auto now = ReadRegularFileNoFollowOwned(fd->Get(), loaded.file, kMaxUncheckedRecordBytes, owner);
  if (!now || *now != loaded.text) return Ok();
  if (!left) return RemoveFileAt(fd->Get(), loaded.file);
  return WriteFileAtomically(fd->Get(), loaded.file, EncodeUncheckedRecord(*left), 0600);
}

}  // namespace anvil
