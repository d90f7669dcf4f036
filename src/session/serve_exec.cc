// anvil/exec in `anvil serve`: each request is a child `anvil exec --ask-fd 3` in its own process
// group (docs/architecture.md, "`anvil serve` is one thread"); its questions become anvil/approve
// requests to the editor, its output is kept under a cap, and its exit answers the request.
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/syscalls.h"
#include "policy/shell_words.h"
#include "session/exec_request.h"
#include "session/serve_server.h"

extern "C" char** environ;

namespace anvil::session::serve {

namespace {

std::string CanonicalDir(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return "";
  struct stat st {};
  if (::stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) return "";
  return buf;
}

// The running program: serve starts the same `anvil` for the exec child.
std::string SelfExe() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// Appends what fits under the cap; the rest is counted as dropped.
void Keep(std::string& text, bool& truncated, const char* data, size_t n) {
  const size_t room = kExecOutputCapBytes - std::min(text.size(), kExecOutputCapBytes);
  text.append(data, std::min(room, n));
  if (n > room) truncated = true;
}

}  // namespace

void Server::Exec(const json& id, const json& params) {
  auto call =
      ParseExecParams(params, {o_.workspace, o_.exec_approval, o_.command_timeout}, CanonicalDir);
  if (!call) return ReplyError(id, kInvalidParams, call.error().message);
  if (execs_.size() >= o_.max_exec_jobs) {
    return ReplyError(id, kRequestFailed,
                      "busy: " + std::to_string(o_.max_exec_jobs) +
                          " commands are running already (anvil/exec); wait for one to finish",
                      {{"code", "busy"}});
  }
  const std::string exe = SelfExe();
  if (exe.empty()) {
    return ReplyError(id, kInternalError, "the anvil program could not be found (/proc/self/exe)");
  }
  int sv[2], out[2], err[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return ReplyError(id, kInternalError, std::string("socketpair: ") + std::strerror(errno));
  }
  UniqueFd ask(sv[0]), child_ask(sv[1]);
  if (::pipe2(out, O_CLOEXEC) != 0) {
    return ReplyError(id, kInternalError, std::string("pipe: ") + std::strerror(errno));
  }
  UniqueFd out_r(out[0]), out_w(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) {
    return ReplyError(id, kInternalError, std::string("pipe: ") + std::strerror(errno));
  }
  UniqueFd err_r(err[0]), err_w(err[1]);
  UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null) return ReplyError(id, kInternalError, "/dev/null: " + std::string(strerror(errno)));
  std::vector<std::string> args = {exe};
  args.insert(args.end(), call->exec_args.begin(), call->exec_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return ReplyError(id, kInternalError, std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    // Its own process group: a cancellation kills all of it. Descriptors above a safe floor
    // first, so that none of the dup2 targets is one of the sources.
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    const int a = ::fcntl(child_ask.Get(), F_DUPFD_CLOEXEC, 10);
    const int o = ::fcntl(out_w.Get(), F_DUPFD_CLOEXEC, 10);
    const int e = ::fcntl(err_w.Get(), F_DUPFD_CLOEXEC, 10);
    const int n = ::fcntl(null.Get(), F_DUPFD_CLOEXEC, 10);
    if (a < 0 || o < 0 || e < 0 || n < 0 || ::dup2(n, 0) < 0 || ::dup2(o, 1) < 0 ||
        ::dup2(e, 2) < 0 || ::dup2(a, 3) < 0) {
      ::_exit(125);
    }
    ::execve(argv[0], argv.data(), environ);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: no window in which a kill of the group misses it
  auto job = std::make_unique<ExecJob>();
  job->serial = next_exec_serial_++;
  job->id = id;
  job->progress_token = call->progress_token;
  job->pid = pid;
  job->pidfd.Reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!job->pidfd) {
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return ReplyError(id, kInternalError, std::string("pidfd_open: ") + strerror(errno));
  }
  for (int fd : {ask.Get(), out_r.Get(), err_r.Get()}) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  job->ask = std::move(ask);
  job->out = std::move(out_r);
  job->err = std::move(err_r);
  open_requests_.insert(Key(id));
  if (!job->progress_token.is_null()) {
    Notify("$/progress",
           {{"token", job->progress_token},
            {"value",
             {{"kind", "begin"},
              {"title", "anvil exec " + SanitizeForDisplay(JoinShellWords(call->argv), 120)},
              {"cancellable", true},
              {"message", "running"}}}});
  }
  execs_.push_back(std::move(job));
}

ExecJob* Server::FindExec(uint64_t serial) {
  for (auto& j : execs_) {
    if (j->serial == serial) return j.get();
  }
  return nullptr;
}

void Server::OnExecOutput(ExecJob& job, bool is_stderr) {
  UniqueFd& fd = is_stderr ? job.err : job.out;
  char buf[65536];
  while (fd) {
    const ssize_t n = ::read(fd.Get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      fd.Reset();
      return;
    }
    if (is_stderr) {
      Keep(job.stderr_text, job.stderr_truncated, buf, static_cast<size_t>(n));
    } else {
      Keep(job.stdout_text, job.stdout_truncated, buf, static_cast<size_t>(n));
    }
  }
}

void Server::KillExec(ExecJob& job) {
  if (job.killed) return;
  job.killed = true;
  ::kill(-job.pid, SIGKILL);
}

void Server::OnExecAsk(ExecJob& job) {
  char buf[65536];
  while (job.ask) {
    const ssize_t n = ::read(job.ask.Get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) {
      job.ask.Reset();
      break;
    }
    job.lines.Append(std::string_view(buf, static_cast<size_t>(n)));
    while (job.protocol_error.empty()) {
      auto line = job.lines.Next();
      if (!line) break;
      auto message = agent::ParseAskMessage(*line);
      if (!message) {
        job.protocol_error = message.error().message;
      } else if (message->kind == agent::AskMessage::Kind::kReport) {
        job.report = std::move(message->report);
      } else if (job.asking) {
        job.protocol_error = "a question came before the last one was answered";
      } else {
        OnExecQuestion(job, *message);
      }
    }
    if (job.lines.Overflowed()) job.protocol_error = "an ask-fd line is too long";
    if (!job.protocol_error.empty()) {
      // Fail closed: a child that does not speak the protocol is stopped, nothing it asked is
      // answered.
      job.ask.Reset();
      KillExec(job);
      return;
    }
  }
}

void Server::OnExecQuestion(ExecJob& job, const agent::AskMessage& message) {
  job.asking = true;
  const uint64_t serial = job.serial, question = message.id;
  json choices = message.question["choices"];
  if (!job.progress_token.is_null()) {
    Notify("$/progress", {{"token", job.progress_token},
                          {"value", {{"kind", "report"}, {"message", "waiting for your answer"}}}});
  }
  SendRequest("anvil/approve", ApproveParams(message.question, job.id),
              [this, serial, question, choices](const json* result, const json* error) {
                ExecJob* j = FindExec(serial);
                if (j == nullptr || !j->ask || j->cancelled) return;  // gone meanwhile
                j->asking = false;
                const auto answer = agent::AnswerFromReply(result, error, choices);
                const std::string line = agent::AnswerLine(question, answer) + "\n";
                // The child waits for exactly this line; a short socket write cannot block.
                if (::send(j->ask.Get(), line.data(), line.size(), MSG_NOSIGNAL) !=
                    static_cast<ssize_t>(line.size())) {
                  j->ask.Reset();
                }
              });
}

void Server::OnExecExited(ExecJob& job) {
  // Whatever it wrote before exiting: the last output, the report.
  OnExecOutput(job, false);
  OnExecOutput(job, true);
  if (job.ask) OnExecAsk(job);
  // Nothing of its group may outlive it (the sandbox's own tree dies with it by design; any
  // straggler in the group goes now), killed while the unreaped child still holds the group's id.
  ::kill(-job.pid, SIGKILL);
  int status = 0;
  while (::waitpid(job.pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  auto end = [&](const std::string& message) {
    if (!job.progress_token.is_null()) {
      Notify("$/progress",
             {{"token", job.progress_token}, {"value", {{"kind", "end"}, {"message", message}}}});
    }
  };
  if (job.cancelled) {
    end("cancelled");
    CompleteError(job.id, kRequestCancelled, "cancelled: request cancelled",
                  {{"code", "cancelled"}, {"killed", job.killed}});
  } else if (!job.protocol_error.empty()) {
    end("failed");
    CompleteError(job.id, kRequestFailed,
                  "error: anvil exec broke the ask-fd protocol: " + job.protocol_error,
                  {{"code", "error"}});
  } else if (!job.report) {
    end("failed");
    std::string why = job.stderr_text;
    while (!why.empty() && (why.back() == '\n' || why.back() == '\r')) why.pop_back();
    CompleteError(job.id, kRequestFailed,
                  "error: anvil exec ended without a report (status " + std::to_string(code) + ")" +
                      (why.empty() ? "" : ": " + SanitizeForDisplay(why, 2000)),
                  {{"code", "error"}, {"status", code}});
  } else {
    json result = std::move(*job.report);
    result["stdout"] = std::move(job.stdout_text);
    result["stderr"] = std::move(job.stderr_text);
    result["stdout_truncated"] = job.stdout_truncated;
    result["stderr_truncated"] = job.stderr_truncated;
    result["output_cap_bytes"] = kExecOutputCapBytes;
    end("done");
    Complete(job.id, std::move(result));
  }
}

bool Server::CancelExec(const std::string& key) {
  for (auto& job : execs_) {
    if (Key(job->id) != key || job->cancelled) continue;
    // Its questions end (a question waiting is refused), SIGTERM lets the sandbox take its tree
    // down; a child still there when the grace ends is killed with its group (RunTimers). The
    // answer waits for its exit.
    job->cancelled = true;
    job->ask.Reset();
    ::kill(job->pid, SIGTERM);
    job->kill_at = Clock::now() + o_.cancel_grace;
    return true;
  }
  return false;
}

}  // namespace anvil::session::serve
