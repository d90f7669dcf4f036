#include "net/url_policy.h"

#include <curl/curl.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <memory>

#include "common/ascii.h"

namespace anvil {

namespace {

// Long enough for any real API URL; bounds the work and the size of error messages.
constexpr std::size_t kMaxUrlBytes = 8192;
constexpr std::size_t kMaxHostBytes = 253;  // RFC 1035 name length in text form
constexpr std::size_t kMaxLabelBytes = 63;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsNonAscii(char c) { return static_cast<unsigned char>(c) >= 0x80; }

// Plugin-supplied text ends up in messages a person reads in a terminal: escape everything that
// is not printable ASCII so a URL cannot carry terminal escape sequences, and bound the length.
std::string Printable(std::string_view text) {
  constexpr std::size_t kMaxShown = 200;
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x7f) {
      out += static_cast<char>(byte);
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", byte);
      out += escaped;
    }
  }
  if (text.size() > kMaxShown) out += "...";
  return out;
}

// A label of a host name (already lower-cased): LDH only. Underscores, which some resolvers
// accept, are refused: they are not valid in host names and curl and WHATWG treat them
// differently.
Status CheckLabel(std::string_view label, std::string_view host) {
  if (label.empty()) return Fail("invalid", "empty label in host: " + Printable(host));
  if (label.size() > kMaxLabelBytes) {
    return Fail("invalid", "host label longer than 63 bytes: " + Printable(host));
  }
  for (char c : label) {
    if (!IsAsciiLetter(c) && !IsDigit(c) && c != '-') {
      return Fail("invalid", "character '" + Printable(std::string_view(&c, 1)) +
                                 "' not allowed in host: " + Printable(host));
    }
  }
  if (label.front() == '-' || label.back() == '-') {
    return Fail("invalid", "host label starts or ends with '-': " + Printable(host));
  }
  return Ok();
}

// WHATWG's "ends in a number": a last label of digits, or "0x" followed by hex digits. Such a
// host is an IPv4 address to browsers and to libcurl, in forms (octal, hex, short, 32-bit
// integer) that differ from what a reader sees.
bool LooksNumeric(std::string_view label) {
  if (!label.empty() && std::all_of(label.begin(), label.end(), IsDigit)) return true;
  if (label.size() >= 2 && label[0] == '0' && label[1] == 'x') {
    return std::all_of(label.begin() + 2, label.end(), IsHexDigit);
  }
  return false;
}

// `host` is lower-case, without brackets. Returns the address when it is a dotted-quad literal.
Result<std::optional<IpAddress>> CheckHostName(std::string_view host) {
  if (host.empty()) return Fail("invalid", "empty host");
  if (host.size() > kMaxHostBytes) return Fail("invalid", "host longer than 253 bytes");
  // "api.example.com." names the same DNS node as "api.example.com" but is a different string
  // to an exact-match allowlist, to TLS name checks and to virtual hosting.
  if (host.back() == '.') return Fail("invalid", "trailing dot in host: " + Printable(host));
  std::string_view last_label;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = host.find('.', start);
    const std::string_view label =
        host.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (auto status = CheckLabel(label, host); !status) return tl::unexpected(status.error());
    last_label = label;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (LooksNumeric(last_label)) {
    if (auto address = ParseIpLiteral(host); address && address->is_v4()) {
      return std::optional<IpAddress>(*address);
    }
    return Fail("invalid",
                "numeric host is not a dotted-quad IPv4 address (octal, hex, short and integer "
                "forms are refused): " +
                    Printable(host));
  }
  return std::optional<IpAddress>();
}

// "[...]" content: an IPv6 literal without zone id. An IPv4 address in brackets is refused:
// no URL standard allows it and parsers differ on what it means.
Result<IpAddress> CheckIpv6Literal(std::string_view inner) {
  auto address = ParseIpLiteral(inner);
  if (address && address->is_v6()) return *address;
  if (inner.find(':') != std::string_view::npos) return tl::unexpected(address.error());
  return Fail("invalid", "brackets hold an IPv6 address only: [" + Printable(inner) + "]");
}

struct CurlUrlDeleter {
  void operator()(CURLU* handle) const { curl_url_cleanup(handle); }
};
struct CurlStringDeleter {
  void operator()(char* text) const { curl_free(text); }
};

