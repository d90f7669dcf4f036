#include "cli/mcp_command.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "agent/mcp_protocol.h"
#include "cli/commands.h"
#include "cli/exec_command.h"
#include "common/fd_io.h"
#include "common/unique_fd.h"
#include "fs/workspace_path.h"
#include "policy/consent.h"
#include "policy/display_text.h"
#include "policy/grant_store.h"
#include "policy/sandbox_policy.h"
#include "session/plugin_admission.h"
#include "session/plugin_catalog.h"
#include "session/plugin_session.h"

extern char** environ;

namespace anvil::cli {
namespace {

using nlohmann::json;
namespace mcp = agent::mcp;

constexpr int kExitUsage = 2;
// After SIGTERM, how long a stopped call's process tree gets before SIGKILL.
constexpr auto kTermGrace = std::chrono::seconds(2);
// A plugin command's deadline (as `anvil run --timeout`), and the time to list its commands.
constexpr int kPluginTimeoutSeconds = 60;
constexpr auto kPluginListDeadline = std::chrono::seconds(15);
// Calls running at once, at most: each is a sandbox (or a plugin session) of its own.
constexpr std::size_t kMaxRunningCalls = 16;

constexpr char kUsage[] =
    R"(usage: anvil mcp [--workspace DIR] [--approval MODE] [--rules FILE]...
                 [--plugin-dir DIR]... [--plugin-path DIR]... [--no-plugins]
                 [sandbox options]

Serve the Model Context Protocol on stdin/stdout (newline-delimited JSON-RPC 2.0, protocol
2025-06-18) for a coding agent (docs/agents.md, "anvil mcp"). Tools: run_command (the same
flow as `anvil exec`: the command rules, the approval mode, the sandbox, the refusals it
recorded and the escalation on offer) and one tool per command of every plugin with an
approved grant (run exactly as `anvil run --json` runs it).

