#include "session/host_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/fd_io.h"
#include "common/interrupt.h"
#include "common/syscalls.h"
#include "ipc/cpu_budget.h"
#include "ipc/fd_passing.h"

namespace anvil::session {

using Clock = std::chrono::steady_clock;

namespace {

Status SendAll(int fd, const std::string& bytes) {
  if (!fd_io::SendAll(fd, bytes, 0, fd_io::Wait::NoWait())) return SysFail("io", "host channel");
  return Ok();
}
// What the host's unreadable frame was: over the size cap ("limit", with the cap; a host
// checks its own messages against it, so only a compromised one gets here), or malformed.
Error FrameError(const Error& reader_error) {
  if (reader_error.code == "limit") {
    return Error{"limit",
                 "the plugin host sent a message over the size cap (" + reader_error.message + ")",
                 0};
  }
  return Error{"invalid", "the plugin host sent a malformed frame (" + reader_error.message + ")",
               0};
}
}  // namespace

Result<std::unique_ptr<HostProcess>> HostProcess::Start(const HostConfig& config,
                                                        GatewayProcess& gateway,
                                                        const Grant& grant) {
  auto host = Spawn(config, gateway);
  if (!host) return host;
  ANVIL_RETURN_IF_ERROR((*host)->Attach(grant));
  return host;
}

Result<std::unique_ptr<HostProcess>> HostProcess::Spawn(const HostConfig& config,
                                                        GatewayProcess& gateway) {
  // Before its ready event, the workspace it was started for.
  auto host = Spawn(
      config, gateway.workspace().empty() ? gateway.workspace_requested() : gateway.workspace());
  if (host) (*host)->SetGateway(gateway);
  return host;
}

Result<std::unique_ptr<HostProcess>> HostProcess::Spawn(const HostConfig& config,
                                                        const std::string& workspace) {
  if (config.settings_json.size() > kMaxSettingsJsonBytes) {
    return Fail("limit", "the settings of plugin " + config.plugin_id + " are over 1 MiB as JSON");
  }
  // One budget for the host and for the CPU-time stop derived from it: never a second one in
  // the extra flags.
  if (std::find(config.extra_args.begin(), config.extra_args.end(), "--instructions") !=
      config.extra_args.end()) {
    return Fail("internal",
                "the instruction budget goes in HostConfig::instructions, not in extra_args");
  }
  ANVIL_TRY(token, ipc::CapabilityToken::Generate());
  std::unique_ptr<HostProcess> host(new HostProcess(std::move(*token)));
  host->plugin_id_ = config.plugin_id;
  host->write_usage_slot_ = config.write_usage_slot;
  int session_pair[2], token_pipe[2], err_pipe[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, session_pair) != 0 ||
      // A socket, not a pipe, for the handoff: send(MSG_NOSIGNAL) turns a host that died
      // before reading into EPIPE instead of a SIGPIPE that would kill `anvil run`; and the
      // connection to the gateway travels on it (SCM_RIGHTS).
      socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, token_pipe) != 0 ||
      pipe2(err_pipe, O_CLOEXEC) != 0) {
    return SysFail("internal", "host channels");
  }
  UniqueFd session_ours(session_pair[0]), session_theirs(session_pair[1]);
  UniqueFd token_read(token_pipe[0]), token_write(token_pipe[1]);
  UniqueFd err_read(err_pipe[0]), err_write(err_pipe[1]);

  // No --gateway-fd: the connection comes with the handoff (Attach).
  std::vector<std::string> args = {config.binary, "--plugin-dir", config.plugin_dir,
                                   "--runtime",   config.runtime, "--entry",
                                   config.entry,  "--plugin-id",  config.plugin_id,
                                   "--workspace", workspace,      "--session-fd",
                                   "4",           "--token-fd",   "5"};
  if (config.instructions) {
    args.push_back("--instructions");
    args.push_back(std::to_string(*config.instructions));
  }
  args.insert(args.end(), config.extra_args.begin(), config.extra_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  char* envp[] = {const_cast<char*>("LANG=C.UTF-8"), nullptr};  // nothing of ours leaks in

  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return SysFail("internal", "fork host");
  if (pid == 0) {
    setpgid(0, 0);  // its own process group: the deadline kills the whole group
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(125);
    int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (dup2(null_fd, 0) < 0 || dup2(err_write.Get(), 1) < 0 || dup2(err_write.Get(), 2) < 0 ||
        dup2(session_theirs.Get(), 4) < 0 || dup2(token_read.Get(), 5) < 0) {
      _exit(125);
    }
    // Only 0-2 and the two channels cross into the host; 3 is left closed.
    syscall(SYS_close_range, 3, 3, 0);
    syscall(SYS_close_range, 6, ~0U, 0);
    execve(argv[0], argv.data(), envp);
    _exit(127);
  }
  setpgid(pid, pid);  // both sides, so no window where the group is not set
  host->pid_ = pid;
  host->cpu_stop_ =
      ipc::CpuBudgetFor(config.instructions.value_or(ipc::kDefaultInstructionBudget)) +
      ipc::kCpuStopGrace;
  host->pidfd_.Reset(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  host->session_ = std::move(session_ours);
  host->stderr_fd_ = std::move(err_read);
  fcntl(host->stderr_fd_.Get(), F_SETFL, O_NONBLOCK);
  host->token_write_ = std::move(token_write);
  // "<token hex>\n" "pins N\n" N x "<sha256 hex> <path>\n" "<settings JSON>" (plugin_host.cc).
  host->handoff_ =
      host->token_.Hex() + "\npins " + std::to_string(config.pinned_files.size()) + "\n";
  for (const auto& [path, sha] : config.pinned_files) host->handoff_ += sha + " " + path + "\n";
  host->handoff_ += config.settings_json;
  return host;
}

Status HostProcess::Attach(const Grant& grant) {
  if (pid_ <= 0 || !token_write_) return Fail("internal", "host is not waiting for its handoff");
  if (gateway_ == nullptr) return Fail("internal", "host has no gateway to attach to");
  // Register before the host can say hello: it blocks reading its handoff until we write it.
  // (The connection after it: the gateway serves its control channel before its threads run,
  // and accepts only once they do.)
  if (auto s = gateway_->Register(token_, plugin_id_, pid_, geteuid(), grant, write_usage_slot_);
      !s) {
    attached_ = true;  // whatever the gateway recorded, Kill revokes
    Kill("registration failed");
    return tl::unexpected(s.error());
  }
  attached_ = true;
  auto gateway_fd = gateway_->Connect();
  if (!gateway_fd) {
    Kill("gateway connection failed");
    return tl::unexpected(gateway_fd.error());
  }
  // The host reads the whole handoff before anything else, so this write only waits for that;
  // the bound covers a host that never reads (it is killed). The connection rides with the
  // first bytes.
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  const std::string handoff = std::move(handoff_);
  handoff_.clear();
  size_t sent = 0;
  const int gateway_conn = gateway_fd->Get();
  while (sent == 0) {
    ssize_t n = ipc::SendWithFds(token_write_.Get(), handoff.data(), handoff.size(),
                                 {&gateway_conn, 1}, MSG_DONTWAIT);
    if (n > 0) {
      sent = static_cast<size_t>(n);
      break;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - Clock::now());
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && left.count() > 0) {
      pollfd p{token_write_.Get(), POLLOUT, 0};
      (void)poll(&p, 1, static_cast<int>(left.count()));
      continue;
    }
    Kill("token delivery failed");
    return SysFail("internal", "deliver token and settings to the plugin host");
  }
  gateway_fd->Reset();
  if (sent < handoff.size() &&
      !fd_io::SendAll(token_write_.Get(), std::string_view(handoff).substr(sent), MSG_DONTWAIT,
                      fd_io::Wait::Until(give_up))) {
    Kill("token delivery failed");
    return SysFail("internal", "deliver token and settings to the plugin host");
  }
  token_write_.Reset();
  return Ok();
}

