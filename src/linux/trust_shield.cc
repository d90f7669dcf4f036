#include "linux/trust_shield.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <utility>

#include "fs/file_io.h"
#include "policy/sandbox_policy.h"
#include "policy/trust_state_paths.h"

namespace anvil {
namespace {

bool Absolute(const std::string& p) { return !p.empty() && p[0] == '/'; }

// "/a//b/" -> "/a/b" (no "." or ".." handling: such a path is refused by the caller).
std::string Lexical(const std::string& p) {
  std::string out;
  for (char c : p) {
    if (c == '/' && !out.empty() && out.back() == '/') continue;
    out.push_back(c);
  }
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

bool HasDotComponent(const std::string& p) {
  return p == "." || p == ".." || p.find("/./") != std::string::npos ||
         p.find("/../") != std::string::npos || p.ends_with("/.") || p.ends_with("/..");
}

// mkdir -p below an existing ancestor, 0700; true when the directory exists afterwards.
bool MakeDirs(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) == 0) return S_ISDIR(st.st_mode);
  const auto slash = dir.rfind('/');
  if (slash == std::string::npos || slash == 0) return false;
  if (!MakeDirs(dir.substr(0, slash))) return false;
  return ::mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST;
}

}  // namespace

std::vector<std::string> AnvilTrustDirs(const TrustEnv& env) {
  std::vector<std::string> out;
  auto add = [&out](const std::string& p) {
    if (!Absolute(p) || HasDotComponent(p)) return;
    std::string l = Lexical(p);
    for (const auto& o : out) {
      if (o == l) return;
    }
    out.push_back(l);
  };
  if (Absolute(env.xdg_config_home)) add(env.xdg_config_home + "/anvil");
  if (Absolute(env.xdg_state_home)) add(env.xdg_state_home + "/anvil");
  for (const std::string& home : {env.home, env.passwd_home}) {
    if (!Absolute(home)) continue;
    add(home + "/.config/anvil");
    add(home + "/.local/state/anvil");
  }
  add(std::string(kSystemTrustDir));
  return out;
}

TrustEnv TrustEnvFromProcess() { return TrustEnvFromProcess(PasswdHome()); }

TrustEnv TrustEnvFromProcess(std::string passwd_home) {
  auto get = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  return TrustEnv{get("HOME"), get("XDG_CONFIG_HOME"), get("XDG_STATE_HOME"),
                  std::move(passwd_home)};
}

std::string WhereTrustDirLies(const std::string& dir, bool* exists) {
  if (exists) *exists = false;
  std::string head = dir, tail;
  char resolved[PATH_MAX];
  while (true) {
    if (::realpath(head.c_str(), resolved) != nullptr) {
      std::string guess = std::string(resolved) + tail;
      if (exists) *exists = tail.empty();
      if (guess.size() > 1 && guess.starts_with("//")) guess.erase(0, 1);
      return guess;
    }
    const auto slash = head.rfind('/');
    if (slash == std::string::npos || head == "/") return "";
    tail = head.substr(slash) + tail;
    head = slash == 0 ? "/" : head.substr(0, slash);
  }
}

std::vector<std::string> AnvilTrustStateInWorkspace(const std::string& workspace) {
  std::vector<std::string> dirs;
  for (const auto& dir : AnvilTrustDirs(TrustEnvFromProcess())) {
    dirs.push_back(dir);
    if (auto where = WhereTrustDirLies(dir); !where.empty()) dirs.push_back(where);
  }
  return TrustStateInWorkspace(workspace, dirs);
}

std::vector<TrustDirName> TrustDirNames(const std::vector<std::string>& dirs,
                                        const std::vector<std::string>& canonical,
                                        const std::vector<TreeAlias>& aliases) {
  std::vector<TrustDirName> out;
  auto add = [&out](TrustDirName n) {
    for (const auto& o : out) {
      if (o.path == n.path) return;
    }
    out.push_back(std::move(n));
  };
  for (const auto& dir : dirs) add({dir, dir, dir == kSystemTrustDir});
  for (size_t i = 0; i < dirs.size(); ++i) {
    const bool system = dirs[i] == kSystemTrustDir;
    std::vector<std::string> named = {dirs[i]};
    if (i < canonical.size() && !canonical[i].empty() && canonical[i] != dirs[i]) {
      named.push_back(canonical[i]);
    }
    for (const auto& host : named) {
      for (auto& seen : PlacesThroughAliases(aliases, {host})) add({std::move(seen), host, system});
    }
  }
  return out;
}

