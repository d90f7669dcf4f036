#include "cli/sandbox_command.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/sandbox_spec.h"
#include "common/fd_io.h"
#include "linux/helper_executable.h"
#include "linux/program_exec.h"
#include "policy/display_text.h"
#include "session/plugin_session.h"

extern char** environ;

namespace anvil::cli {
namespace {

// realpath(3) of `path`; "" when it does not exist.
std::string Canonical(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return {};
  return buf;
}

const char* OutcomeName(SandboxOutcome::Kind kind) {
  switch (kind) {
    case SandboxOutcome::Kind::kExited:
      return "exited";
    case SandboxOutcome::Kind::kSignaled:
      return "signaled";
    case SandboxOutcome::Kind::kTimedOut:
      return "timed_out";
    case SandboxOutcome::Kind::kSetupFailed:
      return "setup_failed";
    case SandboxOutcome::Kind::kExecFailed:
      return "exec_failed";
  }
  return "?";
}

}  // namespace

Result<SandboxInvocation> ParseSandboxArgs(const std::vector<std::string>& args,
                                           const std::vector<std::string>& environ_entries,
                                           SandboxFrontEnd front_end) {
  SandboxArgs a;
  const CommandSpec flags = SandboxCommandSpec(front_end, a);
  auto parsed = ParseFlags(flags, args);
  if (!parsed) return tl::unexpected(parsed.error());
  // RunSandboxCommand answers --help before parsing; anywhere else it goes alone.
  if (parsed->help) return Fail("invalid", "--help goes alone (see " + flags.program + " --help)");
  const std::vector<std::string>& command = parsed->operands;
  SandboxInvocation& inv = a.inv;
  SandboxPolicy& policy = inv.spec.policy;
  EnvPolicy& env = a.env;
  const std::string& workdir = a.workdir;
  const bool network_explicit = a.network_explicit;
  SandboxFlags& config_flags = a.config_flags;
  const int exec_fd = a.exec_fd, call_fd = a.call_fd;
  std::vector<std::string>& allow_hosts = a.allow_hosts;
  const std::string& unsafe_test_ca = a.unsafe_test_ca;
  std::string cwd = a.cwd;

  if (call_fd >= 0) {
    // The call names the program, argv and readable paths; the workspace starts empty.
    if (!command.empty() || exec_fd >= 0 || a.readable_flags) {
      return Fail("invalid",
                  "--call-fd takes the command, --exec-fd and the readable paths from the call");
    }
    if (policy.kind != PolicyKind::kReadOnly || policy.read_access != ReadAccess::kRestricted) {
      return Fail("invalid", "--call-fd needs --policy read-only --read-access restricted");
    }
    policy.workspace_read_subpaths.emplace();
  } else if (policy.runtime_from_call) {
    return Fail("invalid", "--runtime-from-call needs --call-fd");
  } else if (command.empty()) {
    return Fail("invalid", "no command given (usage: ... -- CMD [ARGS...])");
  }

  if (cwd.empty()) {
    char buf[PATH_MAX];
    if (!getcwd(buf, sizeof(buf))) return SysFail("invalid", "cannot read the current directory");
    cwd = buf;
  }
  std::string workspace = Canonical(cwd);
  if (workspace.empty()) return Fail("invalid", "--cwd " + cwd + ": no such directory");
  policy.workspace = workspace;
  std::string run_dir = workspace;
  if (!workdir.empty()) {
    run_dir = Canonical(workdir[0] == '/' ? workdir : workspace + "/" + workdir);
    if (run_dir.empty()) {
      return Fail("invalid", "--workdir " + SanitizeForDisplay(workdir, 400) +
                                 ": no such directory (fix: a directory inside the workspace " +
                                 SanitizeForDisplay(workspace, 400) + ")");
    }
    if (!PathIsWithin(run_dir, workspace)) {
      return Fail("invalid", "--workdir " + SanitizeForDisplay(workdir, 400) +
                                 " is outside the workspace " + SanitizeForDisplay(workspace, 400) +
                                 " (fix: a directory inside it, or --cwd to change the workspace)");
    }
  }
  if (front_end == SandboxFrontEnd::kAnvilSandbox) {
    // config.toml, Anvil.toml (narrowing only), profiles and the home, under the flags above.
    config_flags.network_explicit = network_explicit;
    auto settings = ApplySandboxSettings(environ_entries, config_flags, policy, allow_hosts);
    if (!settings) return tl::unexpected(settings.error());
    inv.settings = std::move(*settings);
  }
  if (policy.workspace_read_subpaths) {
    if (policy.kind != PolicyKind::kReadOnly) {
      return Fail("invalid", "--readable-path/--no-workspace-read need --policy read-only");
    }
    auto& subs = *policy.workspace_read_subpaths;
    if (std::find(subs.begin(), subs.end(), ".") != subs.end())
      policy.workspace_read_subpaths.reset();
  }
  for (auto& sub : policy.extra_read_only_subpaths) {
    if (sub.empty()) return Fail("invalid", "--read-only-subpath: empty path");
    if (sub[0] != '/') sub = workspace + "/" + sub;
  }
  if ((!allow_hosts.empty() || !inv.unsafe_test_allow_addresses.empty() ||
       !inv.unsafe_test_resolver.empty() || !unsafe_test_ca.empty()) &&
      policy.network != NetworkMode::kProxy) {
    return Fail("invalid", "--allow-host and the --unsafe-test-* options need --network proxy");
  }
  inv.allow_hosts = allow_hosts;
  if (policy.network == NetworkMode::kProxy && policy.kind != PolicyKind::kReadOnly &&
      policy.kind != PolicyKind::kWorkspaceWrite) {
    return Fail("invalid", "--network proxy needs --policy read-only or workspace-write");
  }
  if (policy.kind == PolicyKind::kDangerFullAccess && !network_explicit) {
    policy.network = NetworkMode::kFull;
  }
  if (!policy.ConfinesFilesystem() &&
      (!policy.extra_writable_roots.empty() || !policy.extra_read_only_subpaths.empty())) {
    // Accepting and ignoring them would mislead: this policy does not confine files at all.
    return Fail("invalid", "--writable-root/--read-only-subpath have no effect with " +
                               std::string(ToString(policy.kind)));
  }

  std::string path_env = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& e : environ_entries) {
    if (e.rfind("PATH=", 0) == 0) path_env = e.substr(5);
  }
  if (call_fd >= 0) {
    int dup = fcntl(call_fd, F_DUPFD_CLOEXEC, 3);
    if (dup < 0) return SysFail("invalid", "--call-fd " + std::to_string(call_fd));
    ::close(call_fd);
    inv.spec.call_channel = UniqueFd(dup);
  } else if (exec_fd >= 0) {
    int dup = fcntl(exec_fd, F_DUPFD_CLOEXEC, 3);
    if (dup < 0) return SysFail("invalid", "--exec-fd " + std::to_string(exec_fd));
    ::close(exec_fd);
    inv.spec.program = UniqueFd(dup);
  } else {
    auto program = ResolveProgram(command[0], path_env, run_dir);
    if (!program) return tl::unexpected(program.error());
    inv.spec.program = std::move(program->fd);
    inv.spec.program_path = std::move(program->path);
  }
  inv.spec.argv = command;
  inv.spec.cwd = run_dir;
  std::vector<std::string> base = a.minimal_env ? MinimalExecEnvironment() : environ_entries;
  if (a.minimal_env) env.clear = false;
  inv.spec.env = FilterEnvironment(base, env);
  inv.spec.env.push_back("ANVIL_SANDBOX=" + std::string(ToString(policy.kind)));
  if (policy.network == NetworkMode::kProxy) {
    // Every proxy variable points at the proxy; nothing may be exempted from it.
    static constexpr const char* kProxyVars[] = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                                                 "http_proxy", "https_proxy", "all_proxy"};
    std::erase_if(inv.spec.env, [](const std::string& e) {
      std::string name = e.substr(0, e.find('='));
      for (const char* v : kProxyVars) {
        if (name == v) return true;
      }
      return name == "NO_PROXY" || name == "no_proxy";
    });
    std::string url = "http://127.0.0.1:" + std::to_string(kProxyPort);
    for (const char* v : kProxyVars) inv.spec.env.push_back(std::string(v) + "=" + url);
    if (!unsafe_test_ca.empty()) {
      // Test-only. TLS runs end to end through CONNECT, so the test CA is for the command's own
      // clients: the usual variables point at it. It must be visible inside the sandbox.
      std::string ca = Canonical(unsafe_test_ca);
      bool visible = !ca.empty() && PathIsWithin(ca, workspace);
      for (auto root : kPlatformReadRoots) visible = visible || PathIsWithin(ca, root);
      if (!visible) {
        return Fail("invalid", "--unsafe-test-ca " + unsafe_test_ca +
                                   ": must be a file inside the workspace or a system directory "
                                   "the sandbox can read");
      }
      for (const char* v : {"SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE",
                            "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO"}) {
        std::erase_if(inv.spec.env, [&](const std::string& e) {
          return e.compare(0, std::strlen(v) + 1, std::string(v) + "=") == 0;
        });
        inv.spec.env.push_back(std::string(v) + "=" + ca);
      }
    }
  }
  if (policy.ConfinesFilesystem()) {
    // /tmp inside is the sandbox's own; a TMPDIR pointing elsewhere would not be writable.
    std::erase_if(inv.spec.env, [](const std::string& e) { return e.rfind("TMPDIR=", 0) == 0; });
  }
  return std::move(inv);
}

