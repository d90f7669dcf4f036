// The decision half of `anvil sandbox --network proxy` (issue 8): which targets the proxy may
// reach for a sandboxed command. Pure: text in, verdict out; the proxy then resolves and checks
// every address with the same ResolveAndValidate / ConnectPolicy as sys.net.fetch.
//
//   --allow-host HOST[:PORT]   exact host (the fetch URL host grammar: lower-case ASCII labels or
//                              a strict IP literal, IPv6 in brackets), PORT defaults to 443.
//                              No wildcards, no suffix matching.
//   CONNECT HOST:PORT          (HTTPS and anything else tunnelled) — port required
//   GET http://HOST[:PORT]/... (plain HTTP forwarding) — port defaults to 80
// A target is allowed iff (host, port) equals an allow entry exactly.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "netpolicy/ip_address.h"

namespace anvil {

struct ProxyTarget {
  std::string host;  // lower-case; IPv6 literal with brackets
  std::uint16_t port = 0;
  std::optional<IpAddress> literal;  // set when host is an IP literal

  bool operator==(const ProxyTarget& other) const {
    return host == other.host && port == other.port;
  }
};

// One --allow-host value. Errors are "invalid: --allow-host ...".
Result<ProxyTarget> ParseAllowHost(std::string_view text);

// The authority of a CONNECT request ("host:443", "[::1]:8443").
Result<ProxyTarget> ParseConnectTarget(std::string_view authority);

// An absolute-form plain-HTTP request target ("http://host[:port]/path?q"); `origin_form` gets
// "/path?q" (what is sent on to the origin server).
Result<ProxyTarget> ParseHttpTarget(std::string_view url, std::string* origin_form);

// "denied: host not allowed: HOST:PORT (allowed: ...)" unless the target is an allow entry.
Status CheckProxyTarget(const ProxyTarget& target, const std::vector<ProxyTarget>& allowed);

}  // namespace anvil
