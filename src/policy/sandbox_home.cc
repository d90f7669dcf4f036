#include "policy/sandbox_home.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <map>
#include <set>

#include "common/ascii.h"
#include "policy/digest.h"
#include "policy/git_global_files.h"
#include "policy/git_include_if.h"
#include "policy/tree_alias.h"

namespace anvil {

Result<HomeMode> ParseHomeMode(std::string_view text) {
  if (text == "persistent") return HomeMode::kPersistent;
  if (text == "tmp") return HomeMode::kTmp;
  if (text == "none") return HomeMode::kNone;
  return Fail("invalid",
              "unknown home '" + std::string(text) + "' (expected persistent, tmp or none)");
}

std::string_view ToString(HomeMode mode) {
  switch (mode) {
    case HomeMode::kPersistent:
      return "persistent";
    case HomeMode::kTmp:
      return "tmp";
    case HomeMode::kNone:
      return "none";
  }
  return "?";
}

std::optional<std::string> NormalizeAbsolute(std::string_view path) {
  if (path.empty() || path[0] != '/' || path.size() > PATH_MAX) return std::nullopt;
  std::vector<std::string_view> parts;
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    if (part.find('\0') != std::string_view::npos) return std::nullopt;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    start = end + 1;
  }
  std::string out;
  for (auto part : parts) {
    out += '/';
    out += part;
  }
  return out.empty() ? "/" : out;
}

std::string ExpandHome(const std::string& path, const std::string& home) {
  if (path == "~") return home;
  if (path.rfind("~/", 0) == 0) return home + path.substr(1);
  return path;
}

std::string SandboxHomeDirName(const std::string& workspace) {
  std::string base = workspace.substr(workspace.rfind('/') + 1);
  std::string name;
  for (char c : base) {
    if (name.size() >= 32) break;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.';
    name += ok ? c : '_';
  }
  if (name.empty()) name = "root";
  if (name[0] == '.') name[0] = '_';  // never hidden, never "." or ".."
  return name + "-" + Sha256Hex(workspace).substr(0, 16);
}

std::string SandboxHomeKey(const std::string& workspace,
                           const std::optional<std::string>& repository_top) {
  if (repository_top && *repository_top != "/" && PathIsWithin(workspace, *repository_top)) {
    return *repository_top;
  }
  return workspace;
}

namespace {

void AddUnique(std::vector<std::string>& list, const std::string& value) {
  if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

// Relative paths of `pattern` (components may hold '*') that exist under `home`.
std::vector<std::string> ExpandToolchain(const std::string& home, std::string_view pattern,
                                         const HomeHost& host) {
  std::vector<std::string> found = {""};
  size_t start = 0;
  while (start <= pattern.size() && !found.empty()) {
    size_t end = pattern.find('/', start);
    if (end == std::string_view::npos) end = pattern.size();
    std::string part(pattern.substr(start, end - start));
    std::vector<std::string> next;
    for (const auto& prefix : found) {
      std::string rel_prefix = prefix.empty() ? "" : prefix + "/";
      if (part.find('*') == std::string::npos) {
        next.push_back(rel_prefix + part);
        continue;
      }
      for (const auto& name : host.list_dir(home + "/" + prefix)) {
        if (name[0] == '.' && part[0] != '.') continue;
        if (::fnmatch(part.c_str(), name.c_str(), FNM_PERIOD) == 0) {
          next.push_back(rel_prefix + name);
        }
      }
    }
    found = std::move(next);
    start = end + 1;
  }
  return found;
}

// One bind layer of the view, in the order BuildMountView attaches them (a later layer at the
// same path lies on top). `source` empty: a place of the view's own making.
struct Layer {
  std::string target;
  std::string source;
};

size_t Depth(const std::string& path) {
  return path == "/" ? 0 : static_cast<size_t>(std::count(path.begin(), path.end(), '/'));
}

std::vector<Layer> ViewLayers(const FileView& view) {
  std::vector<Layer> layers;
  if (view.full_read) layers.push_back({"/", "/"});
  for (const char* own : {"/dev", "/proc", "/tmp"}) layers.push_back({own, ""});
  if (view.full_read) layers.push_back({"/run", ""});
  for (const auto& r : view.read_roots) layers.push_back({r, r});
  for (const auto& wr : view.writable_roots) layers.push_back({wr.root, wr.root});
  for (const auto& wr : view.writable_roots) {
    for (const auto& sub : wr.read_only_subpaths) layers.push_back({sub, sub});
  }
  if (!view.home_tmpfs.empty()) layers.push_back({view.home_tmpfs, ""});
  for (const auto& m : view.mapped_binds) layers.push_back({m.target, m.source});
  for (const auto& m : view.masked_files) layers.push_back({m, ""});
  for (const auto& m : view.masked_dirs) layers.push_back({m, ""});
  if (!view.workspace_base.empty()) {
    layers.push_back({view.workspace_base, ""});
    for (const auto& sub : view.workspace_read_subpaths) {
      std::string p = view.workspace_base + "/" + sub;
      layers.push_back({p, p});
    }
  }
  return layers;
}

std::string Rebase(const std::string& path, const std::string& from, const std::string& to) {
  std::string rest = from == "/" ? path : path.substr(from.size());
  if (rest.empty()) return to;
  if (to == "/") return rest;
  return to + rest;
}

std::optional<std::string> SourceIn(const std::vector<Layer>& layers, const std::string& path) {
  const Layer* top = nullptr;
  for (const auto& l : layers) {
    if (!PathIsWithin(path, l.target)) continue;
    if (top == nullptr || Depth(l.target) >= Depth(top->target)) top = &l;
  }
  if (top == nullptr || top->source.empty()) return std::nullopt;
  return Rebase(path, top->target, top->source);
}

// The view paths at which `host_path` is shown.
std::vector<std::string> ViewPathsOf(const FileView& view, const std::string& host_path) {
  std::vector<Layer> layers = ViewLayers(view);
  std::vector<std::string> out;
  for (const auto& l : layers) {
    if (l.source.empty() || !PathIsWithin(host_path, l.source)) continue;
    std::string v = Rebase(host_path, l.source, l.target);
    if (SourceIn(layers, v) == host_path) AddUnique(out, v);
  }
  return out;
}

}  // namespace

std::optional<std::string> ViewSource(const FileView& view, const std::string& view_path) {
  return SourceIn(ViewLayers(view), view_path);
}

PathWalk WalkPath(const std::string& path, const HomeHost& host) {
  PathWalk walk;
  if (path.empty() || path[0] != '/' || !host.lstat_kind || !host.readlink) return walk;
  // The components still to resolve, the next one last.
  std::vector<std::string> todo;
  auto push = [&todo](std::string_view text) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = text.find('/', start);
      if (end == std::string_view::npos) end = text.size();
      if (end > start) parts.emplace_back(text.substr(start, end - start));
      start = end + 1;
    }
    todo.insert(todo.end(), parts.rbegin(), parts.rend());
  };
  push(path);
  std::string at = "/";
  while (!todo.empty()) {
    const std::string part = std::move(todo.back());
    todo.pop_back();
    if (part == ".") continue;
    if (part == "..") {
      const auto slash = at.rfind('/');
      at = slash == 0 ? "/" : at.substr(0, slash);
      continue;
    }
    const std::string next = (at == "/" ? "" : at) + "/" + part;
    switch (host.lstat_kind(next)) {
      case HomeHost::Kind::kMissing:
        return walk;
      case HomeHost::Kind::kSymlink: {
        walk.links.push_back(next);
        auto text = host.readlink(next);
        if (walk.links.size() > kMaxWalkLinks || !text || text->empty()) {
          walk.links.clear();
          return walk;
        }
        if ((*text)[0] == '/') at = "/";
        push(*text);
        continue;
      }
      case HomeHost::Kind::kDirectory:
        break;
      case HomeHost::Kind::kFile:
      case HomeHost::Kind::kOther:
        // Only the last component may be other than a directory.
        if (!todo.empty()) return walk;
        break;
    }
    at = next;
  }
  walk.end = at;
  return walk;
}

