// The supervisor of the sandbox (sandbox_launch.h): plans, clones init, waits and reports.
#include "linux/sandbox_launch.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/syscalls.h"
#include "linux/autorun_shield.h"
#include "linux/cache_shadow.h"
#include "linux/cgroup_facts.h"
#include "linux/git_walk_cache.h"
#include "linux/host_socket_facts.h"
#include "linux/landlock.h"
#include "linux/memory_cgroup.h"
#include "linux/pids_cgroup.h"
#include "linux/program_exec.h"
#include "linux/protected_placeholders.h"
#include "linux/real_host.h"
#include "linux/refusal_observer.h"
#include "linux/root_remap.h"
#include "linux/sandbox_plan.h"
#include "linux/sandbox_process.h"
#include "linux/sandbox_report.h"
#include "linux/seccomp.h"
#include "linux/terminal_relay.h"
#include "linux/trust_shield.h"
#include "linux/unchecked_run.h"
#include "linux/user_ns_limits.h"
#include "linux/workspace_config_watch.h"
#include "policy/git_territory.h"
#include "policy/host_caches.h"
#include "policy/protected_names_plan.h"
#include "policy/tree_alias.h"
#include "policy/workspace_config.h"

namespace anvil {
namespace {

using Clock = std::chrono::steady_clock;
using namespace launch;  // the plan and the records, shared with init and the command

SandboxOutcome SetupFailure(std::string message, Clock::time_point start) {
  SandboxOutcome out;
  out.kind = SandboxOutcome::Kind::kSetupFailed;
  out.error = std::move(message);
  out.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return out;
}

StartRequest StartRequestOf(const LaunchSpec& spec) {
  StartRequest r;
  r.policy = spec.policy;
  r.has_program = static_cast<bool>(spec.program);
  r.has_argv = !spec.argv.empty();
  r.warm = static_cast<bool>(spec.call_channel);
  r.has_proxy = static_cast<bool>(spec.proxy_channel);
  r.observe_refusals = spec.observe_refusals;
  r.allow_tracing = spec.allow_tracing;
  return r;
}

}  // namespace

int SandboxOutcome::ShellStatus() const {
  switch (kind) {
    case Kind::kExited:
      return exit_status;
    case Kind::kSignaled:
      return 128 + exit_status;
    case Kind::kTimedOut:
      return 124;
    case Kind::kSetupFailed:
      return 125;
    case Kind::kExecFailed:
      return exec_errno == ENOENT ? 127 : 126;
  }
  return 125;
}

Result<UniqueFd> OpenExecutable(const std::string& command, const std::string& path_env,
                                const std::string& cwd) {
  ANVIL_TRY(program, ResolveProgram(command, path_env, cwd));
  return std::move(program->fd);
}

SandboxOutcome RunSandboxed(LaunchSpec spec) {
  const auto start = Clock::now();
  Plan plan;
  plan.spec = &spec;
  plan.uid = geteuid();
  plan.gid = getegid();
  const SandboxPolicy& policy = spec.policy;
  // Every decision that needs no syscall, from the spec and the kernel's facts (sandbox_plan.h).
  auto decided = MakePlan(StartRequestOf(spec), ProbeKernel(policy.ConfinesFilesystem()));
  if (!decided) return SetupFailure(decided.error().message, start);
  const StartPlan& walls = *decided;
  plan.warm = walls.warm;
  if (!plan.warm) plan.program_is_script = IsScript(spec.program.Get());
  plan.confine_fs = walls.confine_fs;
  // Lives until the command and every process of its pid namespace are gone (the returns below
  // come after that), then removes the placeholders it made.
  ProtectedPlaceholders placeholders;
  std::optional<AutorunShield> autorun;  // what the host runs from the home (autorun_shield.h)
  // Declared after `placeholders`: ends first, so its locks are gone when they are removed.
  std::optional<GitGuard> git;
  std::optional<GitWalkCache> walk_cache;  // the walk kept for the next run (git_walk_cache.h)
  std::optional<WorkspaceConfigWatch> config_watch;  // the workspace's Anvil.toml
  std::optional<GitWalkMemo> walk_loaded;            // what the cache held for these roots
  std::string walk_territory;             // the territory it was loaded for (GitTerritoryKey)
  std::optional<UncheckedRun> unchecked;  // what earlier checks left unchecked (unchecked_run.h)
  if (plan.confine_fs) {
    // The mount table, for the bind-alias protection (policy/tree_alias.h): without it no
    // alias is found, so a table that cannot be had stops the start.
    auto mounts = MountTableForAliases(ReadHostMountInfo());
    if (!mounts) return SetupFailure(mounts.error().ToString(), start);
    // One read of the table for both: the aliases and the host sockets' mounts.
    auto socket_locator = HostSocketLocator(*mounts);
    HostFs host = RealHostFs(std::move(*mounts));
    host.bound_unix_sockets = std::move(socket_locator);
    // The roots first: the view is computed once, after what is made and found in them.
    auto writable = WritableRootsOf(policy, host);
    if (!writable) return SetupFailure(writable.error().ToString(), start);
    if (writable->empty()) {
      auto view = ComputeFileView(policy, host);
      if (!view) return SetupFailure(view.error().ToString(), start);
      plan.view = std::move(*view);
    } else {
      const std::vector<std::string>& roots = *writable;
      auto records = UncheckedRun::Start(roots);
      if (!records) return SetupFailure(records.error().ToString(), start);
      unchecked.emplace(std::move(*records));
      // The workspace's Anvil.toml as it is before the command can touch it: after the run,
      // anything else there is moved aside (workspace_config_watch.h).
      if (WatchesWorkspaceConfig(roots, policy.workspace)) {
        auto watch = WorkspaceConfigWatch::Start(policy.workspace);
        if (!watch) return SetupFailure(watch.error().ToString(), start);
        config_watch.emplace(std::move(*watch));
      }
      // A .git missing from a writable root becomes an empty directory the view binds
      // read-only, so the command cannot create one (protected_placeholders.h,
      // protected_names_plan.h).
      std::vector<PlaceholderSpec> specs;
      for (const auto& p : MissingNamePlaceholders(roots, policy.writable_git)) {
        specs.push_back({p.parent, p.name, p.directory});
      }
      auto made = ProtectedPlaceholders::Create(specs);
      if (!made) return SetupFailure(made.error().ToString(), start);
      placeholders = std::move(*made);
      // Kept out of the command's reach in every run, --writable-git or not: a later run
      // trusts it.
      walk_cache.emplace(GitWalkCache::Open());
      // The view's private /tmp (FileView::private_tmp: every view has one).
      const std::vector<std::string> covered =
          FileView{}.private_tmp ? std::vector<std::string>{"/tmp"} : std::vector<std::string>{};
      auto shield = ShieldFor(*walk_cache, roots, covered);
      if (!shield) return SetupFailure(shield.error().ToString(), start);
      // The homes, $HOME's and the user database's (looked up once for both below).
      const AutorunEnv autorun_env = AutorunEnvFromProcess();
      // Anvil's own rules, keys, config and grants: read-only whatever root holds them.
      std::vector<std::string> trust_dirs =
          AnvilTrustDirs(TrustEnvFromProcess(autorun_env.passwd_home));
      std::vector<std::string> trust_named = trust_dirs;
      std::vector<std::string> trust_canonical;  // one per dir, "" when not even "/" resolves
      for (const auto& dir : trust_dirs) {
        trust_canonical.push_back(WhereTrustDirLies(dir));
        if (!trust_canonical.back().empty()) trust_named.push_back(trust_canonical.back());
      }
      // The canonical bases' names for the aliases (the mount table names real paths).
      const AutorunEnv real = CanonicalAutorunEnv(autorun_env);
      // A root that shows a protected place by another name (a bind mount of the home, or of a
      // directory above it) keeps it there as the place's own path does (policy/tree_alias.h).
      // Every place asked about below, by each of its names: only aliases of those are built.
      std::vector<std::string> protected_places = trust_named;
      for (const AutorunEnv* env : {&autorun_env, &real}) {
        for (auto& p : HostCachePlaces(*env)) protected_places.push_back(std::move(p.path));
        for (auto& p : HostAutorunPaths(*env)) protected_places.push_back(std::move(p));
        for (auto& p : HomeCredentialPaths(*env)) protected_places.push_back(std::move(p));
      }
      const std::vector<TreeAlias> aliases = RootAliases(host.mounts(), roots, protected_places);
      if (!aliases.empty()) {
        for (const auto& root : roots) {
          if (auto inside = RootInsideByAlias(aliases, root, trust_named)) {
            return SetupFailure("invalid: writable root " + root + " is another name (a bind " +
                                    "mount) of " + inside->host + ", which is inside Anvil's " +
                                    "own directory " + inside->place +
                                    ", which no sandbox may write. fix: choose another "
                                    "writable root",
                                start);
          }
        }
      }
      // Each by its own name and by each name an alias gives it, the host's name beside: a
      // missing one is made only by its own name, and the admin layer never.
      auto trust =
          ShieldAnvilTrustDirs(TrustDirNames(trust_dirs, trust_canonical, aliases), roots, covered);
      if (!trust) return SetupFailure(trust.error().ToString(), start);
      MergeShield(*shield, *trust);
      const std::vector<std::string> anvil_state = shield->read_only;
      // What the host runs from the home (shell startup files, ~/.local/bin, user units,
      // autostart, installed plugins): read-only or pinned, missing ones taken by placeholders.
      // The caches the host's builds trust: the sandbox home's own instead (host_caches.h).
      std::vector<HostCachePlace> cache_places = HostCachePlaces(autorun_env);
      if (!aliases.empty()) cache_places = CachePlacesThroughAliases(aliases, cache_places, real);
      std::vector<std::string> cache_paths;
      for (const auto& c : cache_places) cache_paths.push_back(c.path);
      std::vector<std::string> autorun_places = HostAutorunPaths(autorun_env);
      std::vector<std::string> credential_places = HomeCredentialPaths(autorun_env);
      if (!aliases.empty()) {
        std::vector<std::string> named = autorun_places;
        for (auto& p : HostAutorunPaths(real)) named.push_back(std::move(p));
        autorun_places = WithPlacesThroughAliases(aliases, std::move(autorun_places), named);
        std::vector<std::string> credentials = credential_places;
        for (auto& p : HomeCredentialPaths(real)) credentials.push_back(std::move(p));
        credential_places =
            WithPlacesThroughAliases(aliases, std::move(credential_places), credentials);
      }
      auto host_autorun = AutorunShield::Prepare(autorun_places, roots, covered, cache_paths,
                                                 spec.git_scan_limits.entries);
      if (!host_autorun) return SetupFailure(host_autorun.error().ToString(), start);
      autorun.emplace(std::move(*host_autorun));
      auto cache_binds = CacheShadowBinds(policy.home, cache_places, autorun->Plan().shadowed);
      if (!cache_binds) return SetupFailure(cache_binds.error().ToString(), start);
      MergeShield(*shield, {autorun->Plan().read_only, autorun->Plan().pinned_dirs});
      // Without a sandbox home to hold them, the host's caches stay as they are: read-only.
      if (cache_binds->empty()) {
        for (const auto& c : autorun->Plan().shadowed) shield->read_only.push_back(c.path);
      }
      if (!policy.writable_git) {
        // Every repository in the writable roots and what its config names, and Anvil's
        // protected names anywhere in them (git_guard.h). Without it (--writable-git) only those
        // at the top of each root are kept (ComputeFileView).
        GitEnv git_env = GitEnvFromProcess();
        // The homes directory of this run's sandbox home, wherever its state dir is: what the
        // command leaves there no check walks (policy/git_territory.h).
        if (policy.home.kind == HomeKind::kPersistent && !policy.home.home.source.empty()) {
          const std::string& home = policy.home.home.source;
          const std::string name_dir = home.substr(0, home.rfind('/'));
          git_env.sandbox_homes.push_back(name_dir.substr(0, name_dir.rfind('/')));
        }
        // Only a memo whose links were judged against this run's territory (git_walk_cache.h).
        walk_territory = GitTerritoryKey(GitTerritoryOf(git_env.sandbox_homes, RealGitFs()));
        walk_loaded = walk_cache->Load(roots, walk_territory);
        auto guard = GitGuard::Prepare(roots, spec.git_scan_limits, git_env, RealGitFs(),
                                       walk_loaded ? &*walk_loaded : nullptr, unchecked->Suspect(),
                                       [&] { return unchecked->LiveOthers(); });
        if (!guard) return SetupFailure(guard.error().ToString(), start);
        git.emplace(std::move(*guard));
        // The workspace's Anvil.toml is the watch's to judge, by what this walk trusts too.
        if (config_watch && git->Distrusts(policy.workspace + "/Anvil.toml")) {
          config_watch->Distrust(std::string(kDistrustedNameReason));
        }
        // Before the command starts: a run that starts meanwhile takes only this as the user's.
        if (auto said = unchecked->Publish(git->Trusted()); !said) {
          return SetupFailure(said.error().ToString(), start);
        }
      }
      // After the placeholders: a .git this run made, or another run made (now held by this
      // run's lock), is bound read-only with the rest.
      std::vector<std::string> read_only = shield->read_only;
      std::vector<std::string> pinned = shield->pinned;
      if (git) {
        read_only.insert(read_only.end(), git->ReadOnlyPaths().begin(), git->ReadOnlyPaths().end());
        read_only.insert(read_only.end(), git->ProtectedNamePaths().begin(),
                         git->ProtectedNamePaths().end());
        pinned.insert(pinned.end(), git->PinnedDirs().begin(), git->PinnedDirs().end());
      }
      auto view = ComputeFileView(policy, host, read_only);
      if (!view) return SetupFailure(view.error().ToString(), start);
      // Each once; none inside a read-only path, where a writable bind would undo it.
      PinDirs(*view, pinned);
      auto inside_read_only = [&read_only](const std::string& p) {
        return std::any_of(read_only.begin(), read_only.end(),
                           [&](const std::string& r) { return p != r && PathIsWithin(p, r); });
      };
      view->pinned_links = autorun->Plan().pinned_links;
      std::erase_if(view->pinned_links, inside_read_only);
      view->anvil_state = anvil_state;
      view->host_autorun = autorun->Plan().read_only;
      view->host_autorun.insert(view->host_autorun.end(), autorun->Plan().pinned_links.begin(),
                                autorun->Plan().pinned_links.end());
      view->host_credentials = credential_places;
      for (const auto& point : ShadowCachesInView(*view, *cache_binds)) {
        if (auto s = MakeShadowMountPoint(point); !s) {
          return SetupFailure(s.error().ToString(), start);
        }
      }
      plan.view = std::move(*view);
    }
    plan.landlock_abi = walls.landlock_abi;
  }
  if (walls.filter) {
    auto filter =
        seccomp::BuildCommandFilter(walls.filter->network, walls.filter->deny_list,
                                    /*own_network_namespace=*/false, walls.filter->allow_tracing);
    plan.allow_tracing = walls.filter->allow_tracing;
    if (!filter) return SetupFailure(filter.error().ToString(), start);
    plan.filter = std::move(*filter);
  }

  // Root's sandbox runs as an unprivileged host id (root_remap.h), which RLIMIT_NPROC in its
  // user namespace bounds; its pids cgroup is a second bound that does not depend on the id
  // mapping (pids_cgroup.h).
  // Where this process's cgroups are: read once, for both (cgroup_facts.h).
  std::optional<CgroupFacts> cgroup_facts;
  auto cgroups = [&cgroup_facts]() -> const CgroupFacts& {
    if (!cgroup_facts) cgroup_facts = ReadCgroupFacts();
    return *cgroup_facts;
  };
  std::optional<PidsCgroup> pids;
  if (plan.confine_fs && spec.limits.processes && geteuid() == 0) {
    auto cg = PidsCgroup::Create(*spec.limits.processes, cgroups());
    if (cg) pids.emplace(std::move(*cg));
  }
  UniqueFd pids_tasks;
  if (pids) pids_tasks = pids->OpenSelfAttach();
  plan.cgroup_tasks_fds[0] = pids_tasks.Get();
  std::optional<MemoryCgroup> memory;
  const uint64_t memory_limit = spec.limits.memory == ResourceLimits::kDefaultMemoryCeiling
                                    ? DefaultMemoryCeiling()
                                    : spec.limits.memory;
  UniqueFd memory_tasks;
  if (plan.confine_fs && memory_limit > 0) {
    auto cg = MemoryCgroup::Create(memory_limit, cgroups(), pids ? pids->path() : "");
    if (cg) memory.emplace(std::move(*cg));
    if (memory) memory_tasks = memory->OpenSelfAttach();
    plan.cgroup_tasks_fds[1] = memory_tasks.Get();
  }
  // Sized by the ceiling in force now. Should attaching the cgroup fail below, the sandbox runs
  // without one, and the size is still at most half the machine's memory.
  plan.shm_size = DevShmSize(spec.limits.shm_size, memory ? memory_limit : 0, PhysicalMemory());
  // What the command's descriptors 0-2 become (std_streams.h); relayed from the loop below.
  auto prepared = StdStreamRelay::Prepare(plan.confine_fs, spec.limits.file_size);
  if (!prepared) return SetupFailure(prepared.error().ToString(), start);
  StdStreamRelay relay = std::move(*prepared);
  plan.streams = &relay.Child();

  int go[2] = {-1, -1};
  if (((pids && !pids_tasks) || (memory && !memory_tasks)) && pipe2(go, O_CLOEXEC) != 0) {
    return SetupFailure("sandbox: pipe failed", start);
  }
  UniqueFd go_read(go[0]), go_write(go[1]);
  plan.go_fd = go_read.Get();

  UniqueFd observer_command, observer_init;
  if (walls.observe_refusals) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
      return SetupFailure("sandbox: socketpair failed", start);
    }
    observer_command = UniqueFd(sv[0]);
    observer_init = UniqueFd(sv[1]);
    plan.observer_command_fd = observer_command.Get();
    plan.observer_init_fd = observer_init.Get();
  }
  int report[2], alive[2];
  if (pipe2(report, O_CLOEXEC) != 0) return SetupFailure("sandbox: pipe failed", start);
  UniqueFd report_read(report[0]), report_write(report[1]);
  if (pipe2(alive, O_CLOEXEC) != 0) return SetupFailure("sandbox: pipe failed", start);
  UniqueFd alive_read(alive[0]), alive_write(alive[1]);
  plan.report_fd = report_write.Get();
  plan.alive_fd = alive_read.Get();
  plan.argv = CStrings(spec.argv);
  plan.envp = CStrings(spec.env);
  if (!spec.logical_cwd.empty()) {
    for (size_t i = 0; i < spec.env.size(); ++i) {
      if (spec.env[i].rfind("PWD=", 0) == 0) plan.pwd_index = static_cast<int>(i);
    }
    plan.pwd_fallback = "PWD=" + spec.cwd;
  }
  UniqueFd remap_parent, remap_child;
  if (walls.remap_root) {
    plan.remap_root = true;
    plan.idmapped_roots = IdmappedRoots(plan.view);
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
      return SetupFailure("sandbox: socketpair failed", start);
    }
    remap_parent = UniqueFd(pair[0]);
    remap_child = UniqueFd(pair[1]);
    plan.remap_fd = remap_child.Get();
  }

  sigset_t forwarded, saved;
  sigemptyset(&forwarded);
  // SIGPIPE too: writing the go byte to an init that already failed must be an EPIPE, not
  // the death of the supervisor (the loop below drains it from the signalfd).
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGWINCH, SIGCHLD, SIGPIPE}) {
    sigaddset(&forwarded, sig);
  }
  relay.AddSignals(&forwarded);
  sigprocmask(SIG_BLOCK, &forwarded, &saved);

  if (plan.confine_fs) plan.user_limits = SandboxUserNsLimits(ReadUserNsLimits());
  int pidfd = -1;
  auto try_clone = [&](unsigned long f) {
    plan.userns = f & CLONE_NEWUSER;
    plan.pidns = f & CLONE_NEWPID;
    plan.mountns = f & CLONE_NEWNS;
    plan.netns = f & CLONE_NEWNET;
    // RLIMIT_NPROC counts per user namespace, and binds root's sandbox too (its host id is
    // not 0).
    plan.process_limit = pids.has_value() || ((f & CLONE_NEWUSER) && spec.limits.processes);
    if (spec.fail_step_for_testing == "clone" && (f & CLONE_NEWUSER)) {
      errno = EPERM;
      return -1L;
    }
    return syscall(SYS_clone, f | CLONE_PIDFD | SIGCHLD, nullptr, &pidfd, nullptr, 0);
  };
  long pid = try_clone(walls.clone_flags);
  const int clone_errno = errno;
  if (pid < 0 && walls.fallback_flags) pid = try_clone(*walls.fallback_flags);
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &saved, nullptr);
    return SetupFailure(CloneFailureMessage(walls, clone_errno), start);
  }
  if (pid == 0) {
    report_read.Release();  // never closed explicitly in the child: it execs or _exits
    if (unchecked) unchecked->CloseInChild();
    RunInit(plan);
  }
  UniqueFd init_fd(pidfd);
  relay.Started(init_fd.Get());
  report_write.Reset();
  observer_command.Reset();
  observer_init.Reset();
  // Init holds the only other end: its death is an EOF/EPIPE for whoever sends the call.
  spec.call_channel.Reset();
  alive_read.Reset();
  go_read.Reset();
  pids_tasks.Reset();
  remap_child.Reset();
  // A step of the supervisor failed: init never runs the command. When init failed first (its
  // step is why ours did), its own error is the one to report.
  auto abandon_init = [&](const Error& error) {
    syscall(SYS_pidfd_send_signal, init_fd.Get(), SIGKILL, nullptr, 0);
    while (waitpid(static_cast<pid_t>(pid), nullptr, 0) < 0 && errno == EINTR) {
    }
    sigprocmask(SIG_SETMASK, &saved, nullptr);
    std::string message = error.ToString();
    Record r;
    fcntl(report_read.Get(), F_SETFL, O_NONBLOCK);
    while (::read(report_read.Get(), &r, sizeof(r)) == static_cast<ssize_t>(sizeof(r))) {
      if (r.kind == kSetupError) {
        message.assign(r.message, strnlen(r.message, sizeof(r.message)));
        break;
      }
    }
    return SetupFailure(message, start);
  };
  if (plan.remap_root) {
    if (auto s =
            PrepareRemappedInit(static_cast<pid_t>(pid), plan.idmapped_roots, remap_parent.Get());
        !s) {
      return abandon_init(s.error());
    }
    remap_parent.Reset();
  }
  if (pids && plan.cgroup_tasks_fds[0] < 0) {
    if (auto s = pids->Attach(static_cast<pid_t>(pid)); !s) return abandon_init(s.error());
  }
  // Best effort, like the cgroup itself: where init cannot be moved there is no ceiling, and the
  // report says so.
  if (memory && plan.cgroup_tasks_fds[1] < 0 && !memory->Attach(static_cast<pid_t>(pid))) {
    memory.reset();
  }
  memory_tasks.Reset();
  if (go_write) {
    ssize_t ignored = ::write(go_write.Get(), "g", 1);
    (void)ignored;
    go_write.Reset();
  }

  UniqueFd sigfd(signalfd(-1, &forwarded, SFD_CLOEXEC | SFD_NONBLOCK));
  std::optional<Clock::time_point> deadline;
  if (spec.timeout && !plan.warm) deadline = start + *spec.timeout;
  auto call_start = start;
  bool timed_out = false;
  std::optional<Clock::time_point> kill_at;  // subreaper mode: grace before SIGKILL
  std::vector<Record> records;
  auto read_records = [&] {
    Record r;
    while (true) {
      ssize_t n = ::read(report_read.Get(), &r, sizeof(r));
      if (n == static_cast<ssize_t>(sizeof(r))) {
        records.push_back(r);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      return n == 0;  // EOF
    }
  };
  fcntl(report_read.Get(), F_SETFL, O_NONBLOCK);
  bool report_eof = false;
  while (true) {
    int wait_ms = -1;
    auto now = Clock::now();
    auto next = kill_at ? kill_at : (timed_out ? std::nullopt : deadline);
    if (next) {
      wait_ms =
          *next <= now
              ? 0
              : static_cast<int>(
                    std::chrono::duration_cast<std::chrono::milliseconds>(*next - now).count() + 1);
    }
    std::vector<pollfd> fds = {{init_fd.Get(), POLLIN, 0},
                               {report_eof ? -1 : report_read.Get(), POLLIN, 0},
                               {sigfd.Get(), POLLIN, 0}};
    relay.AddPollFds(fds);
    if (int relay_ms = relay.PollTimeoutMs(); relay_ms >= 0) {
      wait_ms = wait_ms < 0 ? relay_ms : std::min(wait_ms, relay_ms);
    }
    int n = poll(fds.data(), fds.size(), wait_ms);
    if (n < 0 && errno != EINTR) break;
    relay.OnPoll(fds.data() + 3, fds.size() - 3);
    if (fds[1].revents) {
      size_t before = records.size();
      report_eof = read_records();
      for (size_t i = before; i < records.size(); ++i) {
        if (records[i].kind == kCommandStopped) relay.OnCommandStopped();
        if (records[i].kind == kTerminalTaken) relay.OnTerminalTaken();
        if (records[i].kind == kCallTaken) {
          // Warm start: the call's time (deadline, duration) starts when init takes it.
          call_start = Clock::now();
          if (spec.timeout) deadline = call_start + *spec.timeout;
        }
      }
    }
    if (fds[2].revents) {
      signalfd_siginfo si;
      while (::read(sigfd.Get(), &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo != SIGCHLD && si.ssi_signo != SIGPIPE && !relay.OnSignal(si.ssi_signo)) {
          syscall(SYS_pidfd_send_signal, init_fd.Get(), si.ssi_signo, nullptr, 0);
        }
      }
    }
    if (fds[0].revents) break;
    now = Clock::now();
    if (kill_at && now >= *kill_at) {
      syscall(SYS_pidfd_send_signal, init_fd.Get(), SIGKILL, nullptr, 0);
      kill_at.reset();
    } else if (deadline && !timed_out && now >= *deadline) {
      timed_out = true;
      if (plan.pidns) {
        syscall(SYS_pidfd_send_signal, init_fd.Get(), SIGKILL, nullptr, 0);
      } else {
        syscall(SYS_pidfd_send_signal, init_fd.Get(), SIGUSR2, nullptr, 0);
        kill_at = Clock::now() + std::chrono::seconds(2);
      }
    }
  }
  int init_status = 0;
  while (waitpid(static_cast<pid_t>(pid), &init_status, 0) < 0 && errno == EINTR) {
  }
  // Every process of the sandbox is gone: the rest of its output, then the user's terminal back.
  relay.Finish();
  fcntl(report_read.Get(), F_SETFL, 0);
  if (!report_eof) read_records();
  {
    // A SIGPIPE of ours still pending must not fire when the caller's mask comes back.
    sigset_t pipe_only;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    timespec zero{0, 0};
    while (sigtimedwait(&pipe_only, nullptr, &zero) > 0) {
    }
  }
  sigprocmask(SIG_SETMASK, &saved, nullptr);

  SandboxOutcome out;
  // Every process of the command is gone, however it ended: what it left at the workspace's
  // Anvil.toml is checked first, before anything below may return, and before the git check's
  // walk (which then sees the directory as it stays).
  if (config_watch) out.workspace_config = config_watch->CheckAfterRun();
  out.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - call_start).count();
  out.layers.memory_limit = memory ? memory_limit : 0;
  out.layers.shm_size = plan.mountns ? plan.shm_size : 0;
  out.out_of_memory = memory && memory->OomKills() > 0;
  bool have_exit = false;
  for (const Record& r : records) {
    std::string message(r.message, strnlen(r.message, sizeof(r.message)));
    switch (r.kind) {
      case kLayers:
        out.layers.user_namespace = r.layers & kBitUserNs;
        out.layers.pid_namespace = r.layers & kBitPidNs;
        out.layers.mount_namespace = r.layers & kBitMountNs;
        out.layers.net_namespace = r.layers & kBitNetNs;
        out.layers.seccomp = r.layers & kBitSeccomp;
        out.layers.no_new_privs = r.layers & kBitNoNewPrivs;
        out.layers.subreaper = r.layers & kBitSubreaper;
        out.layers.landlock_net = r.layers & kBitLandlockNet;
        out.layers.landlock_scoped = r.layers & kBitLandlockScoped;
        out.layers.landlock_abi = static_cast<int>((r.layers >> 16) & 0xff);
        out.layers.process_limit = r.layers & kBitProcessLimit;
        out.layers.refusal_observer = r.layers & kBitRefusalObserver;
        break;
      case kRefusal: {
        Refusal refusal;
        if (DecodeRefusal(message, refusal)) out.refusals.push_back(std::move(refusal));
        break;
      }
      case kRefusalWithdrawn:
        WithdrawLoopbackHint(out.refusals, message);
        break;
      case kRefusalsDropped:
        out.refusals_dropped = static_cast<size_t>(std::max(0, r.value));
        break;
      case kSetupError:
        out.kind = SandboxOutcome::Kind::kSetupFailed;
        out.error = message;
        return out;
      case kExecError:
        out.kind = SandboxOutcome::Kind::kExecFailed;
        out.exec_errno = r.err;
        out.error = (r.err == ENOENT ? "not_found: " : "not_executable: ") + message;
        return out;
      case kExitStatus:
        have_exit = true;
        if (WIFSIGNALED(r.value)) {
          out.kind = SandboxOutcome::Kind::kSignaled;
          out.exit_status = WTERMSIG(r.value);
        } else {
          out.kind = SandboxOutcome::Kind::kExited;
          out.exit_status = WEXITSTATUS(r.value);
        }
        break;
      default:
        break;
    }
  }
  if (git) {
    // Every process of the command is gone (init was pid 1 of its namespace, or killed and
    // reaped them all): what it left can be checked without a race.
    // The workspace's Anvil.toml was checked above (config_watch): not twice.
    git->CheckAfterRun(config_watch ? std::vector<std::string>{policy.workspace + "/" +
                                                               std::string(kWorkspaceConfigName)}
                                    : std::vector<std::string>{});
    out.git = git->Report();
    // Only what was judged against the territory it was loaded for, and only what changed: a
    // run that kept what it loaded leaves the file as it is.
    if (walk_cache && GitWalkMemoMayBeSaved(walk_territory, git->JudgedTerritory()) &&
        GitWalkMemoNeedsSave(walk_loaded ? &*walk_loaded : nullptr, git->Memo())) {
      walk_cache->Save(git->Roots(), walk_territory, git->Memo());
    }
  }
  // What could not be checked keeps plugins out of it (policy/unchecked_subtrees.h).
  if (unchecked) unchecked->Finish(out, git.has_value());
  if (out.out_of_memory && !timed_out) {
    out.error = "limit: the sandbox reached its memory ceiling (" +
                std::to_string(memory_limit >> 20) +
                " MiB) and the kernel killed a process in it (fix: --limit mem=SIZE)";
  }
  if (timed_out) {
    out.kind = SandboxOutcome::Kind::kTimedOut;
    out.error = "timeout: command passed its deadline and was killed";
  } else if (!have_exit) {
    out.kind = SandboxOutcome::Kind::kSignaled;
    out.exit_status = WIFSIGNALED(init_status) ? WTERMSIG(init_status) : SIGKILL;
    out.error = "sandbox: init ended without reporting the command's status";
  }
  return out;
}

}  // namespace anvil
