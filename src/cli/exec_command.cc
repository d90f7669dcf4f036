#include "cli/exec_command.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include "agent/ask_protocol.h"
#include "cli/exec_spec.h"
#include "cli/sandbox_command.h"
#include "cli/sandbox_spec.h"
#include "common/capped_log.h"
#include "common/fd_io.h"
#include "common/unique_fd.h"
#include "fs/file_facts.h"
#include "fs/file_io.h"
#include "linux/real_host.h"
#include "policy/consent.h"
#include "policy/host_autorun.h"
#include "session/plugin_session.h"

extern char** environ;

namespace anvil::cli {
namespace {

constexpr int kExitUsage = 2;

std::string Canonical(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : std::string();
}

// Asks on the controlling terminal, never stdin: the command's input (or an agent writing to
// it) must not answer for the person.
class TerminalAsker final : public agent::Asker {
 public:
  TerminalAsker() {
    fd_.Reset(::open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY));
    if (fd_ && !::isatty(fd_.Get())) fd_.Reset();
  }
  bool CanAsk() const override { return static_cast<bool>(fd_); }
  std::optional<ApprovalAnswer> Ask(const agent::Question& question) override {
    if (!fd_) return std::nullopt;
    const bool always = !question.always_prefixes.empty();
    std::string text = "\n" + question.Text() +
                       (always ? "Run it? [o]nce / [a]lways (allow rule) / [N]ever: "
                               : "Run it? [o]nce / [N]ever: ");
    // Keys typed before the question was shown do not answer it.
    ::tcflush(fd_.Get(), TCIFLUSH);
    Write(text);
    std::string line;
    char c = 0;
    while (line.size() < 64) {
      ssize_t n = ::read(fd_.Get(), &c, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return std::nullopt;
      if (c == '\n' || c == '\r') break;
      line.push_back(c);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    while (!line.empty() && line.front() == ' ') line.erase(0, 1);
    if (line == "o" || line == "O" || line == "once" || line == "y" || line == "yes") {
      return ApprovalAnswer::kOnce;
    }
    if (always && (line == "a" || line == "A" || line == "always")) return ApprovalAnswer::kAlways;
    return ApprovalAnswer::kNever;
  }

 private:
  void Write(const std::string& text) {
    (void)fd_io::WriteAll(fd_.Get(), text, fd_io::Wait::NoWait());
  }
  UniqueFd fd_;
};

// Asks over a descriptor a front end handed over (agent/ask_protocol.h): one question line, one
// answer line back, in lockstep. Anything but a well-formed answer to this question is a
// refusal; after a broken stream nothing more is asked.
class DescriptorAsker final : public agent::Asker {
 public:
  explicit DescriptorAsker(int fd) : fd_(fd) {}
  bool CanAsk() const override { return !broken_; }
  std::optional<ApprovalAnswer> Ask(const agent::Question& question) override {
    if (broken_) return std::nullopt;
    const std::uint64_t id = ++next_id_;
    if (!Write(agent::QuestionLine(id, question) + "\n")) return Broken();
    std::string line;
    char c = 0;
    while (true) {
      ssize_t n = ::read(fd_, &c, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Broken();
      if (c == '\n') break;
      if (line.size() >= agent::kMaxAnswerLineBytes) return Broken();
      line.push_back(c);
    }
    return agent::ParseAnswerLine(line, id, agent::AnswerChoices(question));
  }
  bool Write(const std::string& text) {
    // A socket: MSG_NOSIGNAL, so a front end that went away is a refusal, not a SIGPIPE.
    auto sent = fd_io::SendAll(fd_, text, 0, fd_io::Wait::NoWait());
    if (sent.error == ENOTSOCK) {
      sent = fd_io::WriteAll(fd_, std::string_view(text).substr(sent.done), fd_io::Wait::NoWait());
    }
    return sent.ok();
  }

 private:
  std::optional<ApprovalAnswer> Broken() {
    broken_ = true;
    return std::nullopt;
  }
  int fd_;
  std::uint64_t next_id_ = 0;
  bool broken_ = false;
};

std::string Dump(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

const std::set<std::string>& SandboxValueFlags() {
  static const std::set<std::string> flags = [] {
    std::set<std::string> out = {"--unsafe-test-allow-address", "--unsafe-test-resolver",
                                 "--unsafe-test-ca", "--unsafe-test-fail-layer"};
    for (const Flag& f : SandboxCommandSpec(SandboxFrontEnd::kAnvilSandbox).flags) {
      if (f.kind != ValueKind::kNone) out.insert(f.name);
    }
    return out;
  }();
  return flags;
}

bool IsRealDirectory(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

namespace {

// What HoldsRepositories looks through at most before it says yes without knowing.
constexpr std::size_t kMaxRepositoryScanEntries = 10000;

// The names of the directory `dir_fd` (not "." or ".."), each taken from `budget`; an error
// when it cannot be listed (with its errno) or the budget runs out on it ("limit").
Result<std::vector<std::string>> DirectoryNames(int dir_fd, std::size_t& budget) {
  std::vector<std::string> names;
  const Status listed = ForEachName(dir_fd, "list", [&](const std::string& name) -> Status {
    if (budget == 0) return Fail("limit", "out of scan budget");
    --budget;
    names.push_back(name);
    return Ok();
  });
  if (!listed) return tl::unexpected(listed.error());
  return names;
}

// `name` beneath `dir_fd` as an O_PATH directory descriptor (one the user may search but not
// list still has its markers looked at), never through a symlink; invalid when it is not one.
UniqueFd OpenRealDirectoryAt(int dir_fd, const std::string& name) {
  return UniqueFd(::openat(dir_fd, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

bool IsRepositoryRootAt(int dir_fd) {
  struct stat st {};
  for (const char* marker : {".git", ".hg", ".jj", ".svn"}) {
    if (::fstatat(dir_fd, marker, &st, AT_SYMLINK_NOFOLLOW) == 0) return true;
  }
  return false;
}

}  // namespace

bool HoldsRepositories(const std::string& dir) {
  std::size_t budget = kMaxRepositoryScanEntries;
  UniqueFd top(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!top) return true;
  auto children = DirectoryNames(top.Get(), budget);
  if (!children) return true;
  for (const auto& child : *children) {
    if (child.starts_with('.')) continue;  // .git of dir itself, tools' state
    UniqueFd sub = OpenRealDirectoryAt(top.Get(), child);
    if (!sub) continue;  // not a directory, a symlink, or one the user cannot open
    if (IsRepositoryRootAt(sub.Get())) return true;
    auto grandchildren = DirectoryNames(sub.Get(), budget);
    if (!grandchildren) {
      // One the user cannot read: nothing of it is the command's either. Anything else (the
      // budget spent, an I/O error) leaves it unknown.
      if (grandchildren.error().sys_errno == EACCES) continue;
      return true;
    }
    for (const auto& g : *grandchildren) {
      if (g.starts_with('.')) continue;
      UniqueFd inner = OpenRealDirectoryAt(sub.Get(), g);
      if (inner && IsRepositoryRootAt(inner.Get())) return true;
    }
  }
  return false;
}

agent::SandboxRun RunSandboxInProcess(const std::vector<std::string>& sandbox_args) {
  SandboxRunFacts facts;
  agent::SandboxRun run;
  run.status = RunSandboxCommand(sandbox_args, SandboxFrontEnd::kAnvilSandbox, &facts);
  run.started = facts.started;
  run.git_check_error = facts.git_check_error;
  for (const Refusal& r : facts.refusals) {
    agent::RefusalFact fact;
    fact.kind = r.kind == Refusal::Kind::kWrite     ? agent::RefusalFact::Kind::kWrite
                : r.kind == Refusal::Kind::kNetwork ? agent::RefusalFact::Kind::kNetwork
                                                    : agent::RefusalFact::Kind::kProxy;
    fact.subject = r.subject;
    fact.detail = r.detail;
    if (r.kind == Refusal::Kind::kWrite) {
      fact.area = std::string(ToString(r.area));
      fact.root = r.root;
    }
    run.refusals.push_back(std::move(fact));
  }
  return run;
}

agent::AuditSink WorkspaceAuditSink(const std::string& workspace) {
  auto path = session::AuditLogPath(workspace);
  if (!path) return [](const std::string&) {};
  auto fd = std::make_shared<UniqueFd>(
      ::open(path->c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  return [fd](const std::string& line) {
    if (!*fd) return;
    // Under the file's lock and cap, as the gateway's and the proxy's lines (capped_log.h).
    (void)AppendCappedLines(fd->Get(), line + "\n");
  };
}

Result<ExecOptions> ParseExecArgs(const std::vector<std::string>& args,
                                  const std::vector<std::string>& environ_entries) {
  ExecOptions out;
  agent::ExecRequest& request = out.request;
  ExecFlagValues flags;
  ANVIL_TRY(parsed, ParseFlags(ExecFlags(flags), args));
  if (parsed->help) return Fail("invalid", "--help goes alone");
  if (flags.mode) request.mode = *flags.mode;
  if (flags.requester) request.requester = *flags.requester;
  request.request_reason = flags.reason;
  out.json = flags.json;
  out.ask_fd = flags.ask_fd;
  const std::vector<std::string>& user_files = flags.rules_files;
  const std::optional<std::string>& widen = flags.widen;
  const std::optional<std::string>& rules_workspace = flags.rules_workspace;
  request.sandbox_flags = std::move(parsed->forwarded);
  request.argv = std::move(parsed->operands);
  if (request.argv.empty()) {
    return Fail("invalid", "no command given (fix: anvil exec [options] -- COMMAND...)");
  }
  for (const auto& f : request.sandbox_flags) {
    if (f == "--help" || f == "-h") return Fail("invalid", "--help goes alone");
  }
  // The sandbox's own parser: its errors before anyone is asked, and the policy it will run.
  std::vector<std::string> probe = request.sandbox_flags;
  probe.push_back("--");
  probe.insert(probe.end(), request.argv.begin(), request.argv.end());
  ANVIL_TRY(inv, ParseSandboxArgs(probe, environ_entries, SandboxFrontEnd::kAnvilSandbox));
  const SandboxPolicy& policy = inv->spec.policy;
  agent::EscalationContext& context = request.context;
  context.policy = policy.kind;
  context.network = policy.network;
  context.workspace = policy.workspace;
  request.run_dir = inv->spec.cwd;
  context.writable_git = policy.writable_git;
  context.allowed_hosts = inv->allow_hosts;
  context.writable_roots = policy.extra_writable_roots;
  context.writable_roots.push_back(policy.workspace);
  // The home a widening must never be, also when HOME is unset (the user database's then,
  // as Anvil's own state is found there).
  const std::string home = AnvilUserHome();
  context.home = home.empty() ? "" : Canonical(home);
  context.never_writable = agent::ProtectedAnvilPaths(std::getenv("XDG_CONFIG_HOME"),
                                                      std::getenv("XDG_STATE_HOME"), home.c_str());
  context.host_autorun = HostAutorunPaths(AutorunEnvFromProcess());
  // The user database's home, judged like $HOME, and the XDG base directories, as set and as
  // their links lead.
  if (const std::string passwd = PasswdHome(); !passwd.empty()) {
    if (const std::string c = Canonical(passwd); !c.empty() && c != context.home) {
      context.more_homes.push_back(c);
    }
  }
  for (const auto& base :
       agent::UserBaseDirs(std::getenv("XDG_CONFIG_HOME"), std::getenv("XDG_DATA_HOME"),
                           std::getenv("XDG_STATE_HOME"), std::getenv("XDG_CACHE_HOME"))) {
    context.user_base_dirs.push_back(base);
    if (const std::string c = Canonical(base); !c.empty() && c != base) {
      context.user_base_dirs.push_back(c);
    }
  }
  context.holds_repositories = HoldsRepositories;

  // The PATHs the command's bare names are looked up on (policy/program_lookup.h): the
  // caller's, where `anvil sandbox` finds the command itself, outside and before it starts; and
  // the sandbox environment's, where a shell or wrapper inside finds what it runs, and where the
  // sandbox's own home and /tmp are writable too (the view binds its toolchains read-only).
  const bool confined = policy.ConfinesFilesystem();
  LookupPath outside{std::string(kDefaultProgramPath),
                     confined ? context.writable_roots : std::vector<std::string>{"/"},
                     {}};
  // The first PATH of each, as getenv reads it (the sandbox's has at most one:
  // SandboxEnvironment); without one inside, a shell's own default.
  auto first_path = [](const std::vector<std::string>& env, std::string& value) {
    for (const auto& e : env) {
      if (e.rfind("PATH=", 0) == 0) {
        value = e.substr(5);
        return;
      }
    }
  };
  first_path(environ_entries, outside.value);
  LookupPath inside = outside;
  inside.value = kShellDefaultProgramPath;
  first_path(inv->spec.env, inside.value);
  if (confined) {
    for (const char* tmp : {"/tmp", "/var/tmp", "/dev/shm"}) inside.writable_roots.push_back(tmp);
    const HomeView& home = policy.home;
    if (home.kind != HomeKind::kNone && !home.target.empty()) {
      inside.writable_roots.push_back(home.target);
      inside.read_only = home.read_roots;
      for (const MappedBind& bind : home.binds) {
        if (!bind.writable) inside.read_only.push_back(bind.target);
      }
    }
  }
  request.search.paths = {std::move(outside), std::move(inside)};
  request.search.facts.holds = IsExecutableFileIn;
  request.search.facts.canonical = CanonicalAsFarAsExists;

  if (widen) {
    ANVIL_TRY(w, agent::ParseWidening(*widen));
    if (w->kind == agent::WideningKind::kWritableRoot) {
      const std::string c = Canonical(w->value);
      if (c.empty()) {
        return Fail("invalid", "--widen writable-root=" + SanitizeForDisplay(w->value, 200) +
                                   ": no such directory");
      }
      w->value = c;
    }
    if (request.request_reason.empty()) {
      return Fail("invalid", "--widen needs --reason TEXT (shown to the person asked)");
    }
    request.requested = *w;
  } else if (!request.request_reason.empty()) {
    return Fail("invalid", "--reason goes with --widen");
  }

  request.rules.user_dir = UserRulesDir();
  request.rules.user_files = user_files;
  request.rules.workspace_dir = policy.workspace;
  if (rules_workspace) {
    // Only the workspace or a directory above it: the rules of the tree the command runs in.
    const std::string dir = Canonical(*rules_workspace);
    const bool above = !dir.empty() && (dir == policy.workspace || dir == "/" ||
                                        policy.workspace.rfind(dir + "/", 0) == 0);
    if (!above) {
      return Fail("invalid", "--rules-workspace " + SanitizeForDisplay(*rules_workspace, 200) +
                                 ": not the workspace or a directory above it (fix: the "
                                 "directory whose .anvil/rules.toml applies)");
    }
    // The tree's rules join the workspace's own; they never replace them.
    request.rules.workspace_dir = dir;
    request.rules.more_workspace_dirs.push_back(policy.workspace);
  }
  request.user_rules_dir = UserRulesDir();
  request.session = "exec-" + std::to_string(::getpid());
  return out;
}

int RunExecCommand(const std::vector<std::string>& args) {
  // --help or -h anywhere before `--` asks for the help, as it always did (also after a command
  // given without `--`).
  for (const auto& a : args) {
    if (a == "--") break;
    if (a == "--help" || a == "-h") {
      std::cout << RenderHelp(ExecCommandSpec());
      return 0;
    }
  }
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  auto options = ParseExecArgs(args, env);
  if (!options) {
    std::cerr << "anvil exec: " << SanitizeForDisplay(options.error().ToString(), 2000) << "\n";
    const std::string& code = options.error().code;
    return code == "not_found" ? 127 : code == "not_executable" ? 126 : kExitUsage;
  }
  std::unique_ptr<agent::Asker> asker;
  DescriptorAsker* descriptor = nullptr;
  if (options->ask_fd >= 0) {
    const int fd = options->ask_fd;
    const int fd_flags = ::fcntl(fd, F_GETFD);
    // Close-on-exec before anything runs: the sandboxed command must never answer for you.
    if (fd_flags < 0 || ::fcntl(fd, F_SETFD, fd_flags | FD_CLOEXEC) != 0) {
      std::cerr << "anvil exec: --ask-fd " << fd << " is not an open descriptor\n";
      return kExitUsage;
    }
    auto owned = std::make_unique<DescriptorAsker>(fd);
    descriptor = owned.get();
    asker = std::move(owned);
  } else {
    asker = std::make_unique<TerminalAsker>();
  }
  const agent::ExecResult result =
      agent::RunExec(options->request, *asker, RunSandboxInProcess, IsRealDirectory,
                     WorkspaceAuditSink(options->request.context.workspace));
  const nlohmann::json& report = result.report;
  if (report.contains("error")) {
    std::cerr << "anvil exec: " << SanitizeForDisplay(report["error"].get<std::string>(), 2000)
              << "\n";
  } else if (report.value("refused", false)) {
    const std::string refusal = report.value("refusal", std::string());
    // Some refusals already say so ("refused: the user answered never").
    std::cerr << (refusal.rfind("refused", 0) == 0 ? "anvil exec: " : "anvil exec: refused: ")
              << SanitizeForDisplay(refusal, 1000) << "\n";
    if (report.contains("how_to_allow")) {
      std::cerr << "anvil exec: to allow it: "
                << SanitizeForDisplay(report["how_to_allow"].get<std::string>(), 1000) << "\n";
    }
  } else if (const auto& esc = report["escalation"]; esc.is_object() && esc.contains("widening")) {
    const std::string state = esc.value("state", std::string());
    if (state != "approved") {
      std::cerr << "anvil exec: the sandbox refused it; the widening that would let it through: "
                << SanitizeForDisplay(esc["widening"]["flags"].dump(), 400) << " (" << state
                << (esc.contains("why") && esc["why"].is_string()
                        ? ": " + SanitizeForDisplay(esc["why"].get<std::string>(), 400)
                        : std::string())
                << ")\n";
    }
  }
  if (report.contains("rules_error")) {
    std::cerr << "anvil exec: warning: the allow rule was not written: "
              << SanitizeForDisplay(report["rules_error"].get<std::string>(), 1000) << "\n";
  }
  if (options->json) std::cerr << Dump(report) << "\n";
  if (descriptor != nullptr) (void)descriptor->Write(agent::ReportLine(report) + "\n");
  return result.exit_status;
}

}  // namespace anvil::cli
