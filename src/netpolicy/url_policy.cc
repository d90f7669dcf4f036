#include "netpolicy/url_policy.h"

#include <algorithm>
#include <charconv>

#include "common/ascii.h"
#include "netpolicy/host_name.h"

namespace anvil {

namespace {

// Long enough for any real API URL; bounds the work and the size of error messages.
constexpr std::size_t kMaxUrlBytes = 8192;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsNonAscii(char c) { return static_cast<unsigned char>(c) >= 0x80; }

std::string Printable(std::string_view text) { return PrintableAscii(text); }

}  // namespace

Result<HostAllowlist> HostAllowlist::Create(const std::vector<std::string>& hosts) {
  HostAllowlist list;
  for (const std::string& entry : hosts) {
    const std::string host = AsciiLower(entry);
    if (host.find('*') != std::string::npos) {
      return Fail("invalid", "wildcard hosts are not supported: " + Printable(entry));
    }
    if (std::any_of(host.begin(), host.end(), IsNonAscii)) {
      return Fail("invalid",
                  "non-ASCII host in grant (use the A-label, xn--...): " + Printable(entry));
    }
    if (!host.empty() && host.front() == '[') {
      if (host.back() != ']') return Fail("invalid", "unterminated '[' in grant host");
      ANVIL_TRY(literal, CheckIpv6Literal(std::string_view(host).substr(1, host.size() - 2)));
    } else {
      ANVIL_TRY(checked, CheckHostName(host));
    }
    if (std::find(list.hosts_.begin(), list.hosts_.end(), host) == list.hosts_.end()) {
      list.hosts_.push_back(host);
    }
  }
  return list;
}

bool HostAllowlist::Contains(std::string_view host) const {
  return std::find(hosts_.begin(), hosts_.end(), host) != hosts_.end();
}

Result<FetchUrl> ParseFetchUrl(std::string_view url) {
  if (url.empty()) return Fail("invalid", "empty URL");
  if (url.size() > kMaxUrlBytes) return Fail("invalid", "URL longer than 8192 bytes");
  // Whole-string scans first, so no later step ever sees these bytes. WHATWG strips tabs and
  // newlines and trims spaces, libcurl rejects some and C APIs stop at NUL: every one of those
  // is a way for two parsers to read different URLs out of one string.
  for (char c : url) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      return Fail("invalid", "control character in URL: " + Printable(url));
    }
    if (c == ' ') return Fail("invalid", "space in URL: " + Printable(url));
    // WHATWG reads '\' as '/' in special schemes; libcurl does not.
    if (c == '\\') return Fail("invalid", "backslash in URL: " + Printable(url));
  }

  const std::size_t colon = url.find(':');
  if (colon == std::string_view::npos || colon == 0 || !IsAsciiLetter(url[0]) ||
      url.substr(0, colon).find_first_of("/?#") != std::string_view::npos) {
    return Fail("invalid", "URL has no scheme: " + Printable(url));
  }
  const std::string scheme = AsciiLower(url.substr(0, colon));
  if (scheme != "https") {
    return Fail("denied", "scheme not allowed: " + Printable(scheme) + " (https only)");
  }
  const std::string_view rest = url.substr(colon + 1);
  // libcurl accepts one to three slashes here, WHATWG any number: only "//" is unambiguous.
  if (rest.size() < 2 || rest[0] != '/' || rest[1] != '/' || (rest.size() > 2 && rest[2] == '/')) {
    return Fail("invalid", "expected exactly \"//\" after \"https:\": " + Printable(url));
  }

  const std::size_t authority_end = rest.find_first_of("/?#", 2);
  const std::string_view authority = rest.substr(
      2, authority_end == std::string_view::npos ? std::string_view::npos : authority_end - 2);
  const std::string_view tail =
      authority_end == std::string_view::npos ? std::string_view() : rest.substr(authority_end);

  if (authority.empty()) return Fail("invalid", "empty host: " + Printable(url));
  // Userinfo is how "https://allowed.example@evil.example/" fools a reader; there is no
  // legitimate use for credentials in a plugin URL (send an Authorization header instead).
  if (authority.find('@') != std::string_view::npos) {
    return Fail("denied", "userinfo ('@' in the authority) is not allowed: " + Printable(url));
  }
  if (std::any_of(authority.begin(), authority.end(), IsNonAscii)) {
    return Fail("invalid", "non-ASCII host (write IDNs as A-labels, xn--...): " + Printable(url));
  }
  // libcurl and WHATWG percent-decode hosts ("%61pi" -> "api", "%2e" -> "."); we never do.
  if (authority.find('%') != std::string_view::npos) {
    return Fail("invalid", "percent-encoding or zone id in host: " + Printable(url));
  }

  FetchUrl parsed;
  std::string_view port_part;  // ":..." or empty
  if (authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return Fail("invalid", "unterminated '[' in host: " + Printable(url));
    }
    ANVIL_TRY(literal, CheckIpv6Literal(authority.substr(1, close - 1)));
    parsed.literal = *literal;
    parsed.host = AsciiLower(authority.substr(0, close + 1));
    port_part = authority.substr(close + 1);
    if (!port_part.empty() && port_part.front() != ':') {
      return Fail("invalid", "junk after ']' in host: " + Printable(url));
    }
  } else {
    const std::size_t port_colon = authority.find(':');
    const std::string_view host_text = authority.substr(0, port_colon);
    if (port_colon != std::string_view::npos) port_part = authority.substr(port_colon);
    parsed.host = AsciiLower(host_text);
    ANVIL_TRY(checked, CheckHostName(parsed.host));
    parsed.literal = *checked;
  }

  if (!port_part.empty()) {
    // Only canonical decimal: ":" alone (libcurl: default port), ":+443", ":0443", ":443:443"
    // and ":0" are all read differently by somebody.
    const std::string_view digits = port_part.substr(1);
    if (digits.empty()) return Fail("invalid", "empty port: " + Printable(url));
    if (!std::all_of(digits.begin(), digits.end(), IsDigit) || digits.size() > 5) {
      return Fail("invalid", "port is not a decimal number: " + Printable(url));
    }
    if (digits.size() > 1 && digits[0] == '0') {
      return Fail("invalid", "port has a leading zero: " + Printable(url));
    }
    unsigned value = 0;
    std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (value == 0 || value > 65535) {
      return Fail("invalid", "port out of range (1-65535): " + Printable(url));
    }
    parsed.port = static_cast<std::uint16_t>(value);
    parsed.port_given = true;
  }

  const std::size_t hash = tail.find('#');
  const std::string_view path_and_query = tail.substr(0, hash);
  if (std::any_of(tail.begin(), tail.end(), IsNonAscii)) {
    return Fail("invalid",
                "non-ASCII byte in path, query or fragment (percent-encode it): " + Printable(url));
  }
  for (std::size_t i = 0; i < path_and_query.size(); ++i) {
    if (path_and_query[i] != '%') continue;
    if (i + 2 >= path_and_query.size() || !IsHexDigit(path_and_query[i + 1]) ||
        !IsHexDigit(path_and_query[i + 2])) {
      return Fail("invalid", "malformed %-escape in path or query: " + Printable(url));
    }
  }
  // The fragment passed the byte checks above and is dropped here: it is never sent on the wire,
  // and leaving it out keeps the URL we send identical to the one we checked.

  parsed.path_and_query = std::string(path_and_query);
  if (parsed.path_and_query.empty() || parsed.path_and_query.front() == '?') {
    parsed.path_and_query.insert(0, "/");
  }
  parsed.url = "https://" + parsed.host;
  if (parsed.port_given) parsed.url += ":" + std::to_string(parsed.port);
  parsed.url += parsed.path_and_query;
  return parsed;
}