MissingTrustDir WhenTrustDirMissing(const TrustDirName& name) {
  if (name.system || name.host == kSystemTrustDir) return MissingTrustDir::kRefuse;
  return name.path == name.host ? MissingTrustDir::kMakeHere : MissingTrustDir::kMakeHostName;
}

Result<GitWalkCacheShield> ShieldAnvilTrustDirs(const std::vector<TrustDirName>& trust_dirs,
                                                const std::vector<std::string>& writable_roots,
                                                const std::vector<std::string>& covered) {
  // Every name is checked before anything is made: a refused run makes nothing.
  struct Held {
    const TrustDirName* name;
    std::string canonical;  // "" when missing
    std::string guess;      // where it would be made
  };
  std::vector<Held> held_dirs;
  for (const auto& name : trust_dirs) {
    const std::string& dir = name.path;
    // Where it is or would be (a symlink above a writable root, /home -> /data/home, can lead
    // into it).
    bool exists = false;  // guess is then dir's realpath
    const std::string guess = WhereTrustDirLies(dir, &exists);
    std::string lexical_root;
    bool held = false;
    for (const auto& root : writable_roots) {
      if (PathIsWithin(root, dir) || (!guess.empty() && PathIsWithin(root, guess))) {
        return Fail("invalid", "writable root " + root + " is inside Anvil's own directory " + dir +
                                   ", which no sandbox may write. fix: choose another "
                                   "writable root");
      }
      if (PathIsWithin(dir, root) && lexical_root.size() < root.size()) lexical_root = root;
      held = held || PathIsWithin(dir, root) || (!guess.empty() && PathIsWithin(guess, root));
    }
    if (!held) continue;
    // A symbolic link on the way down from the root that holds it lexically, where the command
    // could replace it with a directory of its own: refuse (the same rule as a symlinked .git).
    if (!lexical_root.empty()) {
      for (size_t slash = dir.find('/', lexical_root == "/" ? 1 : lexical_root.size() + 1);;
           slash = dir.find('/', slash + 1)) {
        const std::string prefix = slash == std::string::npos ? dir : dir.substr(0, slash);
        struct stat st {};
        if (::lstat(prefix.c_str(), &st) != 0) break;
        if (S_ISLNK(st.st_mode)) {
          return Fail("sandbox", "the path to Anvil's own directory " + dir +
                                     " goes through a symbolic link (" + prefix +
                                     ") inside a writable root, where the command could "
                                     "replace the link. fix: replace the link with the "
                                     "directory, or choose a writable root that does not hold it");
        }
        if (slash == std::string::npos) break;
      }
    }
    if (!exists && WhenTrustDirMissing(name) == MissingTrustDir::kRefuse) {
      // The admin's directory: a run never makes it (made by root it would be root's, and an
      // empty one 0700 stops every other user's runs), and missing it cannot be kept.
      const std::string shown =
          name.path == name.host ? "" : " (shown there as " + name.path + ", a bind mount)";
      return Fail("sandbox", "Anvil's admin directory " + name.host +
                                 " is missing and a writable root holds it" + shown +
                                 ", where the command could make it; a sandbox never makes "
                                 "it. fix: create it as root (mkdir -m 755 " +
                                 name.host + ") or choose another writable root");
    }
    held_dirs.push_back({&name, exists ? guess : "", guess});
  }
  GitWalkCacheShield all;
  char resolved[PATH_MAX];
  for (auto& h : held_dirs) {
    const TrustDirName& name = *h.name;
    if (h.canonical.empty()) {
      // Missing: the command could make it with content of its own. Make it now, by the
      // directory's own name (through an alias, the host's name, which the alias then shows).
      bool made = false;
      if (WhenTrustDirMissing(name) == MissingTrustDir::kMakeHere) {
        made = !h.guess.empty() && MakeDirs(h.guess);
      } else {
        const std::string host_where = WhereTrustDirLies(name.host);
        made = !host_where.empty() && MakeDirs(host_where);
      }
      if (!made || ::realpath(name.path.c_str(), resolved) == nullptr) {
        return Fail("sandbox", "Anvil's own directory " + name.host +
                                   (name.path == name.host
                                        ? ""
                                        : " (shown as " + name.path + " through a bind mount)") +
                                   " is missing and lies in a writable root, and could not be "
                                   "made for the run. fix: create it (mkdir -p " +
                                   name.host + ") or choose another writable root");
      }
      h.canonical = resolved;
    }
    ANVIL_TRY(shield, ShieldGitWalkCache(h.canonical, writable_roots, covered));
    MergeShield(all, *shield);
  }
  return all;
}

}  // namespace anvil
