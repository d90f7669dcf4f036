#include "cli/sandbox_command.h"

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/sandbox_spec.h"
#include "common/fd_io.h"
#include "linux/helper_executable.h"
#include "policy/display_text.h"
#include "policy/protected_names_plan.h"
#include "session/plugin_session.h"

extern char** environ;

namespace anvil::cli {
namespace {

// For the refusal summary: whether the host has `path` as a directory (as the caller sees it).
bool HostDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
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
// The paths and reasons are the command's file names: shown sanitized (policy/display_text.h);
// --json keeps their bytes. The restore command is made to show as it is (PasteableShellWord).
std::string Shown(const std::string& text) { return SanitizeForDisplay(text, kNoDisplayCap); }

void PrintGitReport(const GitReport& git) {
  for (const auto& q : git.quarantined) {
    std::cerr << "anvil sandbox: quarantined " << Shown(q.path) << " -> " << Shown(q.moved_to)
              << ": " << Shown(q.reason)
              << ". Inspect it before trusting it; to restore: " << Shown(q.restore) << "\n";
  }
  for (const auto& f : git.quarantine_failures) {
    std::cerr << "anvil sandbox: WARNING: could not quarantine " << Shown(f)
              << "; do not run git there before checking it\n";
  }
  if (git.unwalked_total > 0) {
    std::cerr << "anvil sandbox: ERROR: the check after the run for git metadata the command "
                 "made did not walk "
              << git.unwalked_total << " subtree(s) of the writable roots:\n";
    for (const auto& u : git.unwalked) {
      std::cerr << "  " << Shown(u.path) << ": " << Shown(u.why) << "\n";
    }
    if (git.unwalked_total > git.unwalked.size()) {
      std::cerr << "  ... and " << git.unwalked_total - git.unwalked.size() << " more\n";
    }
    std::cerr << "Everything else was checked (and what runs code was moved aside). A repository "
                 "the command made in those subtrees was not: do not run git in them (nor let an "
                 "editor or prompt do) before looking for .git entries, HEAD files and hooks "
                 "there, or remove them. The next sandbox there does not start until they are "
                 "within the bounds (--git-scan-limit), and no plugin runs in them (nor in a "
                 "workspace that holds them) until a sandbox run there has walked them and moved "
                 "aside what the command could have made. Exit status 125.\n";
  }
  if (!git.check_error.empty()) {
    std::cerr << "anvil sandbox: ERROR: the check after the run for git metadata the command "
                 "made could not finish ("
              << Shown(git.check_error)
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
  return Shown(out) + ". Do not run git there before checking it (the user must look)";
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
                        {"check_dirs_opened", git.opened_up},
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

// A sandbox that could not be set up inside another Anvil sandbox (ANVIL_SANDBOX is set there):
// the outer one refuses the namespaces and sockets this one needs; say so rather than only
// naming the first syscall that failed.
static std::string NestedSandboxHint() {
  const char* outer = ::getenv("ANVIL_SANDBOX");
  if (outer == nullptr || *outer == '\0') return "";
  return " (this anvil runs inside an Anvil sandbox, ANVIL_SANDBOX=" +
         SanitizeForDisplay(outer, 64) +
         ": a sandbox needs namespaces and /proc settings the outer one refuses, so sandboxes "
         "do not nest. fix: run it outside the sandbox)";
}

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
    int status = e.code == "not_found" ? 127 : e.code == "not_executable" ? 126 : 125;
    std::cerr << prog << ": " << e.ToString()
              << (status == 125 && e.code != "invalid" ? NestedSandboxHint() : "") << "\n";
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
  // Root in another user's workspace: said before the command's own "Permission denied".
  std::string root_warning;
  if (front_end == SandboxFrontEnd::kAnvilSandbox && policy.kind == PolicyKind::kWorkspaceWrite &&
      ::geteuid() == 0) {
    struct stat st {};
    if (::stat(policy.workspace.c_str(), &st) == 0) {
      std::string owner_name;
      struct passwd pw {};
      struct passwd* found = nullptr;
      char buf[4096];
      if (::getpwuid_r(st.st_uid, &pw, buf, sizeof buf, &found) == 0 && found != nullptr) {
        owner_name = found->pw_name;
      }
      root_warning =
          RootForeignWorkspaceWarning(true, policy.workspace, st.st_uid, owner_name, st.st_gid);
    }
    if (!inv->quiet) std::cerr << root_warning;
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
  // Likewise an Anvil.toml (or another of Anvil's protected names, made below the top) that
  // should have been moved aside and is still there.
  if (outcome.workspace_config && outcome.workspace_config->moved_to.empty()) status = 125;
  for (const ConfigQuarantine& q : outcome.git.protected_names) {
    if (q.moved_to.empty()) status = 125;
  }
  if (facts != nullptr && git_incomplete) facts->git_check_error = GitCheckSummary(outcome.git);
  if (!outcome.error.empty() &&
      (outcome.kind != SandboxOutcome::Kind::kSignaled || outcome.out_of_memory)) {
    std::cerr << "anvil sandbox: " << outcome.error
              << (outcome.kind == SandboxOutcome::Kind::kSetupFailed ? NestedSandboxHint() : "")
              << "\n";
  }
  PrintGitReport(outcome.git);
  if (outcome.workspace_config) {
    // Always on stderr, whatever --json says: the user's next Anvil in the workspace depends on it.
    std::cerr << "anvil sandbox: " << ConfigQuarantineMessage(*outcome.workspace_config) << "\n";
  }
  for (const ConfigQuarantine& q : outcome.git.protected_names) {
    std::cerr << "anvil sandbox: " << ConfigQuarantineMessage(q) << "\n";
  }
  if (front_end == SandboxFrontEnd::kAnvilSandbox && !inv->quiet && status != 0) {
    // After a failure only: a command that succeeded despite a refusal (git status refreshing
    // its index where it can) needs no explanation; --json lists every refusal either way.
    std::cerr << RefusalSummary(refusals, outcome.refusals_dropped, policy.workspace,
                                inv->settings.home, policy.network, HostDirectory);
    // Again after the failure, which the writes refused by the workspace's owner may explain.
    std::cerr << root_warning;
    std::cerr << SigbusHint(command_status, outcome.layers.shm_size);
    std::cerr << HomeNotShownHint(command_status, inv->settings.home_not_shown, inv->settings.home);
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
                               {"memory_limit", outcome.layers.memory_limit},
                               {"shm_size", outcome.layers.shm_size}}}};
    report["layers"]["refusal_observer"] = outcome.layers.refusal_observer;
    if (front_end == SandboxFrontEnd::kAnvilSandbox) {
      const SandboxSettings& settings = inv->settings;
      nlohmann::json home = {{"mode", ToString(settings.home_mode)}, {"path", settings.home}};
      if (!settings.sandbox_home.empty()) {
        home["sandbox_home"] = settings.sandbox_home;
        home["keyed_by"] = settings.home_key;
      }
      home["tmp"] = settings.kept_tmp.empty() ? "private" : settings.kept_tmp;
      if (!settings.home_note.empty()) home["note"] = settings.home_note;
      for (const auto& [path, leads_to] : settings.home_not_shown) {
        home["not_shown"].push_back(
            {{"path", path},
             {"leads_to", leads_to},
             {"why", "a link on the way that an earlier run could have re-pointed"},
             {"allow", "--readable-root " + leads_to}});
      }
      report["home"] = home;
      if (!settings.repository_top.empty()) report["repository_top"] = settings.repository_top;
      if (!settings.environments.empty()) report["environments"] = settings.environments;
      report["profiles"] = settings.profiles;
      nlohmann::json list = nlohmann::json::array();
      for (const auto& r : refusals) {
        RefusalAdvice advice =
            Advise(r, policy.workspace, settings.home, policy.network, HostDirectory);
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
    if (outcome.workspace_config) {
      const ConfigQuarantine& q = *outcome.workspace_config;
      nlohmann::json config = {{"path", q.path}, {"reason", q.reason}};
      if (!q.moved_to.empty()) {
        config["moved_to"] = q.moved_to;
        config["restore"] = ConfigQuarantineRestore(q);
      } else {
        config["failure"] = q.failure;
      }
      report["workspace_config_quarantined"] = config;
    }
    if (!outcome.git.protected_names.empty()) {
      nlohmann::json list = nlohmann::json::array();
      for (const ConfigQuarantine& q : outcome.git.protected_names) {
        nlohmann::json entry = {{"path", q.path}, {"reason", q.reason}};
        if (!q.moved_to.empty()) {
          entry["moved_to"] = q.moved_to;
          entry["restore"] = ConfigQuarantineRestore(q);
        } else {
          entry["failure"] = q.failure;
        }
        list.push_back(std::move(entry));
      }
      report["protected_names_quarantined"] = list;
    }
    if (!outcome.error.empty()) report["error"] = outcome.error;
    WriteReport(inv->report_fd,
                report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  return status;
}

}  // namespace anvil::cli
