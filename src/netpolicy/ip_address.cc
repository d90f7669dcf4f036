#include "netpolicy/ip_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>
#include <cstring>

namespace anvil {

IpAddress IpAddress::V4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
  Bytes bytes{};
  bytes[0] = a;
  bytes[1] = b;
  bytes[2] = c;
  bytes[3] = d;
  return IpAddress(IpFamily::kV4, bytes);
}

IpAddress IpAddress::V4(const std::array<std::uint8_t, 4>& bytes) {
  return V4(bytes[0], bytes[1], bytes[2], bytes[3]);
}

IpAddress IpAddress::V6(const Bytes& bytes) { return IpAddress(IpFamily::kV6, bytes); }

std::optional<IpAddress> IpAddress::FromSockaddr(const sockaddr* address) {
  if (address == nullptr) return std::nullopt;
  if (address->sa_family == AF_INET) {
    sockaddr_in in{};
    std::memcpy(&in, address, sizeof(in));
    std::array<std::uint8_t, 4> bytes{};
    std::memcpy(bytes.data(), &in.sin_addr, 4);
    return V4(bytes);
  }
  if (address->sa_family == AF_INET6) {
    sockaddr_in6 in6{};
    std::memcpy(&in6, address, sizeof(in6));
    Bytes bytes{};
    std::memcpy(bytes.data(), &in6.sin6_addr, 16);
    return V6(bytes);
  }
  return std::nullopt;
}

std::string IpAddress::ToString() const {
  char buffer[INET6_ADDRSTRLEN] = {};
  const int af = is_v4() ? AF_INET : AF_INET6;
  if (::inet_ntop(af, bytes_.data(), buffer, sizeof(buffer)) == nullptr) return "?";
  return buffer;
}

bool IpAddress::IsWithin(const IpAddress& prefix, int prefix_length) const {
  if (family_ != prefix.family_) return false;
  const int max_bits = is_v4() ? 32 : 128;
  if (prefix_length < 0 || prefix_length > max_bits) return false;
  const int whole_bytes = prefix_length / 8;
  if (std::memcmp(bytes_.data(), prefix.bytes_.data(), whole_bytes) != 0) return false;
  const int rest_bits = prefix_length % 8;
  if (rest_bits == 0) return true;
  const auto mask = static_cast<std::uint8_t>(0xff << (8 - rest_bits));
  return (bytes_[whole_bytes] & mask) == (prefix.bytes_[whole_bytes] & mask);
}

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Four decimal octets, each "0" or [1-9][0-9]{0,2} <= 255. Written by hand rather than with
// inet_pton so the rule is visible here: glibc's inet_pton happens to be strict too, but
// inet_aton and getaddrinfo(AI_NUMERICHOST) are not, and the difference is the attack.
std::optional<std::array<std::uint8_t, 4>> ParseDottedQuad(std::string_view text) {
  std::array<std::uint8_t, 4> octets{};
  std::size_t position = 0;
  for (int index = 0; index < 4; ++index) {
    if (index > 0) {
      if (position >= text.size() || text[position] != '.') return std::nullopt;
      ++position;
    }
    const std::size_t start = position;
    while (position < text.size() && IsDigit(text[position])) ++position;
    const std::size_t length = position - start;
    if (length == 0 || length > 3) return std::nullopt;
    if (length > 1 && text[start] == '0') return std::nullopt;  // octal in inet_aton
    unsigned value = 0;
    std::from_chars(text.data() + start, text.data() + position, value);
    if (value > 255) return std::nullopt;
    octets[index] = static_cast<std::uint8_t>(value);
  }
  if (position != text.size()) return std::nullopt;
  return octets;
}

}  // namespace

bool IsStrictIpv4Literal(std::string_view text) { return ParseDottedQuad(text).has_value(); }

Result<IpAddress> ParseIpLiteral(std::string_view text) {
  const std::string shown(text);
  if (text.empty()) return Fail("invalid", "empty IP address");
  if (text.find('%') != std::string_view::npos) {
    return Fail("invalid", "zone ids are not allowed in IP addresses: " + shown);
  }
  if (text.find(':') == std::string_view::npos) {
    if (auto octets = ParseDottedQuad(text)) return IpAddress::V4(*octets);
    return Fail("invalid",
                "not a dotted-quad IPv4 address (octal, hex, short and integer forms are "
                "refused): " +
                    shown);
  }
  // IPv6: allow only the characters RFC 4291 text uses, then let inet_pton (strict about group
  // sizes, "::" count and the embedded dotted quad) decide the rest. Brackets belong to URLs.
  for (char c : text) {
    if (!IsHexDigit(c) && c != ':' && c != '.') {
      return Fail("invalid", "not an IPv6 address: " + shown);
    }
  }
  IpAddress::Bytes bytes{};
  if (::inet_pton(AF_INET6, shown.c_str(), bytes.data()) != 1) {
    return Fail("invalid", "not an IPv6 address: " + shown);
  }
  // Whether inet_pton accepts "::ffff:010.0.0.1" differs between libcs; hold the embedded IPv4
  // part to the same dotted-quad rule as a bare IPv4 literal instead of relying on one of them.
  if (const auto last_colon = text.rfind(':'); text.find('.') != std::string_view::npos) {
    if (!ParseDottedQuad(text.substr(last_colon + 1))) {
      return Fail("invalid", "embedded IPv4 part is not a dotted quad: " + shown);
    }
  }
  return IpAddress::V6(bytes);
}

Result<IpPrefix> ParseIpPrefix(std::string_view text) {
  const auto slash = text.find('/');
  if (slash == std::string_view::npos) {
    return Fail("invalid", "prefix needs a /length: " + std::string(text));
  }
  ANVIL_TRY(address, ParseIpLiteral(text.substr(0, slash)));
  const std::string_view length_text = text.substr(slash + 1);
  int length = -1;
  const auto [end, error] =
      std::from_chars(length_text.data(), length_text.data() + length_text.size(), length);
  const int max_bits = address->is_v4() ? 32 : 128;
  if (error != std::errc() || end != length_text.data() + length_text.size() ||
      length_text.empty() || (length_text.size() > 1 && length_text[0] == '0') || length < 0 ||
      length > max_bits) {
    return Fail("invalid", "bad prefix length: " + std::string(text));
  }
  // Host bits set would make the written range differ from the one enforced.
  const IpAddress::Bytes& bytes = address->bytes();
  for (int bit = length; bit < max_bits; ++bit) {
    if (bytes[bit / 8] & (0x80 >> (bit % 8))) {
      return Fail("invalid", "prefix has host bits set: " + std::string(text));
    }
  }
  return IpPrefix{*address, length};
}

}  // namespace anvil