bool HomeLinkTrusted(const std::string& link, const std::string& home,
                     const std::string& home_canonical) {
  if (link.empty() || home_canonical.empty() || home_canonical == "/") return false;
  const auto slash = link.rfind('/');
  const std::string dir = slash == 0 ? "/" : link.substr(0, slash);
  return dir == home_canonical || (!home.empty() && home != "/" && PathIsWithin(home, link));
}

bool InHomeToolchainPlace(const std::string& path, const std::string& home_canonical) {
  if (home_canonical.empty() || home_canonical == "/" || path == home_canonical ||
      !PathIsWithin(path, home_canonical)) {
    return false;
  }
  const std::string rel = path.substr(home_canonical.size() + 1);
  for (const auto& entry : kHomeToolchains) {
    // Component by component: the path must hold every component of the entry.
    size_t p = 0;
    size_t e = 0;
    bool match = true;
    while (match && e <= entry.path.size()) {
      size_t e_end = entry.path.find('/', e);
      if (e_end == std::string_view::npos) e_end = entry.path.size();
      if (p > rel.size()) {
        match = false;
        break;
      }
      size_t p_end = rel.find('/', p);
      if (p_end == std::string::npos) p_end = rel.size();
      const std::string want(entry.path.substr(e, e_end - e));
      const std::string have = rel.substr(p, p_end - p);
      match = want.find('*') == std::string::npos
                  ? want == have
                  : (have[0] != '.' || want[0] == '.') &&
                        ::fnmatch(want.c_str(), have.c_str(), FNM_PERIOD) == 0;
      e = e_end + 1;
      p = p_end + 1;
    }
    if (match) return true;
  }
  return false;
}

bool HomeWalkAllowed(const PathWalk& walk, const std::string& home,
                     const std::string& home_canonical, const std::vector<std::string>& own) {
  if (!walk.end || NormalizeAbsolute(*walk.end) != *walk.end) return false;
  const std::string& end = *walk.end;
  if (InSystemRoot(end) || InHomeToolchainPlace(end, home_canonical)) return true;
  for (const auto& o : own) {
    if (!o.empty() && o != "/" && PathIsWithin(end, o)) return true;
  }
  const bool home_known = !home_canonical.empty() && home_canonical != "/";
  return home_known && PathIsWithin(end, home_canonical) &&
         std::all_of(walk.links.begin(), walk.links.end(), [&](const std::string& link) {
           return HomeLinkTrusted(link, home, home_canonical);
         });
}

