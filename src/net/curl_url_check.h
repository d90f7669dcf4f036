// libcurl's URL parser as the URL policy's second parser (netpolicy/url_policy.h): the parser that
// sends the request must read the URL exactly as the policy did. Also the convenience overloads
// of CheckFetchUrl and PlanFetch that every sender uses, so none forgets the cross-check.
#pragma once

#include <string_view>

#include "common/result.h"
#include "netpolicy/connect_policy.h"
#include "netpolicy/fetch_plan.h"
#include "netpolicy/resolver.h"
#include "netpolicy/url_policy.h"

namespace anvil {

// Refuses unless libcurl's URL API (default flags) reads `url` with the same scheme, host, port
// (default port filled in), no userinfo and no zone id as `ours`. A UrlCrossCheck.
Status CrossCheckWithCurl(std::string_view url, const FetchUrl& ours);

// The URL policy with libcurl as the second parser.
Result<FetchUrl> CheckFetchUrl(std::string_view url, const NetGrant& grant,
                               const UnsafeTestOptions& unsafe_test);

// Everything decided before a socket, with libcurl as the second parser.
Result<FetchPlan> PlanFetch(std::string_view url, std::string_view method, const NetGrant& grant,
                            Resolver& resolver, const ConnectPolicy& policy);

}  // namespace anvil
