#include "netpolicy/fetch_plan.h"

#include <utility>

namespace anvil {

Result<FetchPlan> PlanFetch(std::string_view url, std::string_view method, const NetGrant& grant,
                            Resolver& resolver, const ConnectPolicy& policy,
                            UrlCrossCheck& second_parser) {
  ANVIL_TRY(checked, CheckFetchUrl(url, grant, policy.unsafe_test(), second_parser));
  ANVIL_RETURN_IF_ERROR(CheckFetchMethod(method, grant));
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
  ANVIL_TRY(addresses, ResolveAndValidate(resolver, plan.url.host, plan.url.port, policy));
  plan.addresses = std::move(*addresses);
  return plan;
}

}  // namespace anvil
