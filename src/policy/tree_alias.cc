#include "policy/tree_alias.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "policy/sandbox_policy.h"

namespace anvil {
namespace {

// `path` (within `base`) with `base` replaced by `with`.
std::string Rebase(const std::string& path, const std::string& base, const std::string& with) {
  const std::string rest = base == "/" ? path : path.substr(base.size());
  if (rest.empty() || rest == "/") return with;
  return with == "/" ? rest : with + rest;
}

// Of the mounts at each mount point, the one on top: the one no other mount at that point
// has as its parent (a mount stacked later on a point is a child of the mount it covers, while
// one tucked beneath by propagation can be listed after it); with no ids known, or no single
// such mount, the last listed of them. Built once per table.
class ShowingMounts {
 public:
  explicit ShowingMounts(const std::vector<HostMount>& mounts) {
    std::unordered_map<std::string, std::vector<size_t>> at;
    for (size_t i = 0; i < mounts.size(); ++i) at[mounts[i].path].push_back(i);
    for (const auto& [point, group] : at) {
      std::unordered_set<uint64_t> parents;
      for (size_t i : group) {
        if (mounts[i].id != 0) parents.insert(mounts[i].parent);
      }
      size_t top = group.back();
      for (auto it = group.rbegin(); it != group.rend(); ++it) {
        if (mounts[*it].id == 0 || !parents.contains(mounts[*it].id)) {
          top = *it;
          break;
        }
      }
      top_[point] = &mounts[top];
    }
  }

  // The mount that shows canonical `path`: the top one at the deepest mount point holding it.
  const HostMount* Of(const std::string& path) const {
    std::string at = path;
    while (true) {
      if (auto it = top_.find(at); it != top_.end()) return it->second;
      if (at == "/" || at.empty()) return nullptr;
      const size_t slash = at.rfind('/');
      at = slash == 0 || slash == std::string::npos ? "/" : at.substr(0, slash);
    }
  }

  // `m` is the one on top at its mount point.
  bool OnTop(const HostMount& m) const {
    auto it = top_.find(m.path);
    return it != top_.end() && it->second == &m;
  }

