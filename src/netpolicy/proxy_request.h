// The head of a request a sandboxed command sends to anvil-proxy (net/http_proxy.h), read as a
// pure function: bytes in, a request or a refusal out (no I/O; fuzzed by
// tests/fuzz/proxy_request_fuzzer.cc). What a plain-HTTP request's head becomes on its way to
// the origin is decided here too.
//
//   request line   METHOD SP TARGET SP HTTP/1.x, the method an RFC 9110 token
//   header lines   (plain HTTP only; a tunnel's are not forwarded) each "name: value" with a token
//                  name right before the colon, no folded continuation line, and no CR, LF or
//                  other control byte but tab anywhere: anything else could read as a different
//                  header (a second Host) to a lenient server behind the proxy
//   body           (plain HTTP) none without Content-Length, else exactly that many bytes
//                  (RFC 9112 6.3), so nothing pipelined behind the request reaches the server;
//                  Transfer-Encoding is refused with 411 (its length is only known by decoding
//                  the body), ambiguous framing (both headers, differing or malformed values)
//                  with 400
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <tl/expected.hpp>

#include "common/result.h"
#include "netpolicy/proxy_policy.h"

namespace anvil {

struct ProxyRequestHead {
  std::string method;
  std::string target;        // as written: a CONNECT's authority, else an absolute URI
  bool tunnel = false;       // CONNECT
  std::string header_lines;  // between the request line and the blank line, each with its CRLF
  // What the proxy may read from the client after the head: a plain request's announced body,
  // 0 without one; a tunnel, everything (UINT64_MAX).
  uint64_t body_length = UINT64_MAX;
  bool announced_length = false;  // the request had a Content-Length
};

// Why a head is refused: the status the client gets (400, 411) and the reason (its audit line
// and the reply's body).
struct ProxyHeadRefusal {
  int status = 400;
  std::string reason;
};

// `head`: the request's bytes up to and including the blank line that ends its head
// ("\r\n\r\n", which must be there).
tl::expected<ProxyRequestHead, ProxyHeadRefusal> ParseProxyRequestHead(std::string_view head);

// The request's target: a CONNECT's authority (ParseConnectTarget), or a plain request's
// absolute URI (ParseHttpTarget; `origin_form` gets its path and query).
Result<ProxyTarget> ParseProxyRequestTarget(const ProxyRequestHead& request,
                                            std::string* origin_form);

// A plain request's head as sent to the origin: the origin-form request line, Host first and set
// to the URI's authority (RFC 9112 3.2.2: whatever the client wrote, so a shared server cannot be
// steered to another site), the client's headers without the hop-by-hop and proxy ones and
// without its Host and Content-Length, the length as the proxy read it (once, in plain digits:
// a server that would read the client's spelling differently frames the same bytes), and
// Connection: close (one request per connection).
std::string ForwardedRequestHead(const ProxyRequestHead& request, const ProxyTarget& target,
                                 std::string_view origin_form);

// What the first bytes a client sends into a tunnel that is not TLS are, as far as plain HTTP
// goes. An HTTP request there would reach a shared server with its own Host (or HTTP/2
// :authority), not the tunnel's, and could pick another site; anvil-proxy handles it as a plain
// request instead (ParseTunnelledRequestHead). Read as leniently as any server reads a request
// line: empty lines and blanks before it, a token, then, on the same line after a blank,
// "HTTP/" in any case (several blanks, tabs, a blank in the target, HTTP/2's
// "PRI * HTTP/2.0"). A line that ends with no version after a token and a target that begins
// with "/" is an HTTP/0.9 request (kHttp09): it carries no Host at all, and a server that still
// reads one answers from its default site. kNeedMore until the first line ends; more than
// kMaxTunnelFirstLineBytes (with the blanks before it) that could still be one counts as one
// (fail closed).
enum class TunnelHttpStart { kNeedMore, kHttpRequest, kHttp09, kNotHttp };
inline constexpr size_t kMaxTunnelFirstLineBytes = 8192;
TunnelHttpStart ClassifyTunnelStart(std::string_view first);

// The head of a plain HTTP request sent inside a tunnel to `target` (up to and including the
// blank line), read as if the client had sent it to the proxy as a plain request for the
// tunnel's host and port: the same checks and framing (ParseProxyRequestHead), its target made
// the absolute URI of that authority. Only an origin-form HTTP/1.x request line in the strict
// grammar passes: absolute-form names a host of its own, "*", HTTP/2, CONNECT and every lenient
// spelling ClassifyTunnelStart counts as HTTP are refused (400).
tl::expected<ProxyRequestHead, ProxyHeadRefusal> ParseTunnelledRequestHead(
    std::string_view head, const ProxyTarget& target);

}  // namespace anvil