Result<HomeView> PlanHomeView(const HomePlanInput& input, const HomeHost& host) {
  HomeView out;
  auto home = NormalizeAbsolute(input.home);
  // A home that is one of the view's own places or a runtime root cannot be replaced.
  bool usable_home = home && *home != "/" && *home != "/tmp";
  for (const char* own : {"/dev", "/proc", "/sys", "/run"}) {
    usable_home = usable_home && !PathIsWithin(*home, own);
  }
  for (auto root : kPlatformReadRoots) {
    usable_home = usable_home && !PathIsWithin(*home, root);
  }
  // Start-up cost: one listing of the home instead of a failing lookup per table entry that
  // is not there (an entry whose first component is not listed does not exist; a listing that
  // may be cut short, kMaxListedNames, says nothing), one lstat per path component, each
  // asked once, and realpath only where a component is a symlink.
  std::set<std::string> top_level;
  bool listed = false;
  std::optional<std::string> home_canonical;
  if (usable_home) {
    auto names = host.list_dir(*home);
    listed = !names.empty() && names.size() < kMaxListedNames;
    top_level.insert(names.begin(), names.end());
    home_canonical = host.resolve(*home);
  }
  std::map<std::string, HomeHost::Kind> kinds;  // by path relative to the home
  std::function<HomeHost::Kind(const std::string&)> kind_of = [&](const std::string& rel) {
    if (auto it = kinds.find(rel); it != kinds.end()) return it->second;
    const auto slash = rel.rfind('/');
    HomeHost::Kind kind;
    if (slash == std::string::npos && listed && top_level.count(rel) == 0) {
      kind = HomeHost::Kind::kMissing;
    } else if (slash != std::string::npos &&
               (kind_of(rel.substr(0, slash)) == HomeHost::Kind::kMissing ||
                kind_of(rel.substr(0, slash)) == HomeHost::Kind::kFile)) {
      kind = HomeHost::Kind::kMissing;
    } else {
      kind = host.lstat_kind(*home + "/" + rel);
    }
    kinds[rel] = kind;
    return kind;
  };
  // The canonical host path of an existing `rel`.
  auto canonical_of = [&](const std::string& rel) -> std::optional<std::string> {
    bool link = !home_canonical;
    for (size_t pos = rel.find('/'); !link; pos = rel.find('/', pos + 1)) {
      link = kind_of(rel.substr(0, pos)) == HomeHost::Kind::kSymlink;
      if (pos == std::string::npos) break;
    }
    if (!link) return (*home_canonical == "/" ? "" : *home_canonical) + "/" + rel;
    return host.resolve(*home + "/" + rel);
  };
  std::vector<std::string> credential_paths;  // lexical
  if (usable_home) {
    std::vector<std::string_view> never_shown(std::begin(kHomeCredentials),
                                              std::end(kHomeCredentials));
    never_shown.insert(never_shown.end(), std::begin(kHomeHistories), std::end(kHomeHistories));
    for (auto rel_view : never_shown) {
      const std::string rel(rel_view);
      credential_paths.push_back(*home + "/" + rel);
      auto kind = kind_of(rel);
      if (kind == HomeHost::Kind::kMissing) continue;
      auto r = canonical_of(rel);
      if (!r) continue;  // a dangling link shows nothing
      if (kind == HomeHost::Kind::kSymlink) kind = host.lstat_kind(*r);
      if (kind != HomeHost::Kind::kDirectory && kind != HomeHost::Kind::kFile) continue;
      HostCredential c{*r, kind == HomeHost::Kind::kDirectory};
      if (kind == HomeHost::Kind::kFile &&
          (rel == ".gitconfig" ||
           (rel == ".config/git/config" && out.gitconfig_credential.empty()))) {
        out.gitconfig_credential = *r;
      }
      if (std::none_of(out.credentials.begin(), out.credentials.end(),
                       [&](const HostCredential& o) { return o.path == c.path; })) {
        out.credentials.push_back(c);
      }
    }
  }
  auto inside_credential = [&](const std::string& resolved,
                               const std::string& lexical) -> std::optional<std::string> {
    for (const auto& c : out.credentials) {
      if (PathIsWithin(resolved, c.path)) return c.path;
    }
    for (const auto& p : credential_paths) {
      if (PathIsWithin(lexical, p) || PathIsWithin(resolved, p)) return p;
    }
    return std::nullopt;
  };
  const bool has_home = usable_home && input.mode != HomeMode::kNone;
  // `user`: named by the user (an error is theirs to fix); else an entry of the table, `rel`
  // its path relative to the home (skipped when it is not there or not allowed).
  // `implied`: a root the workspace implies (input.implied_readable_roots), skipped where a
  // named one would be refused.
  // The places shown by their own name beside the table's (HomeWalkAllowed): the readable roots
  // the user named that are no link and have none on the way.
  std::vector<std::string> own_places;
  for (const auto& r : input.readable_roots) {
    auto lexical = NormalizeAbsolute(usable_home ? ExpandHome(r, *home) : r);
    if (!lexical) continue;
    // No link on the way but those to the home itself (/home -> /var/home).
    const PathWalk walk = WalkPath(*lexical, host);
    if (walk.end && std::all_of(walk.links.begin(), walk.links.end(), [&](const std::string& l) {
          return usable_home && PathIsWithin(*home, l);
        })) {
      own_places.push_back(*walk.end);
    }
  }
  const std::string home_lexical = usable_home ? *home : "";
  const std::string home_resolved = home_canonical.value_or("");
  // Where a table entry (`rel`) leads, judged: every link on the way (HomeWalkAllowed).
  auto judged_of = [&](const std::string& rel) -> std::optional<std::string> {
    bool link = !home_canonical;
    for (size_t pos = rel.find('/'); !link; pos = rel.find('/', pos + 1)) {
      link = kind_of(rel.substr(0, pos)) == HomeHost::Kind::kSymlink;
      if (pos == std::string::npos) break;
    }
    if (!link) return canonical_of(rel);
    const PathWalk walk = WalkPath(*home + "/" + rel, host);
    if (!HomeWalkAllowed(walk, home_lexical, home_resolved, own_places)) {
      if (walk.end) out.not_shown.emplace_back(*home + "/" + rel, *walk.end);
      return std::nullopt;
    }
    return walk.end;
  };
  // `judged`: where the caller's own judgement of `path` leads (a git named file's walk).
  auto add_readable = [&](const std::string& path, bool user, const std::string& rel = "",
                          bool implied = false,
                          const std::optional<std::string>& judged = std::nullopt) -> Status {
    auto lexical = NormalizeAbsolute(path);
    if (!lexical) {
      if (user) return Fail("invalid", "readable root must be an absolute path: " + path);
      return Ok();
    }
    if (!user && !implied && kind_of(rel) == HomeHost::Kind::kMissing) return Ok();
    auto resolved = judged ? judged : user || implied ? host.resolve(*lexical) : judged_of(rel);
    if (!resolved) return Ok();  // not on this machine, or not to be shown
    // A root you name in the home that leads elsewhere through links: judged as the table's
    // entries are (a link deeper in the home could have been re-pointed by an earlier run).
    if (user && usable_home && home_canonical && *resolved != *lexical &&
        PathIsWithin(*lexical, *home)) {
      const PathWalk walk = WalkPath(*lexical, host);
      if (!HomeWalkAllowed(walk, home_lexical, home_resolved, own_places)) {
        return Fail("invalid",
                    "readable root " + *lexical + " leads to " + walk.end.value_or("nothing") +
                        " through a link below your home, which an earlier run in a workspace "
                        "holding it could have re-pointed (fix: name " +
                        walk.end.value_or("the place it should lead to") +
                        " as a readable root too, or instead)");
      }
      resolved = walk.end;
    }
    // The object judged, which init binds (opened without following a link) or nothing.
    std::optional<HomeHost::Node> node;
    if (host.identify) {
      node = host.identify(*resolved);
      if (!node || (!user && node->kind != HomeHost::Kind::kDirectory &&
                    node->kind != HomeHost::Kind::kFile)) {
        return Ok();  // changed while it was judged, or no file nor directory
      }
    }
    if (implied && (inside_credential(*resolved, *lexical) ||
                    (usable_home && PathIsWithin(*home, *resolved)))) {
      return Ok();
    }
    if (auto cred = inside_credential(*resolved, *lexical)) {
      if (!user) return Ok();
      if (IsGitConfigPath(*cred)) return tl::unexpected(GitConfigRootRefused("readable", *lexical));
      return Fail("invalid", "readable root " + *lexical + " lies inside " + *cred +
                                 ", where credentials live; Anvil never shows those (fix: name "
                                 "the directory the command needs, outside it)");
    }
    if (has_home && PathIsWithin(*home, *lexical)) {
      if (!user) return Ok();
      return Fail("invalid", "readable root " + *lexical + " would cover the home directory " +
                                 *home +
                                 " (fix: name the directories the command needs, or run with "
                                 "--home none)");
    }
    const uint64_t dev = node ? node->dev : 0;
    const uint64_t ino = node ? node->ino : 0;
    if (*resolved == *lexical) {
      if (std::find(out.read_roots.begin(), out.read_roots.end(), *lexical) ==
          out.read_roots.end()) {
        out.read_roots.push_back(*lexical);
        if (ino != 0) out.identities[*lexical] = {dev, ino};
      }
    } else if (std::none_of(out.binds.begin(), out.binds.end(),
                            [&](const MappedBind& b) { return b.target == *lexical; })) {
      out.binds.push_back({*resolved, *lexical, false, dev, ino});
    }
    return Ok();
  };
  if (has_home) {
    out.target = *home;
    if (input.mode == HomeMode::kPersistent && !input.sandbox_home.empty()) {
      out.kind = HomeKind::kPersistent;
      out.home = {input.sandbox_home, *home, true, input.sandbox_home_dev, input.sandbox_home_ino};
      if (!input.sandbox_tmp.empty()) {
        out.tmp = {input.sandbox_tmp, "/tmp", true, input.sandbox_tmp_dev, input.sandbox_tmp_ino};
      }
    } else {
      out.kind = HomeKind::kTmpfs;
    }
    for (const auto& entry : kHomeToolchains) {
      const std::string_view first = entry.path.substr(0, entry.path.find('/'));
      if (kind_of(std::string(first)) == HomeHost::Kind::kMissing) continue;
      for (const auto& rel : ExpandToolchain(*home, entry.path, host)) {
        ANVIL_RETURN_IF_ERROR(add_readable(*home + "/" + rel, false, rel));
      }
    }
    out.gitconfig = input.gitconfig;
  }
  for (const auto& r : input.readable_roots) {
    std::string expanded = usable_home ? ExpandHome(r, *home) : r;
    ANVIL_RETURN_IF_ERROR(add_readable(expanded, true));
  }
  for (const auto& r : input.implied_readable_roots) {
    ANVIL_RETURN_IF_ERROR(add_readable(r, false, "", /*implied=*/true));
  }
  // git's global ignore and attributes files, judged by their own walk, bound as judged.
  if (has_home) {
    for (const auto& named : input.git_named_files) {
      auto lexical = NormalizeAbsolute(named);
      if (!lexical) continue;
      const PathWalk walk = WalkPath(*lexical, host);
      auto kind = HomeHost::Kind::kMissing;
      if (walk.end) {
        if (host.identify) {
          if (auto node = host.identify(*walk.end)) kind = node->kind;
        } else {
          kind = host.lstat_kind(*walk.end);
        }
      }
      if (GitNamedFileShown(*lexical, walk, kind, *home, home_resolved, input.writable_roots,
                            own_places)) {
        ANVIL_RETURN_IF_ERROR(add_readable(*lexical, false, "", /*implied=*/true, walk.end));
      } else if (walk.end && !walk.links.empty() && kind == HomeHost::Kind::kFile) {
        out.not_shown.emplace_back(*lexical, *walk.end);
      }
    }
  }
  return out;
}

