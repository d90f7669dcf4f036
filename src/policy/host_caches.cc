#include "policy/host_caches.h"

#include <algorithm>
#include <optional>

namespace anvil {
namespace {

std::string Join(const std::string& dir, std::string_view name) {
  if (name.empty()) return dir;
  return dir == "/" ? "/" + std::string(name) : dir + "/" + std::string(name);
}

// `path` strictly beneath `dir`.
bool Beneath(const std::string& path, const std::string& dir) {
  return path != dir && PathIsWithin(path, dir);
}

}  // namespace

std::vector<HostCachePlace> HostCachePlaces(const AutorunEnv& env) {
  std::vector<std::string> homes;
  for (const auto& h : {env.home, env.passwd_home}) {
    auto clean = CleanAbsolute(h);
    if (clean && std::find(homes.begin(), homes.end(), *clean) == homes.end()) {
      homes.push_back(*clean);
    }
  }
  std::vector<HostCachePlace> out;
  auto add = [&out](const std::optional<std::string>& base, std::string_view rel,
                    const std::string& key) {
    if (!base || *base == "/") return;
    HostCachePlace place{Join(*base, rel), key};
    if (std::none_of(out.begin(), out.end(),
                     [&](const HostCachePlace& p) { return p.path == place.path; })) {
      out.push_back(std::move(place));
    }
  };
  for (const auto& entry : kHostTrustedCaches) {
    switch (entry.base) {
      case CacheBase::kHome:
        for (const auto& h : homes) add(h, entry.path, std::string(entry.path));
        break;
      case CacheBase::kCache:
        add(CleanAbsolute(env.xdg_cache_home), entry.path, Join(".cache", entry.path));
        for (const auto& h : homes) add(Join(h, ".cache"), entry.path, Join(".cache", entry.path));
        break;
      case CacheBase::kData:
        add(CleanAbsolute(env.xdg_data_home), entry.path, Join(".local/share", entry.path));
        for (const auto& h : homes) {
          add(Join(h, ".local/share"), entry.path, Join(".local/share", entry.path));
        }
        break;
    }
  }
  return out;
}

std::vector<ShadowMountPoint> ShadowCachesInView(FileView& view,
                                                 const std::vector<MappedBind>& binds) {
  std::vector<ShadowMountPoint> out;
  if (binds.empty()) return out;
  // A writable root beneath a bind's target: shown over the bind (a profile's real cache).
  auto root_beneath = [&](const std::string& target) {
    std::vector<std::string> roots;
    for (const auto& wr : view.writable_roots) {
      if (Beneath(wr.root, target)) roots.push_back(wr.root);
    }
    return roots;
  };
  // What the bind hides: beneath its target, and in no writable root beneath it.
  auto hidden = [&](const std::string& path) {
    return std::any_of(binds.begin(), binds.end(), [&](const MappedBind& b) {
      if (!Beneath(path, b.target)) return false;
      const auto roots = root_beneath(b.target);
      return std::none_of(roots.begin(), roots.end(),
                          [&](const std::string& r) { return PathIsWithin(path, r); });
    });
  };
  for (auto& wr : view.writable_roots) {
    if (hidden(wr.root)) continue;  // never: a root beneath a target is not hidden
    std::erase_if(wr.read_only_subpaths, hidden);
  }
  std::erase_if(view.pinned_dirs, hidden);
  std::erase_if(view.pinned_links, hidden);
  std::erase_if(view.masked_files, hidden);
  std::erase_if(view.masked_dirs, hidden);
  std::erase_if(view.credential_masks, hidden);
  std::erase_if(view.git_protected, hidden);
  std::erase_if(view.mapped_binds, [&](const MappedBind& m) { return hidden(m.target); });
  for (const auto& b : binds) {
    // A target inside another's is hidden by it; another bind at the same target gives way.
    if (hidden(b.target)) continue;
    std::erase_if(view.mapped_binds, [&](const MappedBind& m) { return m.target == b.target; });
    view.mapped_binds.push_back(b);
    for (const auto& r : root_beneath(b.target)) {
      out.push_back({b.source, r.substr(b.target == "/" ? 1 : b.target.size() + 1)});
    }
  }
  return out;
}

}  // namespace anvil
