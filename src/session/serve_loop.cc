// `anvil serve`'s loop: one thread polls the grant-store watch, stdin, the signal pipe, the
// gateway's pidfd, each host's channel, pidfd and stderr, the plugin-file watch and each
// anvil/exec child, and runs the timers (deadlines, cancel grace periods, restart back-off,
// reloads after file changes) in between; at the end everything is stopped and waited for.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <utility>
#include <vector>

#include "session/serve_server.h"

namespace anvil::session::serve {
namespace {

int g_signal_pipe = -1;
void OnSignal(int sig) {
  char c = static_cast<char>(sig);
  ssize_t ignored = ::write(g_signal_pipe, &c, 1);
  (void)ignored;
}
void OnSigpipe(int) {}  // a handler, not SIG_IGN: exec'd children get the default back

}  // namespace

int Server::TimeoutMs() const {
  std::optional<Clock::time_point> next;
  auto consider = [&](Clock::time_point t) {
    if (!next || t < *next) next = t;
  };
  for (const auto& p : plugins_) {
    if (p->running) consider(p->running->cancelled ? p->running->kill_at : p->running->deadline);
    if (p->running && !p->running->cancelled && p->running->cpu) {
      consider(p->running->cpu->check_at());
    }
    if (p->state == PluginState::kStarting && p->host) {
      consider(p->describe_deadline);
      if (p->describe_cpu) consider(p->describe_cpu->check_at());
    }
    if (p->restart_at) consider(*p->restart_at);
    if (p->files_changed_reload_at) consider(*p->files_changed_reload_at);
  }
  if (pending_initialize_id_) consider(initialize_deadline_);
  if (grant_store_followed_ && !GrantStoreWatched()) consider(grant_poll_at_);
  for (const auto& job : execs_) {
    if (job->cancelled && !job->killed) consider(job->kill_at);
  }
  if (!next) return -1;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*next - Clock::now()).count();
  return ms < 0 ? 0 : static_cast<int>(std::min<int64_t>(ms + 1, 60000));
}

void Server::RunTimers() {
  auto now = Clock::now();
  for (auto& pp : plugins_) {
    Plugin& p = *pp;
    if (p.running && p.running->cancelled && now >= p.running->kill_at) {
      // It ignored the cancellation: kill the group, answer, start a fresh host.
      RunRequest r = std::move(*p.running);
      p.running.reset();
      KillAndRestart(p, "cancelled");
      Progress(r, {{"kind", "end"}, {"message", "cancelled"}});
      CompleteError(r.id, kRequestCancelled,
                    "cancelled: request cancelled; the plugin host was killed",
                    {{"code", "cancelled"}, {"plugin", p.entry.id}, {"killed", true}});
    } else if (p.running && !p.running->cancelled && p.running->cpu && p.host &&
               p.running->cpu->Due(now) &&
               p.running->cpu->Over(now, p.host->CpuTime().value_or(p.running->cpu->budget()))) {
      // Still inside one builtin at the CPU stop: killed as at the deadline, and restarted.
      RunRequest r = std::move(*p.running);
      p.running.reset();
      const Error e = p.host->CpuStopError();
      KillAndRestart(p, "cpu budget");
      FailRun(p.entry.id, r, e);
    } else if (p.running && !p.running->cancelled && now >= p.running->deadline) {
      RunRequest r = std::move(*p.running);
      p.running.reset();
      KillAndRestart(p, "timeout");
      FailRun(p.entry.id, r,
              Error{"timeout", "command passed its wall-clock deadline; the plugin host was killed",
                    0});
    }
    if (p.state == PluginState::kStarting && p.host && p.describe_cpu && p.describe_cpu->Due(now) &&
        p.describe_cpu->Over(now, p.host->CpuTime().value_or(p.describe_cpu->budget()))) {
      // Still inside one builtin of the plugin's top level at the CPU stop: a new host would
      // load the same code, so the plugin fails as at the load deadline.
      const Error e = p.host->CpuStopError("loading the plugin");
      TerminateHost(p, "cpu budget");
      SetFailed(p, e.ToString());
    } else if (p.state == PluginState::kStarting && p.host && now >= p.describe_deadline) {
      TerminateHost(p, "timeout");
      SetFailed(p, "timeout: the plugin did not load within its deadline");
    }
    if (p.restart_at && now >= *p.restart_at) {
      p.restart_at.reset();
      if (p.state == PluginState::kStarting && !p.host) StartHost(p);
    }
    if (p.files_changed_reload_at && now >= *p.files_changed_reload_at) {
      p.files_changed_reload_at.reset();
      if (p.entry.enabled && p.state != PluginState::kNotFound) {
        LogMessage(kMessageInfo,
                   "Anvil: the files of plugin " + p.entry.id + " changed: reloading it");
        ReloadPlugin(p, std::nullopt, /*auto_approve=*/false);
      }
    }
  }
  for (auto& job : execs_) {
    if (job->cancelled && !job->killed && now >= job->kill_at) KillExec(*job);
  }
  // The grant store unwatched: read again on a bounded cadence (and before each message).
  if (grant_store_followed_ && !GrantStoreWatched() && now >= grant_poll_at_) CheckGrantStore();
  MaybeFinishInitialize();
}

