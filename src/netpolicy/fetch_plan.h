// Everything sys.net.fetch decides before it opens a socket, as one pure step: URL policy, method
// policy, resolution, and the address check on every answer. The (later) fetcher only connects
// to FetchPlan::addresses, re-checking the dialled address with the same ConnectPolicy.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "netpolicy/connect_policy.h"
#include "netpolicy/ip_address.h"
#include "netpolicy/resolver.h"
#include "netpolicy/url_policy.h"

namespace anvil {

struct FetchPlan {
  FetchUrl url;
  std::string method;                // "GET", "HEAD" or "POST"
  std::vector<IpAddress> addresses;  // validated connect targets, all of them allowed
};

// Order matters for the threat model: the URL and the method are refused before any DNS query
// (a refused URL must not even leak a lookup), and an IP-literal host is never sent to the
// resolver (getaddrinfo would happily "resolve" it to itself, or to something else).
// `second_parser`: the URL parser that will send the request (CheckFetchUrl); callers that send
// with libcurl use net/curl_url_check.h's overload.
Result<FetchPlan> PlanFetch(std::string_view url, std::string_view method, const NetGrant& grant,
                            Resolver& resolver, const ConnectPolicy& policy,
                            UrlCrossCheck& second_parser);

}  // namespace anvil
