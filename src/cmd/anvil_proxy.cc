// anvil-proxy: the outside half of `anvil sandbox --network proxy`. Started by `anvil sandbox`
// (never by hand): validates its allowlist, confines itself, reports "ok" on --status-fd, then
// receives the listening sockets the sandbox's init made inside the command's network namespace
// (SCM_RIGHTS on --channel-fd) and serves them until SIGTERM.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <string>
#include <vector>

#include "common/std_fds.h"
#include "ipc/fd_passing.h"
#include "linux/landlock.h"
#include "linux/self_confinement.h"
#include "net/http_proxy.h"
#include "net/proxy_flags.h"
#include "net/proxy_service.h"
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
  anvil::ProxyStatusPipe status{o.status_fd};
  auto fail = [&status](const std::string& what) {
    status.Report(what);
    std::cerr << "anvil-proxy: " << what << "\n";
    return 125;
  };
  if (o.channel_fd < 0) return fail("invalid: --channel-fd is required");
  anvil::ProxyConfig config;
  anvil::CaresResolverOptions resolver_options;
  if (auto s = anvil::ConfigureProxy(o, config, resolver_options); !s) {
    return fail(s.error().ToString());
  }
  anvil::CaresResolver resolver(resolver_options);
  config.resolver = &resolver;
  anvil::ProxyAuditSink audit(status);
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
