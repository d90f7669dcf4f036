// What the refusal observer makes of connects to loopback ports (linux/refusal_observer.h,
// LoopbackHints): when it looks up what is bound there, when it records a hint, when it
// withdraws one. Each row is one connect of a run, in order, with what the lookup would answer.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "linux/refusal_observer.h"

namespace anvil {
namespace loopback_hints_test {
namespace {

struct Connect {
  uint16_t port;
  std::string address;
  bool bound;  // what a lookup would find
  // Expected:
  bool looked_up;
  bool record;
  std::vector<std::string> withdraw;
};

struct Case {
  const char* name;
  std::vector<uint16_t> own_ports;
  std::vector<Connect> connects;
};

const Case kCases[] = {
    {"the proxy's port under --network proxy is never looked up",
     {3128},
     {{3128, "127.0.0.1:3128", true, false, false, {}},
      {3128, "[::1]:3128", true, false, false, {}},
      {3128, "127.0.0.1:3128", true, false, false, {}}}},
    {"an own port is not looked up even when nothing would be found there",
     {3128},
     {{3128, "0.0.0.0:3128", false, false, false, {}}}},
    {"port 0 is never looked up", {}, {{0, "127.0.0.1:0", false, false, false, {}}}},
    {"a host loopback server tried: one hint per address, once",
     {},
     {{5432, "127.0.0.1:5432", false, true, true, {}},
      {5432, "127.0.0.1:5432", false, true, false, {}},
      {5432, "[::1]:5432", false, true, true, {}}}},
    {"the sandbox's own server, bound before the first connect: looked up once, no hint",
     {},
     {{8000, "127.0.0.1:8000", true, true, false, {}},
      {8000, "127.0.0.1:8000", true, false, false, {}},
      {8000, "127.0.0.1:8000", false, false, false, {}}}},
    {"a client that retried until its own server was up: the port's hints withdrawn",
     {},
     {{8000, "127.0.0.1:8000", false, true, true, {}},
      {8000, "[::1]:8000", false, true, true, {}},
      {8000, "127.0.0.1:8000", false, true, false, {}},
      {8000, "127.0.0.1:8000", true, true, false, {"127.0.0.1:8000", "[::1]:8000"}},
      {8000, "127.0.0.1:8000", false, false, false, {}}}},
    {"a withdrawal is the port's alone",
     {},
     {{8000, "127.0.0.1:8000", false, true, true, {}},
      {5432, "127.0.0.1:5432", false, true, true, {}},
      {8000, "127.0.0.1:8000", true, true, false, {"127.0.0.1:8000"}},
      {5432, "127.0.0.1:5432", false, true, false, {}}}},
    {"a DNS query to the host's resolver at 127.0.0.53 is a hint like any port",
     {3128},
     {{53, "127.0.0.53:53", false, true, true, {}}}},
};

TEST(LoopbackHints, Table) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    LoopbackHints hints(c.own_ports);
    int i = 0;
    for (const Connect& connect : c.connects) {
      SCOPED_TRACE("connect " + std::to_string(i++) + " to " + connect.address);
      const bool looks = hints.NeedsLookup(connect.port);
      EXPECT_EQ(looks, connect.looked_up);
      if (!looks) continue;
      const auto step = hints.Looked(connect.port, connect.address, connect.bound);
      EXPECT_EQ(step.record, connect.record);
      EXPECT_EQ(step.withdraw, connect.withdraw);
    }
  }
}

TEST(LoopbackHints, AnswersForAPortNotToBeLookedUpChangeNothing) {
  LoopbackHints hints({3128});
  auto step = hints.Looked(3128, "127.0.0.1:3128", false);
  EXPECT_FALSE(step.record);
  EXPECT_TRUE(step.withdraw.empty());
  EXPECT_FALSE(hints.NeedsLookup(3128));
}

TEST(LoopbackHints, ThePortsRememberedAreBounded) {
  // A command trying ever more ports keeps at most the observer's cap of hints to withdraw;
  // past it a hint is still recorded (the observer counts it as dropped).
  LoopbackHints hints({});
  for (uint16_t port = 1; port <= static_cast<uint16_t>(kMaxRefusalRecords + 10); ++port) {
    EXPECT_TRUE(hints.Looked(port, "127.0.0.1:" + std::to_string(port), false).record);
  }
  EXPECT_EQ(hints.Looked(1, "127.0.0.1:1", true).withdraw, std::vector<std::string>{"127.0.0.1:1"});
  const auto past = static_cast<uint16_t>(kMaxRefusalRecords + 5);
  EXPECT_TRUE(hints.Looked(past, "127.0.0.1:" + std::to_string(past), true).withdraw.empty());
}

}  // namespace
}  // namespace loopback_hints_test
}  // namespace anvil