void Server::PollOnce() {
  enum class What {
    kInput,
    kSignal,
    kGateway,
    kSession,
    kPidfd,
    kStderr,
    kPluginFiles,
    kGrantStore,
    kExecAsk,
    kExecOut,
    kExecErr,
    kExecPidfd
  };
  struct Watch {
    What what;
    Plugin* plugin;
    uint64_t generation;
  };
  std::vector<pollfd> fds;
  std::vector<Watch> watches;
  auto add = [&](int fd, What what, Plugin* p = nullptr) {
    fds.push_back({fd, POLLIN, 0});
    watches.push_back({what, p, p ? p->generation : 0});
  };
  // First: a grant revoked before a request was sent is applied before that request is read.
  if (grant_watch_) add(grant_watch_.Get(), What::kGrantStore);
  if (!stdin_closed_) add(o_.in_fd, What::kInput);
  add(signal_read_.Get(), What::kSignal);
  if (gateway_ && gateway_->pidfd() >= 0) add(gateway_->pidfd(), What::kGateway);
  if (plugin_watch_) add(plugin_watch_.Get(), What::kPluginFiles);
  for (auto& p : plugins_) {
    if (!p->host || !p->host->running()) continue;
    if (!p->channel_closed) add(p->host->session_fd(), What::kSession, p.get());
    add(p->host->pidfd(), What::kPidfd, p.get());
    if (!p->stderr_closed && p->host->stderr_fd() >= 0) {
      add(p->host->stderr_fd(), What::kStderr, p.get());
    }
  }
  for (auto& job : execs_) {
    const auto at = [&](const UniqueFd& fd, What what) {
      if (!fd) return;
      fds.push_back({fd.Get(), POLLIN, 0});
      watches.push_back({what, nullptr, job->serial});
    };
    at(job->ask, What::kExecAsk);
    at(job->out, What::kExecOut);
    at(job->err, What::kExecErr);
    at(job->pidfd, What::kExecPidfd);
  }
  int n = ::poll(fds.data(), fds.size(), TimeoutMs());
  if (n < 0 && errno != EINTR) {
    std::cerr << "anvil serve: poll failed: " << std::strerror(errno) << "\n";
    exit_ = true;
    return;
  }
  for (size_t i = 0; n > 0 && i < fds.size() && !exit_; ++i) {
    if (!fds[i].revents) continue;
    const Watch& w = watches[i];
    if (w.plugin && (w.plugin->generation != w.generation || !w.plugin->host)) continue;
    switch (w.what) {
      case What::kInput:
        ReadInput();
        break;
      case What::kSignal:
        exit_ = true;
        break;
      case What::kGateway:
        if (gateway_) OnGatewayExited();
        break;
      case What::kSession:
        OnHostReadable(*w.plugin);
        break;
      case What::kPidfd:
        // Whatever it said before exiting comes first (a load error, a last result).
        if (!w.plugin->channel_closed) OnHostReadable(*w.plugin);
        if (w.plugin->generation == w.generation && w.plugin->host &&
            w.plugin->host->ReapIfExited()) {
          HostCrashed(*w.plugin, "the plugin host exited");
        }
        break;
      case What::kPluginFiles:
        OnPluginFilesChanged();
        break;
      case What::kGrantStore:
        OnGrantStoreChanged();
        break;
      case What::kStderr:
        w.plugin->host->DrainStderr();
        if (fds[i].revents & (POLLHUP | POLLERR)) w.plugin->stderr_closed = true;
        break;
      case What::kExecAsk:
      case What::kExecOut:
      case What::kExecErr:
      case What::kExecPidfd: {
        ExecJob* job = FindExec(w.generation);
        if (job == nullptr) break;
        if (w.what == What::kExecAsk) {
          OnExecAsk(*job);
        } else if (w.what == What::kExecPidfd) {
          OnExecExited(*job);
          std::erase_if(execs_, [&](const auto& j) { return j.get() == job; });
        } else {
          OnExecOutput(*job, w.what == What::kExecErr);
        }
        break;
      }
    }
  }
  if (!exit_) RunTimers();
  if (!exit_) SyncCommandRegistrations();
}

void Server::StopAll() {
  for (auto& job : execs_) {
    // The whole group, and its exit waited for: no command outlives the session.
    KillExec(*job);
    while (::waitpid(job->pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    CompleteError(job->id, kRequestFailed, "cancelled: the session is ending",
                  {{"code", "cancelled"}});
  }
  execs_.clear();
  for (auto& p : plugins_) {
    if (p->running) {
      FailRun(p->entry.id, *p->running, Error{"cancelled", "the session is ending", 0});
      p->running.reset();
    }
    while (!p->queue.empty()) {
      FailRun(p->entry.id, p->queue.front(), Error{"cancelled", "the session is ending", 0});
      p->queue.pop_front();
    }
    for (const auto& w : std::exchange(p->reload_waiters, {})) {
      CompleteError(w, kRequestFailed, "cancelled: the session is ending", {{"code", "cancelled"}});
    }
    TerminateHost(*p, "session ended");
    if (p->state == PluginState::kReady || p->state == PluginState::kStarting) {
      p->state = PluginState::kFailed;
      p->detail = "the session ended";
    }
  }
  if (gateway_) {
    (void)gateway_->Stop();
    gateway_.reset();
  }
}

int Server::Run() {
  int sp[2];
  if (::pipe2(sp, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::cerr << "anvil serve: internal: pipe: " << std::strerror(errno) << "\n";
    return 1;
  }
  signal_read_.Reset(sp[0]);
  signal_write_.Reset(sp[1]);
  g_signal_pipe = sp[1];
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &sa, nullptr);
  sa.sa_handler = OnSigpipe;
  sigaction(SIGPIPE, &sa, nullptr);
  while (!exit_) PollOnce();
  // No cleanup left to destructors: every host is killed and reaped, the gateway stopped.
  StopAll();
  return shutdown_requested_ ? 0 : 1;
}

}  // namespace anvil::session::serve
