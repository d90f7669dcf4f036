// The proxy of `anvil sandbox --network proxy` (issue 8), run in its own process (anvil-proxy)
// outside the sandbox. The sandbox's init creates listening sockets on 127.0.0.1:3128 and
// [::1]:3128 *inside* the command's network namespace and hands them over (SCM_RIGHTS); this
// proxy accepts on them from outside, so no bridge process runs inside and the namespace still
// has nothing but loopback. Each connection is one request:
//   CONNECT host:port      → tunnel (HTTPS; TLS stays end to end between the command and origin)
//   METHOD http://host/... → plain HTTP forwarding (origin-form, Connection: close)
// Each target must be an --allow-host entry (exact host and port), then every DNS answer must
// pass the same address rules as sys.net.fetch (ConnectPolicy; the port rule is the allowlist's),
// the socket dials only a validated address and the dialled peer is checked again. The site stays
// the allowed one on a shared server: plain HTTP goes on with Host set to the URI's authority,
// and a tunnel's TLS ClientHello must name the CONNECT host (net/tls_client_hello.h). Refusals are
// a 403 whose body names the rule; one audit line per connection; caps on connections, header
// bytes, transferred bytes, idle time and total time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "net/local_interfaces.h"
#include "netpolicy/connect_policy.h"
#include "netpolicy/proxy_policy.h"
#include "netpolicy/resolver.h"

namespace anvil {

struct ProxyLimits {
  uint32_t max_connections = 64;  // concurrent; beyond: 503
  size_t max_head_bytes = 16 * 1024;
  std::chrono::milliseconds head_timeout{10000};
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds idle_timeout{300000};   // no byte moved either way
  std::chrono::milliseconds max_duration{3600000};  // from accept, also while data flows
  // Per connection, both directions together: up to this many are forwarded; one byte more read
  // from either side ends the connection ("byte cap").
  uint64_t max_bytes = 1ull << 32;
};

struct ProxyAuditRecord {
  std::string kind;     // "connect" or "http"
  std::string target;   // host:port as requested ("" when unparsable)
  std::string verdict;  // "allow", "deny", "error"
  std::string reason;
  std::string address;  // the dialled address
  uint64_t bytes_up = 0, bytes_down = 0;
  double duration_ms = 0;
};

struct ProxyConfig {
  std::vector<ProxyTarget> allowed;
  // The address rules with the test exemptions. Its list of this machine's addresses is only
  // the start's: every connection is checked against `local_addresses()` taken afresh, so that
  // an address that came up after the start (another network, a VPN, an IPv6 temporary
  // address) is never a target. Null `local_addresses`: `policy`'s own list (tests).
  ConnectPolicy policy{{}};
  std::function<Result<std::vector<IpAddress>>()> local_addresses = LocalInterfaceAddresses;
  Resolver* resolver = nullptr;  // thread-safe
  ProxyLimits limits;
  std::function<void(const ProxyAuditRecord&)> audit;  // thread-safe
};

// The address rule for a proxied target: an --unsafe-test-allow-address entry for exactly
// (address, port), or an address ConnectPolicy accepts as global (its 443 rule stands for "the
// port the allowlist approved").
AddressVerdict CheckProxyAddress(const ConnectPolicy& policy, const IpAddress& address,
                                 std::uint16_t port);

class HttpProxy {
 public:
  explicit HttpProxy(ProxyConfig config) : config_(std::move(config)) {}
  // Accepts on `listen_fds` until `stop` becomes true (checked every 100 ms); one thread per
  // connection. Returns when stopped and every connection thread has ended.
  void Serve(const std::vector<int>& listen_fds, const std::atomic<bool>& stop);
  // Serves one accepted connection to the end (exposed for tests).
  void HandleConnection(int client_fd);

 private:
  ProxyConfig config_;
  std::atomic<uint32_t> active_{0};
};

}  // namespace anvil