std::optional<std::string> UserSiteSealed(const FileView& view) {
  if (view.home_base.empty()) return std::nullopt;
  const std::string bin = view.home_base + "/.local/bin";
  const std::string lib = view.home_base + "/.local/lib";
  bool host_bin = false;
  // Whether another mount of the view shows `path`; `at_or_above_lib`: something at ~/.local/lib
  // or between it and the home (the host's own directory there, not the sandbox home's).
  auto check = [&](const std::string& path) {
    if (path == bin) host_bin = true;
    return path != view.home_base && PathIsWithin(lib, path);
  };
  for (const auto& m : view.mapped_binds) {
    if (check(m.target)) return std::nullopt;
  }
  for (const auto& r : view.read_roots) {
    if (check(r)) return std::nullopt;
  }
  for (const auto& w : view.writable_roots) {
    // A writable root beneath it (a workspace in ~/.local/lib) is the user's to write.
    if (check(w.root) || PathIsWithin(w.root, lib)) return std::nullopt;
  }
  if (!view.workspace_base.empty() && PathIsWithin(view.workspace_base, lib)) return std::nullopt;
  if (!host_bin) return std::nullopt;
  return lib;
}

Status ApplyHomeView(const HomeView& home, const HostFs& host, FileView& view) {
  bool show_home = home.kind != HomeKind::kNone;
  if (show_home) {
    // A root that shows the real home at $HOME itself: the workspace is the home, or a
    // writable root contains it. That is the user's choice; their home it is.
    for (const auto& wr : view.writable_roots) {
      if (PathIsWithin(home.target, wr.root)) show_home = false;
    }
    for (const auto& r : view.read_roots) {
      if (r == home.target) show_home = false;
    }
    if (!view.workspace_base.empty() && PathIsWithin(home.target, view.workspace_base)) {
      show_home = false;
    }
    // With full read the root is the host's, read-only: a mount point that does not exist
    // there cannot be made.
    if (view.full_read && host.resolve && !host.resolve(home.target)) show_home = false;
  }
  // The workspace's own /tmp, unless a root the user named shows the host's /tmp there.
  const bool host_tmp =
      std::any_of(view.writable_roots.begin(), view.writable_roots.end(),
                  [](const WritableRoot& w) { return PathIsWithin("/tmp", w.root); }) ||
      std::any_of(view.read_roots.begin(), view.read_roots.end(),
                  [](const std::string& r) { return PathIsWithin("/tmp", r); });
  if (home.kind == HomeKind::kPersistent && !home.tmp.source.empty() && !host_tmp) {
    view.tmp_bind = view.mapped_binds.size();
    view.mapped_binds.push_back(home.tmp);
  }
  if (show_home) {
    view.home_base = home.target;
    view.home_gitconfig = home.gitconfig;
    view.home_files = RenderHomeStartupFiles(home.path);
    for (const auto& dir : kHomeStartupDirs) view.home_startup_dirs.emplace_back(dir.path);
    if (home.kind == HomeKind::kPersistent) {
      view.mapped_binds.push_back(home.home);
    } else {
      view.home_tmpfs = home.target;
    }
  }
  for (const auto& r : home.read_roots) {
    // Without the sandbox home, what lies under $HOME is already shown (or deliberately not).
    if (!show_home && home.kind != HomeKind::kNone && PathIsWithin(r, home.target)) continue;
    // A root the view already makes writable stays writable.
    if (std::any_of(view.writable_roots.begin(), view.writable_roots.end(),
                    [&](const WritableRoot& w) { return w.root == r; })) {
      continue;
    }
    // Shown at its own path, as a bind of the home (ViewSource, the socket regions and root's
    // idmapping take it from there).
    if (std::none_of(view.mapped_binds.begin(), view.mapped_binds.end(),
                     [&](const MappedBind& m) { return m.target == r; })) {
      const auto id = home.identities.find(r);
      view.mapped_binds.push_back({r, r, false, id == home.identities.end() ? 0 : id->second.first,
                                   id == home.identities.end() ? 0 : id->second.second});
    }
  }
  for (const auto& b : home.binds) {
    if (!show_home && home.kind != HomeKind::kNone && PathIsWithin(b.target, home.target)) {
      continue;
    }
    view.mapped_binds.push_back(b);
  }
  // The real home shown as it is (a workspace of $HOME) has no sandbox home for the sanitized
  // copy: the mask of the user's git config shows it instead (read-only), so git has the
  // identity it has everywhere else and still none of the file's credentials.
  if (!show_home && home.kind != HomeKind::kNone && !home.gitconfig.empty() &&
      !home.gitconfig_credential.empty()) {
    // Before the masks are added: a mask hides the path from ViewPathsOf.
    const auto paths = ViewPathsOf(view, home.gitconfig_credential);
    if (!paths.empty()) {
      view.gitconfig_mask = paths.front();
      view.home_gitconfig = home.gitconfig;
    }
  }
  if (show_home) {
    if (auto sealed = UserSiteSealed(view)) view.sealed_home_dirs.push_back(*sealed);
  }
  // Where a root shows a credential location by another name (a bind mount of the home, or of
  // a directory above it: policy/tree_alias.h), it is masked there too.
  std::vector<TreeAlias> aliases;
  if (host.mounts && !home.credentials.empty()) {
    std::vector<std::string> roots = view.read_roots;
    if (view.full_read) roots.push_back("/");
    for (const auto& w : view.writable_roots) roots.push_back(w.root);
    for (const auto& b : view.mapped_binds) roots.push_back(b.source);
    if (!view.workspace_base.empty()) {
      for (const auto& sub : view.workspace_read_subpaths) {
        roots.push_back(view.workspace_base + "/" + sub);
      }
    }
    std::vector<std::string> places;
    for (const auto& c : home.credentials) places.push_back(c.path);
    aliases = RootAliases(host.mounts(), roots, places);
  }
  for (const auto& c : home.credentials) {
    std::vector<std::string> names = {c.path};
    for (auto& a : PlacesThroughAliases(aliases, {c.path})) names.push_back(std::move(a));
    for (const auto& name : names) {
      for (const auto& v : ViewPathsOf(view, name)) {
        AddUnique(c.directory ? view.masked_dirs : view.masked_files, v);
        AddUnique(view.credential_masks, v);
      }
    }
  }
  return Ok();
}

