// The URL and method half of sys.net.fetch's policy (threat model T2): which URLs a plugin may
// fetch given its grant, decided before any DNS query or connect.
//
// The URL grammar is deliberately much narrower than RFC 3986, WHATWG or libcurl, because every
// place where those three disagree is an SSRF filter bypass somewhere:
//   https://HOST[:443]PATH[?QUERY][#FRAGMENT]
//   - scheme "https" (ASCII case-insensitive), then exactly "//";
//   - no userinfo ('@' anywhere in the authority), no backslash, no whitespace, no control or
//     NUL byte, no byte >= 0x80 anywhere in the URL (IDNs must be written as A-labels, paths
//     percent-encoded);
//   - HOST: netpolicy/host_name.h's grammar (the one a manifest's net.hosts is checked with),
//     after ASCII lower-casing; no percent-encoding;
//   - the port, when present, is canonical decimal and 443 (or a port an
//     --unsafe-test-allow-address entry names);
//   - the fragment is dropped: it is never sent on the wire, and dropping it keeps what we send
//     identical to what we checked;
//   - %XX escapes in path and query must be well-formed; they are passed on undecoded.
// Then the host must be in the grant's exact allowlist (no wildcards, no suffix match), and an
// IP-literal host only if the grant names that literal exactly. Finally a second parser — the one
// that will send the request: libcurl's, net/curl_url_check.h — reads the same text; if its
// scheme, host, port or userinfo differs from ours, the URL is refused ("parser disagreement").
// This file needs no libcurl: the second parser is passed in.
//
// Error codes: "invalid" for text outside the grammar, "denied" for a well-formed URL the policy
// refuses (scheme, port, userinfo, host not granted, parser disagreement).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "netpolicy/connect_policy.h"
#include "netpolicy/ip_address.h"

namespace anvil {

// The exact hosts a grant names (manifest `net.hosts`), each lower-cased and validated with the
// host grammar of netpolicy/host_name.h. Wildcards are rejected, not silently treated as literal
// text.
class HostAllowlist {
 public:
  HostAllowlist() = default;
  static Result<HostAllowlist> Create(const std::vector<std::string>& hosts);

  // `host` as ParseFetchUrl returns it (lower-case; IPv6 literal in brackets).
  bool Contains(std::string_view host) const;
  const std::vector<std::string>& hosts() const { return hosts_; }

 private:
  std::vector<std::string> hosts_;
};

// The network part of a plugin's grant (manifest `net.hosts` and `net.post`).
struct NetGrant {
  HostAllowlist hosts;
  bool post = false;  // net.post: POST allowed in addition to GET and HEAD
};

// A URL that passed the grammar.
struct FetchUrl {
  std::string url;   // canonical text handed to libcurl: https://HOST[:PORT]PATH[?QUERY]
  std::string host;  // lower-case; IPv6 literal with brackets ("[2001:4860::8888]")
  std::optional<IpAddress> literal;  // set when HOST is an IP literal
  std::uint16_t port = kHttpsPort;
  bool port_given = false;     // the URL wrote a port (kept in `url` as written)
  std::string path_and_query;  // starts with '/', fragment removed
};

// The grammar only: no grant, no port policy beyond syntax, no libcurl.
Result<FetchUrl> ParseFetchUrl(std::string_view url);

// A second URL parser: refuses unless it reads `url` with the same scheme, host, port, no
// userinfo and no zone id as `ours` ("denied", "parser disagreement: ...").
using UrlCrossCheck = Status(std::string_view url, const FetchUrl& ours);

// The whole URL policy: grammar, port, grant, then the second parser over both the URL as
// written and the canonical URL. `unsafe_test` only widens which ports are accepted (those an
// exempted test address names). Callers that send with libcurl use net/curl_url_check.h's
// overload, which passes libcurl's parser.
Result<FetchUrl> CheckFetchUrl(std::string_view url, const NetGrant& grant,
                               const UnsafeTestOptions& unsafe_test, UrlCrossCheck& second_parser);

// GET and HEAD always; POST only with net.post; nothing else (methods are case-sensitive).
Status CheckFetchMethod(std::string_view method, const NetGrant& grant);

}  // namespace anvil
