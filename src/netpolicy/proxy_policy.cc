#include "netpolicy/proxy_policy.h"

#include <algorithm>

#include "netpolicy/url_policy.h"

namespace anvil {
namespace {

// Runs the fetch URL grammar on an authority by wrapping it as an https URL: the same host rules
// (no userinfo, no percent-encoding, no trailing dot, strict IP literals, ASCII only) apply.
Result<ProxyTarget> ParseAuthority(std::string_view authority, std::uint16_t default_port,
                                   const char* what) {
  if (authority.empty()) return Fail("invalid", std::string(what) + ": empty host");
  for (char c : authority) {
    if (c == '/' || c == '?' || c == '#' || c == '@' || c == '\\') {
      return Fail("invalid", std::string(what) + ": not a host[:port]: " + std::string(authority));
    }
  }
  auto url = ParseFetchUrl("https://" + std::string(authority) + "/");
  if (!url) {
    return Fail("invalid", std::string(what) + ": " + url.error().message);
  }
  ProxyTarget t;
  t.host = url->host;
  t.port = url->port_given ? url->port : default_port;
  t.literal = url->literal;
  if (t.port == 0) return Fail("invalid", std::string(what) + ": port 0");
  return t;
}

std::string Describe(const ProxyTarget& t) { return t.host + ":" + std::to_string(t.port); }

}  // namespace

Result<ProxyTarget> ParseAllowHost(std::string_view text) {
  return ParseAuthority(text, 443, "--allow-host");
}

Result<ProxyTarget> ParseConnectTarget(std::string_view authority) {
  // CONNECT always names the port; "host" alone is malformed (RFC 9110 9.3.6).
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    has_port = close != std::string_view::npos && close + 1 < authority.size() &&
               authority[close + 1] == ':';
  } else {
    has_port = authority.find(':') != std::string_view::npos;
  }
  if (!has_port) return Fail("invalid", "CONNECT target needs host:port");
  return ParseAuthority(authority, 0, "CONNECT target");
}

Result<ProxyTarget> ParseHttpTarget(std::string_view url, std::string* origin_form) {
  constexpr std::string_view kScheme = "http://";
  if (url.size() < kScheme.size() ||
      !std::equal(kScheme.begin(), kScheme.end(), url.begin(), [](char a, char b) {
        return a == std::tolower(static_cast<unsigned char>(b));
      })) {
    return Fail("invalid",
                "a proxied request must be an absolute http:// URL (use CONNECT for "
                "https)");
  }
  std::string_view rest = url.substr(kScheme.size());
  size_t end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, end);
  std::string_view tail = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  ANVIL_TRY(target, ParseAuthority(authority, 80, "request target"));
  // The path goes on as written, minus a fragment; the same byte rules as fetch URLs.
  auto hash = tail.find('#');
  if (hash != std::string_view::npos) tail = tail.substr(0, hash);
  for (unsigned char c : tail) {
    if (c <= 0x20 || c >= 0x7f || c == '\\') {
      return Fail("invalid", "request target path holds a byte that is not allowed");
    }
  }
  std::string origin(tail);
  if (origin.empty() || origin[0] != '/') origin = "/" + origin;
  if (origin_form) *origin_form = origin;
  return target;
}

Status CheckProxyTarget(const ProxyTarget& target, const std::vector<ProxyTarget>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), target) != allowed.end()) return Ok();
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + Describe(a);
  return Fail("denied",
              "host not allowed: " + Describe(target) +
                  (list.empty() ? " (no --allow-host given)" : " (allowed: " + list + ")"));
}

}  // namespace anvil
