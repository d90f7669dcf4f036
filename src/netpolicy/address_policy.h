// Which IP addresses sys.net.fetch may connect to (threat model T2). The decision is one table in
// address_policy.cc -- review that table, not code paths -- plus one extra rule: addresses
// assigned to this machine's own interfaces are never a target either.
//
// Policy: only global unicast. IPv4 is allowed unless a special-purpose range (RFC 6890 and
// successors) denies it; IPv6 is allowed only inside 2000::/3 and outside the special-purpose
// ranges carved out of it. Every IPv6 form that embeds or translates an IPv4 address (mapped,
// compatible, SIIT-translated, NAT64, 6to4, Teredo) is denied even when the embedded IPv4 address
// is public: each is a way to reach an IPv4 network through a path this policy cannot see.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "netpolicy/ip_address.h"

namespace anvil {

enum class AddressAction : std::uint8_t { kAllow, kDeny };

// One row of the table. The most specific (longest) prefix that contains an address decides;
// catch-all rows 0.0.0.0/0 (allow) and ::/0 (deny) make every address match at least one row.
struct AddressRange {
  std::string_view prefix;  // CIDR text, host bits zero, e.g. "100.64.0.0/10"
  AddressAction action;
  std::string_view what;  // why, for people: "shared address space / CGNAT (RFC 6598)"
};

std::span<const AddressRange> AddressTable();

struct AddressVerdict {
  bool allowed = false;
  // Names the deciding range, e.g. "127.0.0.0/8 loopback (RFC 1122)"; used in "denied: ..."
  // messages. Also set when allowed ("2000::/3 global unicast").
  std::string reason;
};

// The table lookup. Pure: no I/O, no configuration. If the table itself failed to parse (a bug
// the unit tests catch), every address is denied.
AddressVerdict ClassifyAddress(const IpAddress& address);

// Denies `address` when it is one of `local_addresses` (this machine's interface addresses,
// net/local_interfaces.h: a global address assigned to a local interface would pass the table
// yet reach a service bound on this host); allowed (empty reason) otherwise.
AddressVerdict CheckNotLocalInterface(const IpAddress& address,
                                      std::span<const IpAddress> local_addresses);

}  // namespace anvil
