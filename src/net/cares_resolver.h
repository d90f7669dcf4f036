// The production Resolver (threat model T2): c-ares, asked for A and AAAA at once, returning
// every answer so that ResolveAndValidate can refuse a name when any one of them is non-global.
//
// Why c-ares and not getaddrinfo: getaddrinfo consults nsswitch (mDNS, myhostname, files) and
// offers no bound on time; c-ares speaks DNS only (plus /etc/hosts in production), is bounded by
// a deadline here, and can be pointed at a test DNS server on loopback
// (--unsafe-test-resolver) so the rebinding tests use real DNS packets.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "netpolicy/ip_address.h"
#include "netpolicy/resolver.h"

namespace anvil {

struct CaresResolverOptions {
  // nullopt: the system's resolv.conf (and /etc/hosts). Set: only this server, no hosts file.
  std::optional<DnsServer> server;
  // Whole-lookup deadline (both queries, every retry): a slow or silent resolver ends in
  // "timeout", never in a worker blocked for good.
  std::chrono::milliseconds deadline{5000};
};

class CaresResolver : public Resolver {
 public:
  explicit CaresResolver(CaresResolverOptions options) : options_(std::move(options)) {}

  // A fresh channel per lookup: no cache that could serve a stale (pre-rebinding) answer, no
  // state shared between worker threads. Names are looked up exactly as given: no search
  // domains, no HOSTALIASES.
  Result<std::vector<IpAddress>> Resolve(const std::string& host) override;

 private:
  CaresResolverOptions options_;
};

}  // namespace anvil