HostProcess::~HostProcess() {
  if (pid_ > 0) Kill("session ended");
}

void HostProcess::DrainStderr() {
  if (!stderr_fd_) return;
  char buf[4096];
  while (true) {
    ssize_t n = ::read(stderr_fd_.Get(), buf, sizeof(buf));
    if (n <= 0) break;
    if (stderr_.size() < 64 * 1024) stderr_.append(buf, static_cast<size_t>(n));
  }
}

Status HostProcess::Reap(int timeout_ms) {
  if (pid_ <= 0) return Ok();
  pollfd p{pidfd_.Get(), POLLIN, 0};
  if (poll(&p, 1, timeout_ms) <= 0) return Fail("internal", "host did not exit");
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  pid_ = -1;
  DrainStderr();
  return Ok();
}

Status HostProcess::Kill(const std::string& reason) {
  if (pid_ <= 0) {
    session_.Reset();
    return Ok();
  }
  // T7: cancel in-flight ids, kill the process group, wait for the exit, revoke the token.
  // (A host never attached has no registration, and its gateway may not be ready.)
  if (attached_) (void)gateway_->CancelPlugin(plugin_id_, reason);
  // The process group: a host cannot fork (seccomp), but the group is the unit regardless.
  kill(-pid_, SIGKILL);
  kill(pid_, SIGKILL);
  auto reaped = Reap(5000);
  if (attached_ && !revoked_) (void)gateway_->Revoke(token_, reason);
  session_.Reset();
  return reaped;
}

