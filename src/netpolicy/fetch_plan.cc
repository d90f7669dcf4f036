#include "netpolicy/fetch_plan.h"

#include <utility>

namespace anvil {

Result<FetchPlan> PlanFetch(std::string_view url, std::string_view method, const NetGrant& grant,
                            Resolver& resolver, const ConnectPolicy& policy,
                            UrlCrossCheck& second_parser) {
  auto checked = CheckFetchUrl(url, grant, policy.unsafe_test(), second_parser);
  if (!checked) return tl::unexpected(checked.error());
  if (auto status = CheckFetchMethod(method, grant); !status) {
    return tl::unexpected(status.error());
  }
  FetchPlan plan{std::move(*checked), std::string(method), {}};
  if (plan.url.literal) {
    // Granted literally, yet still only a global address (or a test exemption) is acceptable.
    const AddressVerdict verdict = policy.Check(*plan.url.literal, plan.url.port);
    if (!verdict.allowed) {
      return Fail("denied", "address " + plan.url.literal->ToString() + ": " + verdict.reason);
    }
    plan.addresses.push_back(*plan.url.literal);
    return plan;
  }
  auto addresses = ResolveAndValidate(resolver, plan.url.host, plan.url.port, policy);
  if (!addresses) return tl::unexpected(addresses.error());
  plan.addresses = std::move(*addresses);
  return plan;
}

}  // namespace anvil
