#include "policy/host_autorun.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "fs/file_io.h"
#include "policy/sandbox_home.h"
#include "policy/sandbox_policy.h"

namespace anvil {
namespace {

std::string Join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

std::string Parent(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

void AddUnique(std::vector<std::string>& to, const std::string& p) {
  if (std::find(to.begin(), to.end(), p) == to.end()) to.push_back(p);
}

// A symbolic link chain longer than this is ELOOP to the kernel (MAXSYMLINKS).
constexpr int kMaxLinks = 40;

// One place resolved the kernel's way.
struct Walk {
  std::vector<std::string> links;  // every symbolic link met (its own path, canonical parent)
  std::string end;                 // where it ends, canonical
  AutorunFs::Node end_node;        // what is there (kMissing: the first missing component)
  bool last = true;                // kMissing: nothing follows the missing name
  bool blocked = false;            // a non-directory stands where more components follow
  bool placeholder = false;        // ends at a placeholder link (the last of `links`)
  bool loop = false;               // too many links: the kernel finds nothing
  std::vector<std::string> dirs;   // every existing directory passed through or ended at
};

Walk Resolve(const std::string& place, const AutorunFs& fs) {
  Walk w;
  std::deque<std::string> todo;
  for (auto& c : PathComponents(place)) todo.push_back(std::move(c));
  std::string cur = "/";
  int hops = 0;
  while (!todo.empty()) {
    const std::string name = todo.front();
    todo.pop_front();
    if (name == ".") continue;
    if (name == "..") {
      cur = Parent(cur);
      continue;
    }
    const std::string next = Join(cur, name);
    AutorunFs::Node node = fs.lstat(next);
    if (node.kind == AutorunFs::Kind::kSymlink) {
      w.links.push_back(next);
      if (node.target == kAutorunPlaceholder) {
        w.placeholder = true;
        w.end = next;
        w.end_node = node;
        return w;
      }
      if (++hops > kMaxLinks || node.target.empty()) {
        w.loop = true;
        return w;
      }
      auto parts = PathComponents(node.target);
      todo.insert(todo.begin(), parts.begin(), parts.end());
      if (node.target[0] == '/') cur = "/";
      continue;
    }
    w.end = next;
    w.end_node = node;
    if (node.kind == AutorunFs::Kind::kMissing) {
      w.last = std::all_of(todo.begin(), todo.end(), [](const std::string& c) { return c == "."; });
      return w;
    }
    if (node.kind != AutorunFs::Kind::kDirectory &&
        !std::all_of(todo.begin(), todo.end(), [](const std::string& c) { return c == "."; })) {
      w.blocked = true;
      return w;
    }
    if (node.kind == AutorunFs::Kind::kDirectory) w.dirs.push_back(next);
    cur = next;
  }
  if (w.end != cur) {  // it ended with "..", or is "/"
    w.end = cur;
    w.end_node = fs.lstat(cur);
  }
  return w;
}

// `root` shows `path` strictly beneath it, with nothing the view mounts afresh in between.
bool HeldBy(const std::string& path, const std::string& root,
            const std::vector<std::string>& covered) {
  if (path == root || !PathIsWithin(path, root)) return false;
  return std::none_of(covered.begin(), covered.end(), [&](const std::string& c) {
    return c != root && PathIsWithin(c, root) && PathIsWithin(path, c);
  });
}

}  // namespace

std::optional<std::string> CleanAbsolute(const std::string& p) {
  if (p.empty() || p[0] != '/') return std::nullopt;
  std::string out;
  size_t start = 0;
  while (start < p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string::npos) end = p.size();
    const std::string part = p.substr(start, end - start);
    if (part == "." || part == "..") return std::nullopt;
    if (!part.empty()) out += "/" + part;
    start = end + 1;
  }
  return out.empty() ? "/" : out;
}

namespace {

std::vector<std::string> HomesOf(const AutorunEnv& env) {
  std::vector<std::string> homes;
  for (const auto& h : {env.home, env.passwd_home}) {
    if (auto clean = CleanAbsolute(h)) AddUnique(homes, *clean);
  }
  return homes;
}

}  // namespace

std::vector<std::string> HomeCredentialPaths(const AutorunEnv& env) {
  const std::vector<std::string> homes = HomesOf(env);
  std::vector<std::string> out;
  for (const auto rel : kHomeCredentials) {
    for (const auto& h : homes) AddUnique(out, Join(h, std::string(rel)));
  }
  return out;
}

std::vector<std::string> HostAutorunPaths(const AutorunEnv& env) {
  const std::vector<std::string> homes = HomesOf(env);
  auto bases = [&](AutorunBase base) {
    std::vector<std::string> out;
    auto add = [&out](const std::string& value) {
      if (auto clean = CleanAbsolute(value)) AddUnique(out, *clean);
    };
    switch (base) {
      case AutorunBase::kHome:
        for (const auto& h : homes) add(h);
        break;
      case AutorunBase::kZsh:
        for (const auto& h : homes) add(h);
        add(env.zdotdir);
        break;
      case AutorunBase::kConfig:
        add(env.xdg_config_home);
        for (const auto& h : homes) add(Join(h, ".config"));
        break;
      case AutorunBase::kData:
        add(env.xdg_data_home);
        for (const auto& h : homes) add(Join(h, ".local/share"));
        break;
    }
    return out;
  };
  // Each base list once per kind of base, and each path once (first place kept): the table has
  // a few hundred entries.
  std::vector<std::string> of_base[4];
  for (const AutorunBase b :
       {AutorunBase::kHome, AutorunBase::kZsh, AutorunBase::kConfig, AutorunBase::kData}) {
    of_base[static_cast<size_t>(b)] = bases(b);
  }
  std::vector<std::string> out;
  std::unordered_set<std::string> listed;
  auto add = [&](std::string path) {
    if (listed.insert(path).second) out.push_back(std::move(path));
  };
  for (const auto& entry : kHostAutorun) {
    for (const auto& base : of_base[static_cast<size_t>(entry.base)]) {
      add(Join(base, std::string(entry.path)));
    }
  }
  // The credential locations: a missing one made by the command (~/.kube/config with an exec
  // plugin, ~/.ssh/rc, ~/.aws/config's credential_process) runs code on the host as surely.
  for (auto& c : HomeCredentialPaths(env)) add(std::move(c));
  return out;
}

Result<AutorunShieldPlan> PlanAutorunShield(const std::vector<std::string>& places,
                                            const std::vector<std::string>& writable_roots,
                                            const std::vector<std::string>& given_covered,
                                            const AutorunFs& host_fs,
                                            const std::vector<std::string>& unmakeable,
                                            const std::vector<std::string>& shadow_places) {
  AutorunShieldPlan plan;
  // Grows by each shadowed cache: a root does not show what lies beneath one either.
  std::vector<std::string> covered = given_covered;
  // One look per name for the whole plan: every place walks from / through the same first
  // components (the home, ~/.config, ~/.local/share), and one plan is one view of them.
  std::unordered_map<std::string, AutorunFs::Node> seen;
  AutorunFs fs;
  fs.lstat = [&](const std::string& path) {
    auto it = seen.find(path);
    if (it == seen.end()) it = seen.emplace(path, host_fs.lstat(path)).first;
    return it->second;
  };
  auto held = [&](const std::string& path) {
    return std::any_of(writable_roots.begin(), writable_roots.end(),
                       [&](const std::string& root) { return HeldBy(path, root, covered); });
  };
  // Every directory strictly between a root that holds `path` and `path`: each becomes a
  // mount point, which rename(2) and rmdir(2) refuse to move or remove.
  auto pin_way = [&](const std::string& path) {
    for (const auto& root : writable_roots) {
      if (!HeldBy(path, root, covered)) continue;
      for (std::string dir = Parent(path); HeldBy(dir, root, covered); dir = Parent(dir)) {
        AddUnique(plan.pinned_dirs, dir);
      }
    }
  };
  // The caches first, so that what lies beneath one is covered for the places after them.
  std::vector<std::pair<std::string, bool>> all;  // (place, a cache)
  for (const auto& place : shadow_places) all.emplace_back(place, true);
  for (const auto& place : places) all.emplace_back(place, false);
  for (const auto& [place, cache] : all) {
    const Walk w = Resolve(place, fs);
    // A placeholder is listed even where no root of this run holds it (one an earlier run
    // left behind): removed after the run unless another run still holds it.
    if (w.placeholder) AddUnique(plan.placeholders, w.links.back());
    for (const auto& dir : w.dirs) AddUnique(plan.met_dirs, dir);
    for (const auto& link : w.links) {
      if (!held(link)) continue;
      pin_way(link);
      AddUnique(plan.pinned_links, link);
    }
    if (w.placeholder || w.loop || !held(w.end)) continue;
    if (w.end_node.kind == AutorunFs::Kind::kMissing) {
      if (std::find(unmakeable.begin(), unmakeable.end(), w.end) != unmakeable.end()) continue;
      const auto slash = w.end.rfind('/');
      AutorunMake make{Parent(w.end), w.end.substr(slash + 1), cache || !w.last};
      if (std::find(plan.make.begin(), plan.make.end(), make) == plan.make.end()) {
        plan.make.push_back(std::move(make));
      }
      continue;
    }
    // The user named it as a writable root: theirs to write.
    if (std::find(writable_roots.begin(), writable_roots.end(), w.end) != writable_roots.end()) {
      continue;
    }
    // A root inside it (a profile's ~/.cache/pip in a shadowed ~/.cache) shows the real one
    // there; the rest stays the sandbox home's.
    if (cache && !w.blocked && w.end_node.kind == AutorunFs::Kind::kDirectory) {
      pin_way(w.end);
      AutorunShadow shadow{place, w.end};
      if (std::find(plan.shadowed.begin(), plan.shadowed.end(), shadow) == plan.shadowed.end()) {
        plan.shadowed.push_back(std::move(shadow));
      }
      AddUnique(covered, w.end);
      continue;
    }
    if (!w.blocked && w.end_node.kind == AutorunFs::Kind::kFile && w.end_node.links > 1) {
      AutorunHardLink hard{w.end, w.end_node.links};
      if (std::find(plan.hard_linked.begin(), plan.hard_linked.end(), hard) ==
          plan.hard_linked.end()) {
        plan.hard_linked.push_back(std::move(hard));
      }
    }
    pin_way(w.end);
    AddUnique(plan.read_only, w.end);
  }
  return plan;
}

}  // namespace anvil
