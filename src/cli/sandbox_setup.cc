#include "cli/sandbox_setup.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <ctime>

#include "common/unique_fd.h"
#include "fs/file_io.h"
#include "linux/real_host.h"
#include "policy/digest.h"
#include "policy/git_global_files.h"
#include "policy/git_include_if.h"
#include "policy/user_config.h"
#include "policy/workspace_config.h"

namespace anvil::cli {
namespace {

constexpr size_t kMaxGitConfigBytes = 256 * 1024;
constexpr int kMaxGitIncludeDepth = 4;
constexpr int kMaxGitIncludeFiles = 16;

std::string EnvValue(const std::vector<std::string>& env, const std::string& name) {
  std::string out;
  for (const auto& e : env) {
    if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=') {
      out = e.substr(name.size() + 1);
    }
  }
  return out;
}

std::string Canonical(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return {};
  return buf;
}

void AddUnique(std::vector<std::string>& list, const std::string& value) {
  if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

// mkdir -p, new directories `mode`. The path is the user's own (their state or cache
// directory), so existing components are followed as they are.
Status MakeDirs(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) == 0 || errno == EEXIST) return Ok();
  if (errno != ENOENT) return SysFail("io", "mkdir " + path);
  auto slash = path.rfind('/');
  if (slash == 0 || slash == std::string::npos) return SysFail("io", "mkdir " + path);
  ANVIL_RETURN_IF_ERROR(MakeDirs(path.substr(0, slash), mode));
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) return SysFail("io", "mkdir " + path);
  return Ok();
}

// `name` in `dir`, made 0700 when missing, opened without following a symlink, and ours alone.
Result<UniqueFd> OwnDir(int dir, const std::string& name, const std::string& shown,
                        bool* created = nullptr) {
  if (::mkdirat(dir, name.c_str(), 0700) == 0) {
    if (created) *created = true;
  } else if (errno != EEXIST) {
    return SysFail("io", "mkdir " + shown);
  }
  UniqueFd fd(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return SysFail("io", "open " + shown + " (a symbolic link?)");
  struct stat st {};
  if (::fstat(fd.Get(), &st) != 0) return SysFail("io", "stat " + shown);
  if (st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
    return Fail("io", shown + " is not a directory of yours alone (owner or mode)");
  }
  return fd;
}

struct PreparedHome {
  std::string home;  // canonical host path of the sandbox home ("" when not made)
  dev_t dev = 0;
  ino_t ino = 0;
  bool created = false;
  std::string tmp;  // the workspace's kept /tmp beside it ("" when not wanted or not made)
  dev_t tmp_dev = 0;
  ino_t tmp_ino = 0;
};

// How long an entry of a kept /tmp lives untouched before a start removes it, and how often a
// start looks (systemd-tmpfiles' default age for /tmp).
constexpr time_t kKeptTmpMaxAge = 10 * 24 * 3600;
constexpr time_t kKeptTmpSweepEvery = 24 * 3600;
constexpr int kKeptTmpSweepEntries = 10000;

// The newest change (mtime or ctime) in the tree of `name` in `dir`, never following a link;
// `budget` counts the entries looked at (past it: "now", the tree is kept).
time_t NewestChange(int dir, const std::string& name, int depth, int& budget, time_t now) {
  struct stat st {};
  if (--budget < 0 || depth > 64) return now;
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return now;
  time_t newest = std::max(st.st_mtime, st.st_ctime);
  if (!S_ISDIR(st.st_mode)) return newest;
  int fd = ::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return now;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return now;
  }
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    newest = std::max(newest, NewestChange(::dirfd(d), n, depth + 1, budget, now));
    if (newest >= now) break;
  }
  ::closedir(d);
  return newest;
}

void RemoveTree(int dir, const std::string& name, int depth);