 private:
  std::unordered_map<std::string, const HostMount*> top_;
};

// `a` and `b` lie one within the other.
bool Related(const std::string& a, const std::string& b) {
  return PathIsWithin(a, b) || PathIsWithin(b, a);
}

}  // namespace

Result<std::vector<HostMount>> MountTableForAliases(const MountInfoRead& read) {
  const std::string what =
      "bind-alias protection (a root that shows the home, a credential location or Anvil's own "
      "directories by another name keeps them there too) needs the mount table, "
      "/proc/self/mountinfo, ";
  const std::string fix =
      ". fix: run where /proc is mounted and readable (mount -t proc proc /proc; in a container, "
      "do not mask /proc/self/mountinfo)";
  if (!read.read) {
    return Fail("sandbox", what + "which could not be read (" +
                               (read.error.empty() ? "unknown error" : read.error) +
                               "); without it the sandbox does not start" + fix);
  }
  if (read.malformed > 0) {
    return Fail("sandbox", what + "which has " + std::to_string(read.malformed) +
                               " line(s) that do not parse as a mount (the first: \"" +
                               read.first_malformed +
                               "\"); without the whole table the sandbox does not start" + fix);
  }
  if (read.mounts.empty()) {
    return Fail("sandbox",
                what + "which lists no mount; without it the sandbox does not start" + fix);
  }
  return read.mounts;
}

std::optional<TreeKey> TreeKeyOf(const std::vector<HostMount>& mounts, const std::string& path) {
  const HostMount* m = ShowingMounts(mounts).Of(path);
  if (m == nullptr) return std::nullopt;
  return TreeKey{m->dev, Rebase(path, m->path, m->root)};
}

std::vector<TreeAlias> RootAliases(const std::vector<HostMount>& mounts,
                                   const std::vector<std::string>& roots,
                                   const std::vector<std::string>& places) {
  const ShowingMounts showing(mounts);
  // The mounts whose host paths can matter: on top at their point, and holding a place or
  // lying inside one (every host path an alias names lies at or beneath its mount's point).
  std::unordered_map<uint64_t, std::vector<const HostMount*>> by_dev;
  for (const auto& m : mounts) {
    if (!showing.OnTop(m)) continue;
    if (std::none_of(places.begin(), places.end(),
                     [&](const std::string& p) { return Related(p, m.path); })) {
      continue;
    }
    by_dev[m.dev].push_back(&m);
  }
  std::vector<TreeAlias> out;
  std::unordered_set<std::string> seen;
  auto add = [&](const std::string& host, const std::string& alias) {
    if (host == alias) return;
    if (std::none_of(places.begin(), places.end(),
                     [&](const std::string& p) { return Related(p, host); })) {
      return;
    }
    if (!seen.insert(host + '\0' + alias).second) return;
    out.push_back(TreeAlias{host, alias});
  };
  for (const auto& root : roots) {
    // What shows part of the root: (where in the view, device, directory within the fs).
    struct Piece {
      std::string at;
      uint64_t dev;
      std::string within;
    };
    std::vector<Piece> pieces;
    if (const HostMount* m = showing.Of(root)) {
      pieces.push_back({root, m->dev, Rebase(root, m->path, m->root)});
    }
    for (const auto& m : mounts) {
      if (m.path != root && PathIsWithin(m.path, root) && showing.OnTop(m)) {
        pieces.push_back({m.path, m.dev, m.root});
      }
    }
    for (const auto& piece : pieces) {
      auto same_dev = by_dev.find(piece.dev);
      if (same_dev == by_dev.end()) continue;
      for (const HostMount* m : same_dev->second) {
        std::string host;
        std::string alias;
        if (PathIsWithin(piece.within, m->root)) {
          // The mount shows the piece's directory, at its own path.
          host = Rebase(piece.within, m->root, m->path);
          alias = piece.at;
        } else if (PathIsWithin(m->root, piece.within)) {
          // The piece shows the whole of what the mount shows.
          host = m->path;
          alias = Rebase(m->root, piece.within, piece.at);
        } else {
          continue;
        }
        // The host's path must show that directory: not a deeper mount over it.
        if (showing.Of(host) != m) continue;
        add(host, alias);
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const TreeAlias& a, const TreeAlias& b) {
    return a.host != b.host ? a.host < b.host : a.alias < b.alias;
  });
  return out;
}

std::vector<std::string> PlacesThroughAliases(const std::vector<TreeAlias>& aliases,
                                              const std::vector<std::string>& places) {
  std::vector<std::string> out;
  for (const auto& place : places) {
    for (const auto& a : aliases) {
      if (!PathIsWithin(place, a.host)) continue;
      std::string seen = Rebase(place, a.host, a.alias);
      if (seen != place && std::find(out.begin(), out.end(), seen) == out.end()) {
        out.push_back(std::move(seen));
      }
    }
  }
  return out;
}

std::vector<std::string> WithPlacesThroughAliases(const std::vector<TreeAlias>& aliases,
                                                  std::vector<std::string> places,
                                                  const std::vector<std::string>& named) {
  for (auto& seen : PlacesThroughAliases(aliases, named)) {
    if (std::find(places.begin(), places.end(), seen) == places.end()) {
      places.push_back(std::move(seen));
    }
  }
  return places;
}

std::vector<HostCachePlace> CachePlacesThroughAliases(const std::vector<TreeAlias>& aliases,
                                                      std::vector<HostCachePlace> places,
                                                      const AutorunEnv& real) {
  std::vector<HostCachePlace> named = places;
  for (auto& p : HostCachePlaces(real)) named.push_back(std::move(p));
  for (const auto& c : named) {
    for (auto& seen : PlacesThroughAliases(aliases, {c.path})) {
      HostCachePlace add{std::move(seen), c.key};
      if (std::none_of(places.begin(), places.end(),
                       [&](const HostCachePlace& p) { return p.path == add.path; })) {
        places.push_back(std::move(add));
      }
    }
  }
  return places;
}

std::optional<RootInsidePlace> RootInsideByAlias(const std::vector<TreeAlias>& aliases,
                                                 const std::string& root,
                                                 const std::vector<std::string>& places) {
  for (const auto& place : places) {
    for (const auto& a : aliases) {
      if (!PathIsWithin(root, a.alias)) continue;
      std::string host = Rebase(root, a.alias, a.host);
      if (PathIsWithin(host, place)) return RootInsidePlace{std::move(host), place};
    }
  }
  return std::nullopt;
}

}  // namespace anvil
