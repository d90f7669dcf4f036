// Whether `anvil serve` starts a crashed process (a plugin host, the gateway) again, and when: a
// pure decision over the process's recent crashes. The session records the history it returns
// and acts on the action. Also whether a host's answer is its own deadline stop (killed and
// restarted outside the crash budget, so never on the plugin's word alone).
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <string_view>

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

// Whether a plugin host's error answer to a command is the host's own deadline stop, which
// ends the command as serve's deadline does (the host killed, a fresh one for the next
// command; not a crash). The host's budget answers "timeout: command passed its deadline"
// (host/lua_budget.cc, host/js_budget.cc), but plugin code may raise that same code and text,
// so the answer alone is never enough: serve's own clock must say the command's deadline has
// passed. The host counts the same length from when it received the command and serve from
// before it sent it, so a real stop is never read before serve's deadline; one read earlier is
// the plugin's own error, and the host lives on.
bool IsHostDeadlineStop(std::string_view code, std::string_view message,
                        std::chrono::steady_clock::time_point now,
                        std::chrono::steady_clock::time_point deadline);

}  // namespace anvil::session