namespace {

// anvil-proxy for --network proxy: started before the sandbox, confined, and "ok" on its status
// pipe before anything runs (an invalid --allow-host fails the whole command: fail closed).
struct ProxyProcess {
  pid_t pid = -1;
  UniqueFd status;  // after "ok": one JSON line per distinct refusal, EOF when the proxy ends
  ~ProxyProcess() { Stop(); }
  void Stop() {
    if (pid <= 0) return;
    kill(pid, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      if (waitpid(pid, nullptr, WNOHANG) == pid) {
        pid = -1;
        return;
      }
      usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    pid = -1;
  }
};

Status StartProxy(SandboxInvocation& inv, ProxyProcess& proxy) {
  int sv[2], status[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return SysFail("sandbox", "proxy: socketpair");
  }
  UniqueFd ours(sv[0]), theirs(sv[1]);
  if (pipe2(status, O_CLOEXEC) != 0) return SysFail("sandbox", "proxy: pipe");
  UniqueFd status_r(status[0]), status_w(status[1]);
  auto exe = FindHelper("anvil-proxy");
  if (!exe) return Fail("sandbox", "--network proxy: " + exe.error().ToString());
  std::vector<std::string> args = {exe->path, "--channel-fd", "3", "--status-fd", "4"};
  if (auto audit = session::AuditLogPath(inv.spec.policy.workspace)) {
    args.push_back("--audit-log");
    args.push_back(*audit);
  }
  for (const auto& h : inv.allow_hosts) {
    args.push_back("--allow-host");
    args.push_back(h);
  }
  for (const auto& a : inv.unsafe_test_allow_addresses) {
    args.push_back("--unsafe-test-allow-address");
    args.push_back(a);
  }
  if (!inv.unsafe_test_resolver.empty()) {
    args.push_back("--unsafe-test-resolver");
    args.push_back(inv.unsafe_test_resolver);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  char empty_env_entry[] = "PATH=/usr/bin:/bin";
  char* envp[] = {empty_env_entry, nullptr};
  pid_t pid = fork();
  if (pid < 0) return SysFail("sandbox", "proxy: fork");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    int a = fcntl(theirs.Get(), F_DUPFD_CLOEXEC, 10),
        b = fcntl(status_w.Get(), F_DUPFD_CLOEXEC, 10);
    if (a < 0 || b < 0 || dup2(a, 3) < 0 || dup2(b, 4) < 0) _exit(125);
    execve(argv[0], argv.data(), envp);
    _exit(127);
  }
  proxy.pid = pid;
  theirs.Reset();
  status_w.Reset();
  // The first line only: what follows are refusals, read after the run (ProxyRefusals).
  std::string line;
  while (line.size() < 4096) {
    char c = 0;
    ssize_t n = ::read(status_r.Get(), &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || c == '\n') break;
    line.push_back(c);
  }
  if (line != "ok") {
    proxy.Stop();
    if (line.empty()) line = "anvil-proxy could not start (" + args[0] + ")";
    return Fail("sandbox", "--network proxy: " + line);
  }
  inv.spec.proxy_channel = std::move(ours);
  proxy.status = std::move(status_r);
  return Ok();
}

// The refusals anvil-proxy reported (after it has stopped: its end is closed then).
std::vector<Refusal> ProxyRefusals(ProxyProcess& proxy) {
  std::vector<Refusal> out;
  if (!proxy.status) return out;
  std::string text;
  char buf[4096];
  while (text.size() < (1u << 20)) {
    ssize_t n = ::read(proxy.status.Get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) break;  // a line cut short by a crash
    auto line = nlohmann::json::parse(text.substr(start, end - start), nullptr, false);
    start = end + 1;
    if (!line.is_object() || !line.contains("refused") || !line["refused"].is_string() ||
        !line.contains("reason") || !line["reason"].is_string()) {
      continue;
    }
    out.push_back(
        ProxyRefusal(line["refused"].get<std::string>(), line["reason"].get<std::string>()));
  }
  return out;
}

// The --json report: on stderr, or whole on --report-fd (a pipe to the gateway's exec broker).
void WriteReport(int report_fd, const std::string& line) {
  if (report_fd < 0) {
    std::cerr << line;
    return;
  }
  (void)fd_io::WriteAll(report_fd, line, fd_io::Wait::NoWait());
}

// What the check after the run moved aside, or why it could not finish: always on stderr,
// whatever --json says, since the user's next `git` in the workspace depends on it.
void PrintGitReport(const GitReport& git) {
  for (const auto& q : git.quarantined) {
    std::cerr << "anvil sandbox: quarantined " << q.path << " -> " << q.moved_to << ": " << q.reason
              << ". Inspect it before trusting it; to restore: " << q.restore << "\n";
  }
  for (const auto& f : git.quarantine_failures) {
    std::cerr << "anvil sandbox: WARNING: could not quarantine " << f
              << "; do not run git there before checking it\n";
  }
  if (git.unwalked_total > 0) {
    std::cerr << "anvil sandbox: ERROR: the check after the run for git metadata the command "
                 "made did not walk "
              << git.unwalked_total << " subtree(s) of the writable roots:\n";
    for (const auto& u : git.unwalked) std::cerr << "  " << u.path << ": " << u.why << "\n";
    if (git.unwalked_total > git.unwalked.size()) {
      std::cerr << "  ... and " << git.unwalked_total - git.unwalked.size() << " more\n";
    }
    std::cerr << "Everything else was checked (and what runs code was moved aside). A repository "
                 "the command made in those subtrees was not: do not run git in them (nor let an "
                 "editor or prompt do) before looking for .git entries, HEAD files and hooks "
                 "there, or remove them. The next sandbox there does not start until they are "
                 "within the bounds (--git-scan-limit). Exit status 125.\n";
  }
  if (!git.check_error.empty()) {
    std::cerr << "anvil sandbox: ERROR: the check after the run for git metadata the command "
                 "made could not finish ("
              << git.check_error
              << "); do not run git in the writable roots before looking for new .git entries, "
                 "HEAD files and hooks. Exit status 125.\n";
  }
  if (!git.quarantine_failures.empty()) {
    std::cerr << "anvil sandbox: exit status 125: not everything that runs code could be moved "
                 "aside\n";
  }
}

// One line for an agent (anvil exec, MCP): why the run failed after the command ran.
std::string GitCheckSummary(const GitReport& git) {
  std::string out = "the check after the run for git metadata the command made is incomplete";
  if (git.unwalked_total > 0) {
    out += "; not walked: " + std::to_string(git.unwalked_total) + " subtree(s), first " +
           git.unwalked.front().path + " (" + git.unwalked.front().why + ")";
  }
  if (!git.check_error.empty()) out += "; " + git.check_error;
  if (!git.quarantine_failures.empty()) {
    out += "; not moved aside: " + git.quarantine_failures.front();
  }
  return out + ". Do not run git there before checking it (the user must look)";
}

nlohmann::json GitReportJson(const GitReport& git) {
  nlohmann::json quarantined = nlohmann::json::array();
  for (const auto& q : git.quarantined) {
    quarantined.push_back(
        {{"path", q.path}, {"moved_to", q.moved_to}, {"reason", q.reason}, {"restore", q.restore}});
  }
  nlohmann::json out = {{"repositories", git.repositories},
                        {"read_only_paths", git.read_only_paths},
                        {"placeholders", git.placeholders},
                        {"entries_scanned", git.entries},
                        {"entries_listed", git.listed},
                        {"dirs_from_cache", git.cached_dirs},
                        {"scan_ms", std::round(git.scan_ms * 1000) / 1000},
                        {"checked_after_run", git.checked_after},
                        {"check_ms", std::round(git.check_ms * 1000) / 1000},
                        {"check_entries_listed", git.check_listed},
                        {"quarantined", quarantined},
                        {"quarantine_failures", git.quarantine_failures}};
  if (!git.check_error.empty()) out["check_error"] = git.check_error;
  if (git.unwalked_total > 0) {
    nlohmann::json unwalked = nlohmann::json::array();
    for (const auto& u : git.unwalked) unwalked.push_back({{"path", u.path}, {"why", u.why}});
    out["unwalked"] = unwalked;
    out["unwalked_total"] = git.unwalked_total;
  }
  out["check_complete"] = !git.Incomplete();
  return out;
}

}  // namespace

int RunSandboxCommand(const std::vector<std::string>& args, SandboxFrontEnd front_end,
                      SandboxRunFacts* facts) {
  for (const auto& a : args) {
    if (a == "--") break;
    if (a == "--help" || a == "-h") {
      std::cout << RenderHelp(SandboxCommandSpec(front_end));
      return 0;
    }
  }
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  auto inv = ParseSandboxArgs(args, env, front_end);
  if (!inv) {
    const Error& e = inv.error();
    std::string prog =
        front_end == SandboxFrontEnd::kAnvilSandbox ? "anvil sandbox" : "anvil-exec-runner";
    std::cerr << prog << ": " << e.ToString() << "\n";
    int status = e.code == "not_found" ? 127 : e.code == "not_executable" ? 126 : 125;
    // --json promises one report at exit, also when nothing could be started.
    bool json = false;
    int report_fd = -1;
    for (size_t i = 0; i < args.size() && args[i] != "--"; ++i) {
      json = json || args[i] == "--json";
      if (front_end == SandboxFrontEnd::kExecRunner && args[i] == "--report-fd" &&
          i + 1 < args.size()) {
        auto fd = ParseInteger(args[i + 1]);
        if (fd && *fd >= 3 && *fd <= INT_MAX) report_fd = static_cast<int>(*fd);
      }
    }
    if (json || report_fd >= 0) {
      nlohmann::json report = {{"exit_code", status},
                               {"outcome", status == 125 ? "setup_failed" : "exec_failed"},
                               {"error", e.ToString()}};
      WriteReport(report_fd,
                  report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    }
    return status;
  }
  bool json = inv->json;
  if (inv->report_fd >= 0) {
    // Never inherited by the command (RunSandboxed also closes everything above 2).
    fcntl(inv->report_fd, F_SETFD, FD_CLOEXEC);
  }
  SandboxPolicy policy = inv->spec.policy;
  ProxyProcess proxy;
  if (policy.network == NetworkMode::kProxy) {
    if (auto s = StartProxy(*inv, proxy); !s) {
      std::cerr << "anvil sandbox: " << s.error().ToString() << "\n";
      if (json || inv->report_fd >= 0) {
        nlohmann::json report = {
            {"exit_code", 125}, {"outcome", "setup_failed"}, {"error", s.error().ToString()}};
        WriteReport(inv->report_fd,
                    report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
      }
      return 125;
    }
  }
  if (front_end == SandboxFrontEnd::kAnvilSandbox) {
    // Facts for the summary (policy/refusals.h); --quiet without --json needs none.
    inv->spec.observe_refusals = !inv->quiet || json || facts != nullptr;
  }
  SandboxOutcome outcome = RunSandboxed(std::move(inv->spec));
  proxy.Stop();
  if (facts != nullptr) facts->started = outcome.kind != SandboxOutcome::Kind::kSetupFailed;
  std::vector<Refusal> refusals = ProxyRefusals(proxy);
  refusals.insert(refusals.end(), outcome.refusals.begin(), outcome.refusals.end());
  if (facts != nullptr) facts->refusals = refusals;
  if (inv->settings.home_created) SweepDeadSandboxHomes(inv->settings.state_dir);
  int status = outcome.ShellStatus();
  // The command ran, but the check after it could not vouch for the writable roots: a failure
  // of the sandbox, whatever the command's own status (--json keeps it as command_exit_code).
  const int command_status = status;
  const bool git_incomplete = outcome.git.checked_after && outcome.git.Incomplete();
  if (git_incomplete) status = 125;
  if (facts != nullptr && git_incomplete) facts->git_check_error = GitCheckSummary(outcome.git);
  if (!outcome.error.empty() &&
      (outcome.kind != SandboxOutcome::Kind::kSignaled || outcome.out_of_memory)) {
    std::cerr << "anvil sandbox: " << outcome.error << "\n";
  }
  PrintGitReport(outcome.git);
  if (front_end == SandboxFrontEnd::kAnvilSandbox && !inv->quiet && status != 0) {
    // After a failure only: a command that succeeded despite a refusal (git status refreshing
    // its index where it can) needs no explanation; --json lists every refusal either way.
    std::cerr << RefusalSummary(refusals, outcome.refusals_dropped, policy.workspace,
                                inv->settings.home, policy.network);
  }
  if (json) {
    nlohmann::json report = {{"exit_code", status},
                             {"command_exit_code", command_status},
                             {"outcome", OutcomeName(outcome.kind)},
                             {"duration_ms", std::round(outcome.duration_ms * 1000) / 1000},
                             {"policy", ToString(policy.kind)},
                             {"network", ToString(policy.network)},
                             {"read_access", ToString(policy.read_access)},
                             {"workspace", policy.workspace},
                             {"layers",
                              {{"user_namespace", outcome.layers.user_namespace},
                               {"pid_namespace", outcome.layers.pid_namespace},
                               {"mount_namespace", outcome.layers.mount_namespace},
                               {"net_namespace", outcome.layers.net_namespace},
                               {"landlock_abi", outcome.layers.landlock_abi},
                               {"landlock_net", outcome.layers.landlock_net},
                               {"landlock_scoped", outcome.layers.landlock_scoped},
                               {"seccomp", outcome.layers.seccomp},
                               {"no_new_privs", outcome.layers.no_new_privs},
                               {"subreaper", outcome.layers.subreaper},
                               {"process_limit", outcome.layers.process_limit},
                               {"memory_limit", outcome.layers.memory_limit}}}};
    report["layers"]["refusal_observer"] = outcome.layers.refusal_observer;
    if (front_end == SandboxFrontEnd::kAnvilSandbox) {
      const SandboxSettings& settings = inv->settings;
      nlohmann::json home = {{"mode", ToString(settings.home_mode)}, {"path", settings.home}};
      if (!settings.sandbox_home.empty()) home["sandbox_home"] = settings.sandbox_home;
      if (!settings.home_note.empty()) home["note"] = settings.home_note;
      report["home"] = home;
      report["profiles"] = settings.profiles;
      nlohmann::json list = nlohmann::json::array();
      for (const auto& r : refusals) {
        RefusalAdvice advice = Advise(r, policy.workspace, settings.home, policy.network);
        nlohmann::json entry = {{"kind", r.kind == Refusal::Kind::kWrite     ? "write"
                                         : r.kind == Refusal::Kind::kNetwork ? "network"
                                                                             : "proxy"},
                                {"what", advice.what},
                                {"why", advice.why},
                                {"allow", advice.allow}};
        if (!r.program.empty()) entry["program"] = r.program;
        if (r.kind == Refusal::Kind::kWrite) {
          entry["path"] = r.subject;
          entry["operation"] = r.detail;
          entry["area"] = ToString(r.area);
          entry["root"] = r.root;
        } else {
          entry["target"] = r.subject;
          entry["reason"] = r.detail;
        }
        list.push_back(std::move(entry));
      }
      report["refusals"] = list;
      if (outcome.refusals_dropped > 0) report["refusals_not_listed"] = outcome.refusals_dropped;
    }
    if (outcome.out_of_memory) report["out_of_memory"] = true;
    if (outcome.kind == SandboxOutcome::Kind::kSignaled) report["signal"] = outcome.exit_status;
    if (outcome.git.protected_repositories) report["git"] = GitReportJson(outcome.git);
    if (!outcome.error.empty()) report["error"] = outcome.error;
    WriteReport(inv->report_fd,
                report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  return status;
}

}  // namespace anvil::cli
