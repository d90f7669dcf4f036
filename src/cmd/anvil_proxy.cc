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
#include "net/cares_resolver.h"
#include "net/http_proxy.h"
#include "net/local_interfaces.h"
#include "policy/sandbox_policy.h"

namespace {

std::atomic<bool> g_stop{false};
void OnTerm(int) { g_stop.store(true); }

constexpr char kUsage[] =
    R"(usage: anvil-proxy --channel-fd N --status-fd N [--allow-host H[:PORT]]...
                   [--audit-log FILE] [--unsafe-test-allow-address ADDR[:PORT]]...
                   [--unsafe-test-resolver ADDR:PORT]

The proxy of `anvil sandbox --network proxy`; started by `anvil sandbox`, not by hand.
)";

anvil::Status Harden(const std::string& audit_log) {
  using namespace anvil::landlock;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return anvil::SysFail("sandbox", "no_new_privs");
  }
  auto probe = ProbeAbi();
  if (probe.abi < 1) return anvil::Fail("sandbox", "anvil-proxy needs Landlock: " + probe.reason);
  auto rs = Ruleset::Create(probe.abi, /*handle_net=*/false, /*scopes=*/0);
  if (!rs) return tl::unexpected(rs.error());
  // Name resolution reads /etc (resolv.conf, hosts, nsswitch.conf) and loads NSS modules.
  for (auto root : anvil::kPlatformReadRoots) {
    if (auto s = rs->AllowPath(std::string(root), kFsRead, true); !s) return s;
  }
  if (!audit_log.empty()) {
    if (auto s = rs->AllowPath(audit_log, kFsWriteFile | kFsReadFile); !s) return s;
  }
  if (auto s = rs->Restrict(); !s) return s;
  auto filter = anvil::seccomp::BuildServiceFilter();
  if (!filter) return tl::unexpected(filter.error());
  return filter->Install();
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

bool ParseFd(const std::string& text, int& out) {
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 0 || v > 65535) return false;
  out = static_cast<int>(v);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything opens a descriptor (common/std_fds.h).
  if (!anvil::EnsureStandardDescriptors()) return 125;
  std::vector<std::string> args(argv + 1, argv + argc);
  int channel = -1, status_fd = -1;
  std::vector<std::string> allow, unsafe;
  std::string audit_path;
  std::string test_resolver;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (i + 1 >= args.size()) {
      std::cerr << "anvil-proxy: invalid: " << a << " needs a value\n" << kUsage;
      return 2;
    }
    const std::string& v = args[++i];
    bool ok = true;
    if (a == "--channel-fd") {
      ok = ParseFd(v, channel);
    } else if (a == "--status-fd") {
      ok = ParseFd(v, status_fd);
    } else if (a == "--allow-host") {
      allow.push_back(v);
    } else if (a == "--unsafe-test-allow-address") {
      unsafe.push_back(v);
    } else if (a == "--unsafe-test-resolver") {
      test_resolver = v;
    } else if (a == "--audit-log") {
      audit_path = v;
    } else {
      std::cerr << "anvil-proxy: invalid: unknown option " << a << "\n";
      return 2;
    }
    if (!ok) {
      std::cerr << "anvil-proxy: invalid: " << a << " " << v << "\n";
      return 2;
    }
  }
  auto report = [&](const std::string& line) {
    if (status_fd < 0) return;
    std::string text = line + "\n";
    ssize_t ignored = ::write(status_fd, text.data(), text.size());
    (void)ignored;
    if (line != "ok") {
      ::close(status_fd);
      status_fd = -1;
    }
  };
  auto fail = [&](const std::string& what) {
    report(what);
    std::cerr << "anvil-proxy: " << what << "\n";
    return 125;
  };
  if (channel < 0) return fail("invalid: --channel-fd is required");

  anvil::ProxyConfig config;
  for (const auto& h : allow) {
    auto t = anvil::ParseAllowHost(h);
    if (!t) return fail(t.error().ToString());
    config.allowed.push_back(*t);
  }
  anvil::UnsafeTestOptions test_options;
  for (const auto& u : unsafe) {
    auto t = anvil::ParseUnsafeTestAllowAddress(u);
    if (!t) return fail("invalid: --unsafe-test-allow-address: " + t.error().message);
    test_options.allow_addresses.push_back(*t);
  }
  auto policy = anvil::ConnectPolicyForThisMachine(test_options);
  if (!policy) return fail(policy.error().ToString());
  config.policy = *policy;
  // The same resolver as sys.net.fetch: every A and AAAA answer, bounded in time, no cache.
  anvil::CaresResolverOptions resolver_options;
  if (!test_resolver.empty()) {
    auto server = anvil::ParseDnsServer(test_resolver);
    if (!server) return fail("invalid: --unsafe-test-resolver: " + server.error().message);
    resolver_options.server = *server;
  }
  anvil::CaresResolver resolver(resolver_options);
  config.resolver = &resolver;

  anvil::UniqueFd audit_fd;
  if (!audit_path.empty()) {
    audit_fd.Reset(::open(audit_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
    if (!audit_fd) return fail("io: cannot open audit log " + audit_path);
  }
  std::mutex audit_mu;
  // After "ok", the status descriptor carries each distinct refusal as one JSON line, so that
  // `anvil sandbox` can say what was refused once the command has exited. Never blocking: a
  // full pipe drops the line (the audit log keeps everything).
  std::set<std::string> refusals_sent;
  constexpr size_t kMaxRefusalLines = 32;
  config.audit = [&](const anvil::ProxyAuditRecord& r) {
    if (r.verdict == "deny" && status_fd >= 0) {
      std::lock_guard lock(audit_mu);
      std::string key = r.target + "\n" + r.reason;
      if (refusals_sent.size() < kMaxRefusalLines && refusals_sent.insert(key).second) {
        nlohmann::json refusal = {{"refused", r.target}, {"reason", r.reason}};
        std::string text =
            refusal.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
        ssize_t ignored = ::write(status_fd, text.data(), text.size());
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
    std::lock_guard lock(audit_mu);
    if (audit_fd) {
      ssize_t ignored = ::write(audit_fd.Get(), text.data(), text.size());
      (void)ignored;
    } else {
      std::cerr << text;
    }
  };

  struct sigaction sa {};
  sa.sa_handler = OnTerm;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  if (auto s = Harden(audit_path); !s) return fail(s.error().ToString());
  report("ok");
  if (status_fd >= 0) fcntl(status_fd, F_SETFL, fcntl(status_fd, F_GETFL) | O_NONBLOCK);

  std::vector<int> listeners = ReceiveListeners(channel);
  ::close(channel);
  if (listeners.empty()) {
    // The sandbox never came up (its own error says why); nothing to serve.
    return 0;
  }
  anvil::HttpProxy proxy(std::move(config));
  proxy.Serve(listeners, g_stop);
  for (int fd : listeners) ::close(fd);
  return 0;
}
