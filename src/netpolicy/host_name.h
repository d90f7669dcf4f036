// The one host-name grammar of Anvil's network policy (threat model T2). A manifest's `net.hosts`
// entry (policy/manifest.cc), a grant's allowlist entry and a URL's host (netpolicy/url_policy.h)
// are all read by these functions, so a host the manifest accepts is exactly a host a URL can
// name, and no spelling the URL parser refuses can be granted.
//
//   HOST = label *("." label)             labels of 1..63 bytes of a-z 0-9 '-', not starting or
//                                         ending with '-'; at most 253 bytes; no trailing dot
//        | dotted-quad IPv4               a last label that looks numeric (digits, or 0x + hex)
//                                         must make the whole host a strict dotted quad, so
//                                         "0177.0.0.1", "0x7f.1", "127.1" or "3232235521" are
//                                         refused rather than read as 127.0.0.1 by someone else
//        | "[" IPv6 "]"                   no zone id; IPv4 in brackets is refused
//
// Errors are "invalid" and name the text (escaped) and the fix.
#pragma once

#include <optional>
#include <string_view>

#include "common/result.h"
#include "netpolicy/ip_address.h"

namespace anvil {

inline constexpr std::size_t kMaxHostNameBytes = 253;  // RFC 1035, text form
inline constexpr std::size_t kMaxHostLabelBytes = 63;

// `host`: lower-case, without brackets. Returns the address when it is a dotted-quad literal.
Result<std::optional<IpAddress>> CheckHostName(std::string_view host);

// The text between "[" and "]": an IPv6 address without zone id.
Result<IpAddress> CheckIpv6Literal(std::string_view inner);

// A host exactly as a grant must spell it (manifest `net.hosts`): the grammar above, plus one
// spelling per host — lower case, an IPv6 literal in brackets and in canonical form — and
// pointed messages for the usual mistakes (a scheme, a port, a path, user information, a
// wildcard, a non-ASCII name).
Status ValidateGrantHost(std::string_view host);

}  // namespace anvil
