#include "session/restart_policy.h"

#include <algorithm>

namespace anvil::session {

RestartDecision DecideRestart(std::deque<std::chrono::steady_clock::time_point> history,
                              std::chrono::steady_clock::time_point now,
                              const RestartPolicy& policy) {
  history.push_back(now);
  while (!history.empty() && now - history.front() > policy.window) history.pop_front();
  RestartDecision decision;
  decision.crashes = std::move(history);
  const std::size_t crashes = decision.crashes.size();
  if (static_cast<int>(crashes) > policy.max_restarts) {
    decision.action = RestartDecision::Action::kFail;
    return decision;
  }
  // 1, 2, 4, ... times the first delay (the doubling stops at 2^30: no overflow).
  decision.delay = policy.first_delay * (1 << std::min<std::size_t>(crashes - 1, 30));
  return decision;
}

bool IsHostDeadlineStop(std::string_view code, std::string_view message,
                        std::chrono::steady_clock::time_point now,
                        std::chrono::steady_clock::time_point deadline) {
  return code == "timeout" && message == "command passed its deadline" && now >= deadline;
}

}  // namespace anvil::session
