#include "netpolicy/proxy_request.h"

#include <optional>
#include <string>

#include "common/ascii.h"
#include "netpolicy/request_headers.h"

namespace anvil {
namespace {

// Calls `each` with every line of a request's header block (lines split at CRLF, without it)
// until it returns false; returns whether every call returned true.
template <typename Each>
bool ForEachHeaderLine(std::string_view lines, Each each) {
  size_t pos = 0;
  while (pos < lines.size()) {
    size_t eol = lines.find("\r\n", pos);
    if (eol == std::string_view::npos) eol = lines.size();
    if (!each(lines.substr(pos, eol - pos))) return false;
    pos = eol + 2;
  }
  return true;
}

// The header lines of a plain-HTTP request (between the request line and the blank line) as
// this proxy forwards them: each "name: value" with a token name right before the colon, no
// folded continuation line, and no CR, LF or other control byte but tab anywhere. Anything
// else could read as a different header (a second Host) to a lenient server behind the proxy.
bool ValidHeaderLines(std::string_view lines, std::string& error) {
  return ForEachHeaderLine(lines, [&error](std::string_view line) {
    if (!line.empty() && (line[0] == ' ' || line[0] == '\t')) {
      error = "folded header line";
      return false;
    }
    for (char c : line) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\t') || u == 0x7f) {
        error = "control character in a header line";
        return false;
      }
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || !IsHttpToken(line.substr(0, colon))) {
      error = "malformed header name";
      return false;
    }
    return true;
  });
}

// The body a plain-HTTP request announces (RFC 9112 6.3): none without Content-Length, else
// that many bytes. The proxy forwards exactly that after the head, so nothing pipelined behind
// the request (another request, for whatever Host it names) reaches the server. A length it
// cannot know without decoding the body (Transfer-Encoding) is refused with 411, an ambiguous
// one (both headers, differing or malformed values) with 400.
bool AnnouncedBodyLength(std::string_view lines, uint64_t& length, bool& announced, int& status,
                         std::string& error) {
  length = 0;
  std::optional<uint64_t> content_length;
  bool transfer_encoding = false;
  const bool framed = ForEachHeaderLine(lines, [&](std::string_view line) {
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return true;
    const std::string name = AsciiLower(line.substr(0, colon));
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    if (name == "transfer-encoding") transfer_encoding = true;
    if (name != "content-length") return true;
    const bool digits = !value.empty() && value.size() <= 18 &&
                        value.find_first_not_of("0123456789") == std::string_view::npos;
    if (!digits) {
      status = 400;
      error = "malformed Content-Length";
      return false;
    }
    const uint64_t n = std::stoull(std::string(value));
    if (content_length && *content_length != n) {
      status = 400;
      error = "conflicting Content-Length values";
      return false;
    }
    content_length = n;
    return true;
  });
  if (!framed) return false;
  if (transfer_encoding && content_length) {
    status = 400;
    error = "both Transfer-Encoding and Content-Length";
    return false;
  }
  if (transfer_encoding) {
    status = 411;
    error =
        "a plain-HTTP request body needs a Content-Length (Transfer-Encoding is not "
        "forwarded; HTTPS through CONNECT carries any body)";
    return false;
  }
  length = content_length.value_or(0);
  announced = content_length.has_value();
  return true;
}

}  // namespace

tl::expected<ProxyRequestHead, ProxyHeadRefusal> ParseProxyRequestHead(std::string_view head) {
  auto refuse = [](int status, std::string reason) {
    return tl::unexpected(ProxyHeadRefusal{status, std::move(reason)});
  };
  const size_t blank = head.find("\r\n\r\n");
  if (blank == std::string_view::npos) return refuse(400, "incomplete request head");
  head = head.substr(0, blank + 4);
  // Request line: METHOD SP TARGET SP HTTP/1.x
  const size_t line_end = head.find("\r\n");
  const std::string_view line = head.substr(0, line_end);
  const size_t sp1 = line.find(' ');
  const size_t sp2 =
      sp1 == std::string_view::npos ? std::string_view::npos : line.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
      line.compare(sp2 + 1, 7, "HTTP/1.") != 0 || line.size() != sp2 + 9) {
    return refuse(400, "malformed request line");
  }
  ProxyRequestHead request;
  request.method = line.substr(0, sp1);
  request.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  request.tunnel = request.method == "CONNECT";
  const std::string_view lines = head.substr(line_end + 2, head.size() - line_end - 4);
  if (!IsHttpToken(request.method)) return refuse(400, "malformed method");
  if (request.tunnel) return request;  // a tunnel's headers are not forwarded
  std::string error;
  if (!ValidHeaderLines(lines, error)) return refuse(400, "malformed request: " + error);
  int status = 400;
  if (!AnnouncedBodyLength(lines, request.body_length, request.announced_length, status, error)) {
    return refuse(status, error);
  }
  request.header_lines = lines;
  return request;
}

