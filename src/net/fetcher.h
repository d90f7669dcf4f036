// The half of sys.net.fetch that touches the network (threat model T2): given a FetchPlan --
// URL, method and the validated addresses, all decided by PlanFetch before this runs -- perform
// one HTTPS request with libcurl so that nothing libcurl does on its own can widen the plan:
//   - a fresh easy handle per fetch: no connection, DNS, TLS-session or Alt-Svc state that a
//     reused handle would carry past the checks;
//   - CURLOPT_CONNECT_TO pins host:port to the validated address, so libcurl never resolves the
//     name itself (a second lookup is exactly what DNS rebinding needs), while the URL -- and so
//     the Host header, TLS SNI and certificate name check -- stays the granted host;
//   - CURLOPT_OPENSOCKETFUNCTION re-checks the address actually dialled against the plan and the
//     ConnectPolicy and refuses the socket (CURL_SOCKET_BAD) otherwise: the last line, should any
//     libcurl option or bug route the connection elsewhere;
//   - https only (PROTOCOLS_STR and REDIR_PROTOCOLS_STR), redirects never followed (a 3xx is
//     the plugin's answer), proxies off (PROXY "" and NOPROXY "*": HTTPS_PROXY and friends in
//     the gateway's environment are ignored), no Alt-Svc, no HSTS, no cookie file, no .netrc;
//   - caps: body bytes *after* decompression counted in the write callback (Debian 12's libcurl
//     applies MAXFILESIZE to the compressed size only: a gzip bomb would pass it), header bytes,
//     connect time, total time, and a low-speed floor so a slow-loris server cannot hold a
//     gateway worker for long.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "netpolicy/connect_policy.h"
#include "netpolicy/fetch_plan.h"
#include "netpolicy/ip_address.h"
#include "netpolicy/request_headers.h"

namespace anvil {

struct FetchLimits {
  std::uint64_t max_body_bytes = 8u << 20;     // decompressed response body
  std::uint64_t max_header_bytes = 64u << 10;  // all response header lines, status line included
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds total_timeout{30000};
  // Abort when fewer than low_speed_bytes per second arrive for low_speed_time (slow loris).
  long low_speed_bytes = 1024;
  std::chrono::seconds low_speed_time{10};
};

struct FetchResponse {
  long status = 0;
  std::vector<HttpHeader> headers;  // final response only; names lower-case, in arrival order
  std::string body;                 // decompressed; empty for HEAD
  IpAddress peer;                   // the address connected to
};

class Fetcher {
 public:
  // `extra_ca_pem`: PEM certificates trusted in addition to the system's (--unsafe-test-ca);
  // empty in production. Call from a single thread before any Fetch (libcurl global init).
  Fetcher(FetchLimits limits, std::string extra_ca_pem);

  // Thread-safe: every call builds its own handle. `policy` must be the one PlanFetch used.
  // `cancelled`, when given, is polled during the transfer: once true the fetch stops
  // ("cancelled"), so a reload or a cancel frame does not wait for a slow server.
  // Errors: "denied" (the dialled address was refused), "limit" (a cap), "timeout", "io",
  // "cancelled".
  Result<FetchResponse> Fetch(const FetchPlan& plan, const std::vector<HttpHeader>& headers,
                              std::string_view body, const ConnectPolicy& policy,
                              const std::atomic<bool>* cancelled = nullptr) const;

  const FetchLimits& limits() const { return limits_; }

 private:
  FetchLimits limits_;
  std::string extra_ca_pem_;
};

// {"content-type": "text/plain", ...}; repeated names joined with ", " (RFC 9110 5.3). Bytes
// that are not UTF-8 become U+FFFD.
std::string HeadersToJson(const std::vector<HttpHeader>& headers);

}  // namespace anvil
