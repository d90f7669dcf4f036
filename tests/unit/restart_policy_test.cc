// When `anvil serve` restarts a crashed plugin host or gateway, and when it gives up.
#include "session/restart_policy.h"

#include <gtest/gtest.h>

#include <vector>

namespace anvil::session {
namespace restart_policy_test {
namespace {

using namespace std::chrono_literals;
using Action = RestartDecision::Action;
using TimePoint = std::chrono::steady_clock::time_point;

const TimePoint kNow = TimePoint{} + 1000s;

TEST(RestartPolicyTest, BacksOffWithinTheWindowAndFailsPastTheBound) {
  const RestartPolicy host{3, 60s, 50ms};    // anvil serve's plugin hosts
  const RestartPolicy gateway{3, 60s, 0ms};  // its gateway: at once
  struct Case {
    const char* what;
    RestartPolicy policy;
    std::vector<std::chrono::milliseconds> earlier;  // crashes this long before now, oldest first
    Action action;
    std::chrono::milliseconds delay;
    size_t kept;  // crashes in the window, this one included
  } cases[] = {
      {"first crash", host, {}, Action::kRestart, 50ms, 1},
      {"second", host, {10s}, Action::kRestart, 100ms, 2},
      {"third", host, {20s, 10s}, Action::kRestart, 200ms, 3},
      {"fourth in the window: failed", host, {30s, 20s, 10s}, Action::kFail, 0ms, 4},
      {"old crashes are forgotten", host, {300s, 200s, 61s}, Action::kRestart, 50ms, 1},
      {"exactly the window ago still counts", host, {60s}, Action::kRestart, 100ms, 2},
      {"just past the window does not", host, {60001ms}, Action::kRestart, 50ms, 1},
      {"some forgotten, some not", host, {90s, 70s, 5s, 1s}, Action::kRestart, 200ms, 3},
      {"gateway: first", gateway, {}, Action::kRestart, 0ms, 1},
      {"gateway: third", gateway, {2s, 1s}, Action::kRestart, 0ms, 3},
      {"gateway: fourth", gateway, {3s, 2s, 1s}, Action::kFail, 0ms, 4},
      {"no restarts allowed", {0, 60s, 50ms}, {}, Action::kFail, 0ms, 1},
      {"one allowed, the second fails", {1, 60s, 50ms}, {1s}, Action::kFail, 0ms, 2},
      {"a short window", {1, 1s, 50ms}, {2s}, Action::kRestart, 50ms, 1},
      {"two crashes at the same instant", host, {0ms}, Action::kRestart, 100ms, 2},
  };
  for (const auto& c : cases) {
    std::deque<TimePoint> history;
    for (auto ago : c.earlier) history.push_back(kNow - ago);
    const RestartDecision d = DecideRestart(history, kNow, c.policy);
    EXPECT_EQ(d.action, c.action) << c.what;
    if (c.action == Action::kRestart) {
      EXPECT_EQ(d.delay, c.delay) << c.what;
    }
    ASSERT_EQ(d.crashes.size(), c.kept) << c.what;
    EXPECT_EQ(d.crashes.back(), kNow) << c.what;
    // What is kept is the newest of the history, in order.
    for (size_t i = 0; i + 1 < c.kept; ++i) {
      EXPECT_EQ(d.crashes[i], history[history.size() - (c.kept - 1) + i]) << c.what;
    }
  }
}

TEST(RestartPolicyTest, TheDelayDoublingIsBounded) {
  std::deque<TimePoint> history(40, kNow);
  const RestartDecision d = DecideRestart(history, kNow, {100, 60s, 1ms});
  EXPECT_EQ(d.action, Action::kRestart);
  EXPECT_EQ(d.delay, std::chrono::milliseconds(1LL << 30));
}

TEST(RestartPolicyTest, AFailedProcessStaysFailedAsItKeepsCrashing) {
  // The history goes on growing (the session keeps it); every later crash in the window fails.
  const RestartPolicy host{3, 60s, 50ms};
  std::deque<TimePoint> history;
  std::vector<Action> actions;
  for (int i = 0; i < 6; ++i) {
    RestartDecision d = DecideRestart(history, kNow + std::chrono::seconds(i), host);
    actions.push_back(d.action);
    history = std::move(d.crashes);
  }
  EXPECT_EQ(actions, (std::vector<Action>{Action::kRestart, Action::kRestart, Action::kRestart,
                                          Action::kFail, Action::kFail, Action::kFail}));
}

TEST(RestartPolicyTest, AHostDeadlineStopNeedsServesClockToAgree) {
  const TimePoint deadline = kNow;
  const char* const kText = "command passed its deadline";
  struct Case {
    const char* what;
    const char* code;
    const char* message;
    std::chrono::milliseconds after_deadline;  // when serve reads the answer
    bool stop;
  } cases[] = {
      {"the host's stop, read after serve's deadline", "timeout", kText, 5ms, true},
      {"read exactly at serve's deadline", "timeout", kText, 0ms, true},
      {"the same text before serve's deadline: the plugin's own", "timeout", kText, -1ms, false},
      {"long before the deadline (a plugin raised it at once)", "timeout", kText, -59s, false},
      {"another timeout (a fetch's) after the deadline", "timeout", "the fetch timed out", 5ms,
       false},
      {"another code with the same text", "error", kText, 5ms, false},
      {"a limit after the deadline", "limit", "instruction budget exhausted", 5ms, false},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(IsHostDeadlineStop(c.code, c.message, deadline + c.after_deadline, deadline), c.stop)
        << c.what;
  }
}

}  // namespace
}  // namespace restart_policy_test
}  // namespace anvil::session