void MaskSocketsInMappedBinds(FileView& view, const std::vector<std::string>& sockets,
                              const std::vector<std::string>& locked_dirs) {
  for (bool dirs : {false, true}) {
    for (const auto& path : dirs ? locked_dirs : sockets) {
      for (size_t i = 0; i < view.mapped_binds.size(); ++i) {
        if (!PathIsWithin(path, view.mapped_binds[i].source)) continue;
        for (const auto& v : ViewPathsOf(view, path)) {
          AddUnique(dirs ? view.masked_dirs : view.masked_files, v);
        }
      }
    }
  }
}

// ---- git config ----

namespace {

// "scheme://user[:password]@host": a credential in the value, whatever the key.
// A value as the copy writes it: control characters other than \n, \t and \b dropped (git's
// quoted values know no other escapes). What is checked is what is written.
std::string AsWritten(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n' || c == '\t' || c == '\b' || (u >= 0x20 && u != 0x7f)) out += c;
  }
  return out;
}

bool HasUrlUserinfo(std::string_view value) {
  size_t pos = 0;
  while ((pos = value.find("://", pos)) != std::string_view::npos) {
    pos += 3;
    size_t end = value.find_first_of("/?# \t\n\"'", pos);
    std::string_view authority =
        value.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    if (authority.find('@') != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

bool GitConfigEntryAllowed(const GitConfigEntry& e) {
  // Both as read and as written: a credential split by control characters ("https:\v//u@h")
  // is whole again once they are dropped.
  if (e.value && (HasUrlUserinfo(*e.value) || HasUrlUserinfo(AsWritten(*e.value)))) return false;
  for (char c : e.subsection) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  }
  const std::string& s = e.section;
  const std::string& k = e.key;
  const bool sub = e.has_subsection;
  // Whole sections: what they configure runs, if at all, inside the sandbox.
  if (s == "color" || s == "advice") return true;
  if (s == "alias" || s == "pager") return !sub;
  static const std::map<std::string, std::set<std::string>> kPlain = {
      {"user", {"name", "email"}},
      {"core",
       {"excludesfile", "attributesfile", "autocrlf", "eol", "safecrlf", "quotepath", "whitespace",
        "ignorecase", "filemode", "precomposeunicode", "editor", "pager", "abbrev", "longpaths",
        "symlinks", "checkstat", "trustctime"}},
      {"init", {"defaultbranch"}},
      {"safe", {"directory"}},
      {"diff",
       {"algorithm", "colormoved", "colormovedws", "renames", "renamelimit", "mnemonicprefix",
        "noprefix", "indentheuristic", "submodule", "context", "interhunkcontext", "relative",
        "statgraphwidth", "wserrorhighlight", "suppressblankempty"}},
      {"merge", {"conflictstyle", "ff", "log", "renamelimit", "autostash", "stat"}},
      {"pull", {"rebase", "ff"}},
      {"push", {"default", "autosetupremote", "followtags"}},
      {"fetch", {"prune", "prunetags", "parallel", "writecommitgraph"}},
      {"rebase",
       {"autosquash", "autostash", "updaterefs", "stat", "abbreviatecommands",
        "missingcommitscheck"}},
      {"status",
       {"showuntrackedfiles", "short", "branch", "submodulesummary", "relativepaths", "aheadbehind",
        "renames"}},
      {"log", {"date", "decorate", "abbrevcommit", "follow"}},
      {"branch", {"autosetupmerge", "autosetuprebase", "sort"}},
      {"tag", {"sort"}},
      {"column", {"ui"}},
      {"help", {"autocorrect"}},
      {"rerere", {"enabled", "autoupdate"}},
      {"interactive", {"singlekey"}},
      {"grep", {"linenumber", "patterntype", "extendedregexp", "column", "fallbacktonoindex"}},
      {"blame", {"coloring", "date", "showemail", "markunblamablelines", "markignoredlines"}},
      {"commit", {"verbose", "status", "cleanup"}},
      {"format", {"pretty"}},
      {"submodule", {"recurse"}},
      {"protocol", {"version"}},
      {"feature", {"manyfiles"}},
  };
  if (sub) return false;
  auto it = kPlain.find(s);
  return it != kPlain.end() && it->second.count(k) > 0;
}

std::string RenderHomeProfile(std::string_view path) {
  if (path.empty()) return {};
  std::string quoted = "'";
  for (char c : path) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  quoted += "'";
  return "# Written by Anvil at each start of a sandbox with this home. A login shell's\n"
         "# /etc/profile may set PATH afresh (Debian's and Ubuntu's do): this puts back the one\n"
         "# the sandbox gave the command, with your toolchains on it.\n"
         "PATH=" +
         quoted + "\nexport PATH\n";
}

std::vector<HomeFile> RenderHomeStartupFiles(std::string_view path) {
  // csh has no quoting for every character (a newline, `!` history): such a PATH is left to
  // the csh login's own.
  const bool csh_plain = !path.empty() && std::all_of(path.begin(), path.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("/._:+@%,=-~").find(c) != std::string_view::npos;
  });
  std::vector<HomeFile> out;
  for (const auto& file : kHomeStartupFiles) {
    std::string content;
    switch (file.content) {
      case StartupContent::kEmpty:
        break;
      case StartupContent::kShPath:
        content = RenderHomeProfile(path);
        break;
      case StartupContent::kCshPath:
        if (csh_plain) {
          content =
              "# Written by Anvil at each start of a sandbox with this home: the PATH the sandbox\n"
              "# gave the command, with your toolchains on it.\nsetenv PATH '" +
              std::string(path) + "'\n";
        }
        break;
      case StartupContent::kInputrc:
        content =
            "# Written by Anvil at each start of a sandbox with this home: the system's key\n"
            "# bindings, nothing of an earlier command's.\n$include /etc/inputrc\n";
        break;
    }
    out.push_back({std::string(file.path), std::move(content)});
  }
  return out;
}

std::optional<std::string> GitIncludeConditionKept(std::string_view condition,
                                                   std::string_view including_dir) {
  for (char c : condition) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return std::nullopt;
  }
  for (std::string_view kind : {"gitdir:", "gitdir/i:"}) {
    if (condition.rfind(kind, 0) != 0) continue;
    const std::string_view pattern = condition.substr(kind.size());
    if (pattern.empty()) return std::nullopt;
    if (pattern.rfind("./", 0) == 0) {
      if (including_dir.empty() || including_dir[0] != '/') return std::nullopt;
      std::string dir(including_dir);
      if (dir.back() != '/') dir += '/';
      return std::string(kind) + dir + std::string(pattern.substr(2));
    }
    return std::string(condition);
  }
  for (std::string_view kind : {"onbranch:", "hasconfig:remote.*.url:"}) {
    if (condition.rfind(kind, 0) == 0 && condition.size() > kind.size()) {
      return std::string(condition);
    }
  }
  return std::nullopt;
}