  --workspace DIR    the workspace commands run in (default: the current directory)
  --approval MODE    untrusted | on-failure | on-request (default) | never
  --rules FILE       read FILE as your rules instead of ~/.config/anvil/rules/*.toml
                     (repeatable; the admin layer and the workspace's rules still apply)
  --plugin-dir DIR   offer this plugin's commands too (repeatable; still needs a grant)
  --plugin-path DIR  search DIR's subdirectories for plugins (repeatable; default
                     ${XDG_DATA_HOME:-~/.local/share}/anvil/plugins)
  --no-plugins       offer run_command only

Every other option is `anvil sandbox`'s and applies to every command (--cwd and --workdir
excepted: the workspace is --workspace, a call's cwd its `cwd` argument).

Questions go to the client as elicitation/create when it declares that capability; without
it, a command that needs a question is refused, with the one line that would allow it.

Examples:
  anvil mcp --workspace .
  anvil mcp --workspace ~/src/app --approval untrusted --network proxy --allow-host crates.io
)";

std::string Canonical(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : std::string();
}

std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "anvil";
  return std::string(buf, static_cast<std::size_t>(n));
}

std::string IdKey(const json& id) { return id.dump(); }

struct McpOptions {
  std::string workspace;  // canonical
  ApprovalMode mode = ApprovalMode::kOnRequest;
  std::vector<std::string> rules_files;
  std::vector<std::string> sandbox_flags;
  std::vector<std::string> plugin_dirs;
  std::vector<std::string> search_paths;
  bool default_path = true;
  bool plugins = true;
};

Result<McpOptions> ParseMcpArgs(const std::vector<std::string>& args) {
  McpOptions o;
  std::string workspace = ".";
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const std::string flag = a.substr(0, a.find('='));
    auto value = [&]() -> Result<std::string> {
      if (a.size() > flag.size()) return a.substr(flag.size() + 1);
      if (i + 1 >= args.size()) return Fail("invalid", flag + " needs a value (see --help)");
      return args[++i];
    };
    if (flag == "--workspace" || flag == "--approval" || flag == "--rules" ||
        flag == "--plugin-dir" || flag == "--plugin-path") {
      auto v = value();
      if (!v) return tl::unexpected(v.error());
      if (flag == "--workspace") {
        workspace = *v;
      } else if (flag == "--approval") {
        auto mode = ParseApprovalMode(*v);
        if (!mode) {
          return Fail("invalid", "--approval " + SanitizeForDisplay(*v, 40) +
                                     " (fix: untrusted, on-failure, on-request or never)");
        }
        o.mode = *mode;
      } else if (flag == "--rules") {
        o.rules_files.push_back(*v);
      } else if (flag == "--plugin-dir") {
        const std::string c = Canonical(*v);
        if (c.empty()) {
          return Fail("invalid",
                      "--plugin-dir " + SanitizeForDisplay(*v, 400) + ": no such directory");
        }
        o.plugin_dirs.push_back(c);
      } else {
        const std::string c = Canonical(*v);
        if (c.empty()) {
          return Fail("invalid",
                      "--plugin-path " + SanitizeForDisplay(*v, 400) + ": no such directory");
        }
        o.search_paths.push_back(c);
        o.default_path = false;
      }
    } else if (a == "--no-plugins") {
      o.plugins = false;
    } else if (flag == "--cwd" || flag == "--workdir") {
      return Fail("invalid", flag +
                                 " is not an option of anvil mcp (fix: --workspace DIR; a call "
                                 "picks its directory with run_command's cwd)");
    } else if (flag == "--json" || flag == "--report-fd" || flag == "--widen" ||
               flag == "--reason") {
      return Fail("invalid", flag +
                                 " is not an option of anvil mcp (it is per call: run_command's "
                                 "arguments)");
    } else if (!a.empty() && a[0] == '-' && a != "-" && a != "--") {
      o.sandbox_flags.push_back(a);
      if (SandboxValueFlags().contains(flag) && a.size() == flag.size()) {
        if (i + 1 >= args.size()) return Fail("invalid", flag + " needs a value (see --help)");
        o.sandbox_flags.push_back(args[++i]);
      }
    } else {
      return Fail("invalid", "unexpected argument '" + SanitizeForDisplay(a, 100) +
                                 "' (anvil mcp takes options only; the commands come from the "
                                 "client)");
    }
  }
  o.workspace = Canonical(workspace);
  if (o.workspace.empty() || !IsRealDirectory(o.workspace)) {
    return Fail("invalid",
                "--workspace " + SanitizeForDisplay(workspace, 400) + ": no such directory");
  }
  if (!IsValidUtf8(o.workspace)) {
    return Fail("invalid", "the workspace path " + SanitizeForDisplay(o.workspace, 400) +
                               " is not valid UTF-8 (fix: serve a directory whose path is UTF-8)");
  }
  return o;
}

// `anvil exec`'s command line for one call.
std::vector<std::string> ExecArgs(const McpOptions& o, const std::string& workdir,
                                  const mcp::RunCommandArgs& call) {
  std::vector<std::string> args = {"--approval", std::string(ToString(o.mode))};
  for (const auto& f : o.rules_files) {
    args.push_back("--rules");
    args.push_back(f);
  }
  args.insert(args.end(), o.sandbox_flags.begin(), o.sandbox_flags.end());
  args.push_back("--cwd");
  args.push_back(o.workspace);
  if (!workdir.empty() && workdir != o.workspace) {
    args.push_back("--workdir");
    args.push_back(workdir);
  }
  if (!call.widen.empty()) {
    args.push_back("--widen");
    args.push_back(call.widen);
    args.push_back("--reason");
    args.push_back(call.reason);
  }
  args.push_back("--");
  args.insert(args.end(), call.argv.begin(), call.argv.end());
  return args;
}

// One child process (`anvil sandbox` or `anvil run`), in a process group of its own.
struct ChildOutcome {
  int status = 125;  // as a shell reports it
  bool spawned = false;
  bool timed_out = false;
  bool cancelled = false;
  std::string report;  // what came on fd 3
  mcp::CappedOutput out{mcp::kOutputHeadBytes, mcp::kOutputTailBytes};
  mcp::CappedOutput err{mcp::kOutputHeadBytes, mcp::kOutputTailBytes};
};

struct Call {
  json id;
  std::optional<json> progress_token;
  std::atomic<bool> cancelled{false};
  std::atomic<bool> done{false};
  bool can_elicit = false;  // the client declared elicitation (as of the call's start)
  double progress = 0;
  std::uint64_t number = 0;
};

struct PluginTool {
  std::string name, plugin_id, plugin_dir, command;
  std::string description;  // the manifest's (untrusted: sanitized where shown)
};

class Server {
 public:
  Server(McpOptions options, std::vector<mcp::ToolDef> tools, std::vector<PluginTool> plugins)
      : options_(std::move(options)),
        plugin_tools_(std::move(plugins)),
        protocol_(std::string(AnvilVersion()), std::move(tools),
                  [this](const std::string& tool, const json& a) { return Check(tool, a); }),
        audit_(WorkspaceAuditSink(options_.workspace)),
        self_(SelfExe()) {}

  // SIGTERM, SIGINT and SIGHUP end the server as the end of stdin does (every call's process
  // tree stopped and reaped, then exit 128+N): `signals` is a signalfd for them, blocked in every
  // thread. Without one, only stdin's end stops the server.
  int Serve();
  void SetStopSignals(UniqueFd signals) { signals_ = std::move(signals); }

 private:
  std::string Check(const std::string& tool, const json& arguments) const {
    if (tool == "run_command") {
      mcp::RunCommandArgs parsed;
      return mcp::ParseRunCommandArgs(arguments, &parsed);
    }
    std::vector<std::string> args;
    return mcp::ParsePluginArgs(arguments, &args);
  }

  void Send(const json& message) {
    const std::string line = message.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    std::lock_guard<std::mutex> lock(out_mu_);
    // A client that is gone is not an error here: stdin's EOF ends the server.
    (void)fd_io::WriteAll(STDOUT_FILENO, line, fd_io::Wait::NoWait());
  }

  void Progress(Call& call, const std::string& message) {
    if (!call.progress_token || call.cancelled) return;
    call.progress += 1;
    Send(mcp::ProgressNotification(*call.progress_token, call.progress, message));
  }

  void Dispatch(mcp::Step step);
  void StartCall(mcp::ToolCall call);
  json RunCommandTool(Call& call, const json& arguments);
  json RunPluginTool(Call& call, const PluginTool& tool, const json& arguments);
  ChildOutcome RunChild(Call& call, const std::vector<std::string>& argv,
                        std::chrono::milliseconds timeout, bool report_fd);
  std::optional<ApprovalAnswer> Elicit(Call& call, const agent::Question& question);
  void ReapFinished();

  friend class McpAsker;

  McpOptions options_;
  std::vector<PluginTool> plugin_tools_;
  mcp::Protocol protocol_;
  agent::AuditSink audit_;
  std::string self_;
  std::mutex out_mu_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool shutting_down_ = false;
  std::map<std::string, std::shared_ptr<Call>> calls_;
  std::vector<std::pair<std::shared_ptr<Call>, std::thread>> threads_;
  std::map<std::string, std::optional<mcp::ClientReply>> pending_;  // our request id -> reply
  std::uint64_t next_request_ = 0;
  std::uint64_t next_call_ = 0;
  UniqueFd signals_;
  int stopped_by_ = 0;
};

class McpAsker final : public agent::Asker {
 public:
  McpAsker(Server& server, Call& call, bool can_ask)
      : server_(server), call_(call), can_ask_(can_ask) {}
  bool CanAsk() const override { return can_ask_; }
  std::optional<ApprovalAnswer> Ask(const agent::Question& question) override {
    if (!can_ask_) return std::nullopt;
    return server_.Elicit(call_, question);
  }

 private:
  Server& server_;
  Call& call_;
  bool can_ask_;
};

std::optional<ApprovalAnswer> Server::Elicit(Call& call, const agent::Question& question) {
  const bool always = !question.always_prefixes.empty();
  std::string key;
  json id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_ || call.cancelled) return std::nullopt;
    id = "anvil-elicit-" + std::to_string(++next_request_);
    key = IdKey(id);
    pending_[key] = std::nullopt;
  }
  Progress(call, "waiting for the user's answer");
  Send(mcp::ElicitRequest(id, question.Text(), always));
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return shutting_down_ || call.cancelled || pending_[key].has_value(); });
  std::optional<mcp::ClientReply> reply = pending_[key];
  pending_.erase(key);
  lock.unlock();
  if (!reply) return std::nullopt;
  return mcp::AnswerFromElicitation(*reply, always);
}

ChildOutcome Server::RunChild(Call& call, const std::vector<std::string>& argv,
                              std::chrono::milliseconds timeout, bool report_fd) {
  ChildOutcome outcome;
  int out_pipe[2], err_pipe[2], rep_pipe[2] = {-1, -1};
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return outcome;
  UniqueFd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return outcome;
  UniqueFd err_r(err_pipe[0]), err_w(err_pipe[1]);
  UniqueFd rep_r, rep_w;
  if (report_fd) {
    if (::pipe2(rep_pipe, O_CLOEXEC) != 0) return outcome;
    rep_r.Reset(rep_pipe[0]);
    rep_w.Reset(rep_pipe[1]);
  }
  // fork + exec rather than posix_spawn: the child must die with the thread that started it
  // (PR_SET_PDEATHSIG), so that a server killed or crashed never leaves a command running. The
  // worker thread that forks waits for the child, so the signal never fires early. Between fork
  // and exec only async-signal-safe calls, on what was prepared before the fork.
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const int out_fd = out_w.Get(), err_fd = err_w.Get(), rep_fd = report_fd ? rep_w.Get() : -1;
  const char* path = self_.c_str();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(125);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0 || ::dup2(null_fd, STDIN_FILENO) < 0 || ::dup2(out_fd, STDOUT_FILENO) < 0 ||
        ::dup2(err_fd, STDERR_FILENO) < 0 || (rep_fd >= 0 && ::dup2(rep_fd, 3) < 0)) {
      ::_exit(125);
    }
    ::execve(path, cargv.data(), environ);
    ::_exit(127);
  }
  const int rc = pid < 0 ? errno : 0;
  if (pid > 0) ::setpgid(pid, pid);  // both sides: no window where the group is not set
  out_w.Reset();
  err_w.Reset();
  rep_w.Reset();
  if (rc != 0) {
    outcome.err.Append("anvil mcp: cannot start " + self_ + ": " + std::strerror(rc) + "\n");
    return outcome;
  }
  outcome.spawned = true;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto last_beat = start;
  std::optional<Clock::time_point> killed_at;
  bool killed_hard = false;
  int wait_status = 0;
  bool reaped = false;
  std::optional<Clock::time_point> reaped_at;
  // A reaped pid may be reused: only the group (whose id is not reused while it has members) is
  // signalled then.
  auto stop = [&] {
    if (killed_at) return;
    killed_at = Clock::now();
    if (!reaped) ::kill(pid, SIGTERM);  // the sandbox's supervisor forwards it to the command
  };
  while (true) {
    struct pollfd fds[3];
    nfds_t n = 0;
    UniqueFd* which[3];
    for (UniqueFd* fd : {&out_r, &err_r, &rep_r}) {
      if (*fd) {
        fds[n] = {fd->Get(), POLLIN, 0};
        which[n++] = fd;
      }
    }
    if (!reaped) {
      pid_t w = ::waitpid(pid, &wait_status, WNOHANG);
      if (w == pid) {
        reaped = true;
        reaped_at = Clock::now();
      }
    }
    if (n == 0 && reaped) break;
    if (n == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } else if (::poll(fds, n, 100) > 0) {
      for (nfds_t k = 0; k < n; ++k) {
        if (fds[k].revents == 0) continue;
        char buf[16384];
        ssize_t got = ::read(fds[k].fd, buf, sizeof(buf));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
          which[k]->Reset();
          continue;
        }
        std::string_view bytes(buf, static_cast<std::size_t>(got));
        if (which[k] == &out_r) {
          outcome.out.Append(bytes);
        } else if (which[k] == &err_r) {
          outcome.err.Append(bytes);
        } else if (outcome.report.size() < (std::size_t{1} << 20)) {
          outcome.report.append(bytes);
        }
      }
    }
    const auto now = Clock::now();
    if (call.cancelled) {
      outcome.cancelled = true;
      stop();
    } else if (now - start >= timeout && !outcome.timed_out) {
      outcome.timed_out = true;
      stop();
    }
    // The child is gone but something it started still holds a pipe: a short grace, then the
    // group is killed like a cancelled call's.
    if (reaped && !killed_at && now - *reaped_at >= kTermGrace) killed_at = now - kTermGrace;
    if (killed_at && !killed_hard && now - *killed_at >= kTermGrace) {
      // The whole group; the sandboxed processes die with their supervisor (PDEATHSIG).
      ::kill(-pid, SIGKILL);
      if (!reaped) ::kill(pid, SIGKILL);
      killed_hard = true;
    }
    // After the hard kill, descendants that left the group may still hold a pipe: stop
    // reading after a grace period rather than hang.
    if (killed_hard && reaped && now - *killed_at >= 2 * kTermGrace) break;
    if (!killed_at && now - last_beat >= std::chrono::seconds(5)) {
      last_beat = now;
      Progress(call,
               "running (" +
                   std::to_string(
                       std::chrono::duration_cast<std::chrono::seconds>(now - start).count()) +
                   " s)");
    }
  }
  if (WIFEXITED(wait_status)) {
    outcome.status = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    outcome.status = 128 + WTERMSIG(wait_status);
  }
  if (outcome.timed_out) outcome.status = 124;
  return outcome;
}

agent::SandboxRun FromReport(const ChildOutcome& child) {
  agent::SandboxRun run;
  run.status = child.status;
  json report = json::parse(child.report, nullptr, false);
  if (!report.is_object()) {
    run.started = false;
    return run;
  }
  run.started = report.value("outcome", std::string()) != "setup_failed";
  if (report.contains("refusals") && report["refusals"].is_array()) {
    for (const auto& r : report["refusals"]) {
      if (!r.is_object()) continue;
      agent::RefusalFact fact;
      const std::string kind = r.value("kind", std::string());
      if (kind == "write") {
        fact.kind = agent::RefusalFact::Kind::kWrite;
        fact.subject = r.value("path", std::string());
        fact.detail = r.value("operation", std::string());
        fact.area = r.value("area", std::string());
        fact.root = r.value("root", std::string());
      } else {
        fact.kind = kind == "network" ? agent::RefusalFact::Kind::kNetwork
                                      : agent::RefusalFact::Kind::kProxy;
        fact.subject = r.value("target", std::string());
        fact.detail = r.value("reason", std::string());
      }
      run.refusals.push_back(std::move(fact));
    }
  }
  return run;
}

std::string WidenArgument(const json& widening) {
  const std::string kind = widening.value("kind", std::string());
  const std::string value = widening.value("value", std::string());
  return value.empty() ? kind : kind + "=" + value;
}

json ToolText(const std::string& text) { return json::array({{{"type", "text"}, {"text", text}}}); }

json ToolError(const std::string& message) {
  return {{"content", ToolText(message)}, {"isError", true}};
}

json Server::RunCommandTool(Call& call, const json& arguments) {
  mcp::RunCommandArgs args;
  if (std::string why = mcp::ParseRunCommandArgs(arguments, &args); !why.empty()) {
    return ToolError(why);  // checked before the call started; kept for safety
  }
  std::string workdir;
  if (!args.cwd.empty()) {
    const std::string given = args.cwd;
    workdir = Canonical(given[0] == '/' ? given : options_.workspace + "/" + given);
    if (workdir.empty() || !IsRealDirectory(workdir)) {
      return ToolError("cwd " + SanitizeForDisplay(given, 400) +
                       ": no such directory in the workspace " +
                       SanitizeForDisplay(options_.workspace, 400));
    }
    if (!PathIsWithin(workdir, options_.workspace)) {
      return ToolError("cwd " + SanitizeForDisplay(given, 400) + " is outside the workspace " +
                       SanitizeForDisplay(options_.workspace, 400) +
                       " (fix: a directory inside it, relative to it or absolute)");
    }
  }
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  auto parsed = ParseExecArgs(ExecArgs(options_, workdir, args), env);
  if (!parsed) {
    const std::string& code = parsed.error().code;
    const int status = code == "not_found" ? 127 : code == "not_executable" ? 126 : 2;
    json structured = {{"exit_code", status},   {"ran", false},
                       {"refused", false},      {"stdout", ""},
                       {"stderr", ""},          {"sandbox_refusals", json::array()},
                       {"escalation", nullptr}, {"error", parsed.error().ToString()}};
    return {{"content", ToolText("not run: " + parsed.error().ToString())},
            {"structuredContent", structured},
            {"isError", true}};
  }
  agent::ExecRequest& request = parsed->request;
  request.requester = "anvil mcp";
  request.session = "mcp-" + std::to_string(::getpid());
  request.id = call.number;
  const std::chrono::milliseconds timeout(args.timeout_ms.value_or(mcp::kDefaultTimeoutMs));
  ChildOutcome last;
  bool timed_out = false;
  auto runner = [&](const std::vector<std::string>& sandbox_args) {
    Progress(call, "running in the sandbox");
    // The sandbox keeps the deadline too (a second later, so the server's own stop normally
    // comes first and is reported as the timeout): a command outlives no server.
    const long long backstop_ms = static_cast<long long>(timeout.count()) + 1000;
    std::vector<std::string> argv = {
        self_,
        "sandbox",
        "--report-fd",
        "3",
        "--quiet",
        "--timeout",
        std::to_string(backstop_ms / 1000) + "." + std::to_string(backstop_ms % 1000 / 100)};
    argv.insert(argv.end(), sandbox_args.begin(), sandbox_args.end());
    last = RunChild(call, argv, timeout, true);
    timed_out = timed_out || last.timed_out;
    agent::SandboxRun run = FromReport(last);
    if (last.timed_out || last.cancelled) run.refusals.clear();  // killed: not the sandbox's
    return run;
  };
  McpAsker asker(*this, call, call.can_elicit);
  const agent::ExecResult result = agent::RunExec(request, asker, runner, IsRealDirectory, audit_);
  const json& report = result.report;
  const bool refused = report.value("refused", false);
  json structured = {{"exit_code", result.exit_status},
                     {"ran", report.value("ran", false)},
                     {"refused", refused},
                     {"timed_out", timed_out},
                     {"decision", report.contains("decision") ? report["decision"] : json()},
                     {"stdout", mcp::ValidUtf8(last.out.Text())},
                     {"stderr", mcp::ValidUtf8(last.err.Text())},
                     {"stdout_bytes", last.out.Total()},
                     {"stderr_bytes", last.err.Total()},
                     {"stdout_truncated", last.out.Truncated()},
                     {"stderr_truncated", last.err.Truncated()},
                     {"sandbox_refusals", report.value("refusals", json::array())},
                     {"escalation", report.contains("escalation") ? report["escalation"] : json()},
                     {"report", report}};
  std::string text;
  bool is_error = refused;
  if (report.contains("error")) {
    is_error = true;
    text += "not run: " + report["error"].get<std::string>() + "\n";
    structured["error"] = report["error"];
  }
  if (refused) {
    structured["refusal"] = report.value("refusal", std::string());
    const std::string refusal = report.value("refusal", std::string());
    // Some refusals already say so ("refused: no answer came").
    text += (refusal.rfind("refused", 0) == 0 ? "" : "refused: ") + refusal + "\n";
    if (report.contains("how_to_allow")) {
      structured["how_to_allow"] = report["how_to_allow"];
      text += "to allow it: " + report["how_to_allow"].get<std::string>() + "\n";
    }
  } else if (!report.contains("error")) {
    text += "exit " + std::to_string(result.exit_status);
    if (timed_out) text += " (timed out after " + std::to_string(timeout.count()) + " ms)";
    text += "\n";
    if (last.out.Total() > 0) {
      text += "--- stdout" + std::string(last.out.Truncated() ? " (truncated)" : "") + " ---\n" +
              mcp::ValidUtf8(last.out.Text()) + "\n";
    }
    if (last.err.Total() > 0) {
      text += "--- stderr" + std::string(last.err.Truncated() ? " (truncated)" : "") + " ---\n" +
              mcp::ValidUtf8(last.err.Text()) + "\n";
    }
  }
  const json& refusals = report.value("refusals", json::array());
  if (!refusals.empty() && result.exit_status != 0) {
    text += "the sandbox refused:";
    for (const auto& r : refusals) text += " " + r.value("subject", std::string());
    text += "\n";
  }
  const json& esc = report.contains("escalation") ? report["escalation"] : json();
  if (esc.is_object() && esc.contains("widening")) {
    const std::string widen = WidenArgument(esc["widening"]);
    structured["escalation"]["widen_argument"] = widen;
    const std::string state = esc.value("state", std::string());
    text += "the widening that would let it through: " + esc["widening"]["flags"].dump() + " (" +
            state + ")";
    if (state != "approved") {
      text += "; to ask the user for it: call run_command again with \"widen\": \"" + widen +
              "\" and a \"reason\"";
    }
    text += "\n";
  }
  return {{"content", ToolText(text)}, {"structuredContent", structured}, {"isError", is_error}};
}

json Server::RunPluginTool(Call& call, const PluginTool& tool, const json& arguments) {
  std::vector<std::string> args;
  if (std::string why = mcp::ParsePluginArgs(arguments, &args); !why.empty()) {
    return ToolError(why);
  }
  std::vector<std::string> argv = {self_,
                                   "run",
                                   "--workspace",
                                   options_.workspace,
                                   "--json",
                                   "--timeout",
                                   std::to_string(kPluginTimeoutSeconds),
                                   tool.plugin_dir,
                                   tool.command};
  argv.insert(argv.end(), args.begin(), args.end());
  Progress(call, "running " + tool.plugin_id + " " + tool.command);
  ChildOutcome child =
      RunChild(call, argv, std::chrono::seconds(kPluginTimeoutSeconds + 30), false);
  const std::string out = mcp::ValidUtf8(child.out.Text());
  const std::string err = mcp::ValidUtf8(child.err.Text());
  json parsed = json::parse(out, nullptr, false);
  json structured = {{"exit_code", child.status}, {"stderr", err}};
  std::string text;
  bool ok = false;
  if (parsed.is_object() && parsed.contains("ok")) {
    ok = parsed.value("ok", false) && child.status == 0;
    structured["ok"] = ok;
    if (parsed.contains("result")) {
      structured["result"] = parsed["result"];
      text = parsed["result"].is_string() ? parsed["result"].get<std::string>()
                                          : parsed["result"].dump(2);
    }
    if (parsed.contains("error")) {
      structured["error"] = parsed["error"];
      text = "error: " + (parsed["error"].is_string() ? parsed["error"].get<std::string>()
                                                      : parsed["error"].dump());
    }
  } else {
    structured["ok"] = false;
    text = "anvil run exited " + std::to_string(child.status) + (out.empty() ? "" : ": " + out);
  }
  if (!err.empty() && !ok) text += "\n--- stderr ---\n" + err;
  return {{"content", ToolText(text)}, {"structuredContent", structured}, {"isError", !ok}};
}

void Server::StartCall(mcp::ToolCall tool_call) {
  auto call = std::make_shared<Call>();
  call->id = tool_call.id;
  call->progress_token = tool_call.progress_token;
  call->can_elicit = protocol_.ClientCanElicit();
  std::string refusal;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string key = IdKey(call->id);
    if (calls_.contains(key)) {
      refusal = "request id " + key + " is already in use by a running call";
    } else if (calls_.size() >= kMaxRunningCalls) {
      refusal = "too many calls running (at most " + std::to_string(kMaxRunningCalls) +
                "; fix: wait for one to finish, or cancel one)";
    } else {
      call->number = ++next_call_;
      calls_[key] = call;
    }
  }
  if (!refusal.empty()) {
    Send(mcp::ErrorResponse(call->id, mcp::kInvalidRequest, refusal));
    return;
  }
  std::thread worker([this, call, tool_call = std::move(tool_call)] {
    json result;
    try {
      if (tool_call.tool == "run_command") {
        result = RunCommandTool(*call, tool_call.arguments);
      } else {
        const PluginTool* tool = nullptr;
        for (const auto& t : plugin_tools_) {
          if (t.name == tool_call.tool) tool = &t;
        }
        result = tool != nullptr ? RunPluginTool(*call, *tool, tool_call.arguments)
                                 : ToolError("unknown tool");
      }
    } catch (const std::exception& e) {
      result = ToolError(std::string("internal error: ") + e.what());
    }
    bool answer = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // A cancelled request gets no answer (the client has forgotten it).
      answer = !call->cancelled;
      calls_.erase(IdKey(call->id));
    }
    // Outside the lock: a client slow to read never stalls the loop that reads its messages.
    if (answer) Send(mcp::Response(call->id, std::move(result)));
    call->done = true;
  });
  std::lock_guard<std::mutex> lock(mu_);
  threads_.emplace_back(call, std::move(worker));
}

void Server::ReapFinished() {
  std::vector<std::thread> finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = threads_.begin(); it != threads_.end();) {
      if (it->first->done) {
        finished.push_back(std::move(it->second));
        it = threads_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& t : finished) t.join();
}

void Server::Dispatch(mcp::Step step) {
  for (const auto& m : step.send) Send(m);
  if (step.reply) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(IdKey(step.reply->id));
    if (it != pending_.end() && !it->second) {  // the first reply is the answer
      it->second = std::move(*step.reply);
      cv_.notify_all();
    }
  }
  if (step.cancel) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = calls_.find(IdKey(*step.cancel));
    if (it != calls_.end()) {
      it->second->cancelled = true;
      cv_.notify_all();
    }
  }
  if (step.call) StartCall(std::move(*step.call));
}

int Server::Serve() {
  std::string buffer;
  bool skipping = false;  // inside a line longer than the cap
  std::size_t skipped = 0;
  std::string head, tail;  // of the line being skipped: where its id may be found
  char chunk[65536];
  while (true) {
    ReapFinished();
    if (signals_) {
      pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {signals_.Get(), POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (fds[1].revents & POLLIN) {
        signalfd_siginfo info{};
        if (::read(signals_.Get(), &info, sizeof(info)) == sizeof(info)) {
          stopped_by_ = static_cast<int>(info.ssi_signo);
        }
        break;  // as at EOF: every call stopped and reaped first
      }
    }
    ssize_t n = ::read(STDIN_FILENO, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::string_view data(chunk, static_cast<std::size_t>(n));
    while (!data.empty()) {
      const std::size_t nl = data.find('\n');
      const std::string_view part = data.substr(0, nl);
      if (skipping) {
        skipped += part.size();
        tail.append(part);
        if (tail.size() > 4096) tail.erase(0, tail.size() - 256);
      } else {
        buffer.append(part);
        if (buffer.size() > mcp::kMaxLineBytes) {
          skipping = true;
          skipped = buffer.size();
          head = buffer.substr(0, 256);
          tail = buffer.substr(buffer.size() - 256);
          buffer.clear();
          buffer.shrink_to_fit();
        }
      }
      if (nl == std::string_view::npos) break;
      data.remove_prefix(nl + 1);
      if (skipping) {
        if (tail.size() > 256) tail.erase(0, tail.size() - 256);
        Dispatch(protocol_.LineTooLong(skipped, head, tail));
        skipping = false;
        skipped = 0;
      } else {
        Dispatch(protocol_.HandleLine(buffer));
        buffer.clear();
      }
    }
  }
  if (!buffer.empty() && !skipping) Dispatch(protocol_.HandleLine(buffer));
  // EOF: the client is gone. Stop every call (its processes are killed and reaped by its
  // worker), wait for them, exit.
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutting_down_ = true;
    for (auto& [key, call] : calls_) call->cancelled = true;
    cv_.notify_all();
  }
  std::vector<std::thread> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [call, t] : threads_) all.push_back(std::move(t));
    threads_.clear();
  }
  for (auto& t : all) t.join();
  return stopped_by_ != 0 ? 128 + stopped_by_ : 0;
}

// The plugins of the workspace's plugin set with an approved grant for exactly this manifest
// and copy, and their commands (listed by loading each one, as `anvil run` does).
std::vector<PluginTool> DiscoverPluginTools(const McpOptions& o) {
  std::vector<PluginTool> tools;
  session::CatalogOptions catalog_options{o.workspace, o.plugin_dirs, o.search_paths};
  if (o.default_path) {
    const std::string dir =
        session::DefaultPluginSearchPath(std::getenv("XDG_DATA_HOME"), std::getenv("HOME"));
    if (!dir.empty()) catalog_options.search_paths.push_back(dir);
  }
  session::Catalog catalog = session::DiscoverPlugins(catalog_options);
  auto store = GrantStore::Open();
  if (!store) {
    std::cerr << "anvil mcp: plugins not offered: " << store.error().ToString() << "\n";
    return tools;
  }
  for (const auto& entry : catalog.plugins) {
    if (!entry.enabled || !entry.manifest || entry.error) continue;
    const Manifest& manifest = *entry.manifest;
    const std::string id = SanitizeForDisplay(manifest.id, 100);
    auto skip = [&](const std::string& why) {
      std::cerr << "anvil mcp: plugin " << id << " not offered: " << SanitizeForDisplay(why, 600)
                << "\n";
    };
    // `anvil mcp` asks nobody about plugins: only an approved grant admits one.
    session::Admission admission = session::AdmitPlugin(
        {o.workspace, entry.dir, /*require_signed=*/false, /*entry_checked=*/false}, manifest,
        *store);
    if (admission.verdict == session::AdmissionVerdict::kNeedsConsent) {
      skip("no approved grant for this manifest (fix: anvil plugin approve " + entry.dir +
           " --workspace " + o.workspace + ", or anvil run once)");
      continue;
    }
    if (admission.verdict != session::AdmissionVerdict::kAdmitted) {
      skip(admission.error->ToString());
      continue;
    }
    std::vector<std::string> gateway_args;
    if (admission.grant->exec.empty()) gateway_args.emplace_back("--no-exec");
    session::PluginSessionConfig config{o.workspace,      entry.dir,    manifest,
                                        *admission.grant, gateway_args, {}};
    config.pinned_files = std::move(admission.pinned_files);
    if (auto ws_config = LoadWorkspaceConfig(o.workspace); ws_config) {
      config.settings_json =
          ws_config->SettingsFor(manifest.id).dump(-1, ' ', false, json::error_handler_t::replace);
    }
    auto session = session::PluginSession::Start(config);
    if (!session) {
      skip(session.error().ToString());
      continue;
    }
    auto commands = (*session)->Commands(kPluginListDeadline);
    (void)(*session)->Stop();
    if (!commands) {
      skip(commands.error().ToString());
      continue;
    }
    std::string prefix = manifest.id;
    for (char& c : prefix) {
      if (c == '.') c = '_';
    }
    for (const auto& command : *commands) {
      std::string name = mcp::ToolName("plugin__" + prefix + "__" + command);
      bool taken = name == "run_command";
      for (const auto& t : tools) taken = taken || t.name == name;
      if (taken) {
        skip("command " + command + ": its tool name " + name + " is taken");
        continue;
      }
      tools.push_back({name, manifest.id, entry.dir, command, manifest.description});
    }
  }
  return tools;
}

}  // namespace

