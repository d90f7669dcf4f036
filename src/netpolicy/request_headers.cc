#include "netpolicy/request_headers.h"

#include <array>
#include <nlohmann/json.hpp>

#include "common/ascii.h"

namespace anvil {

namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

// RFC 9110 tchar.
bool IsTokenChar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  constexpr std::string_view kSpecials = "!#$%&'*+-.^_`|~";
  return kSpecials.find(static_cast<char>(c)) != std::string_view::npos;
}

// field-value: visible ASCII, SP, HTAB and obs-text (>= 0x80). No CR, LF, NUL, no other control
// byte, no DEL; no leading or trailing whitespace (libcurl would trim it, so what we checked
// would not be what is sent).
bool IsValidValue(std::string_view value) {
  for (unsigned char c : value) {
    if (c == '\t') continue;
    if (c < 0x20 || c == 0x7f) return false;
  }
  if (!value.empty()) {
    const char first = value.front(), last = value.back();
    if (first == ' ' || first == '\t' || last == ' ' || last == '\t') return false;
  }
  return true;
}

constexpr std::array<std::string_view, 13> kForbidden = {"host",
                                                         "content-length",
                                                         "transfer-encoding",
                                                         "te",
                                                         "trailer",
                                                         "expect",
                                                         "connection",
                                                         "keep-alive",
                                                         "upgrade",
                                                         "http2-settings",
                                                         "accept-encoding",
                                                         "alt-used",
                                                         "proxy-connection"};

}  // namespace

bool IsHttpToken(std::string_view text) {
  if (text.empty()) return false;
  for (unsigned char c : text) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

bool IsForbiddenRequestHeader(std::string_view name) {
  for (std::string_view forbidden : kForbidden) {
    if (EqualsIgnoreCase(name, forbidden)) return true;
  }
  // Proxy-Authorization, Proxy-Connection, ...: there is no proxy, and never one to talk to.
  return name.size() >= 6 && EqualsIgnoreCase(name.substr(0, 6), "proxy-");
}

Result<std::vector<HttpHeader>> ParseRequestHeaders(std::string_view json) {
  std::vector<HttpHeader> headers;
  if (json.empty()) return headers;
  const nlohmann::json parsed = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return Fail("invalid", "headers must be an object of strings");
  if (parsed.size() > kMaxRequestHeaders) {
    return Fail("invalid", "more than " + std::to_string(kMaxRequestHeaders) + " headers");
  }
  std::size_t bytes = 0;
  for (const auto& [name, value] : parsed.items()) {
    // The name first: only a validated name is ever echoed back in a message.
    if (!IsHttpToken(name)) return Fail("invalid", "malformed header name");
    if (!value.is_string()) return Fail("invalid", "header " + name + " must be a string");
    const std::string& text = value.get_ref<const std::string&>();
    if (!IsValidValue(text)) {
      return Fail("invalid", "header " + name + " has a control byte or edge whitespace");
    }
    if (IsForbiddenRequestHeader(name)) return Fail("denied", "header not allowed: " + name);
    bytes += name.size() + text.size();
    if (bytes > kMaxRequestHeaderBytes) {
      return Fail("invalid",
                  "request headers over " + std::to_string(kMaxRequestHeaderBytes) + " bytes");
    }
    headers.push_back({name, text});
  }
  return headers;
}

}  // namespace anvil
