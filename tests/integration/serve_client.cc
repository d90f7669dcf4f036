#include "serve_client.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace anvil::testing {

void WritePlugin(const std::string& dir, const std::string& id, const std::string& runtime,
                 const std::string& permissions, const std::string& code) {
  Shell("mkdir -p " + ShellQuote(dir));
  std::string entry = runtime == "js" ? "main.js" : "main.lua";
  WriteFile(dir + "/anvil-plugin.toml", "id = \"" + id + "\"\nversion = \"1.0.0\"\nruntime = \"" +
                                            runtime + "\"\nentry = \"" + entry +
                                            "\"\n\n[permissions]\n" + permissions);
  WriteFile(dir + "/" + entry, code);
}

ServeClient::ServeClient(const std::vector<std::string>& args, const std::string& state_dir,
                         const std::vector<std::string>& extra_env) {
  int in_pipe[2], out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) || pipe2(out_pipe, O_CLOEXEC)) throw std::runtime_error("pipe");
  std::vector<std::string> argv = {AnvilBin(), "serve"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "LANG=C.UTF-8",
                                  "XDG_STATE_HOME=" + state_dir,
                                  "XDG_DATA_HOME=" + state_dir + "/data"};
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork");
  if (pid_ == 0) {
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    ExecOrExit(argv, env);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  in_ = in_pipe[1];
  out_ = out_pipe[0];
  on_request = [](const json& request) -> json {
    if (request["method"] == "workspace/applyEdit") return {{"applied", true}};
    if (request["method"] == "anvil/approve") return {{"answer", "never"}};
    return {{"decision", "deny"}};
  };
}

