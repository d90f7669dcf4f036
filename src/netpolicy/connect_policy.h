// The final word on one (address, port) the fetch path is about to connect to: the address table,
// the machine's own interface addresses, port 443 -- and the trusted-side test exemption
// --unsafe-test-allow-address. The gateway builds one ConnectPolicy at start-up from its own
// command line; it is passed separately from the URL and the grant and is never derived from
// them, so nothing a plugin or a workspace file controls can widen it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "netpolicy/address_policy.h"
#include "netpolicy/ip_address.h"

namespace anvil {

inline constexpr std::uint16_t kHttpsPort = 443;

// One --unsafe-test-allow-address ADDR[:PORT]: treat ADDR as global and, when PORT is given,
// allow PORT for it instead of 443. Test-only: lets the positive path run against servers on
// loopback.
struct UnsafeTestAllowAddress {
  IpAddress address;
  std::optional<std::uint16_t> port;  // nullopt: 443

  std::uint16_t EffectivePort() const { return port.value_or(kHttpsPort); }
  bool operator==(const UnsafeTestAllowAddress&) const = default;
};

// Accepts "127.0.0.2", "127.0.0.2:8443", "::1", "[::1]" and "[::1]:8443". The address must be
// a strict literal (ParseIpLiteral); the port 1..65535 in canonical decimal.
Result<UnsafeTestAllowAddress> ParseUnsafeTestAllowAddress(std::string_view text);

// One DNS server given as ADDR:PORT ("127.0.0.1:5353", "[::1]:5353"); the port is required
// (--unsafe-test-resolver; asked by net/cares_resolver).
struct DnsServer {
  IpAddress address;
  std::uint16_t port = 53;
};
Result<DnsServer> ParseDnsServer(std::string_view text);

struct UnsafeTestOptions {
  std::vector<UnsafeTestAllowAddress> allow_addresses;  // empty in production

  // True when some exempted address may be contacted on `port` (used to let a non-443 URL port
  // through the URL check; the per-address decision is still ConnectPolicy::Check).
  bool PermitsPort(std::uint16_t port) const;
};

class ConnectPolicy {
 public:
  // `local_addresses`: this machine's addresses (net/local_interfaces.h,
  // ConnectPolicyForThisMachine) in production, a fixed list in tests. No default: "no local
  // addresses" must be written out, never forgotten.
  explicit ConnectPolicy(std::vector<IpAddress> local_addresses,
                         UnsafeTestOptions unsafe_test = {});

  // Allowed iff (address, port) is an --unsafe-test-allow-address entry, or port is 443 and the
  // address is global by the table and not assigned to this machine. The reason names the
  // deciding rule.
  AddressVerdict Check(const IpAddress& address, std::uint16_t port) const;

  const UnsafeTestOptions& unsafe_test() const { return unsafe_test_; }
  std::span<const IpAddress> local_addresses() const { return local_addresses_; }

 private:
  std::vector<IpAddress> local_addresses_;
  UnsafeTestOptions unsafe_test_;
};

}  // namespace anvil
