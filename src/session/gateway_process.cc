#include "session/gateway_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "common/forked_child.h"
#include "common/syscalls.h"
#include "fs/pending_writes.h"
#include "session/runtime_sweep.h"

namespace anvil::session {

namespace {

// A dead session's directory is swept once it has not changed for this long (a gateway locks
// its directory right after making it; the age also covers one that could not lock).
constexpr std::chrono::seconds kDeadSessionMinAge{60};
constexpr int kDeadSessionsLookedAtPerStop = 64;

const char* g_in_process_name = nullptr;
GatewayMainFn g_in_process_main = nullptr;

// Whether this process has one thread: field 20 of /proc/self/stat, counted from after the
// command name (which may hold spaces and parentheses).
bool SingleThreaded() {
  UniqueFd fd(::open("/proc/self/stat", O_RDONLY | O_CLOEXEC));
  if (!fd) return false;
  char buf[1024];
  const ssize_t n = ::read(fd.Get(), buf, sizeof(buf) - 1);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return false;
  // After ")": state is field 3, num_threads field 20.
  for (int field = 2; field < 20 && p != nullptr; ++field) p = std::strchr(p + 1, ' ');
  return p != nullptr && std::strtol(p + 1, nullptr, 10) == 1;
}

// The directory holding `socket` when it is <dir>/<session>/gateway.sock for this session's id
// (lowercase hex, as the gateway makes it); "" otherwise.
std::string RuntimeDirOf(const std::string& socket, const std::string& session) {
  const std::string tail = "/" + session + "/gateway.sock";
  if (session.empty() ||
      !std::all_of(session.begin(), session.end(),
                   [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }) ||
      socket.size() <= tail.size() || socket[0] != '/' || !socket.ends_with(tail)) {
    return "";
  }
  return socket.substr(0, socket.size() - std::string_view("/gateway.sock").size());
}

const char* BaseName(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return path.c_str() + (slash == std::string::npos ? 0 : slash + 1);
}

}  // namespace

void SetInProcessGateway(const char* program_name, GatewayMainFn main) {
  g_in_process_name = program_name;
  g_in_process_main = main;
}

Result<std::unique_ptr<GatewayProcess>> GatewayProcess::Start(const GatewayConfig& config) {
  auto g = Launch(config);
  if (!g) return g;
  ANVIL_RETURN_IF_ERROR((*g)->WaitReady());
  return g;
}

Result<std::unique_ptr<GatewayProcess>> GatewayProcess::Launch(const GatewayConfig& config) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return SysFail("internal", "socketpair");
  }
  UniqueFd ours(sv[0]), theirs(sv[1]);
  // The names of temporaries the gateway has created but not yet renamed: swept in Stop, after
  // the gateway has exited however it exited (fs/pending_writes.h).
  ANVIL_TRY(journal, PendingWrites::CreateJournal());
  // Above the numbers the child moves descriptors to, so that no dup2 there overwrites it.
  if (journal->Get() < 6) {
    UniqueFd high(fcntl(journal->Get(), F_DUPFD_CLOEXEC, 6));
    if (!high) return SysFail("internal", "fcntl pending-writes journal");
    *journal = std::move(high);
  }
  // The caller keeps its own; this copy, above them too, is closed once the child has it.
  UniqueFd write_usage;
  if (config.write_usage_fd >= 0) {
    write_usage.Reset(fcntl(config.write_usage_fd, F_DUPFD_CLOEXEC, 6));
    if (!write_usage) return SysFail("internal", "fcntl write usage table");
  }
  std::vector<std::string> args = {config.binary,
                                   "--workspace",
                                   config.workspace,
                                   "--control-fd",
                                   "3",
                                   "--pending-writes-fd",
                                   "4"};
  if (write_usage) args.insert(args.end(), {"--write-usage-fd", "5"});
  args.insert(args.end(), config.extra_args.begin(), config.extra_args.end());
  for (std::string& a : config.unsafe_net_test.ToGatewayArgs()) args.push_back(std::move(a));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // This program's own copy of the gateway, when it has one for this program and nothing but
  // this thread runs (SetInProcessGateway).
  const GatewayMainFn in_process =
      config.in_process && g_in_process_main != nullptr &&
              std::strcmp(BaseName(config.binary), g_in_process_name) == 0 && SingleThreaded()
          ? g_in_process_main
          : nullptr;
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return SysFail("internal", "fork gateway");
  if (pid == 0) {
    // Its own process group: a Ctrl-C at the terminal reaches the trusted side only, which
    // stops the session in order (the host, then the gateway's own shutdown: its socket
    // removed, its temporaries swept) instead of the gateway dying mid-write beside it.
    setpgid(0, 0);
    // A background group on the terminal: with `stty tostop` a line on stderr would stop it
    // (SIGTTOU) and hang the session. Ignored, the write goes through (kept across the exec).
    ::signal(SIGTTOU, SIG_IGN);
    // The gateway dies with the session: EOF on the control channel, and this as a backup.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    if (dup2(theirs.Get(), 3) < 0) _exit(1);
    if (dup2(journal->Get(), 4) < 0) _exit(1);
    if (write_usage && dup2(write_usage.Get(), 5) < 0) _exit(1);
    // stdin/stdout may be an editor's JSON-RPC stream (anvil serve): never the gateway's.
    int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(null_fd, 1) < 0) _exit(1);
    // Only stdin/out/err, the control channel, the journal and the write usage table cross
    // into the gateway. Without an exec nothing else closes them (O_CLOEXEC does only at one):
    // no close, no fork.
    const bool closed = syscall(SYS_close_range, write_usage ? 6 : 5, ~0U, 0) == 0;
    if (in_process == nullptr || !closed) {
      execv(argv[0], argv.data());
      _exit(127);
    }
    // What the exec would have done besides: caught signals back to their defaults (ignored
    // ones and the mask stay, as across an exec), and the program's name in ps and top.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) {
      struct sigaction now {};
      if (::sigaction(sig, nullptr, &now) != 0) continue;
      if (now.sa_handler != SIG_DFL && now.sa_handler != SIG_IGN) ::sigaction(sig, &dfl, nullptr);
    }
    prctl(PR_SET_NAME, BaseName(config.binary));
    RunForkedChild([&] { return in_process(static_cast<int>(argv.size()) - 1, argv.data()); });
  }
  setpgid(pid, pid);  // both sides, so no window where the group is not set
  theirs.Reset();
  std::unique_ptr<GatewayProcess> g(new GatewayProcess());
  g->pid_ = pid;
  g->journal_ = std::move(*journal);
  g->sweep_workspace_ = config.workspace;
  g->requested_workspace_ = config.workspace;
  g->pidfd_.Reset(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  g->control_ = std::move(ours);
  return g;
}