Result<FetchUrl> CheckFetchUrl(std::string_view url, const NetGrant& grant,
                               const UnsafeTestOptions& unsafe_test, UrlCrossCheck& second_parser) {
  ANVIL_TRY(parsed, ParseFetchUrl(url));
  if (parsed->port != kHttpsPort && !unsafe_test.PermitsPort(parsed->port)) {
    return Fail("denied",
                "port not allowed: " + std::to_string(parsed->port) + " (HTTPS on 443 only)");
  }
  if (!grant.hosts.Contains(parsed->host)) {
    if (parsed->literal) {
      return Fail("denied", "IP-literal host not granted: " + parsed->host);
    }
    return Fail("denied", "host not granted: " + parsed->host);
  }
  // What the plugin wrote and what we will hand to the second parser must both read the same
  // to it.
  ANVIL_RETURN_IF_ERROR(second_parser(url, *parsed));
  ANVIL_RETURN_IF_ERROR(second_parser(parsed->url, *parsed));
  return parsed;
}

Status CheckFetchMethod(std::string_view method, const NetGrant& grant) {
  if (method == "GET" || method == "HEAD") return Ok();
  if (method == "POST") {
    if (grant.post) return Ok();
    return Fail("denied", "POST needs the net.post permission");
  }
  return Fail("denied",
              "method not allowed: " + Printable(method) + " (GET, HEAD, or POST with net.post)");
}

}  // namespace anvil
