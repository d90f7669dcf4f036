// The request headers a plugin may send with sys.net.fetch (threat model T2), as a pure check.
// The plugin hands over a JSON object {name: value}; every name must be an RFC 9110 token and
// every value free of CR, LF, NUL and other control bytes, because libcurl copies header lines
// onto the wire as given: a CR/LF in a value would let a plugin append headers of its own
// choosing, or a second request (request smuggling).
//
// Some names are refused outright because Anvil or the transport owns them: Host (the host is
// the granted one, pinned), Content-Length / Transfer-Encoding / TE / Trailer / Expect (framing:
// a disagreement between them is request smuggling), Connection / Keep-Alive / Upgrade /
// HTTP2-Settings (hop-by-hop, protocol switches), Proxy-* (proxies are off), Accept-Encoding
// (decompression, and so the body cap, is Anvil's), Alt-Used.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace anvil {

struct HttpHeader {
  std::string name;
  std::string value;
};

inline constexpr std::size_t kMaxRequestHeaders = 64;
inline constexpr std::size_t kMaxRequestHeaderBytes = 16 * 1024;  // names + values

// Parses and validates the gateway's headers argument (a JSON object of strings; "" or "{}"
// means none). Errors: "invalid" for malformed input, "denied" for a forbidden header name.
Result<std::vector<HttpHeader>> ParseRequestHeaders(std::string_view json);

// An RFC 9110 token (a header field name, a method): non-empty, tchar only.
bool IsHttpToken(std::string_view text);

// True for names the plugin may not set (case-insensitive).
bool IsForbiddenRequestHeader(std::string_view name);

}  // namespace anvil