// At most once a day (a stamp file beside it): what in the kept /tmp nothing has changed for
// kKeptTmpMaxAge goes, as systemd-tmpfiles ages the host's /tmp. Best effort; never follows a
// link (entries are looked at and removed relative to their directory's descriptor).
void SweepKeptTmp(int home_dir, int tmp) {
  const time_t now = ::time(nullptr);
  struct stat stamp {};
  if (::fstatat(home_dir, "tmp-swept", &stamp, AT_SYMLINK_NOFOLLOW) == 0 &&
      now - stamp.st_mtime < kKeptTmpSweepEvery) {
    return;
  }
  UniqueFd touched(
      ::openat(home_dir, "tmp-swept", O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_TRUNC, 0600));
  if (!touched) return;
  ::futimens(touched.Get(), nullptr);
  int fd = ::fcntl(tmp, F_DUPFD_CLOEXEC, 3);
  if (fd < 0) return;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return;
  }
  std::vector<std::string> old;
  int budget = kKeptTmpSweepEntries;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    if (now - NewestChange(tmp, n, 0, budget, now) > kKeptTmpMaxAge) old.push_back(n);
    if (budget < 0) break;
  }
  ::closedir(d);
  for (const auto& n : old) RemoveTree(tmp, n, 0);
}

RepoTopFacts RepoTopFactsOf(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return {};
  using K = RepoTopFacts::Kind;
  return {S_ISDIR(st.st_mode)   ? K::kDirectory
          : S_ISREG(st.st_mode) ? K::kFile
                                : K::kOther,
          static_cast<uint64_t>(st.st_dev), static_cast<uint32_t>(st.st_uid),
          static_cast<uint32_t>(st.st_mode)};
}

// $STATE/anvil/homes/<name>/{home/, tmp/, workspace}, `workspace` being the key
// (SandboxHomeKey). Every component below $STATE is made 0700 and opened without following
// symlinks, and must be the caller's own. `with_tmp`: the workspace's kept /tmp too.
Result<PreparedHome> PrepareHome(const std::string& state_dir, const std::string& workspace,
                                 bool with_tmp) {
  // Nothing is made in a tree that is not the caller's: root with another user's $HOME (sudo
  // keeping HOME) would leave root-owned directories there that break that user's own runs.
  std::string existing = state_dir;
  struct stat owner {};
  while (::lstat(existing.c_str(), &owner) != 0 && errno == ENOENT && existing.size() > 1) {
    const auto slash = existing.rfind('/');
    existing = slash == 0 || slash == std::string::npos ? "/" : existing.substr(0, slash);
  }
  if (owner.st_uid != ::geteuid()) {
    return Fail("invalid", existing + " is not yours (owner uid " + std::to_string(owner.st_uid) +
                               "); nothing is made there");
  }
  ANVIL_RETURN_IF_ERROR(MakeDirs(state_dir, 0700));
  std::string base = Canonical(state_dir);
  if (base.empty()) return SysFail("io", "resolve " + state_dir);
  UniqueFd root(::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) return SysFail("io", "open " + base);
  ANVIL_TRY(anvil, OwnDir(root.Get(), "anvil", base + "/anvil"));
  ANVIL_TRY(homes, OwnDir(anvil->Get(), "homes", base + "/anvil/homes"));
  const std::string name = SandboxHomeDirName(workspace);
  const std::string dir_path = base + "/anvil/homes/" + name;
  bool created = false;
  ANVIL_TRY(dir, OwnDir(homes->Get(), name, dir_path, &created));
  PreparedHome out;
  if (created ||
      ReadRegularFileNoFollow(dir->Get(), "workspace", 8192).value_or("") != workspace + "\n") {
    // For people and for the sweep of homes whose workspace is gone.
    ANVIL_RETURN_IF_ERROR(WriteFileAtomically(dir->Get(), "workspace", workspace + "\n", 0600));
  }
  bool home_created = false;
  ANVIL_TRY(home, OwnDir(dir->Get(), "home", dir_path + "/home", &home_created));
  struct stat st {};
  if (::fstat(home->Get(), &st) != 0) return SysFail("io", "stat " + dir_path + "/home");
  out.home = dir_path + "/home";
  out.dev = st.st_dev;
  out.ino = st.st_ino;
  out.created = home_created;
  if (with_tmp) {
    // Best effort: without it the command gets a throw-away /tmp, as before.
    if (auto tmp = OwnDir(dir->Get(), "tmp", dir_path + "/tmp"); tmp) {
      struct stat ts {};
      if (::fstat(tmp->Get(), &ts) == 0) {
        SweepKeptTmp(dir->Get(), tmp->Get());
        out.tmp = dir_path + "/tmp";
        out.tmp_dev = ts.st_dev;
        out.tmp_ino = ts.st_ino;
      }
    }
  }
  return out;
}