std::string RenderSanitizedGitConfig(const std::vector<GitConfigEntry>& entries) {
  return RenderGitConfigCopy(entries, {});
}

std::string RenderGitConfigCopy(const std::vector<GitConfigEntry>& entries,
                                const std::vector<GitConditionalInclude>& includes) {
  std::string out =
      "# Anvil's sanitized copy of your git configuration: identity, ignore files, aliases and\n"
      "# everyday behaviour only, never credentials (docs/policy.md, \"Living with the "
      "sandbox\").\n";
  auto quote = [](const std::string& text) {
    std::string q = "\"";
    for (char c : text) {
      if (c == '"' || c == '\\') {
        q += '\\';
        q += c;
      } else if (c == '\n') {
        q += "\\n";
      } else if (c == '\t') {
        q += "\\t";
      } else if (c == '\b') {
        q += "\\b";
      } else {
        q += c;
      }
    }
    return q + "\"";
  };
  // Subsections know only \" and \\ as escapes.
  auto quote_sub = [](const std::string& text) {
    std::string sub = "\"";
    for (char c : text) {
      if (c == '"' || c == '\\') sub += '\\';
      sub += c;
    }
    return sub + "\"";
  };
  std::string current;
  size_t next = 0;
  auto add_includes = [&](size_t upto) {
    for (; next < includes.size() && includes[next].before <= upto; ++next) {
      const auto& inc = includes[next];
      const std::string_view number = std::string_view(inc.file).substr(
          std::min(inc.file.size(), kGitConfigIncludePrefix.size()));
      if (GitIncludeConditionKept(inc.condition, "/") != inc.condition ||
          inc.file.rfind(kGitConfigIncludePrefix, 0) != 0 || number.empty() ||
          number.find_first_not_of("0123456789") != std::string_view::npos) {
        continue;
      }
      out += "[includeIf " + quote_sub(inc.condition) + "]\n\tpath = " + quote(inc.file) + "\n";
      current.clear();
    }
  };
  for (size_t i = 0; i < entries.size(); ++i) {
    add_includes(i);
    const auto& e = entries[i];
    if (!GitConfigEntryAllowed(e)) continue;
    std::string header = "[" + e.section;
    if (e.has_subsection) header += " " + quote_sub(e.subsection);
    header += "]";
    if (header != current) {
      out += header + "\n";
      current = header;
    }
    out += "\t" + e.key;
    if (e.value) out += " = " + quote(AsWritten(*e.value));
    out += "\n";
  }
  add_includes(SIZE_MAX);
  return out;
}

