// policy/git_territory.h: references into the sandbox homes and kept /tmp directories.
#include "policy/git_territory.h"

#include <algorithm>
#include <functional>

#include "fs/protected_names.h"
#include "policy/git_paths.h"
#include "policy/sandbox_policy.h"

namespace anvil {
namespace {

using namespace git_paths;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string PercentDecoded(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexValue(s[i + 1]) >= 0 && HexValue(s[i + 2]) >= 0) {
      out += static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

constexpr int kMaxLexicalRounds = 4;  // lexical rests taken again from their existing prefix

}  // namespace

GitTerritory GitTerritoryOf(const std::vector<std::string>& homes_dirs, const GitFs& fs) {
  GitTerritory t;
  auto add = [&](const std::string& path) {
    if (auto r = fs.resolve(path)) {
      const GitFileFacts f = fs.lstat(*r);
      if (f.exists()) t.ids.insert({f.dev, f.ino});
    }
  };
  for (const auto& dir : homes_dirs) {
    if (dir.empty() || dir[0] != '/') continue;
    const auto real = fs.resolve(dir);
    t.paths.push_back(real.value_or(LexicalNormal(dir)));
    if (real) add(*real);
  }
  return t;
}

std::string GitTerritoryKey(const GitTerritory& territory) {
  // A set: neither the order of the homes directories nor a repeat (the run's own homes
  // directory is most often the environment's) makes another key. A path holds no NUL.
  std::vector<std::string> paths = territory.paths;
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  std::string key;
  for (const auto& p : paths) {
    key += p;
    key.push_back('\0');
  }
  for (const auto& [dev, ino] : territory.ids) {  // ordered
    key += std::to_string(dev) + ":" + std::to_string(ino);
    key.push_back('\0');
  }
  return key;
}

void GitTerritoryJudge::ListHomes() {
  listed_ = true;
  ids_ = territory_.ids;
  auto add = [&](const std::string& path) {
    if (auto r = fs_.resolve(path)) {
      const GitFileFacts f = fs_.lstat(*r);
      if (f.exists()) ids_.insert({f.dev, f.ino});
    }
  };
  for (const auto& dir : territory_.paths) {
    auto listing = fs_.list_dir(dir);
    if (!listing) continue;
    for (const auto& e : listing->entries) {
      if (e.type != GitFileType::kDir) continue;
      const std::string name = Join(dir, e.name);
      add(name);
      add(Join(name, "home"));
      add(Join(name, "tmp"));
    }
  }
}

std::optional<std::string> GitTerritoryJudge::Within(const std::string& real) {
  for (const auto& p : territory_.paths) {
    if (PathIsWithin(real, p)) return seen_[real] = p;
  }
  // Up from `real`: every directory on the way has the answer of the first one that has one.
  std::vector<std::string> way;
  std::optional<std::string> found;
  for (std::string dir = real;; dir = Dirname(dir)) {
    if (auto it = seen_.find(dir); it != seen_.end()) {
      found = it->second;
      break;
    }
    way.push_back(dir);
    const GitFileFacts f = fs_.lstat(dir);
    if (!listed_) ListHomes();
    if (f.exists() && ids_.count({f.dev, f.ino})) {
      found = dir;
      break;
    }
    if (dir == "/" || dir == ".") break;
  }
  for (const auto& d : way) seen_[d] = found;
  return found;
}

GitWay FollowGitWay(
    const std::string& from, const std::string& path, const GitFs& fs,
    const std::function<bool(const std::string& dir, const std::string& target)>& on_link,
    bool stop_at_magic) {
  constexpr size_t kMaxLinksOnTheWay = 40;  // as the kernel's
  GitWay way;
  if (!fs.readlink || !fs.resolve) {
    way.end = GitWayEnd::kNowhere;
    return way;
  }
  std::vector<std::string> todo;
  auto push = [&todo](const std::string& text) {
    const std::vector<std::string> parts = PathComponents(text);
    todo.insert(todo.end(), parts.rbegin(), parts.rend());
  };
  way.at = !path.empty() && path[0] == '/' ? "/" : from;  // canonical: no link in it
  push(path);
  size_t links = 0;
  while (!todo.empty()) {
    std::string part = std::move(todo.back());
    todo.pop_back();
    if (part == "." || part.empty()) continue;
    if (part == "..") {
      way.at = Dirname(way.at);
      continue;
    }
    const std::string next = Join(way.at, part);
    if (stop_at_magic && GitMagicLinkPath(next)) {
      way.end = GitWayEnd::kMagic;
      way.at = next;
      return way;
    }
    if (auto target = fs.readlink(next)) {
      if (on_link && !on_link(way.at, *target)) {
        way.end = GitWayEnd::kStopped;
        return way;
      }
      if (++links > kMaxLinksOnTheWay || target->empty()) {
        way.end = GitWayEnd::kNowhere;
        return way;
      }
      if ((*target)[0] == '/') way.at = "/";
      push(*target);
      continue;
    }
    if (!fs.resolve(next)) {
      way.end = GitWayEnd::kMissing;
      way.rest.push_back(std::move(part));
      way.rest.insert(way.rest.end(), todo.rbegin(), todo.rend());
      return way;
    }
    way.at = next;
  }
  return way;
}

bool IsStandardStreamTarget(std::string_view target) {
  static constexpr std::string_view kStreams[] = {
      "/dev/stdin", "/dev/stdout",     "/dev/stderr",     "/dev/fd/0",      "/dev/fd/1",
      "/dev/fd/2",  "/proc/self/fd/0", "/proc/self/fd/1", "/proc/self/fd/2"};
  for (std::string_view s : kStreams) {
    if (target == s) return true;
  }
  return false;
}

namespace {

// The first symbolic link on the way of `path` as the kernel follows it, component by
// component, whose directory `within` places in the territory.
std::optional<std::string> LinkInTerritoryOnTheWay(
    const std::string& path, const GitFs& fs,
    const std::function<std::optional<std::string>(const std::string&)>& within) {
  std::optional<std::string> hit;
  // A link that lies in the territory: a later run there re-points it, wherever it leads now.
  // A magic link on the way: PathAt's own answer.
  FollowGitWay(
      "/", path, fs,
      [&](const std::string& dir, const std::string&) {
        hit = within(dir);
        return !hit;
      },
      /*stop_at_magic=*/true);
  return hit;
}

}  // namespace

std::optional<std::string> GitTerritoryJudge::PathAt(const std::string& path, int depth) {
  if (territory_.empty() || path.empty() || path[0] != '/') return std::nullopt;
  if (auto magic = GitMagicLinkPath(path)) return magic;
  // By its written path, link by link: a way through a link of a sandbox home that leads back
  // out (into the workspace) leads into the territory all the same.
  if (auto hop = LinkInTerritoryOnTheWay(path, fs_,
                                         [this](const std::string& dir) { return Within(dir); })) {
    return hop;
  }
  if (auto real = fs_.resolve(path)) {
    if (auto magic = GitMagicLinkPath(*real)) return magic;
    return Within(*real);
  }
  // The longest prefix that exists, as the kernel resolves it (symlinks and `..` followed).
  const std::vector<std::string> parts = PathComponents(path);
  std::string written = "/";
  std::string real = "/";
  size_t k = 0;
  for (; k < parts.size(); ++k) {
    const std::string next = Join(written, parts[k]);
    auto r = fs_.resolve(next);
    if (!r) break;
    written = next;
    real = *r;
  }
  // Stopped at a magic link on the way (the host's resolution refuses them): it leads anywhere.
  if (auto magic = GitMagicLinkPath(real)) return magic;
  if (auto hit = Within(real)) return hit;
  // The rest does not exist yet: whatever is made there later is taken lexically from here.
  std::string rest_path = real;
  for (size_t i = k; i < parts.size(); ++i) rest_path = Join(rest_path, parts[i]);
  const std::string lexical = LexicalNormal(rest_path);
  for (const auto& p : territory_.paths) {
    if (PathIsWithin(lexical, p)) return p;
  }
  // Taken again only where `..` or `.` in the rest makes it another path than `rest_path`,
  // which has the same existing prefix.
  bool dots = false;
  for (size_t i = k; i < parts.size(); ++i) dots = dots || parts[i] == ".." || parts[i] == ".";
  if (dots && lexical != path && depth < kMaxLexicalRounds) return PathAt(lexical, depth + 1);
  return std::nullopt;
}

std::optional<std::string> GitTerritoryJudge::Path(const std::string& path) {
  return PathAt(path, 0);
}

std::optional<std::string> GitTerritoryJudge::Symlink(const std::string& link) {
  if (territory_.empty() || !fs_.readlink) return std::nullopt;
  auto target = fs_.readlink(link);
  if (!target || target->empty()) return std::nullopt;
  // A name in the link's own directory leads where that entry leads: a symlink there is judged
  // itself, anything else lies beside this one.
  if (target->find('/') == std::string::npos && *target != "..") return std::nullopt;
  // A process's own standard stream by name: never a way into a directory.
  if (IsStandardStreamTarget(*target)) return std::nullopt;
  if ((*target)[0] == '/') return Path(*target);
  const std::string dir = fs_.resolve(Dirname(link)).value_or(Dirname(link));
  return Path(Join(dir, *target));
}

namespace {

// The first protected name other than `.git` (fs/protected_names.h) that `path` (absolute,
// lexical) names below the root of `roots` it lies in: the path up to it, or nullopt.
std::optional<std::string> ProtectedNameOnPath(const std::string& path,
                                               const std::vector<std::string>& roots) {
  for (const auto& root : roots) {
    if (!PathIsWithin(path, root) || path == root) continue;
    std::string dir_name = Basename(root);
    std::string at = root;
    for (const auto& part : PathComponents(path.substr(root.size()))) {
      at = Join(at, part);
      const auto kind = ProtectedNameKindIn(dir_name, part);
      if (kind && *kind != ProtectedNameKind::kGitMetadata) return at;
      dir_name = part;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> GitLinkIntoProtected(const std::string& link,
                                                const std::vector<std::string>& places,
                                                const std::vector<std::string>& roots,
                                                const GitFs& fs) {
  if (!fs.readlink || !fs.resolve) return std::nullopt;
  const auto first = fs.readlink(link);
  if (!first || first->empty() || IsStandardStreamTarget(*first)) return std::nullopt;
  const auto dir = fs.resolve(Dirname(link));
  if (!dir) return std::nullopt;
  // Every link on the way by the path it writes: a protected name it names is where a host
  // tool is led, wherever that name's own link goes (an agent's `.claude -> ../shared`).
  std::optional<std::string> named;
  const GitWay way = FollowGitWay(
      *dir, Basename(link), fs,
      [&](const std::string& at, const std::string& target) {
        if (IsStandardStreamTarget(target)) return true;
        const std::string written =
            LexicalNormal(!target.empty() && target[0] == '/' ? target : Join(at, target));
        named = GitMagicLinkPath(written);
        if (!named) named = ProtectedNameOnPath(written, roots);
        return !named;
      },
      /*stop_at_magic=*/true);
  if (named) return named;
  if (way.end == GitWayEnd::kMagic) return GitMagicLinkPath(way.at);
  if (way.end != GitWayEnd::kReached && way.end != GitWayEnd::kMissing) return std::nullopt;
  std::string end = way.at;
  for (const auto& part : way.rest) end = Join(end, part);
  end = LexicalNormal(end);
  for (const auto& place : places) {
    if (PathIsWithin(end, place)) return place;
  }
  return ProtectedNameOnPath(end, roots);
}

bool GitLinkMayBeNew(const std::string& link, const GitFileFacts& now, const GitFileFacts& dir_now,
                     const GitLinksBefore& before) {
  if (before.trust_none || now.type != GitFileType::kSymlink) return true;
  if (auto it = before.listed.find(link); it != before.listed.end()) {
    if (it->second.SameObject(now) && it->second.SameCtime(now)) return false;
  }
  if (dir_now.type == GitFileType::kDir) {
    auto it = before.remembered_dirs.find({dir_now.dev, dir_now.ino});
    if (it != before.remembered_dirs.end() && it->second == Dirname(link) &&
        now.dev == dir_now.dev && now.ctime_sec < before.walk_start - 1) {
      return false;
    }
  }
  return true;
}

std::optional<std::string> GitMagicLinkPath(const std::string& path) {
  if (path.empty() || path[0] != '/') return std::nullopt;
  // Component by component, as the kernel walks it: a `..` after a magic link is taken from
  // where the link led, so the way is judged at every step, not only where it ends lexically.
  std::vector<std::string> parts;
  for (const auto& part : PathComponents(path)) {
    if (part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(part);
    // /proc/self, /proc/thread-self and /proc/PID hold the magic links (cwd, root, exe, fd/N,
    // ...); the rest of /proc (Anvil's own dangling placeholders among it) none.
    if (parts[0] == "proc" && parts.size() > 1 &&
        (parts[1] == "self" || parts[1] == "thread-self" ||
         parts[1].find_first_not_of("0123456789") == std::string::npos)) {
      return "/proc/" + parts[1];
    }
    if (parts[0] == "dev" && parts.size() > 1 &&
        (parts[1] == "fd" || parts[1] == "stdin" || parts[1] == "stdout" || parts[1] == "stderr")) {
      return "/dev/" + parts[1];
    }
  }
  return std::nullopt;
}

std::vector<std::string> GitLocalRepoPaths(std::string_view value,
                                           const std::vector<std::string>& bases) {
  std::vector<std::string> out;
  if (value.empty() || value[0] == '~') return out;
  std::string path;
  if (value.substr(0, 7) == "file://") {
    std::string_view rest = value.substr(7);
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos) return out;
    path = std::string(rest.substr(slash));  // file://HOST/PATH: git takes the path
    out.push_back(path);
    if (path.find('%') != std::string::npos) out.push_back(PercentDecoded(path));
    return out;
  }
  if (value.find("://") != std::string_view::npos) return out;
  // git's url_is_local_not_ssh: a colon before any slash makes `host:path` (ssh).
  const auto colon = value.find(':');
  const auto slash = value.find('/');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon < slash)) {
    return out;
  }
  if (value[0] == '/') {
    out.emplace_back(value);
    return out;
  }
  // Relative: from every base, and from each directory above one, with and without its
  // leading `./` and `../` (a directory deeper in the working tree takes up some of them).
  std::string_view stripped = value;
  while (true) {
    if (stripped.substr(0, 2) == "./") {
      stripped.remove_prefix(2);
    } else if (stripped.substr(0, 3) == "../") {
      stripped.remove_prefix(3);
    } else if (stripped == "." || stripped == "..") {
      stripped = "";
    } else if (!stripped.empty() && stripped[0] == '/') {
      stripped.remove_prefix(1);
    } else {
      break;
    }
  }
  for (const auto& base : bases) {
    if (base.empty() || base[0] != '/') continue;
    out.push_back(Join(base, value));
    for (std::string dir = base;; dir = Dirname(dir)) {
      out.push_back(stripped.empty() ? dir : Join(dir, stripped));
      if (dir == "/") break;
    }
  }
  return out;
}

}  // namespace anvil
