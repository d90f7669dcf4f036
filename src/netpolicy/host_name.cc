#include "netpolicy/host_name.h"

#include <algorithm>
#include <string>

#include "common/ascii.h"

namespace anvil {

namespace {

bool IsLower(char c) { return c >= 'a' && c <= 'z'; }
bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f'); }

std::string Quoted(std::string_view untrusted) { return "'" + PrintableAscii(untrusted) + "'"; }

tl::unexpected<Error> Invalid(std::string what, std::string_view fix) {
  return Fail("invalid", std::move(what) + " (fix: " + std::string(fix) + ")");
}

// Underscores, which some resolvers accept, are refused: they are not valid in host names and
// curl and WHATWG treat them differently.
Status CheckLabel(std::string_view label, std::string_view host) {
  if (label.empty()) {
    return Invalid("empty label in host " + Quoted(host), "remove the doubled or leading dot");
  }
  if (label.size() > kMaxHostLabelBytes) {
    return Invalid("host label longer than 63 bytes in " + Quoted(host), "check the host name");
  }
  for (char c : label) {
    if (!IsLower(c) && !IsDigit(c) && c != '-') {
      return Invalid("character " + Quoted(std::string_view(&c, 1)) + " is not allowed in host " +
                         Quoted(host),
                     "host names hold only a-z, 0-9, '-' and '.'");
    }
  }
  if (label.front() == '-' || label.back() == '-') {
    return Invalid("host label starts or ends with '-' in " + Quoted(host), "check the host name");
  }
  return Ok();
}

// WHATWG's "ends in a number": a last label of digits, or "0x" followed by hex digits. Such a
// host is an IPv4 address to browsers and to libcurl, in forms (octal, hex, short, 32-bit
// integer) that differ from what a reader sees.
bool LooksNumeric(std::string_view label) {
  if (!label.empty() && std::all_of(label.begin(), label.end(), IsDigit)) return true;
  return label.size() >= 2 && label[0] == '0' && label[1] == 'x' &&
         std::all_of(label.begin() + 2, label.end(), IsHexDigit);
}

}  // namespace

Result<std::optional<IpAddress>> CheckHostName(std::string_view host) {
  if (host.empty()) return Invalid("empty host", "write a host name");
  if (host.size() > kMaxHostNameBytes) {
    return Invalid("host longer than 253 bytes", "check the host name");
  }
  // "api.example.com." names the same DNS node as "api.example.com" but is a different string
  // to an exact-match allowlist, to TLS name checks and to virtual hosting.
  if (host.back() == '.') {
    return Invalid("host " + Quoted(host) + " ends with a dot", "remove the trailing dot");
  }
  std::string_view last_label;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = host.find('.', start);
    const std::string_view label =
        host.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    ANVIL_RETURN_IF_ERROR(CheckLabel(label, host));
    last_label = label;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (!LooksNumeric(last_label)) return std::optional<IpAddress>();
  if (auto address = ParseIpLiteral(host); address && address->is_v4()) {
    return std::optional<IpAddress>(*address);
  }
  return Invalid("numeric host " + Quoted(host) +
                     " is not a dotted-quad IPv4 address (octal, hex, short and integer forms "
                     "are refused)",
                 "write an IPv4 address as four decimal numbers (1.2.3.4) or use a host name");
}

Result<IpAddress> CheckIpv6Literal(std::string_view inner) {
  const std::string shown = Quoted("[" + std::string(inner) + "]");
  if (inner.find('%') != std::string_view::npos) {
    return Invalid("zone ids are not allowed in " + shown, "remove the %zone part");
  }
  auto address = ParseIpLiteral(inner);
  if (address && address->is_v6()) return *address;
  if (inner.find(':') != std::string_view::npos) {
    return Invalid(shown + " is not an IPv6 address", "write [IPv6] or a host name");
  }
  return Invalid(shown + " is not an IPv6 address: brackets hold an IPv6 address only",
                 "write an IPv4 address without brackets");
}

Status ValidateGrantHost(std::string_view host) {
  constexpr std::string_view kFix = "write the bare host name, e.g. \"api.example.com\"";
  if (host.empty()) return Invalid("host is empty", kFix);
  if (host.size() > kMaxHostNameBytes) return Invalid("host is longer than 253 bytes", kFix);
  if (host.find("://") != std::string_view::npos) {
    return Invalid("host " + Quoted(host) + " includes a scheme; HTTPS is implied", kFix);
  }
  if (std::any_of(host.begin(), host.end(),
                  [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
    return Invalid("host " + Quoted(host) + " is not ASCII",
                   "write an internationalized name as its A-label (xn--...)");
  }
  if (host.find('*') != std::string_view::npos) {
    return Invalid("host " + Quoted(host) + " is a wildcard; only exact hosts can be granted",
                   "list each host exactly");
  }
  if (host.find('@') != std::string_view::npos) {
    return Invalid("host " + Quoted(host) + " includes user information ('@')", kFix);
  }
  if (host.find_first_of("/?#\\") != std::string_view::npos) {
    return Invalid("host " + Quoted(host) + " includes a path, query or backslash", kFix);
  }
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') {
      return Invalid("host " + Quoted(host) + " opens '[' without a closing ']' at the end",
                     "write an IPv6 literal as [2001:db8::1], without a port");
    }
    const std::string_view inner = host.substr(1, host.size() - 2);
    ANVIL_TRY(address, CheckIpv6Literal(inner));
    // One spelling per address: the gateway matches hosts as exact strings, so "[2001:DB8:0::1]"
    // and "[2001:db8::1]" must not both be grantable.
    if (const std::string canonical = address->ToString(); inner != canonical) {
      return Invalid("IPv6 literal " + Quoted(host) + " is not in canonical form",
                     "write it as [" + canonical + "]");
    }
    return Ok();
  }
  if (host.find(':') != std::string_view::npos) {
    if (std::count(host.begin(), host.end(), ':') >= 2) {
      return Invalid("IPv6 literal " + Quoted(host) + " must be in brackets",
                     "write [" + std::string(host) + "]");
    }
    return Invalid("host " + Quoted(host) + " includes a port; only HTTPS on port 443 is allowed",
                   "remove the port");
  }
  if (std::any_of(host.begin(), host.end(), IsUpper)) {
    return Invalid("host " + Quoted(host) + " has upper-case letters",
                   "write host names in lower case");
  }
  ANVIL_RETURN_IF_ERROR(CheckHostName(host));
  return Ok();
}

}  // namespace anvil
