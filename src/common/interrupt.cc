#include "common/interrupt.h"

#include <signal.h>

#include <atomic>
#include <cstring>
#include <string>

namespace anvil {
namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "read and written by a signal handler");

void Record(int sig) {
  int none = 0;
  g_signal.compare_exchange_strong(none, sig);
}

}  // namespace

void CatchInterrupts() {
  struct sigaction sa {};
  sa.sa_handler = Record;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: the wait in progress returns EINTR and looks
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

int InterruptSignal() { return g_signal.load(std::memory_order_relaxed); }

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? "SIG" + std::string(abbrev) : "signal " + std::to_string(sig);
}

}  // namespace anvil