// The user's git configuration as read: entries, and the conditional includes kept among them
// (policy/git_include_if.h), each target's sanitized copy in `include_files`.
struct CollectedGitConfig {
  std::vector<GitConfigEntry> entries;
  std::vector<GitConditionalInclude> includes;
  std::vector<HomeFile> include_files;  // shared by every level of one collection
};

// Reads `path` into `out` (`files` of it so far): unconditional includes in place; a kept
// conditional include's target collected the same way into a file of out.include_files, and
// included by `includes` where it stood.
void CollectGitConfig(const std::string& path, int depth, int& files, CollectedGitConfig& out,
                      std::vector<GitConditionalInclude>& includes,
                      std::vector<GitConfigEntry>& entries, const std::string& home) {
  if (depth > kMaxGitIncludeDepth || ++files > kMaxGitIncludeFiles) return;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) return;
  auto text = ReadRegularFileFromFd(fd.Get(), path, kMaxGitConfigBytes);
  if (!text) return;
  const std::string dir = path.substr(0, path.rfind('/'));
  // A file git would refuse ("bad config line") contributes nothing.
  auto parsed = ParseGitConfig(*text);
  if (!parsed) return;
  for (auto& e : *parsed) {
    if (e.section == "include" && !e.has_subsection && e.key == "path" && e.value &&
        !e.value->empty()) {
      std::string inc = ExpandHome(*e.value, home);
      if (inc[0] != '/') inc = dir + "/" + inc;
      CollectGitConfig(inc, depth + 1, files, out, includes, entries, home);
      continue;
    }
    if (e.section == "includeif" && e.has_subsection && e.key == "path" && e.value &&
        !e.value->empty()) {
      auto condition = GitIncludeConditionKept(e.subsection, dir);
      if (!condition || out.include_files.size() >= kMaxGitConditionalIncludes) continue;
      std::string inc = ExpandHome(*e.value, home);
      if (inc[0] != '/') inc = dir + "/" + inc;
      const size_t slot = out.include_files.size();
      const std::string name = std::string(kGitConfigIncludePrefix) + std::to_string(slot + 1);
      out.include_files.push_back({name, ""});
      std::vector<GitConditionalInclude> target_includes;
      std::vector<GitConfigEntry> target_entries;
      CollectGitConfig(inc, depth + 1, files, out, target_includes, target_entries, home);
      out.include_files[slot].content = RenderGitConfigCopy(target_entries, target_includes);
      includes.push_back({entries.size(), *condition, name});
      continue;
    }
    if (entries.size() < kMaxGitConfigEntries) entries.push_back(std::move(e));
  }
}

// Removes the tree `name` in `dir`, never following a symlink (entries are opened and removed
// relative to their directory's descriptor).
void RemoveTree(int dir, const std::string& name, int depth) {
  if (depth > 256) return;
  if (::unlinkat(dir, name.c_str(), 0) == 0 || errno == ENOENT) return;
  int fd = ::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return;
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  for (const auto& n : names) RemoveTree(::dirfd(d), n, depth + 1);
  ::closedir(d);
  ::unlinkat(dir, name.c_str(), AT_REMOVEDIR);
}

}  // namespace

