// anvil-proxy: the outside half of `anvil sandbox --network proxy`. Started by `anvil sandbox`
// (never by hand): validates its allowlist, confines itself, reports "ok" on --status-fd, then
// receives the listening sockets the sandbox's init made inside the command's network namespace
// (SCM_RIGHTS on --channel-fd) and serves them until SIGTERM.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/std_fds.h"
#include "common/unique_fd.h"
#include "ipc/fd_passing.h"
#include "linux/landlock.h"
#include "linux/seccomp.h"
#include "linux/self_confinement.h"
#include "net/cares_resolver.h"
#include "net/http_proxy.h"
#include "net/local_interfaces.h"
#include "net/proxy_flags.h"
#include "policy/display_text.h"
#include "policy/sandbox_policy.h"

namespace {

std::atomic<bool> g_stop{false};
void OnTerm(int) { g_stop.store(true); }

anvil::Status Harden(const std::string& audit_log) {
  using namespace anvil::landlock;
  anvil::confine::SelfConfinement plan;
  plan.no_landlock = [](const std::string& reason) {
    return "anvil-proxy needs Landlock: " + reason;
  };
  plan.landlock = [&](int) {
    anvil::confine::LandlockPlan p;
    // Name resolution reads /etc (resolv.conf, hosts, nsswitch.conf) and loads NSS modules.
    for (auto root : anvil::kPlatformReadRoots) {
      p.rules.push_back({std::string(root), kFsRead, true});
    }
    if (!audit_log.empty()) p.rules.push_back({audit_log, kFsWriteFile | kFsReadFile, false});
    return p;
  };
  plan.filter = anvil::confine::Filter::kService;
  return anvil::confine::ConfineSelf(plan);
}

// Receives the listening sockets (one message, up to 4 descriptors).
std::vector<int> ReceiveListeners(int channel) {
  std::vector<int> fds;
  pollfd p{channel, POLLIN, 0};
  if (poll(&p, 1, 30000) <= 0) return fds;
  char byte;
  if (anvil::ipc::ReceiveWithFds(channel, &byte, 1, fds, anvil::ipc::kMaxPassedFds) <= 0) {
    return {};
  }
  return fds;
}

// --status-fd: "ok" or why not (then closed), and after "ok" the refusals (AuditSink).
struct StatusPipe {
  int fd = -1;
  void Report(const std::string& line) {
    if (fd < 0) return;
    std::string text = line + "\n";
    ssize_t ignored = ::write(fd, text.data(), text.size());
    (void)ignored;
    if (line != "ok") {
      ::close(fd);
      fd = -1;
    }
  }
};

// The allowlist, the connect policy and the resolver's options, from the flags.
anvil::Status Configure(const anvil::ProxyOptions& o, anvil::ProxyConfig& config,
                        anvil::CaresResolverOptions& resolver_options) {
  for (const auto& h : o.allow_hosts) {
    auto t = anvil::ParseAllowHost(h);
    if (!t) return tl::unexpected(t.error());
    config.allowed.push_back(*t);
  }
  anvil::UnsafeTestOptions test_options;
  for (const auto& u : o.unsafe_test_allow_addresses) {
    auto t = anvil::ParseUnsafeTestAllowAddress(u);
    if (!t) return anvil::Fail("invalid", "--unsafe-test-allow-address: " + t.error().message);
    test_options.allow_addresses.push_back(*t);
  }
  auto policy = anvil::ConnectPolicyForThisMachine(test_options);
  if (!policy) return tl::unexpected(policy.error());
  config.policy = *policy;
  // The same resolver as sys.net.fetch: every A and AAAA answer, bounded in time, no cache.
  if (!o.unsafe_test_resolver.empty()) {
    auto server = anvil::ParseDnsServer(o.unsafe_test_resolver);
    if (!server) return anvil::Fail("invalid", "--unsafe-test-resolver: " + server.error().message);
    resolver_options.server = *server;
  }
  return anvil::Ok();
}

// Every connection's record: one JSON line in the audit log (or on stderr). After "ok", the
// status descriptor carries each distinct refusal as one JSON line, so that `anvil sandbox` can
// say what was refused once the command has exited. Never blocking: a full pipe drops the line
// (the audit log keeps everything).
class AuditSink {
 public:
  explicit AuditSink(const StatusPipe& status) : status_(status) {}
  bool Open(const std::string& path) {
    fd_.Reset(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
    return static_cast<bool>(fd_);
  }
  void Record(const anvil::ProxyAuditRecord& r) {
    if (r.verdict == "deny" && status_.fd >= 0) {
      std::lock_guard lock(mu_);
      std::string key = r.target + "\n" + r.reason;
      if (refusals_sent_.size() < kMaxRefusalLines && refusals_sent_.insert(key).second) {
        nlohmann::json refusal = {{"refused", r.target}, {"reason", r.reason}};
        std::string text =
            refusal.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
        ssize_t ignored = ::write(status_.fd, text.data(), text.size());
        (void)ignored;
      }
    }
    nlohmann::json line = {{"time", std::time(nullptr)},
                           {"op", "proxy." + (r.kind.empty() ? std::string("accept") : r.kind)},
                           {"target", r.target},
                           {"verdict", r.verdict},
                           {"reason", r.reason},
                           {"address", r.address},
                           {"bytes_up", r.bytes_up},
                           {"bytes_down", r.bytes_down},
                           {"duration_ms", static_cast<uint64_t>(r.duration_ms)}};
    std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    std::lock_guard lock(mu_);
    if (fd_) {
      ssize_t ignored = ::write(fd_.Get(), text.data(), text.size());
      (void)ignored;
    } else {
      std::cerr << text;
    }
  }

 private:
  static constexpr size_t kMaxRefusalLines = 32;
  const StatusPipe& status_;
  anvil::UniqueFd fd_;
  std::mutex mu_;
  std::set<std::string> refusals_sent_;
};

}  // namespace

int main(int argc, char** argv) {
  // Before anything opens a descriptor (common/std_fds.h).
  if (!anvil::EnsureStandardDescriptors()) return 125;
  anvil::ProxyOptions o;
  anvil::CommandSpec spec = anvil::ProxyFlags(o);
  spec.echo = anvil::SanitizeFlagArgument;
  auto parsed = anvil::ParseFlags(spec, std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed) {
    std::cerr << "anvil-proxy: " << parsed.error().ToString() << "\n";
    return 2;
  }
  if (parsed->help) {
    std::cout << anvil::RenderHelp(spec);
    return 0;
  }
  StatusPipe status{o.status_fd};
  auto fail = [&status](const std::string& what) {
    status.Report(what);
    std::cerr << "anvil-proxy: " << what << "\n";
    return 125;
  };
  if (o.channel_fd < 0) return fail("invalid: --channel-fd is required");
  anvil::ProxyConfig config;
  anvil::CaresResolverOptions resolver_options;
  if (auto s = Configure(o, config, resolver_options); !s) return fail(s.error().ToString());
  anvil::CaresResolver resolver(resolver_options);
  config.resolver = &resolver;
  AuditSink audit(status);
  if (!o.audit_log.empty() && !audit.Open(o.audit_log)) {
    return fail("io: cannot open audit log " + o.audit_log);
  }
  config.audit = [&audit](const anvil::ProxyAuditRecord& r) { audit.Record(r); };

  struct sigaction sa {};
  sa.sa_handler = OnTerm;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  if (auto s = Harden(o.audit_log); !s) return fail(s.error().ToString());
  status.Report("ok");
  if (status.fd >= 0) fcntl(status.fd, F_SETFL, fcntl(status.fd, F_GETFL) | O_NONBLOCK);

  std::vector<int> listeners = ReceiveListeners(o.channel_fd);
  ::close(o.channel_fd);
  if (listeners.empty()) {
    // The sandbox never came up (its own error says why); nothing to serve.
    return 0;
  }
  anvil::HttpProxy proxy(std::move(config));
  proxy.Serve(listeners, g_stop);
  for (int fd : listeners) ::close(fd);
  return 0;
}
