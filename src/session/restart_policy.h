// Whether `anvil serve` starts a crashed process (a plugin host, the gateway) again, and when: a
// pure decision over the process's recent crashes. The session records the history it returns
// and acts on the action.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>

namespace anvil::session {

struct RestartPolicy {
  int max_restarts = 3;                      // more crashes than this within the window: failed
  std::chrono::seconds window{60};           // crashes longer ago than this are forgotten
  std::chrono::milliseconds first_delay{0};  // before the first restart, doubled for each crash
                                             // in the window after it; 0: at once
};

struct RestartDecision {
  enum class Action {
    kRestart,  // start it again after `delay`
    kFail,     // crashed too often: failed until someone reloads it
  };
  Action action = Action::kRestart;
  std::chrono::milliseconds delay{0};
  // The history to keep: this crash and the earlier ones still within the window, oldest first
  // (its size is the count a failure message names).
  std::deque<std::chrono::steady_clock::time_point> crashes;
};

// A crash at `now`, after the crashes in `history` (oldest first).
RestartDecision DecideRestart(std::deque<std::chrono::steady_clock::time_point> history,
                              std::chrono::steady_clock::time_point now,
                              const RestartPolicy& policy);

}  // namespace anvil::session