ServeClient::~ServeClient() {
  if (in_ >= 0) close(in_);
  if (!reaped_ && pid_ > 0) {
    if (!Wait(std::chrono::seconds(5))) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  if (out_ >= 0) close(out_);
}

std::string ServeClient::Frame(const std::string& body) {
  return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

void ServeClient::SendRaw(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = write(in_, bytes.data() + off, bytes.size() - off);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

void ServeClient::Send(const json& message) { SendRaw(Frame(message.dump())); }

std::optional<json> ServeClient::Read(std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    auto end = buffer_.find("\r\n\r\n");
    if (end != std::string::npos) {
      auto colon = buffer_.find(':');
      size_t length = std::stoul(buffer_.substr(colon + 1, end - colon - 1));
      if (buffer_.size() >= end + 4 + length) {
        std::string body = buffer_.substr(end + 4, length);
        buffer_.erase(0, end + 4 + length);
        return json::parse(body);
      }
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) return std::nullopt;
    pollfd p{out_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[65536];
    ssize_t n = read(out_, buf, sizeof(buf));
    if (n <= 0) return std::nullopt;
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

json ServeClient::SendRequest(const std::string& method, json params) {
  json id = next_id_++;
  Send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
  return id;
}

json ServeClient::ReadResponse(const json& id, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    auto m = Read(left);
    if (!m) return {{"timeout", true}};
    if (m->contains("method")) {
      seen.push_back(*m);
      if (m->contains("id")) {
        json answer = on_request(*m);
        if (answer.is_object() && answer.contains("$no_reply")) continue;
        if (answer.is_object() && answer.contains("$error")) {
          Send({{"jsonrpc", "2.0"}, {"id", (*m)["id"]}, {"error", answer["$error"]}});
        } else {
          Send({{"jsonrpc", "2.0"}, {"id", (*m)["id"]}, {"result", answer}});
        }
      }
      continue;
    }
    if ((*m)["id"] == id) return *m;
    seen.push_back(*m);  // a response to something else (kept for the test to look at)
  }
}

json ServeClient::Request(const std::string& method, json params, std::chrono::milliseconds limit) {
  return ReadResponse(SendRequest(method, std::move(params)), limit);
}

void ServeClient::Notify(const std::string& method, json params) {
  Send({{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
}

json ServeClient::Initialize(bool utf8, const json& extra) {
  json caps = {
      {"workspace", {{"applyEdit", true}, {"workspaceEdit", {{"documentChanges", true}}}}}};
  if (utf8) caps["general"] = {{"positionEncodings", {"utf-8", "utf-16"}}};
  caps.merge_patch(extra);
  json r = Request("initialize", {{"processId", getpid()}, {"capabilities", caps}});
  Notify("initialized");
  return r;
}

std::optional<int> ServeClient::ShutdownAndExit() {
  Request("shutdown", nullptr);
  Notify("exit");
  return Wait();
}

void ServeClient::CloseInput() {
  if (in_ >= 0) close(in_);
  in_ = -1;
}

std::optional<int> ServeClient::Wait(std::chrono::milliseconds limit) {
  if (reaped_) return std::nullopt;
  int status = 0;
  bool ended = WaitUntil([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, limit);
  if (!ended) return std::nullopt;
  reaped_ = true;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<json> ServeClient::Seen(const std::string& method) const {
  std::vector<json> out;
  for (const auto& m : seen) {
    if (m.contains("method") && m["method"] == method) out.push_back(m);
  }
  return out;
}

void ServeTestBase::SetUp() {
  Shell("mkdir -p " + ShellQuote(ws_ / "src") + " " + ShellQuote(ws_ / "notes"));
  WriteFile(ws_ / "src/a.c", "int main(void) {\n  // TODO: one\n  return 0; /* FIXME */\n}\n");
}

std::unique_ptr<ServeClient> ServeTestBase::Start(std::vector<std::string> args,
                                                  const std::vector<std::string>& extra_env) {
  args.insert(args.begin(), {"--workspace", ws_.path(), "--no-default-plugin-path"});
  return std::make_unique<ServeClient>(args, state_.path(), extra_env);
}

std::unique_ptr<ServeClient> ServeTestBase::StartReady(const std::string& plugin_dir,
                                                       const std::string& id,
                                                       std::vector<std::string> extra) {
  extra.insert(extra.begin(), {"--approve", "--plugin-dir", plugin_dir});
  auto c = Start(extra);
  EXPECT_TRUE(c->Initialize().contains("result"));
  EXPECT_TRUE(WaitForPluginState(*c, id, "ready")) << id << " never became ready";
  return c;
}

json PluginInfo(ServeClient& c, const std::string& id) {
  json list = c.Request("anvil/listPlugins")["result"]["plugins"];
  for (const auto& p : list) {
    if (p["id"] == id) return p;
  }
  return nullptr;
}

bool WaitForPluginState(ServeClient& c, const std::string& id, const std::string& state) {
  return WaitUntil([&] { return PluginInfo(c, id)["state"] == state; });
}

pid_t HostPid(ServeClient& c, const std::string& id) {
  json p = PluginInfo(c, id);
  return p.is_object() && p["pid"].is_number_integer() ? p["pid"].get<pid_t>() : -1;
}

size_t OpenFdCount(pid_t pid) {
  size_t n = 0;
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (!d) return 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n;
}

size_t RssKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6));
  }
  return 0;
}

namespace {
// (pid, ppid, state) of every process.
struct ProcStat {
  pid_t pid, ppid;
  char state;
};
std::vector<ProcStat> AllProcesses() {
  std::vector<ProcStat> out;
  DIR* d = opendir("/proc");
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    // ReadFile: a process that exits mid-read (ESRCH) is an empty text, not an exception.
    const std::string text = ReadFile(std::string("/proc/") + e->d_name + "/stat");
    auto close_paren = text.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream rest(text.substr(close_paren + 2));
    ProcStat s{static_cast<pid_t>(std::stol(e->d_name)), 0, '?'};
    rest >> s.state >> s.ppid;
    out.push_back(s);
  }
  closedir(d);
  return out;
}
}  // namespace

std::vector<pid_t> ChildrenOf(pid_t pid) {
  std::vector<pid_t> out;
  for (const auto& s : AllProcesses()) {
    if (s.ppid == pid) out.push_back(s.pid);
  }
  return out;
}

bool HasZombieChild(pid_t pid) {
  for (const auto& s : AllProcesses()) {
    if (s.ppid == pid && s.state == 'Z') return true;
  }
  return false;
}

}  // namespace anvil::testing
