#include "netpolicy/connect_policy.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <utility>

namespace anvil {

namespace {

// Canonical decimal 1..65535: no sign, no leading zero, no trailing junk.
std::optional<std::uint16_t> ParsePort(std::string_view text) {
  if (text.empty() || text.size() > 5 || text[0] == '0') return std::nullopt;
  unsigned value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (value == 0 || value > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

}  // namespace

Result<UnsafeTestAllowAddress> ParseUnsafeTestAllowAddress(std::string_view text) {
  const std::string shown(text);
  std::string_view address_text = text;
  std::optional<std::string_view> port_text;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) {
      return Fail("invalid", "--unsafe-test-allow-address: missing ']': " + shown);
    }
    address_text = text.substr(1, close - 1);
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        return Fail("invalid", "--unsafe-test-allow-address: junk after ']': " + shown);
      }
      port_text = rest.substr(1);
    }
  } else if (std::count(text.begin(), text.end(), ':') == 1) {
    // Exactly one colon: IPv4 with a port. Two or more: a bare IPv6 address without a port.
    const auto colon = text.find(':');
    address_text = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  auto address = ParseIpLiteral(address_text);
  if (!address) {
    return Fail("invalid", "--unsafe-test-allow-address: " + address.error().message);
  }
  if (text.front() == '[' && !address->is_v6()) {
    return Fail("invalid", "--unsafe-test-allow-address: brackets are for IPv6: " + shown);
  }
  UnsafeTestAllowAddress entry{*address, std::nullopt};
  if (port_text) {
    entry.port = ParsePort(*port_text);
    if (!entry.port) {
      return Fail("invalid", "--unsafe-test-allow-address: bad port (1-65535): " + shown);
    }
  }
  return entry;
}

Result<DnsServer> ParseDnsServer(std::string_view text) {
  // Same ADDR[:PORT] grammar as --unsafe-test-allow-address, with the port required.
  auto parsed = ParseUnsafeTestAllowAddress(text);
  if (!parsed || !parsed->port) {
    return Fail("invalid", "--unsafe-test-resolver needs ADDR:PORT: " + std::string(text));
  }
  return DnsServer{parsed->address, *parsed->port};
}

bool UnsafeTestOptions::PermitsPort(std::uint16_t port) const {
  return std::any_of(allow_addresses.begin(), allow_addresses.end(),
                     [port](const UnsafeTestAllowAddress& a) { return a.EffectivePort() == port; });
}

ConnectPolicy::ConnectPolicy(std::vector<IpAddress> local_addresses, UnsafeTestOptions unsafe_test)
    : local_addresses_(std::move(local_addresses)), unsafe_test_(std::move(unsafe_test)) {}

AddressVerdict ConnectPolicy::Check(const IpAddress& address, std::uint16_t port) const {
  bool exempted = false;
  for (const auto& entry : unsafe_test_.allow_addresses) {
    if (entry.address != address) continue;
    exempted = true;
    if (entry.EffectivePort() == port) {
      return {true, "exempted by --unsafe-test-allow-address " + address.ToString() + ":" +
                        std::to_string(port)};
    }
  }
  if (exempted) {
    // The exemption names its own port; no other port of that address opens up.
    return {false,
            "port " + std::to_string(port) + " not allowed for test address " + address.ToString()};
  }
  if (port != kHttpsPort) {
    return {false, "port " + std::to_string(port) + " not allowed (HTTPS on 443 only)"};
  }
  AddressVerdict verdict = ClassifyAddress(address);
  if (!verdict.allowed) return verdict;
  AddressVerdict local = CheckNotLocalInterface(address, local_addresses_);
  if (!local.allowed) return local;
  return verdict;
}

}  // namespace anvil
