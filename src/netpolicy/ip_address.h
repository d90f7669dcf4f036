// The one IP address value type of the network policy, and its strict text parser. Every address
// the fetch path looks at -- an IP-literal URL host, a resolver answer, the address libcurl is
// about to dial, a --unsafe-test-allow-address flag -- goes through this type, so there is exactly
// one idea of what "the same address" means.
#pragma once

#include <sys/socket.h>

#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace anvil {

enum class IpFamily : std::uint8_t { kV4, kV6 };

class IpAddress {
 public:
  // Network byte order; an IPv4 address uses bytes()[0..3] and leaves the rest zero.
  using Bytes = std::array<std::uint8_t, 16>;

  // 0.0.0.0: never an acceptable target, so a forgotten assignment fails closed.
  IpAddress() = default;

  static IpAddress V4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d);
  static IpAddress V4(const std::array<std::uint8_t, 4>& bytes);
  static IpAddress V6(const Bytes& bytes);

  // From a sockaddr_in / sockaddr_in6 (getifaddrs, resolver results, the socket libcurl opens).
  // Any other family is nullopt: it is not an address the policy knows how to judge.
  static std::optional<IpAddress> FromSockaddr(const sockaddr* address);

  IpFamily family() const { return family_; }
  const Bytes& bytes() const { return bytes_; }
  bool is_v4() const { return family_ == IpFamily::kV4; }
  bool is_v6() const { return family_ == IpFamily::kV6; }

  // Canonical text: dotted quad, or RFC 5952 IPv6 (inet_ntop) without brackets.
  std::string ToString() const;

  // True when the first `prefix_length` bits equal those of `prefix` (same family only).
  bool IsWithin(const IpAddress& prefix, int prefix_length) const;

  friend auto operator<=>(const IpAddress&, const IpAddress&) = default;
  friend bool operator==(const IpAddress&, const IpAddress&) = default;

 private:
  IpAddress(IpFamily family, const Bytes& bytes) : family_(family), bytes_(bytes) {}

  IpFamily family_ = IpFamily::kV4;
  Bytes bytes_{};
};

// Parses an IP literal the way the policy wants to see it, and nothing more lenient:
//   IPv4: exactly four decimal octets 0..255 separated by dots, no leading zeros ("0" itself is
//         fine). inet_aton's octal ("0177.0.0.1"), hex ("0x7f.1"), short ("127.1") and integer
//         ("2130706433") forms are refused: each names an address other than the one a reader
//         sees, which is how SSRF filters get bypassed.
//   IPv6: RFC 4291 text (hex groups, "::", an embedded dotted quad), case-insensitive, no
//         brackets, no zone id ("%eth0"): a zone id selects an interface, which no fetch may do.
// Errors carry the code "invalid".
Result<IpAddress> ParseIpLiteral(std::string_view text);

// True when `text` is a strict dotted-quad IPv4 literal as ParseIpLiteral defines it.
bool IsStrictIpv4Literal(std::string_view text);

// A CIDR prefix such as "10.0.0.0/8" or "2001:db8::/32". Host bits must be zero, so the text is
// the one canonical way to write the range. Used to write the address table readably.
struct IpPrefix {
  IpAddress address;
  int length = 0;

  bool Contains(const IpAddress& candidate) const { return candidate.IsWithin(address, length); }
};
Result<IpPrefix> ParseIpPrefix(std::string_view text);

}  // namespace anvil