namespace {

// The entries of the user's global git configuration (XDG git/config, then ~/.gitconfig, with
// their unconditional include.path files), as read; nullopt when the user has none.
std::optional<CollectedGitConfig> GlobalGitConfigEntries(const std::string& home,
                                                         const std::string& xdg_config_home) {
  CollectedGitConfig out;
  int files = 0;
  bool any = false;
  const std::string xdg =
      !xdg_config_home.empty() && xdg_config_home[0] == '/' ? xdg_config_home : home + "/.config";
  for (const std::string& path : {xdg + "/git/config", home + "/.gitconfig"}) {
    if (::access(path.c_str(), F_OK) != 0) continue;
    any = true;
    CollectGitConfig(path, 0, files, out, out.includes, out.entries, home);
  }
  if (!any) return std::nullopt;
  return out;
}

// Writes the files the copy includes under a condition into the sandbox home (`home`, as
// PrepareHome made it: `dev`, `ino`), each replaced whole (renamed over the name, never written
// through a link a command left there). False when one cannot be: the copy then includes none.
bool WriteGitIncludeFiles(const std::string& home, dev_t dev, ino_t ino,
                          const std::vector<HomeFile>& files) {
  UniqueFd dir(::open(home.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!dir || ::fstat(dir.Get(), &st) != 0 || st.st_dev != dev || st.st_ino != ino) return false;
  for (const auto& f : files) {
    if (!WriteFileAtomically(dir.Get(), f.path, f.content, 0644)) return false;
  }
  return true;
}

}  // namespace

Result<SandboxSettings> ApplySandboxSettings(const std::vector<std::string>& environ_entries,
                                             const SandboxFlags& flags, SandboxPolicy& policy,
                                             std::vector<std::string>& allow_hosts) {
  SandboxSettings out;
  const std::string home_env = EnvValue(environ_entries, "HOME");
  const std::string home = home_env.empty() || home_env[0] != '/' ? "" : home_env;

  // config.toml: the user's defaults.
  const std::string config_path = UserConfigPath(environ_entries);
  ANVIL_TRY(config, LoadUserConfig(config_path));
  if (!config_path.empty() && ::access(config_path.c_str(), F_OK) == 0) {
    out.user_config = config_path;
  }
  if (!flags.policy_explicit && config->policy) policy.kind = *config->policy;
  if (!flags.network_explicit && config->network) policy.network = *config->network;
  if (!flags.read_access_explicit && config->read_access) {
    policy.read_access = *config->read_access;
  }
  HomeMode mode = flags.home ? *flags.home : config->home.value_or(HomeMode::kPersistent);

  // Profiles: the configuration's, then the command line's.
  std::vector<std::string> profile_names = config->profiles;
  for (const auto& p : flags.profiles) AddUnique(profile_names, p);
  std::vector<std::string> writable = config->writable_roots;
  std::vector<std::string> profile_writable;
  std::vector<std::string> readable = config->readable_roots;
  std::vector<std::string> hosts = config->allow_hosts;
  bool cli_profile_hosts = false;
  for (const auto& name : profile_names) {
    const SandboxProfile* profile = nullptr;
    if (auto it = config->profile_defs.find(name); it != config->profile_defs.end()) {
      profile = &it->second;
    } else if (auto b = BuiltinProfiles().find(name); b != BuiltinProfiles().end()) {
      profile = &b->second;
    } else {
      return Fail("invalid", "unknown profile '" + name +
                                 "' (built in: node, python, rust, go; fix: define [profiles." +
                                 name + "] in " +
                                 (config_path.empty() ? "config.toml" : config_path) + ")");
    }
    for (const auto& w : profile->writable_roots) AddUnique(profile_writable, w);
    for (const auto& r : profile->readable_roots) AddUnique(readable, r);
    for (const auto& h : profile->allow_hosts) AddUnique(hosts, h);
    if (!profile->allow_hosts.empty() &&
        std::find(flags.profiles.begin(), flags.profiles.end(), name) != flags.profiles.end()) {
      cli_profile_hosts = true;
    }
  }
  out.profiles = profile_names;
  bool network_explicit = flags.network_explicit;
  if (!flags.network_explicit && !hosts.empty() && policy.network == NetworkMode::kNone &&
      !profile_names.empty()) {
    // A profile opens its registries, which only the proxy reaches.
    policy.network = NetworkMode::kProxy;
    network_explicit = network_explicit || cli_profile_hosts;
  }

  // Anvil.toml: may only narrow what the user runs with.
  ANVIL_TRY(workspace_config, LoadWorkspaceConfig(policy.workspace));
  WorkspaceSandboxConfig narrowing = workspace_config->sandbox;
  if (flags.policy_explicit) narrowing.policy.reset();
  if (network_explicit) narrowing.network.reset();
  ANVIL_RETURN_IF_ERROR(NarrowByWorkspace(narrowing, policy.kind, policy.network));
  if (policy.ConfinesFilesystem()) {
    for (const auto& sub : workspace_config->sandbox.read_only_subpaths) {
      // A path the workspace does not have is not protected (nothing to bind); the workspace
      // asked, it cannot be worse off than without the table.
      std::string p = policy.workspace + "/" + sub;
      struct stat st {};
      if (::lstat(p.c_str(), &st) == 0) AddUnique(policy.extra_read_only_subpaths, p);
    }
  }

  if (policy.kind == PolicyKind::kWorkspaceWrite) {
    for (const auto& w : writable) {
      std::string path = home.empty() ? w : ExpandHome(w, home);
      std::string c = Canonical(path);
      if (c.empty()) {
        return Fail("invalid", "writable root " + w + " from " + config_path +
                                   " does not exist (fix: mkdir -p " + path + ")");
      }
      AddUnique(policy.extra_writable_roots, c);
    }
    for (const auto& w : profile_writable) {
      if (home.empty() && w.rfind("~", 0) == 0) continue;
      std::string path = ExpandHome(w, home);
      // A profile's cache that does not exist yet is made (the tool would make it).
      ANVIL_RETURN_IF_ERROR(MakeDirs(path, 0700));
      std::string c = Canonical(path);
      if (!c.empty()) AddUnique(policy.extra_writable_roots, c);
    }
  }
  if (policy.network == NetworkMode::kProxy) {
    for (const auto& h : hosts) AddUnique(allow_hosts, h);
  }

  // The home.
  std::vector<std::string> readable_roots = readable;
  for (const auto& r : flags.readable_roots) AddUnique(readable_roots, r);
  if (!policy.ConfinesFilesystem()) return out;
  // read-only writes nothing that outlives the run: its home is a fresh one, like its /tmp.
  if (policy.kind == PolicyKind::kReadOnly && mode == HomeMode::kPersistent) mode = HomeMode::kTmp;
  HomePlanInput input;
  input.mode = home.empty() ? HomeMode::kNone : mode;
  input.home = home;
  input.readable_roots = readable_roots;
  // A workspace below a repository's top sees the repository, read-only (as git sees it).
  // The homes it must never show, resolved: $HOME and the user database's (a symlinked home,
  // an unset HOME); none known, nothing shown. The user database is asked only when there is a
  // repository above (a lookup per start otherwise).
  auto resolved = [](const std::string& h) {
    const std::string c = Canonical(h);
    return c.empty() ? h : c;
  };
  std::optional<std::string> top;
  if (!home.empty()) {
    top = EnclosingRepositoryTop(policy.workspace, {resolved(home)}, ::geteuid(), RepoTopFactsOf);
  }
  if (top) {
    const std::string passwd_home = PasswdHome();
    if (!passwd_home.empty() && passwd_home[0] == '/' &&
        PathIsWithin(resolved(passwd_home), *top)) {
      top.reset();
    }
  }
  if (top) {
    input.implied_readable_roots.push_back(*top);
    out.repository_top = *top;
  }
  // An activated virtualenv or conda environment outside the workspace is shown read-only, so
  // its interpreter runs by its own path and finds it. Nothing is asked of the host when no
  // such variable is set.
  if (!home.empty()) {
    std::vector<std::string> writable = {policy.workspace};
    writable.insert(writable.end(), policy.extra_writable_roots.begin(),
                    policy.extra_writable_roots.end());
    std::vector<std::string> homes;
    for (const auto& environment : kActivatedEnvironments) {
      const std::string value = EnvValue(environ_entries, std::string(environment.variable));
      if (value.empty() || value[0] != '/') continue;
      const std::string dir = Canonical(value);
      if (dir.empty()) continue;
      if (homes.empty()) {
        homes.push_back(resolved(home));
        const std::string passwd_home = PasswdHome();
        if (!passwd_home.empty() && passwd_home[0] == '/') homes.push_back(resolved(passwd_home));
      }
      if (ActivatedEnvironmentShown(dir, environment, ::geteuid(), homes, writable,
                                    RepoTopFactsOf)) {
        input.implied_readable_roots.push_back(dir);
        out.environments.push_back(dir);
      }
    }
  }
  out.home_mode = input.mode;
  if (input.mode != HomeMode::kNone) {
    const std::string xdg_state = EnvValue(environ_entries, "XDG_STATE_HOME");
    const std::string state =
        !xdg_state.empty() && xdg_state[0] == '/' ? xdg_state : home + "/.local/state";
    out.state_dir = state + "/anvil";
    std::vector<std::string> writable = {policy.workspace};
    writable.insert(writable.end(), policy.extra_writable_roots.begin(),
                    policy.extra_writable_roots.end());
    auto git = GlobalGitConfigEntries(home, EnvValue(environ_entries, "XDG_CONFIG_HOME"));
    if (git) {
      // Without its conditional includes until their files are in the sandbox home (below).
      input.gitconfig = RenderSanitizedGitConfig(git->entries);
      // git's global ignore and attributes files it names, read-only at their path where
      // PlanHomeView's judgement of every link on the way allows (GitNamedFileShown).
      input.git_named_files = GitNamedFiles(git->entries, home);
      input.writable_roots = writable;
    }
    // The workspace's own /tmp is kept like its home, unless the run asked for a throw-away
    // one (--tmp private, or a size for it) or writes nothing that outlives it (read-only).
    const bool kept_tmp = !flags.private_tmp && policy.kind == PolicyKind::kWorkspaceWrite;
    // Every directory of the repository shares its home and /tmp (SandboxHomeKey).
    out.home_key = SandboxHomeKey(policy.workspace, top);
    auto prepared = input.mode == HomeMode::kPersistent ? PrepareHome(state, out.home_key, kept_tmp)
                                                        : Result<PreparedHome>(PreparedHome{});
    if (prepared) {
      input.sandbox_home = prepared->home;
      input.sandbox_home_dev = prepared->dev;
      input.sandbox_home_ino = prepared->ino;
      input.sandbox_tmp = prepared->tmp;
      input.sandbox_tmp_dev = prepared->tmp_dev;
      input.sandbox_tmp_ino = prepared->tmp_ino;
      out.home_created = prepared->created;
      out.sandbox_home = prepared->home;
      // The copy's conditional includes, as files of the sandbox home. Not where a writable
      // root shows the real home instead (the copy then covers the real git config, and a file
      // of that name there would be the command's), nor when they cannot all be written.
      const bool real_home_shown =
          std::any_of(writable.begin(), writable.end(), [&](const std::string& w) {
            return PathIsWithin(home, w) || PathIsWithin(Canonical(home), w);
          });
      if (git && !git->includes.empty() && !real_home_shown &&
          WriteGitIncludeFiles(prepared->home, prepared->dev, prepared->ino, git->include_files)) {
        input.gitconfig = RenderGitConfigCopy(git->entries, git->includes);
      }
    } else if (input.mode == HomeMode::kPersistent) {
      // No persistent home to be had (a $HOME or state directory that is not ours): the
      // command still gets a home, an empty one; the report says why.
      out.home_note = prepared.error().ToString();
    }
  }
  ANVIL_TRY(plan, PlanHomeView(input, RealHomeHost()));
  if (plan->kind == HomeKind::kTmpfs && input.mode == HomeMode::kPersistent &&
      out.home_note.empty()) {
    out.home_note = "no persistent home";
  }
  if (plan->kind != HomeKind::kNone) out.home = plan->target;
  out.home_not_shown = plan->not_shown;
  if (plan->kind != HomeKind::kPersistent) {
    out.sandbox_home.clear();
    out.home_key.clear();
  }
  if (plan->kind == HomeKind::kTmpfs) out.home_mode = HomeMode::kTmp;
  if (plan->kind == HomeKind::kNone) out.home_mode = HomeMode::kNone;
  if (plan->kind == HomeKind::kPersistent) out.kept_tmp = plan->tmp.source;
  policy.home = std::move(*plan);
  return out;
}

size_t SweepDeadSandboxHomes(const std::string& state_dir) {
  if (state_dir.empty()) return 0;
  UniqueFd homes(
      ::open((state_dir + "/homes").c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!homes) return 0;
  int dup = ::fcntl(homes.Get(), F_DUPFD_CLOEXEC, 3);
  if (dup < 0) return 0;
  DIR* d = ::fdopendir(dup);
  if (d == nullptr) {
    ::close(dup);
    return 0;
  }
  std::vector<std::string> dead;
  const time_t now = ::time(nullptr);
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    UniqueFd entry(
        ::openat(homes.Get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!entry) continue;
    struct stat st {};
    // A home made in the last minute may belong to a run whose workspace is being set up.
    if (::fstat(entry.Get(), &st) != 0 || st.st_uid != ::geteuid() || now - st.st_mtime < 60) {
      continue;
    }
    auto workspace = ReadRegularFileNoFollow(entry.Get(), "workspace", 8192);
    if (!workspace || workspace->empty() || workspace->back() != '\n') continue;
    std::string path = workspace->substr(0, workspace->size() - 1);
    struct stat ws {};
    if (path.empty() || path[0] != '/' || ::lstat(path.c_str(), &ws) == 0 || errno != ENOENT) {
      continue;
    }
    if (SandboxHomeDirName(path) != name) continue;  // not one of ours
    dead.push_back(name);
    if (dead.size() >= 64) break;  // the rest another time
  }
  ::closedir(d);
  for (const auto& name : dead) RemoveTree(homes.Get(), name, 0);
  return dead.size();
}

}  // namespace anvil::cli