std::vector<std::string> GitNamedFiles(const std::vector<GitConfigEntry>& entries,
                                       const std::string& home) {
  std::optional<std::string> excludes;
  std::optional<std::string> attributes;
  for (const auto& e : entries) {
    if (e.section != "core" || e.has_subsection || !e.value || !GitConfigEntryAllowed(e)) continue;
    if (e.key == "excludesfile") excludes = *e.value;
    if (e.key == "attributesfile") attributes = *e.value;
  }
  std::vector<std::string> out;
  for (const auto& value : {excludes, attributes}) {
    if (!value || value->empty()) continue;
    std::string path =
        value->rfind("~/", 0) == 0 ? (home.empty() ? "" : home + value->substr(1)) : *value;
    if (path.empty() || path[0] != '/') continue;
    AddUnique(out, path);
  }
  return out;
}

bool GitNamedFileShown(const std::string& lexical, const PathWalk& walk, HomeHost::Kind end_kind,
                       const std::string& home, const std::string& home_canonical,
                       const std::vector<std::string>& writable_roots,
                       const std::vector<std::string>& named) {
  if (NormalizeAbsolute(lexical) != lexical || NormalizeAbsolute(home) != home || home == "/") {
    return false;
  }
  if (lexical == home || !PathIsWithin(lexical, home)) return false;
  // The shells' start-up files are Anvil's in the sandbox home (yours often export tokens).
  const std::string rel = lexical.substr(home.size() + 1);
  for (const auto& f : kHomeStartupFiles) {
    if (rel == f.path) return false;
  }
  for (const auto& d : kHomeStartupDirs) {
    if (PathIsWithin(rel, std::string(d.path))) return false;
  }
  if (!walk.end || end_kind != HomeHost::Kind::kFile) return false;
  if (NormalizeAbsolute(*walk.end) != *walk.end) return false;
  // One a writable root holds is shown there as it is, and could be changed while it is judged.
  for (const auto& w : writable_roots) {
    if (PathIsWithin(lexical, w) || PathIsWithin(*walk.end, w)) return false;
    for (const auto& link : walk.links) {
      if (PathIsWithin(link, w)) return false;
    }
  }
  // The file by its own name, through the home's own links only, or in the system's trees: a
  // link deeper in the home could have been pointed by an earlier run of another workspace (one
  // holding the link) at a file this run hides (a document, a project's .env).
  if (home_canonical.empty() || home_canonical == "/") return InSystemRoot(*walk.end);
  std::vector<std::string> own = named;
  own.push_back(home_canonical + "/" + rel);
  return HomeWalkAllowed(walk, home, home_canonical, own);
}

