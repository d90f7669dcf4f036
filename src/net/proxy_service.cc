#include "net/proxy_service.h"

#include <fcntl.h>
#include <unistd.h>

#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/capped_log.h"
#include "net/local_interfaces.h"

namespace anvil {

void ProxyStatusPipe::Report(const std::string& line) {
  if (fd < 0) return;
  std::string text = line + "\n";
  ssize_t ignored = ::write(fd, text.data(), text.size());
  (void)ignored;
  if (line != "ok") {
    ::close(fd);
    fd = -1;
  }
}

bool ProxyAuditSink::Open(const std::string& path) {
  // Read and write: the file is kept under the audit log's cap (common/capped_log.h). Never
  // through a symbolic link, as the gateway and `anvil exec` open the same file.
  fd_.Reset(::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  return static_cast<bool>(fd_);
}

void ProxyAuditSink::Record(const ProxyAuditRecord& r) {
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
    (void)AppendCappedLines(fd_.Get(), text);
  } else {
    std::cerr << text;
  }
}

Status ConfigureProxy(const ProxyOptions& o, ProxyConfig& config,
                      CaresResolverOptions& resolver_options) {
  for (const auto& h : o.allow_hosts) {
    ANVIL_TRY(t, ParseAllowHost(h));
    config.allowed.push_back(*t);
  }
  UnsafeTestOptions test_options;
  for (const auto& u : o.unsafe_test_allow_addresses) {
    auto t = ParseUnsafeTestAllowAddress(u);
    if (!t) return Fail("invalid", "--unsafe-test-allow-address: " + t.error().message);
    test_options.allow_addresses.push_back(*t);
  }
  ANVIL_TRY(policy, ConnectPolicyForThisMachine(test_options));
  config.policy = *policy;
  // The same resolver as sys.net.fetch: every A and AAAA answer, bounded in time, no cache.
  if (!o.unsafe_test_resolver.empty()) {
    auto server = ParseDnsServer(o.unsafe_test_resolver);
    if (!server) return Fail("invalid", "--unsafe-test-resolver: " + server.error().message);
    resolver_options.server = *server;
  }
  return Ok();
}

}  // namespace anvil