Result<ProxyTarget> ParseProxyRequestTarget(const ProxyRequestHead& request,
                                            std::string* origin_form) {
  return request.tunnel ? ParseConnectTarget(request.target)
                        : ParseHttpTarget(request.target, origin_form);
}

std::string ForwardedRequestHead(const ProxyRequestHead& request, const ProxyTarget& target,
                                 std::string_view origin_form) {
  // Host first: a server that takes the first of several would otherwise still see ours.
  std::string head =
      request.method + " " + std::string(origin_form) + " HTTP/1.1\r\nHost: " + target.host +
      (target.port == 80 ? std::string() : ":" + std::to_string(target.port)) + "\r\n";
  ForEachHeaderLine(request.header_lines, [&head](std::string_view header) {
    const std::string name = AsciiLower(header.substr(0, header.find(':')));
    if (name == "connection" || name == "proxy-connection" || name == "keep-alive" ||
        name == "proxy-authorization" || name == "te" || name == "upgrade" || name == "host" ||
        name == "content-length") {
      return true;
    }
    head.append(header).append("\r\n");
    return true;
  });
  if (request.announced_length) {
    head += "Content-Length: " + std::to_string(request.body_length) + "\r\n";
  }
  head += "Connection: close\r\n\r\n";
  return head;
}

TunnelHttpStart ClassifyTunnelStart(std::string_view first) {
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  auto line_end = [](char c) { return c == '\r' || c == '\n'; };
  // Only the first kMaxTunnelFirstLineBytes decide, so that more bytes never change a decision.
  const std::string_view text = first.substr(0, kMaxTunnelFirstLineBytes);
  const TunnelHttpStart undecided = first.size() > kMaxTunnelFirstLineBytes
                                        ? TunnelHttpStart::kHttpRequest
                                        : TunnelHttpStart::kNeedMore;
  size_t i = 0;
  while (i < text.size() && (blank(text[i]) || line_end(text[i]))) ++i;
  const size_t method = i;
  while (i < text.size() && IsHttpToken(text.substr(i, 1))) ++i;
  if (i == text.size()) return undecided;
  if (i == method || !blank(text[i])) return TunnelHttpStart::kNotHttp;
  // The rest of the line: a blank followed by "HTTP/" anywhere in it makes it a request line.
  constexpr std::string_view kVersion = "http/";
  size_t target = i;
  while (target < text.size() && blank(text[target])) ++target;
  const bool slash_target = target < text.size() && text[target] == '/';
  for (; i < text.size() && !line_end(text[i]); ++i) {
    if (!blank(text[i])) continue;
    const std::string_view next = text.substr(i + 1, kVersion.size());
    if (AsciiLower(next) != kVersion.substr(0, next.size())) continue;
    if (next.size() == kVersion.size()) return TunnelHttpStart::kHttpRequest;
    return undecided;  // "HTTP/" cut off by the end of what has come
  }
  if (i == text.size()) return undecided;
  return slash_target ? TunnelHttpStart::kHttp09 : TunnelHttpStart::kNotHttp;
}

tl::expected<ProxyRequestHead, ProxyHeadRefusal> ParseTunnelledRequestHead(
    std::string_view head, const ProxyTarget& target) {
  auto refuse = [](std::string reason, int status = 400) {
    return tl::unexpected(ProxyHeadRefusal{
        status, "plain HTTP inside a tunnel: " + std::move(reason) +
                    " (an origin-form HTTP/1.x request is sent on as a plain request for the "
                    "tunnel's host)"});
  };
  const size_t sp1 = head.find(' ');
  if (sp1 == std::string_view::npos || sp1 + 1 >= head.size() || head[sp1 + 1] != '/' ||
      head.find("\r\n") < sp1) {
    return refuse("the request line is not METHOD SP /path SP HTTP/1.x");
  }
  const std::string authority = target.host + ":" + std::to_string(target.port);
  const std::string absolute = std::string(head.substr(0, sp1 + 1)) + "http://" + authority +
                               std::string(head.substr(sp1 + 1));
  auto request = ParseProxyRequestHead(absolute);
  if (!request) return refuse(request.error().reason, request.error().status);
  if (request->tunnel) return refuse("CONNECT inside a tunnel");
  return request;
}

}  // namespace anvil