bool ActivatedEnvironmentShown(const std::string& dir, const ActivatedEnvironment& environment,
                               uint32_t uid, const std::vector<std::string>& homes,
                               const std::vector<std::string>& writable_roots,
                               const RepoTopLstat& lstat) {
  using K = RepoTopFacts::Kind;
  if (NormalizeAbsolute(dir) != dir || dir == "/" || homes.empty() || InSystemRoot(dir)) {
    return false;
  }
  for (const auto& h : homes) {
    if (h.empty() || PathIsWithin(h, dir)) return false;
  }
  for (const auto& w : writable_roots) {
    if (PathIsWithin(dir, w) || PathIsWithin(w, dir)) return false;
  }
  auto ours = [uid](const RepoTopFacts& f) {
    return (f.uid == uid || f.uid == 0) && (f.mode & 0002) == 0;
  };
  const RepoTopFacts facts = lstat(dir);
  if (facts.kind != K::kDirectory || !ours(facts) || (facts.mode & 0020) != 0) return false;
  const RepoTopFacts marker = lstat(dir + "/" + std::string(environment.marker));
  return marker.kind == environment.marker_kind && ours(marker);
}

std::optional<std::string> EnclosingRepositoryTop(const std::string& workspace,
                                                  const std::vector<std::string>& homes,
                                                  uint32_t uid, const RepoTopLstat& lstat) {
  using K = RepoTopFacts::Kind;
  auto ws = NormalizeAbsolute(workspace);
  if (!ws || *ws == "/" || homes.empty()) return std::nullopt;
  const RepoTopFacts top = lstat(*ws);
  if (top.kind != K::kDirectory) return std::nullopt;
  // A `.git` file (a submodule's or a worktree's pointer) is looked past: the directory lies in
  // the repository above like any other, and a submodule's git dir is kept there
  // (`.git/modules/NAME`). A `.git` directory is the workspace's own repository.
  const RepoTopFacts own = lstat(*ws + "/.git");
  if (own.kind != K::kMissing && own.kind != K::kFile) return std::nullopt;
  std::string dir = *ws;
  while (true) {
    const auto slash = dir.rfind('/');
    if (slash == 0 || slash == std::string::npos) return std::nullopt;  // `/` is never shown
    dir = dir.substr(0, slash);
    const RepoTopFacts facts = lstat(dir);
    // git stops at a file system's edge (GIT_DISCOVERY_ACROSS_FILESYSTEM unset).
    if (facts.kind != K::kDirectory || facts.dev != top.dev) return std::nullopt;
    const RepoTopFacts git = lstat(dir + "/.git");
    if (git.kind == K::kMissing) continue;
    const bool holds_a_home = std::any_of(homes.begin(), homes.end(), [&](const std::string& h) {
      return h.empty() || PathIsWithin(h, dir);
    });
    if (git.kind != K::kDirectory || holds_a_home || facts.uid != uid || git.uid != uid ||
        (facts.mode & 0002) != 0 || lstat(dir + "/.git/HEAD").kind != K::kFile) {
      return std::nullopt;
    }
    return dir;
  }
}

}  // namespace anvil