Result<uint64_t> HostProcess::Send(const std::string& op, std::vector<std::string> args) {
  if (pid_ <= 0 || !session_) return Fail("internal", "host is not running");
  uint64_t id = next_id_++;
  ANVIL_RETURN_IF_ERROR(SendAll(session_.Get(), ipc::EncodeRequest({id, "", op, std::move(args)})));
  return id;
}

Status HostProcess::Answer(const ipc::Response& response) {
  if (!session_) return Fail("io", "host channel closed");
  return SendAll(session_.Get(), ipc::EncodeResponse(response));
}

Result<std::vector<HostProcess::Event>> HostProcess::ReadEvents(bool* closed) {
  *closed = false;
  std::vector<Event> events;
  char buf[65536];
  while (session_) {
    ssize_t got = ::recv(session_.Get(), buf, sizeof(buf), MSG_DONTWAIT);
    if (got > 0) {
      reader_.Append(buf, static_cast<size_t>(got));
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) *closed = true;
    break;
  }
  while (true) {
    auto next = reader_.Next();
    if (!next) return tl::unexpected(FrameError(next.error()));
    if (!*next) break;
    const ipc::Frame& f = **next;
    Event e;
    if (f.kind == ipc::FrameKind::kResponse) {
      auto r = ipc::DecodeResponse(f.body);
      if (!r) return Fail("invalid", "the plugin host sent a malformed response");
      e.kind = Event::Kind::kResponse;
      e.response = std::move(*r);
    } else if (f.kind == ipc::FrameKind::kRequest) {
      auto r = ipc::DecodeRequest(f.body);
      if (!r) return Fail("invalid", "the plugin host sent a malformed request");
      e.kind = r->op == "log" ? Event::Kind::kLog : Event::Kind::kRequest;
      e.request = std::move(*r);
    } else {
      continue;
    }
    events.push_back(std::move(e));
  }
  return events;
}

bool HostProcess::ReapIfExited() {
  if (pid_ <= 0) return true;
  return Reap(0).has_value();
}

Result<int> HostProcess::Stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return exit_status_;
  session_.Reset();  // EOF: the host exits on its own
  if (!Reap(static_cast<int>(grace.count()))) {
    ANVIL_RETURN_IF_ERROR(Kill("stopped"));
    return exit_status_;
  }
  if (attached_ && !revoked_) (void)gateway_->Revoke(token_, "host stopped");
  return exit_status_;
}

void HostProcess::BeginStop() {
  if (pid_ <= 0) return;
  session_.Reset();
  if (attached_ && !revoked_) {
    gateway_->RevokeNoWait(token_, "host stopped");
    revoked_ = true;
  }
}

