// The request head a sandboxed command sends to anvil-proxy (src/netpolicy/proxy_request; threat
// model T2). Invariants: no read outside the input (ASan); only the head up to its blank line is
// read (bytes after it change nothing); a refusal is a 400 or 411 with a reason; an accepted head
// has a token method and a target without spaces, a tunnel keeps no headers and may send
// anything, a plain request's body is 0 bytes unless it announced a length; a target that parses
// has neither spaces nor control bytes in its host or origin form; and the head
// forwarded for a plain request is one well-formed head: its only blank line at its end, its first
// header the target's Host and no other Host, at most one Content-Length (the announced one, in
// plain digits), Connection: close last, and no control byte but in its CRLFs. A tunnel's first
// bytes (ClassifyTunnelStart) keep their classification whatever follows, and a request read
// inside a tunnel (ParseTunnelledRequestHead) is a plain request for the tunnel's own host.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/ascii.h"
#include "fuzz_util.h"
#include "netpolicy/proxy_request.h"
#include "netpolicy/request_headers.h"

using anvil::fuzz::Require;

namespace {

bool HasControlByte(std::string_view text) {
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return true;
  }
  return false;
}

void CheckForwarded(const anvil::ProxyRequestHead& request, const anvil::ProxyTarget& target,
                    const std::string& origin_form, std::string_view input) {
  const std::string sent = anvil::ForwardedRequestHead(request, target, origin_form);
  Require(sent.size() >= 4 && sent.find("\r\n\r\n") == sent.size() - 4,
          "the forwarded head's only blank line is not at its end", input);
  std::string_view rest(sent);
  rest.remove_suffix(2);
  const size_t line_end = rest.find("\r\n");
  Require(rest.substr(0, line_end) == request.method + " " + origin_form + " HTTP/1.1",
          "the forwarded request line is not the origin form", input);
  rest.remove_prefix(line_end + 2);
  const std::string host_line =
      "Host: " + target.host + (target.port == 80 ? "" : ":" + std::to_string(target.port));
  int hosts = 0, lengths = 0;
  std::string last;
  bool first = true;
  while (!rest.empty()) {
    const size_t eol = rest.find("\r\n");
    Require(eol != std::string_view::npos, "a forwarded header line without its CRLF", input);
    const std::string_view line = rest.substr(0, eol);
    rest.remove_prefix(eol + 2);
    Require(!HasControlByte(line), "a control byte in a forwarded header line", input);
    const size_t colon = line.find(':');
    Require(colon != std::string_view::npos && anvil::IsHttpToken(line.substr(0, colon)),
            "a forwarded header line without a token name", input);
    const std::string name = anvil::AsciiLower(line.substr(0, colon));
    if (first) {
      Require(line == host_line, "the first forwarded header is not the target's Host", input);
    }
    first = false;
    if (name == "host") ++hosts;
    if (name == "content-length") {
      ++lengths;
      Require(line == "Content-Length: " + std::to_string(request.body_length),
              "a forwarded Content-Length that is not the announced length", input);
    }
    last = line;
  }
  Require(hosts == 1, "not exactly one forwarded Host", input);
  Require(lengths == (request.announced_length ? 1 : 0),
          "a forwarded Content-Length without an announced one, or more than one", input);
  Require(last == "Connection: close", "the forwarded head does not end with Connection: close",
          input);
}

// A tunnel's first bytes: a decision never changes with more bytes, and a request read inside a
// tunnel is a plain request for the tunnel's host, whatever it names.
void CheckTunnelled(std::string_view input) {
  const auto start = anvil::ClassifyTunnelStart(input);
  if (start != anvil::TunnelHttpStart::kNeedMore) {
    Require(anvil::ClassifyTunnelStart(std::string(input) + "\r\nGET / HTTP/1.1\r\n") == start,
            "more bytes changed a tunnel's classification", input);
  }
  anvil::ProxyTarget tunnel;
  tunnel.host = "api.example";
  tunnel.port = 8080;
  const auto request = anvil::ParseTunnelledRequestHead(input, tunnel);
  if (!request) return;
  Require(!request->tunnel, "a request inside a tunnel read as another tunnel", input);
  std::string origin_form;
  const auto target = anvil::ParseProxyRequestTarget(*request, &origin_form);
  if (!target) return;  // refused by the proxy (a path byte that is not allowed)
  Require(*target == tunnel, "a request inside a tunnel aimed elsewhere", input);
  CheckForwarded(*request, *target, origin_form, input);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = anvil::fuzz::AsView(data, size);
  CheckTunnelled(input);
  const auto head = anvil::ParseProxyRequestHead(input);
  if (input.find("\r\n\r\n") != std::string_view::npos) {
    const auto again =
        anvil::ParseProxyRequestHead(std::string(input) + "GET / HTTP/1.1\r\n\r\nxyz");
    Require(again.has_value() == head.has_value(), "bytes after the head changed the verdict",
            input);
    if (head) {
      Require(again->method == head->method && again->target == head->target &&
                  again->header_lines == head->header_lines &&
                  again->body_length == head->body_length,
              "bytes after the head changed the request", input);
    } else {
      Require(again.error().status == head.error().status &&
                  again.error().reason == head.error().reason,
              "bytes after the head changed the refusal", input);
    }
  }
  if (!head) {
    Require(head.error().status == 400 || head.error().status == 411,
            "a refusal that is neither 400 nor 411", input);
    Require(!head.error().reason.empty(), "a refusal without a reason", input);
    return 0;
  }
  Require(anvil::IsHttpToken(head->method), "an accepted method that is not a token", input);
  Require(head->target.find(' ') == std::string::npos, "an accepted target with a space", input);
  Require(head->tunnel == (head->method == "CONNECT"), "a tunnel that is not a CONNECT", input);
  if (head->tunnel) {
    Require(
        head->header_lines.empty() && head->body_length == UINT64_MAX && !head->announced_length,
        "a tunnel kept headers or a body length", input);
  } else {
    Require(head->announced_length || head->body_length == 0,
            "a body length without a Content-Length", input);
  }
  std::string origin_form;
  const auto target = anvil::ParseProxyRequestTarget(*head, &origin_form);
  if (!target) return 0;
  Require(!HasControlByte(target->host) && target->host.find(' ') == std::string::npos,
          "a target host with a space or a control byte", input);
  if (head->tunnel) return 0;
  Require(!origin_form.empty() && origin_form[0] == '/' && !HasControlByte(origin_form) &&
              origin_form.find(' ') == std::string::npos,
          "an origin form that is not a path without spaces or control bytes", input);
  CheckForwarded(*head, *target, origin_form, input);
  return 0;
}