Status GatewayProcess::WaitReady() {
  auto ready = ReadControl(10000);
  if (!ready) {
    Stop(0);
    return Fail("internal", "gateway did not start: " + ready.error().message);
  }
  if (!ready->is_object() || ready->value("event", "") != "ready") {
    Stop(0);
    return Fail("internal",
                "gateway did not report ready: " +
                    ready->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  socket_path_ = ready->value("socket", "");
  audit_log_ = ready->value("audit_log", "");
  workspace_ = ready->value("workspace", "");
  if (!workspace_.empty()) sweep_workspace_ = workspace_;  // canonical, as it wrote
  session_id_ = ready->value("session", "");
  return Ok();
}

GatewayProcess::~GatewayProcess() {
  if (pid_ > 0) Stop(500);
}

Result<nlohmann::json> GatewayProcess::ReadControl(int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char buffer[65536];
  while (true) {
    ANVIL_TRY(frame, reader_.Next());
    if (*frame) {
      auto json = nlohmann::json::parse((*frame)->body, nullptr, false);
      if (json.is_discarded()) return Fail("internal", "bad control reply");
      return json;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) return Fail("internal", "gateway control timeout");
    pollfd p{control_.Get(), POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    ssize_t n = ::recv(control_.Get(), buffer, sizeof(buffer), 0);
    if (n == 0) return Fail("internal", "gateway exited");
    if (n < 0) {
      if (errno == EINTR) continue;
      return SysFail("internal", "control recv");
    }
    reader_.Append(buffer, static_cast<size_t>(n));
  }
}

Result<nlohmann::json> GatewayProcess::Control(nlohmann::json message) {
  uint64_t seq = seq_++;
  message["seq"] = seq;
  // Every string here is validated text (plugin ids, globs, the workspace path); replace rather
  // than throw should one ever not be.
  std::string frame =
      ipc::EncodeControl(message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (::send(control_.Get(), frame.data(), frame.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(frame.size())) {
    return SysFail("internal", "control send");
  }
  while (true) {
    ANVIL_TRY(reply, ReadControl(10000));
    if (reply->value("seq", uint64_t{0}) == seq) return reply;
  }
}

namespace {
Status FromReply(const Result<nlohmann::json>& reply) {
  if (!reply) return tl::unexpected(reply.error());
  if (reply->value("ok", false)) return Ok();
  std::string text = reply->value("error", "internal: control request failed");
  auto colon = text.find(": ");
  if (colon == std::string::npos) return Fail("internal", text);
  return Fail(ErrorCode::FromWire(text.substr(0, colon), Code::kInternal), text.substr(colon + 2));
}
}  // namespace

Status GatewayProcess::Register(const ipc::CapabilityToken& token, const std::string& plugin,
                                pid_t pid, uid_t uid, const Grant& grant,
                                std::optional<uint32_t> write_usage_slot) {
  nlohmann::json message = {
      {"op", "register"}, {"token", token.Hex()},    {"plugin", plugin},           {"pid", pid},
      {"uid", uid},       {"workspace", workspace_}, {"grant", GrantToJson(grant)}};
  if (write_usage_slot) message["write_usage_slot"] = *write_usage_slot;
  return FromReply(Control(std::move(message)));
}

Status GatewayProcess::Revoke(const ipc::CapabilityToken& token, const std::string& reason) {
  return FromReply(Control({{"op", "revoke"}, {"token", token.Hex()}, {"reason", reason}}));
}

void GatewayProcess::RevokeNoWait(const ipc::CapabilityToken& token, const std::string& reason) {
  nlohmann::json message{{"op", "revoke"}, {"token", token.Hex()}, {"reason", reason}};
  message["seq"] = seq_++;
  std::string frame =
      ipc::EncodeControl(message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  ssize_t ignored = ::send(control_.Get(), frame.data(), frame.size(), MSG_NOSIGNAL);
  (void)ignored;
}

void GatewayProcess::BeginShutdown() {
  if (!control_) return;
  std::string frame = ipc::EncodeControl(R"({"op":"shutdown"})");
  ssize_t ignored = ::send(control_.Get(), frame.data(), frame.size(), MSG_NOSIGNAL);
  (void)ignored;
  control_.Reset();  // EOF also means shutdown
}

Status GatewayProcess::CancelPlugin(const std::string& plugin, const std::string& reason) {
  return FromReply(Control({{"op", "cancel"}, {"plugin", plugin}, {"reason", reason}}));
}

Result<UniqueFd> GatewayProcess::Connect() const {
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return SysFail("internal", "socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path_.size() >= sizeof(addr.sun_path)) return Fail("internal", "socket path too long");
  std::strcpy(addr.sun_path, socket_path_.c_str());
  if (connect(fd.Get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return SysFail("internal", "connect " + socket_path_);
  }
  return fd;
}

Result<int> GatewayProcess::Stop(int grace_ms) {
  if (pid_ <= 0) return Fail("internal", "gateway not running");
  if (grace_ms > 0 && control_) {
    std::string frame = ipc::EncodeControl(R"({"op":"shutdown"})");
    ssize_t ignored = ::send(control_.Get(), frame.data(), frame.size(), MSG_NOSIGNAL);
    (void)ignored;
  }
  control_.Reset();  // EOF also means shutdown
  pollfd p{pidfd_.Get(), POLLIN, 0};
  if (!pidfd_ || poll(&p, 1, grace_ms) <= 0) kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  pidfd_.Reset();
  // Nothing writes any more: remove what a write cut short left under a temporary name.
  if (journal_) (void)SweepPendingWrites(journal_.Get(), sweep_workspace_);
  // Its runtime directory, which the gateway cannot remove itself once locked down (Landlock
  // grants it nothing on the directory above): only an empty one, only where the gateway's own
  // layout puts it (.../<session>/gateway.sock), so a gateway that said otherwise removes nothing.
  if (const std::string dir = RuntimeDirOf(socket_path_, session_id_); !dir.empty()) {
    ::rmdir(dir.c_str());
    // And those of sessions whose trusted side was killed before it could (a few per stop: the
    // listing is bounded, the directory may hold thousands left by an older Anvil).
    (void)SweepDeadRuntimeDirs(dir.substr(0, dir.rfind('/')), session_id_, kDeadSessionMinAge,
                               kDeadSessionsLookedAtPerStop);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace anvil::session