int RunMcpCommand(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    }
  }
  auto options = ParseMcpArgs(args);
  if (!options) {
    std::cerr << "anvil mcp: " << SanitizeForDisplay(options.error().ToString(), 2000) << "\n";
    return kExitUsage;
  }
  // The sandbox flags and rules are checked once, before serving: a typo is a startup error.
  {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
    mcp::RunCommandArgs probe;
    probe.argv = {"true"};
    auto parsed = ParseExecArgs(ExecArgs(*options, "", probe), env);
    if (!parsed) {
      std::cerr << "anvil mcp: " << SanitizeForDisplay(parsed.error().ToString(), 2000) << "\n";
      return kExitUsage;
    }
    auto rules = LoadCommandRules(parsed->request.rules);
    if (!rules) {
      std::cerr << "anvil mcp: " << SanitizeForDisplay(rules.error().ToString(), 2000) << "\n";
      return kExitUsage;
    }
  }
  if (::isatty(STDIN_FILENO)) {
    std::cerr << "anvil mcp: serving the Model Context Protocol on stdin/stdout; an agent "
                 "starts this (docs/agents.md); Ctrl-D stops\n";
  }
  // A client that went away mid-write must not kill the server before it stops its calls.
  ::signal(SIGPIPE, SIG_IGN);

  std::vector<mcp::ToolDef> tools;
  tools.push_back(
      {"run_command", "Run a command in Anvil's sandbox",
       "Run a command in the workspace, in Anvil's sandbox, after the user's command rules "
       "(and the user, when a rule asks) allowed it. Returns the exit status, stdout and "
       "stderr (each capped: the first 16 KiB and the last 48 KiB are kept), what the sandbox "
       "refused, and the one widening that would let a refused command through (ask for it "
       "with widen + reason).",
       mcp::RunCommandInputSchema(), mcp::RunCommandOutputSchema()});
  std::vector<PluginTool> plugin_tools;
  if (options->plugins) plugin_tools = DiscoverPluginTools(*options);
  for (const auto& p : plugin_tools) {
    std::string description = "Run the command '" + SanitizeForDisplay(p.command, 100) +
                              "' of the plugin " + SanitizeForDisplay(p.plugin_id, 100) +
                              " (approved; runs in Anvil's sandbox exactly as `anvil run` would)";
    if (!p.description.empty()) {
      description += ". The plugin says: " + SanitizeForDisplay(p.description, 500);
    }
    tools.push_back({p.name, SanitizeForDisplay(p.plugin_id + " " + p.command, 200), description,
                     mcp::PluginInputSchema(), nullptr});
  }
  // A client ends its server with a signal as often as by closing stdin: blocked here, before
  // any thread exists (so in every thread; children unblock them), and read from a signalfd by the
  // main loop.
  sigset_t stop_set;
  sigemptyset(&stop_set);
  sigaddset(&stop_set, SIGTERM);
  sigaddset(&stop_set, SIGINT);
  sigaddset(&stop_set, SIGHUP);
  UniqueFd stop_fd;
  if (::pthread_sigmask(SIG_BLOCK, &stop_set, nullptr) == 0) {
    stop_fd.Reset(::signalfd(-1, &stop_set, SFD_CLOEXEC));
    if (!stop_fd) ::pthread_sigmask(SIG_UNBLOCK, &stop_set, nullptr);
  }
  Server server(std::move(*options), std::move(tools), std::move(plugin_tools));
  server.SetStopSignals(std::move(stop_fd));
  return server.Serve();
}

}  // namespace anvil::cli
