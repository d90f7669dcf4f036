// `anvil mcp`'s stdio loop (mcp_server.h): the main thread reads stdin a line at a time (at most
// kMaxLineBytes) and routes what agent/mcp_protocol.h decides; each tools/call gets a worker
// thread of its own (mcp_tools.cc), a client's response goes to the call waiting for it, and
// every line written to stdout is whole, under one lock.
#include "cli/mcp_server.h"

#include <limits.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>

#include "cli/commands.h"
#include "cli/exec_command.h"
#include "common/fd_io.h"

namespace anvil::cli::mcp_server {

std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "anvil";
  return std::string(buf, static_cast<std::size_t>(n));
}

Server::Server(McpOptions options, std::vector<mcp::ToolDef> tools, std::vector<PluginTool> plugins)
    : options_(std::move(options)),
      plugin_tools_(std::move(plugins)),
      protocol_(std::string(AnvilVersion()), std::move(tools),
                [this](const std::string& tool, const json& a) { return Check(tool, a); }),
      audit_(WorkspaceAuditSink(options_.workspace)),
      self_(SelfExe()) {}

std::string Server::Check(const std::string& tool, const json& arguments) const {
  if (tool == "run_command") {
    mcp::RunCommandArgs parsed;
    return mcp::ParseRunCommandArgs(arguments, &parsed);
  }
  std::vector<std::string> args;
  return mcp::ParsePluginArgs(arguments, &args);
}

void Server::Send(const json& message) {
  const std::string line = message.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  std::lock_guard<std::mutex> lock(out_mu_);
  // A client that is gone is not an error here: stdin's EOF ends the server.
  (void)fd_io::WriteAll(STDOUT_FILENO, line, fd_io::Wait::NoWait());
}

void Server::Progress(Call& call, const std::string& message) {
  if (!call.progress_token || call.cancelled) return;
  call.progress += 1;
  Send(mcp::ProgressNotification(*call.progress_token, call.progress, message));
}

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

}  // namespace anvil::cli::mcp_server
