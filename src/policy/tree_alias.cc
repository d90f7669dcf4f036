#include "policy/tree_alias.h"

#include <algorithm>

#include "policy/sandbox_policy.h"

namespace anvil {
namespace {

// `path` (within `base`) with `base` replaced by `with`.
std::string Rebase(const std::string& path, const std::string& base, const std::string& with) {
  const std::string rest = base == "/" ? path : path.substr(base.size());
  if (rest.empty() || rest == "/") return with;
  return with == "/" ? rest : with + rest;
}

// The mount that shows canonical `path`: the deepest mount point holding it, the last listed
// of those at one point (the one on top).
const HostMount* ShowingMount(const std::vector<HostMount>& mounts, const std::string& path) {
  const HostMount* best = nullptr;
  for (const auto& m : mounts) {
    if (PathIsWithin(path, m.path) && (best == nullptr || m.path.size() >= best->path.size())) {
      best = &m;
    }
  }
  return best;
}

}  // namespace

std::optional<TreeKey> TreeKeyOf(const std::vector<HostMount>& mounts, const std::string& path) {
  const HostMount* m = ShowingMount(mounts, path);
  if (m == nullptr) return std::nullopt;
  return TreeKey{m->dev, Rebase(path, m->path, m->root)};
}

std::vector<TreeAlias> RootAliases(const std::vector<HostMount>& mounts,
                                   const std::vector<std::string>& roots) {
  std::vector<TreeAlias> out;
  auto add = [&](const std::string& host, const std::string& alias) {
    if (host == alias) return;
    TreeAlias a{host, alias};
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(std::move(a));
  };
  for (const auto& root : roots) {
    // What shows part of the root: (where in the view, device, directory within the fs).
    struct Piece {
      std::string at;
      uint64_t dev;
      std::string within;
    };
    std::vector<Piece> pieces;
    if (auto key = TreeKeyOf(mounts, root)) pieces.push_back({root, key->dev, key->within});
    for (const auto& m : mounts) {
      if (m.path != root && PathIsWithin(m.path, root)) pieces.push_back({m.path, m.dev, m.root});
    }
    for (const auto& piece : pieces) {
      for (const auto& m : mounts) {
        if (m.dev != piece.dev) continue;
        std::string host;
        std::string alias;
        if (PathIsWithin(piece.within, m.root)) {
          // The mount shows the piece's directory, at its own path.
          host = Rebase(piece.within, m.root, m.path);
          alias = piece.at;
        } else if (PathIsWithin(m.root, piece.within)) {
          // The piece shows the whole of what the mount shows.
          host = m.path;
          alias = Rebase(m.root, piece.within, piece.at);
        } else {
          continue;
        }
        // The host's path must show that directory: not a deeper mount over it.
        if (ShowingMount(mounts, host) != &m) continue;
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