// One part of a parsed URL; the CURLUcode tells absent (CURLUE_NO_*) from present.
CURLUcode GetPart(CURLU* handle, CURLUPart part, unsigned flags, std::string* out) {
  char* raw = nullptr;
  const CURLUcode code = curl_url_get(handle, part, &raw, flags);
  std::unique_ptr<char, CurlStringDeleter> owner(raw);
  if (code == CURLUE_OK && raw != nullptr) *out = raw;
  return code;
}

tl::unexpected<Error> Disagreement(std::string_view what) {
  return Fail("denied", "parser disagreement: " + std::string(what));
}

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
      auto literal = CheckIpv6Literal(std::string_view(host).substr(1, host.size() - 2));
      if (!literal) return tl::unexpected(literal.error());
    } else {
      auto checked = CheckHostName(host);
      if (!checked) return tl::unexpected(checked.error());
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
    auto literal = CheckIpv6Literal(authority.substr(1, close - 1));
    if (!literal) return tl::unexpected(literal.error());
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
    auto checked = CheckHostName(parsed.host);
    if (!checked) return tl::unexpected(checked.error());
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
                               const UnsafeTestOptions& unsafe_test) {
  auto parsed = ParseFetchUrl(url);
  if (!parsed) return parsed;
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
  // What the plugin wrote and what we will hand to libcurl must both read the same to libcurl.
  if (auto status = CrossCheckWithCurl(url, *parsed); !status) {
    return tl::unexpected(status.error());
  }
  if (auto status = CrossCheckWithCurl(parsed->url, *parsed); !status) {
    return tl::unexpected(status.error());
  }
  return parsed;
}

Status CrossCheckWithCurl(std::string_view url, const FetchUrl& ours) {
  // curl_url_set takes a C string: with an embedded NUL it would judge a shorter URL.
  if (url.find('\0') != std::string_view::npos) {
    return Disagreement("NUL byte in URL (libcurl would read only the part before it)");
  }
  std::unique_ptr<CURLU, CurlUrlDeleter> handle(curl_url());
  if (!handle) return Fail("net", "curl_url: out of memory");
  const std::string text(url);
  if (const CURLUcode code = curl_url_set(handle.get(), CURLUPART_URL, text.c_str(), 0);
      code != CURLUE_OK) {
    return Disagreement(std::string("libcurl rejects the URL (") + curl_url_strerror(code) + ")");
  }

  std::string value;
  if (GetPart(handle.get(), CURLUPART_SCHEME, 0, &value) != CURLUE_OK ||
      AsciiLower(value) != "https") {
    return Disagreement("libcurl reads scheme '" + Printable(value) + "'");
  }
  // Absent parts must be reported absent (CURLUE_NO_*), not merely empty.
  if (GetPart(handle.get(), CURLUPART_USER, 0, &value) != CURLUE_NO_USER ||
      GetPart(handle.get(), CURLUPART_PASSWORD, 0, &value) != CURLUE_NO_PASSWORD ||
      GetPart(handle.get(), CURLUPART_OPTIONS, 0, &value) != CURLUE_NO_OPTIONS) {
    return Disagreement("libcurl reads userinfo in the URL");
  }
  if (GetPart(handle.get(), CURLUPART_ZONEID, 0, &value) != CURLUE_NO_ZONEID) {
    return Disagreement("libcurl reads an IPv6 zone id");
  }

  value.clear();
  if (GetPart(handle.get(), CURLUPART_HOST, 0, &value) != CURLUE_OK) {
    return Disagreement("libcurl reads no host");
  }
  if (ours.literal) {
    // libcurl re-formats IP literals (e.g. "[0:0::1]" -> "[::1]"): compare addresses, not text.
    std::string_view curl_host = value;
    if (curl_host.size() >= 2 && curl_host.front() == '[' && curl_host.back() == ']') {
      curl_host = curl_host.substr(1, curl_host.size() - 2);
    }
    auto address = ParseIpLiteral(curl_host);
    if (!address || *address != *ours.literal) {
      return Disagreement("libcurl reads host '" + Printable(value) + "', we read '" + ours.host +
                          "'");
    }
  } else if (AsciiLower(value) != ours.host) {
    return Disagreement("libcurl reads host '" + Printable(value) + "', we read '" + ours.host +
                        "'");
  }

  value.clear();
  if (GetPart(handle.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT, &value) != CURLUE_OK ||
      value != std::to_string(ours.port)) {
    return Disagreement("libcurl reads port '" + Printable(value) + "', we read " +
                        std::to_string(ours.port));
  }
  return Ok();
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
