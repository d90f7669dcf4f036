#include "netpolicy/address_policy.h"

#include <algorithm>
#include <memory>
#include <optional>

namespace anvil {

namespace {

constexpr AddressAction kAllow = AddressAction::kAllow;
constexpr AddressAction kDeny = AddressAction::kDeny;

// THE table. Longest matching prefix wins, so a narrower row refines the reason (or, in 2000::/3,
// the action) of a wider one. Sources: IANA IPv4/IPv6 Special-Purpose Address Registries
// (RFC 6890 and later updates). Where IANA marks part of a special range "globally reachable"
// (192.0.0.9, 192.0.0.10, 2001:1::1, 2001:3::/32, ...) the policy still denies the whole range:
// a plugin has no business fetching from anycast protocol helpers, and one rule per block is
// easier to review than the exceptions.
constexpr AddressRange kTable[] = {
    // ---- IPv4: default allow, special-purpose blocks denied ----
    {"0.0.0.0/0", kAllow, "global unicast"},
    {"0.0.0.0/8", kDeny, "this network (RFC 791); 0.0.0.0 reaches the local host on Linux"},
    {"10.0.0.0/8", kDeny, "private-use (RFC 1918)"},
    {"100.64.0.0/10", kDeny, "shared address space / CGNAT (RFC 6598)"},
    {"127.0.0.0/8", kDeny, "loopback (RFC 1122)"},
    {"169.254.0.0/16", kDeny, "link-local (RFC 3927), includes cloud metadata 169.254.169.254"},
    {"172.16.0.0/12", kDeny, "private-use (RFC 1918)"},
    {"192.0.0.0/24", kDeny, "IETF protocol assignments (RFC 6890), denied as a whole"},
    {"192.0.0.170/31", kDeny, "NAT64/DNS64 discovery (RFC 7050), in 192.0.0.0/24"},
    {"192.0.2.0/24", kDeny, "documentation TEST-NET-1 (RFC 5737)"},
    {"192.88.99.0/24", kDeny, "deprecated 6to4 relay anycast (RFC 7526)"},
    {"192.168.0.0/16", kDeny, "private-use (RFC 1918)"},
    {"198.18.0.0/15", kDeny, "benchmarking (RFC 2544)"},
    {"198.51.100.0/24", kDeny, "documentation TEST-NET-2 (RFC 5737)"},
    {"203.0.113.0/24", kDeny, "documentation TEST-NET-3 (RFC 5737)"},
    {"224.0.0.0/4", kDeny, "multicast (RFC 5771)"},
    {"240.0.0.0/4", kDeny, "reserved class E (RFC 1112)"},
    {"255.255.255.255/32", kDeny, "limited broadcast (RFC 919)"},

    // ---- IPv6: default deny, 2000::/3 allowed minus its special-purpose blocks ----
    {"::/0", kDeny, "outside 2000::/3 global unicast"},
    {"2000::/3", kAllow, "global unicast"},
    // Named denials outside 2000::/3: denied by ::/0 anyway; the rows make the reason precise.
    {"::/128", kDeny, "unspecified (RFC 4291)"},
    {"::1/128", kDeny, "loopback (RFC 4291)"},
    {"::/96", kDeny, "IPv4-compatible, deprecated (RFC 4291)"},
    {"::ffff:0:0/96", kDeny, "IPv4-mapped (RFC 4291); denied even for public IPv4"},
    {"::ffff:0:0:0/96", kDeny, "IPv4-translated SIIT (RFC 2765)"},
    {"64:ff9b::/96", kDeny, "NAT64 well-known prefix (RFC 6052)"},
    {"64:ff9b:1::/48", kDeny, "NAT64 local-use prefix (RFC 8215)"},
    {"100::/64", kDeny, "discard-only (RFC 6666)"},
    {"100:0:0:1::/64", kDeny, "dummy prefix (RFC 9780)"},
    {"5f00::/16", kDeny, "SRv6 SIDs (RFC 9602)"},
    {"fc00::/7", kDeny, "unique local (RFC 4193)"},
    {"fe80::/10", kDeny, "link-local (RFC 4291)"},
    {"fec0::/10", kDeny, "site-local, deprecated (RFC 3879)"},
    {"ff00::/8", kDeny, "multicast (RFC 4291)"},
    // Carved out of 2000::/3.
    {"2001::/23", kDeny, "IETF protocol assignments (RFC 2928), denied as a whole"},
    {"2001::/32", kDeny, "Teredo (RFC 4380), in 2001::/23"},
    {"2001:2::/48", kDeny, "benchmarking (RFC 5180), in 2001::/23"},
    {"2001:10::/28", kDeny, "ORCHID, deprecated (RFC 4843), in 2001::/23"},
    {"2001:20::/28", kDeny, "ORCHIDv2 (RFC 7343), in 2001::/23"},
    {"2001:db8::/32", kDeny, "documentation (RFC 3849)"},
    {"2002::/16", kDeny, "6to4 (RFC 3056); denied even for public embedded IPv4"},
    {"3fff::/20", kDeny, "documentation (RFC 9637)"},
};

struct ParsedRow {
  IpPrefix prefix;
  AddressAction action;
  std::string reason;
};

// Parsed once; nullopt when any row is malformed so that ClassifyAddress fails closed.
const std::optional<std::vector<ParsedRow>>& ParsedTable() {
  static const std::optional<std::vector<ParsedRow>> table =
      []() -> std::optional<std::vector<ParsedRow>> {
    std::vector<ParsedRow> rows;
    for (const AddressRange& row : kTable) {
      auto prefix = ParseIpPrefix(row.prefix);
      if (!prefix) return std::nullopt;
      rows.push_back({*prefix, row.action, std::string(row.prefix) + " " + std::string(row.what)});
    }
    return rows;
  }();
  return table;
}

}  // namespace

std::span<const AddressRange> AddressTable() { return kTable; }

AddressVerdict ClassifyAddress(const IpAddress& address) {
  const auto& table = ParsedTable();
  if (!table) return {false, "address table failed to parse (bug); denying everything"};
  const ParsedRow* best = nullptr;
  for (const ParsedRow& row : *table) {
    if (!row.prefix.Contains(address)) continue;
    if (best == nullptr || row.prefix.length > best->prefix.length) best = &row;
  }
  // Unreachable while the catch-all rows exist; kept so a bad edit of the table fails closed.
  if (best == nullptr) return {false, "no table row matches (bug); denying"};
  return {best->action == kAllow, best->reason};
}

AddressVerdict CheckNotLocalInterface(const IpAddress& address,
                                      std::span<const IpAddress> local_addresses) {
  if (std::find(local_addresses.begin(), local_addresses.end(), address) != local_addresses.end()) {
    return {false, "assigned to a local interface of this machine"};
  }
  return {true, ""};
}

}  // namespace anvil
