#include "host/plugin_host.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "common/fd_io.h"
#include "common/unique_fd.h"
#include "ipc/capability_token.h"
#include "ipc/fd_passing.h"
#include "ipc/frame.h"
#include "ipc/gateway_client.h"
#include "policy/digest.h"

namespace anvil::host {
namespace {

constexpr size_t kMaxPluginFileBytes = 1u << 20;
constexpr size_t kMaxModules = 64;
// Token line plus the plugin's settings (bounded by the trusted side, HostProcess::Start).
constexpr size_t kMaxHandoffBytes = (1u << 20) + 256;

Result<std::string> ReadBeneath(int dir, const std::string& rel) {
  open_how how{};
  how.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS;
  long fd;
  do {
    fd = syscall(SYS_openat2, dir, rel.c_str(), &how, sizeof(how));
  } while (fd < 0 && errno == EAGAIN);
  if (fd < 0 && errno == ELOOP) {
    return Fail("invalid", "plugin file " + rel +
                               " is a symbolic link (or goes through one); plugin files must be "
                               "regular files inside the plugin directory");
  }
  if (fd < 0)
    return SysFail(errno == ENOENT ? Code::kNotFound : Code::kInvalid, "plugin file " + rel);
  UniqueFd f(static_cast<int>(fd));
  struct stat st {};
  if (fstat(f.Get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Fail("invalid", "plugin file " + rel + " is not a regular file");
  }
  if (static_cast<size_t>(st.st_size) > kMaxPluginFileBytes) {
    return Fail("limit", "plugin file " + rel + " is over 1 MiB");
  }
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < data.size()) {
    ssize_t n = ::read(f.Get(), data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  data.resize(got);
  return data;
}

// Everything the plugin may ever run is read here, before the lockdown: the entry and the
// modules under lib/ (Lua: "lib.name" for lib/name.lua; JS: "lib/name" for lib/name.js).
Result<PluginSource> ReadPluginSource(const HostOptions& o) {
  UniqueFd dir(::open(o.plugin_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return SysFail("not_found", "plugin directory " + o.plugin_dir);
  PluginSource source;
  source.entry_name = o.entry;
  ANVIL_TRY(entry, ReadBeneath(dir.Get(), o.entry));
  source.entry_code = std::move(*entry);
  const std::string ext = o.runtime == "lua" ? ".lua" : ".js";
  UniqueFd lib(::openat(dir.Get(), "lib", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!lib) return source;
  DIR* d = fdopendir(lib.Release());
  if (!d) return source;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() <= ext.size() || name.compare(name.size() - ext.size(), ext.size(), ext) != 0) {
      continue;
    }
    if (source.modules.size() >= kMaxModules) {
      closedir(d);
      return Fail("limit", "more than 64 modules under lib/");
    }
    auto code = ReadBeneath(dir.Get(), "lib/" + name);
    if (!code) {
      closedir(d);
      return tl::unexpected(code.error());
    }
    std::string stem = name.substr(0, name.size() - ext.size());
    source.modules[(o.runtime == "lua" ? "lib." : "lib/") + stem] = std::move(*code);
  }
  closedir(d);
  return source;
}

struct Handoff {
  UniqueFd gateway;                         // the gateway connection, when it came here
  std::string token;                        // raw capability token bytes
  std::map<std::string, std::string> pins;  // anvil.lock: relative path -> SHA-256 hex
  std::string settings;                     // JSON object text
};

// The trusted side's handoff on --token-fd (session/host_process.cc), then EOF:
//   <token hex>\n
//   pins N\n            N lines "<sha256 hex> <relative path>\n": the files anvil.lock pins, or
//                      else the files the grant was looked up for
//   <settings JSON>
// Read in full before anything of the plugin is touched; never argv or the environment, which
// other processes of the user can read in /proc.
// The connection to the gateway comes with it (SCM_RIGHTS, one descriptor, a socket) when the
// trusted side started this host before its gateway was ready (session/host_process.h) and so
// passed no --gateway-fd; `want_gateway` says which. Any other descriptor is refused.
Result<Handoff> ReadHandoff(int fd, bool want_gateway) {
  UniqueFd owned(fd);
  Handoff out;
  std::string text;
  char buf[65536];
  bool extra_fds = false;
  while (text.size() <= kMaxHandoffBytes) {
    std::vector<int> received;
    int msg_flags = 0;
    ssize_t n =
        ipc::ReceiveWithFds(fd, buf, sizeof(buf), received, ipc::kMaxPassedFds, 0, &msg_flags);
    if (n < 0 && errno == ENOTSOCK) n = ::read(fd, buf, sizeof(buf));  // a pipe: bytes only
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (msg_flags & MSG_CTRUNC) extra_fds = true;  // more than a message carries
    for (int r : received) {
      UniqueFd one(r);
      if (!want_gateway || out.gateway) {
        extra_fds = true;  // closed with `one`
      } else {
        out.gateway = std::move(one);
      }
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  owned.Reset();
  if (extra_fds) return Fail("invalid", "handoff: a descriptor that was not expected");
  if (want_gateway) {
    struct stat st {};
    if (!out.gateway || ::fstat(out.gateway.Get(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
      return Fail("invalid", "handoff: no connection to the gateway");
    }
  }
  if (text.size() > kMaxHandoffBytes) return Fail("limit", "handoff over its size limit");
  const auto newline = text.find('\n');
  std::string hex = text.substr(0, newline);
  auto token = ipc::CapabilityToken::FromHex(hex);
  if (!token) return Fail("invalid", "capability token: " + token.error().message);
  out.token = token->bytes();
  std::string_view rest = newline == std::string::npos ? std::string_view()
                                                       : std::string_view(text).substr(newline + 1);
  auto next_line = [&rest]() -> std::optional<std::string_view> {
    const auto nl = rest.find('\n');
    if (nl == std::string_view::npos) return std::nullopt;
    std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl + 1);
    return line;
  };
  auto count_line = next_line();
  if (!count_line || count_line->substr(0, 5) != "pins ") {
    return Fail("invalid", "handoff: no pins line");
  }
  size_t count = 0;
  for (char c : count_line->substr(5)) {
    if (c < '0' || c > '9' || count > 100000) return Fail("invalid", "handoff: bad pins count");
    count = count * 10 + static_cast<size_t>(c - '0');
  }
  for (size_t i = 0; i < count; ++i) {
    auto line = next_line();
    if (!line || line->size() < 66 || (*line)[64] != ' ' || !IsSha256Hex(line->substr(0, 64))) {
      return Fail("invalid", "handoff: bad pin line");
    }
    out.pins.emplace(std::string(line->substr(65)), std::string(line->substr(0, 64)));
  }
  out.settings = std::string(rest);
  if (out.settings.empty()) out.settings = "{}";
  return out;
}

// With pins (anvil.lock names the plugin), every file read must be one of them byte for byte:
// the trusted side checked the lock against the files before it started this host, and a file
// swapped since then must not run.
Status CheckPins(const PluginSource& source, const HostOptions& o,
                 const std::map<std::string, std::string>& pins) {
  if (pins.empty()) return Ok();
  auto check = [&pins](const std::string& path, const std::string& code) -> Status {
    auto it = pins.find(path);
    if (it == pins.end() || Sha256Hex(code) != it->second) {
      return Fail("denied", "plugin file " + path +
                                " is not the one that was checked (against anvil.lock, or for "
                                "the plugin's grant): it changed since; nothing of the plugin "
                                "ran (fix: run it again, or reload the plugin)");
    }
    return Ok();
  };
  ANVIL_RETURN_IF_ERROR(check(source.entry_name, source.entry_code));
  const std::string ext = o.runtime == "lua" ? ".lua" : ".js";
  for (const auto& [name, code] : source.modules) {
    // "lib.util" (Lua) or "lib/util" (JS) -> "lib/util.lua" / "lib/util.js"
    ANVIL_RETURN_IF_ERROR(check("lib/" + name.substr(4) + ext, code));
  }
  return Ok();
}

// Frames on the session channel, in both directions.
class SessionChannel {
 public:
  explicit SessionChannel(int fd) : fd_(fd) {}
  // The trusted side stops a host whose frame is over its cap (ipc::kMaxFrameBytes): a message
  // that would be is refused here ("limit"), and the channel stays in step.
  Status Send(const std::string& bytes) {
    ANVIL_RETURN_IF_ERROR(ipc::CheckFrameFits(bytes));
    if (!fd_io::SendAll(fd_, bytes, 0, fd_io::Wait::NoWait())) {
      return SysFail("io", "session channel send");
    }
    return Ok();
  }
  // Blocks for the next frame; nullopt at EOF.
  Result<std::optional<ipc::Frame>> Next() {
    char buf[65536];
    while (true) {
      ANVIL_TRY(frame, reader_.Next());
      if (*frame) return frame;
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) return std::optional<ipc::Frame>();
      if (n < 0) return SysFail("io", "session channel recv");
      reader_.Append(buf, static_cast<size_t>(n));
    }
  }

 private:
  int fd_;
  ipc::FrameReader reader_;
};

class HostApiImpl : public HostApi {
 public:
  HostApiImpl(ipc::GatewayClient& gateway, SessionChannel& session)
      : gateway_(gateway), session_(session) {}

  Result<std::vector<std::string>> Gateway(const std::string& op,
                                           std::vector<std::string> args) override {
    auto r = gateway_.Call(op, std::move(args));
    // A request over the frame cap was refused before sending: its own error, the channel is
    // intact. Anything else means the channel broke.
    if (!r && r.error().code == "limit") return tl::unexpected(r.error());
    if (!r) return Fail("io", "gateway unreachable: " + r.error().message);
    if (!r->ok) return Fail(ErrorCode::FromWire(r->fields[0]), r->fields[1]);
    return std::move(r->fields);
  }

  Result<std::vector<std::string>> Editor(const std::string& op,
                                          std::vector<std::string> args) override {
    uint64_t id = next_id_++;
    ANVIL_RETURN_IF_ERROR(session_.Send(ipc::EncodeRequest({id, "", op, std::move(args)})));
    while (true) {
      ANVIL_TRY(frame, session_.Next());
      if (!*frame) return Fail("io", "the editor side closed the channel");
      if ((*frame)->kind == ipc::FrameKind::kResponse) {
        ANVIL_TRY(r, ipc::DecodeResponse((*frame)->body));
        if (r->id != id) continue;
        if (!r->ok) return Fail(ErrorCode::FromWire(r->fields[0]), r->fields[1]);
        return std::move(r->fields);
      }
      pending_.push_back(std::move(**frame));  // a request for later
    }
  }

  void Log(std::string_view level, std::string_view text) override {
    // Capped: a plugin printing in a loop cannot flood the trusted side.
    std::string t(text.substr(0, 64 * 1024));
    (void)session_.Send(ipc::EncodeRequest({0, "", "log", {std::string(level), t}}));
  }

  std::deque<ipc::Frame>& pending() { return pending_; }

 private:
  ipc::GatewayClient& gateway_;
  SessionChannel& session_;
  uint64_t next_id_ = 1;
  std::deque<ipc::Frame> pending_;
};

// Test hook: after lockdown the host attacks its own sandbox, as a compromised VM would.
// Exit 0 when the kernel stopped it, 99 when it got through.
[[noreturn]] void SelfAttack(const std::string& attack) {
  long rc = -1;
  if (attack == "open") {
    rc = ::open("/etc/passwd", O_RDONLY);
  } else if (attack == "openat2") {
    open_how how{};
    how.flags = O_RDONLY;
    rc = syscall(SYS_openat2, AT_FDCWD, "/etc/passwd", &how, sizeof(how));
  } else if (attack == "socket") {
    rc = ::socket(AF_INET, SOCK_STREAM, 0);
  } else if (attack == "unix-socket") {
    rc = ::socket(AF_UNIX, SOCK_STREAM, 0);
  } else if (attack == "execve") {
    char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
    rc = ::execve("/bin/true", argv, nullptr);
  } else if (attack == "fork") {
    rc = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (rc == 0) _exit(0);
  } else if (attack == "ptrace") {
    rc = ::ptrace(PTRACE_ATTACH, getppid(), nullptr, nullptr);
  } else if (attack == "mmap-exec") {
    void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    rc = p == MAP_FAILED ? -1 : 0;
  } else if (attack == "mprotect-exec") {
    void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    rc = p == MAP_FAILED ? 0 : ::mprotect(p, 4096, PROT_READ | PROT_EXEC);
  } else if (attack == "pipe") {
    int fds[2];
    rc = ::pipe2(fds, O_CLOEXEC);
  } else if (attack == "kill-parent") {
    rc = ::kill(getppid(), 0);
  } else {
    std::cerr << "unknown attack " << attack << "\n";
    _exit(2);
  }
  int err = errno;
  bool blocked = rc < 0;
  std::string line = "attack " + attack + ": " +
                     (blocked ? std::string("blocked (") + std::strerror(err) + ")" : "SUCCEEDED") +
                     "\n";
  ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
  _exit(blocked ? 0 : 99);
}

}  // namespace

int RunPluginHost(const HostOptions& o) {
  auto fail = [](const std::string& text) {
    std::cerr << "anvil-plugin-host: " << text << "\n";
    return 125;
  };
  if (o.runtime != "lua" && o.runtime != "js") return fail("invalid: runtime must be lua or js");
  if (o.session_fd < 0 || o.token_fd < 0) {
    return fail("invalid: --session-fd and --token-fd are required");
  }
  // Without --gateway-fd the connection to the gateway comes with the handoff.
  auto handoff = ReadHandoff(o.token_fd, /*want_gateway=*/o.gateway_fd < 0);
  if (!handoff) return fail(handoff.error().ToString());
  // A plugin file that cannot be read (missing, a symlink, too large) or that anvil.lock does
  // not pin is the plugin's failure, not the sandbox's: it is answered as the load error (and
  // said on stderr), after the lockdown like any other, so exit 125 keeps meaning "a sandbox
  // layer could not be applied".
  std::optional<Error> load_error;
  auto source = ReadPluginSource(o);
  if (!source) {
    load_error = source.error();
  } else if (auto s = CheckPins(*source, o, handoff->pins); !s) {
    load_error = s.error();
  }
  if (load_error) std::cerr << "anvil-plugin-host: " << load_error->ToString() << "\n";

  ipc::GatewayClient gateway(
      o.gateway_fd >= 0 ? UniqueFd(o.gateway_fd) : std::move(handoff->gateway),
      std::move(handoff->token));
  SessionChannel session(o.session_fd);
  HostApiImpl api(gateway, session);
  std::unique_ptr<Runtime> runtime = o.runtime == "lua"
                                         ? MakeLuaRuntime(api, o.limits, handoff->settings)
                                         : MakeJsRuntime(api, o.limits, handoff->settings);
  if (!runtime) return fail("sandbox: cannot create the " + o.runtime + " VM");

  // Fail closed: if any layer cannot be applied, the plugin never runs.
  if (auto s = LockDown(o.lockdown); !s) return fail(s.error().ToString());
  if (!o.test_attack_after_lockdown.empty()) SelfAttack(o.test_attack_after_lockdown);

  if (load_error) {
    // Nothing of the plugin runs; the first request gets the error.
  } else if (auto hello = gateway.Hello(o.plugin_id, o.workspace); !hello) {
    load_error =
        Error{hello.error().error_code(), "gateway refused this host: " + hello.error().message, 0};
  } else if (auto s = runtime->Load(*source); !s) {
    load_error = s.error();
  }

  while (true) {
    ipc::Frame frame;
    if (!api.pending().empty()) {
      frame = std::move(api.pending().front());
      api.pending().pop_front();
    } else {
      auto next = session.Next();
      if (!next || !*next) return 0;  // the trusted side is gone
      frame = std::move(**next);
    }
    if (frame.kind != ipc::FrameKind::kRequest) continue;
    auto request = ipc::DecodeRequest(frame.body);
    if (!request) return fail("invalid: malformed request from the editor side");
    ipc::Response response;
    if (load_error) {
      response = ipc::Response::Error(request->id, *load_error);
    } else if (request->op == "host.describe") {
      response = ipc::Response{request->id, true, runtime->Commands()};
    } else if (request->op == "command.run" && request->args.size() == 2) {
      auto result = runtime->RunCommand(request->args[0], request->args[1]);
      // The result crosses to Anvil as JSON, which holds Unicode text only: a JS string with a
      // lone surrogate (escaped as "\ud800" by JSON.stringify) is refused here, by name, instead
      // of reaching the trusted side as text it cannot read. (One over the size cap is refused
      // below without reading it.)
      if (result && result->size() <= ipc::kMaxFrameBytes && !nlohmann::json::accept(*result)) {
        result = Fail("invalid",
                      "the command's result is not valid Unicode text (a string holds a lone "
                      "surrogate or bytes that are not UTF-8)");
      }
      response = result ? ipc::Response{request->id, true, {std::move(*result)}}
                        : ipc::Response::Error(request->id, result.error());
    } else {
      response = ipc::Response::Error(request->id, "invalid", "unknown request " + request->op);
    }
    std::string encoded = ipc::EncodeResponse(response);
    if (auto fits = ipc::CheckFrameFits(encoded); !fits) {
      // A result the trusted side could not take in one frame: say so, with the cap.
      response = ipc::Response::Error(
          request->id, "limit",
          "the command's result is " + std::to_string(encoded.size() - 4) +
              " bytes, over the cap of " + std::to_string(ipc::kMaxFrameBytes) +
              " bytes for one message to Anvil; return less (write large output to a file)");
      encoded = ipc::EncodeResponse(response);
    }
    if (!session.Send(encoded)) return 0;
    if (load_error) return 1;
  }
}

}  // namespace anvil::host