Result<ipc::Response> HostProcess::Call(const std::string& op, std::vector<std::string> args,
                                        std::chrono::milliseconds deadline,
                                        const EditorHandler* editor, const LogHandler* log) {
  if (pid_ <= 0) return Fail("internal", "host is not running");
  auto until = Clock::now() + deadline;
  uint64_t id = next_id_++;
  // The CPU stop from outside (ipc/cpu_budget.h), for a command only.
  std::optional<ipc::CpuWatch> cpu;
  if (op == "command.run") {
    if (auto now_cpu = CpuTime()) cpu.emplace(cpu_stop_, Clock::now(), *now_cpu);
  }
  // The host went away (its channel hung up, or its process ended): what it said on stderr and
  // its exit status explain why; 125 is a sandbox layer it could not apply.
  auto host_ended = [this]() -> Status {
    DrainStderr();
    Reap(1000);
    DrainStderr();
    std::string why = stderr_.empty() ? "exited" : stderr_;
    while (!why.empty() && why.back() == '\n') why.pop_back();
    int status = exit_status_;
    if (pid_ > 0) Kill("host hung up");
    return Fail(status == 125 ? Code::kSandbox : Code::kError,
                "the plugin host ended (status " + std::to_string(status) + "): " + why);
  };
  if (auto s = SendAll(session_.Get(), ipc::EncodeRequest({id, "", op, std::move(args)})); !s) {
    // A host that failed its sandbox set-up exits before it reads anything: the write then
    // meets a closed channel, and the reason is the host's, not the channel's.
    return tl::unexpected(host_ended().error());
  }
  char buf[65536];
  while (true) {
    auto next = reader_.Next();
    if (!next) {
      Kill("malformed frame from host");
      Error e = FrameError(next.error());
      e.message += " and was stopped";
      return tl::unexpected(e);
    }
    if (*next) {
      const ipc::Frame& f = **next;
      if (f.kind == ipc::FrameKind::kResponse) {
        ANVIL_TRY(r, ipc::DecodeResponse(f.body));
        if (r->id == id) return r;
        continue;
      }
      if (f.kind != ipc::FrameKind::kRequest) continue;
      auto req = ipc::DecodeRequest(f.body);
      if (!req) continue;
      if (req->op == "log") {
        if (log && req->args.size() == 2) (*log)(req->args[0], req->args[1]);
        continue;
      }
      Result<std::vector<std::string>> answer =
          editor ? (*editor)(req->op, req->args)
                 : Result<std::vector<std::string>>(Fail("denied", "no editor attached"));
      ipc::Response resp =
          answer ? ipc::Response{req->id, true, std::move(*answer)}
                 : ipc::Response::Error(req->id, answer.error().code, answer.error().message);
      if (auto s = SendAll(session_.Get(), ipc::EncodeResponse(resp)); !s) {
        // The host hung up while its request was being answered: its own end says why.
        return tl::unexpected(host_ended().error());
      }
      continue;
    }
    // Ctrl-C (common/interrupt.h): the command is stopped the way a deadline stops it.
    if (const int sig = InterruptSignal(); sig != 0) {
      Kill("interrupted");
      return Fail(Code::kCancelled,
                  "interrupted by " + SignalName(sig) + "; the plugin host was stopped");
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) {
      Kill("timeout");
      return Fail("timeout", op == "command.run" ? "command passed its wall-clock deadline; the "
                                                   "plugin host was killed"
                                                 : "the plugin host did not answer in time");
    }
    if (cpu && cpu->Due(Clock::now())) {
      auto now_cpu = CpuTime();
      if (!now_cpu) {
        cpu.reset();  // the host is gone: its channel says so next
      } else if (cpu->Over(Clock::now(), *now_cpu)) {
        Kill("cpu budget");
        return tl::unexpected(CpuStopError());
      }
    }
    if (cpu) {
      const auto to_check =
          std::chrono::ceil<std::chrono::milliseconds>(cpu->check_at() - Clock::now());
      left = std::clamp<int64_t>(to_check.count(), 1, left);
    }
    pollfd p[2] = {{session_.Get(), POLLIN, 0}, {pidfd_.Get(), POLLIN, 0}};
    int n = poll(p, 2, static_cast<int>(left));
    if (n <= 0) continue;
    DrainStderr();
    if (p[0].revents & POLLIN) {
      ssize_t got = ::recv(session_.Get(), buf, sizeof(buf), 0);
      if (got > 0) {
        reader_.Append(buf, static_cast<size_t>(got));
        continue;
      }
    }
    if (p[0].revents & (POLLHUP | POLLERR) || p[1].revents) {
      return tl::unexpected(host_ended().error());
    }
  }
}

std::optional<std::chrono::nanoseconds> HostProcess::CpuTime() const {
  clockid_t clock{};
  timespec ts{};
  if (pid_ <= 0 || clock_getcpuclockid(pid_, &clock) != 0 || clock_gettime(clock, &ts) != 0) {
    return std::nullopt;
  }
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

Error HostProcess::CpuStopError(std::string_view what) const {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(cpu_stop_).count();
  return Error{"limit",
               "instruction budget exhausted: " + std::string(what) + " used " +
                   std::to_string(ms) +
                   " ms of CPU time (the budget's CPU-time equivalent) inside one builtin, "
                   "where instructions are not counted; the plugin host was killed",
               0};
}

Result<std::vector<std::string>> HostProcess::Describe(std::chrono::milliseconds deadline) {
  ANVIL_TRY(r, Call("host.describe", {}, deadline, nullptr, nullptr));
  if (!r->ok) return tl::unexpected(r->ToError());
  return r->fields;
}

Result<std::string> HostProcess::Run(const std::string& command, const std::string& args_json,
                                     std::chrono::milliseconds deadline,
                                     const EditorHandler& editor, const LogHandler& log) {
  ANVIL_TRY(r, Call("command.run", {command, args_json}, deadline, &editor, &log));
  if (!r->ok) return tl::unexpected(r->ToError());
  if (r->fields.size() != 1) return Fail("error", "malformed result from the plugin host");
  return r->fields[0];
}

}  // namespace anvil::session
