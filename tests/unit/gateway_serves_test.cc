// What a gateway is started to serve for the grants of its plugins, whether it serves a plugin
// admitted later, and the flags that leave the rest out (session/gateway_serves.h).
#include "session/gateway_serves.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace anvil::session {
namespace gateway_serves_test {
namespace {

using Args = std::vector<std::string>;

Grant GrantOf(std::vector<std::string> fs_write, std::vector<std::string> exec,
              std::vector<std::string> net_hosts = {"api.example.com"}) {
  Grant g;
  g.fs_read = {"**"};
  g.net_hosts = std::move(net_hosts);
  g.fs_write = std::move(fs_write);
  g.exec = std::move(exec);
  return g;
}

TEST(GatewayServesTest, EachGrantGetsOnlyWhatItNeeds) {
  struct Case {
    const char* what;
    Grant grant;
    GatewayServes serves;
    Args args;
    std::string executable;
  } cases[] = {
      {"read and net only",
       GrantOf({}, {}),
       {false, false, true},
       {"--no-exec", "--no-fs-write"},
       "anvil-gateway"},
      {"writes", GrantOf({"notes/**"}, {}), {true, false, true}, {"--no-exec"}, "anvil-gateway"},
      {"exec", GrantOf({}, {"rg"}), {false, true, true}, {"--no-fs-write"}, "anvil-gateway"},
      {"both", GrantOf({"**"}, {"rg", "git"}), {true, true, true}, {}, "anvil-gateway"},
      // No net: the gateway without network code.
      {"read only",
       GrantOf({}, {}, {}),
       {false, false, false},
       {"--no-exec", "--no-fs-write"},
       "anvil-gateway-offline"},
      {"writes and exec, no net",
       GrantOf({"**"}, {"rg"}, {}),
       {true, true, false},
       {},
       "anvil-gateway-offline"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(ServesFor(c.grant), c.serves);
    EXPECT_EQ(GatewayArgsFor(c.serves), c.args);
    EXPECT_EQ(GatewayExecutableFor(c.serves), c.executable);
  }
}

TEST(GatewayServesTest, AGatewayServesAPluginOnlyWhenItHasEverythingItNeeds) {
  // Every combination of the three, against every other.
  std::vector<GatewayServes> all;
  for (int bits = 0; bits < 8; ++bits)
    all.push_back({(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0});
  for (const GatewayServes& have : all) {
    for (const GatewayServes& need : all) {
      SCOPED_TRACE(testing::Message() << "have " << have.fs_write << have.exec << have.net
                                      << " need " << need.fs_write << need.exec << need.net);
      const bool covers =
          (have.fs_write || !need.fs_write) && (have.exec || !need.exec) && (have.net || !need.net);
      EXPECT_EQ(Covers(have, need), covers);
      // Widening by what is needed always covers it, and keeps what was served.
      const GatewayServes widened = Union(have, need);
      EXPECT_TRUE(Covers(widened, need));
      EXPECT_TRUE(Covers(widened, have));
      EXPECT_EQ(widened == have, covers);
    }
  }
  // The named cases, spelled out: a gateway without net never serves a plugin with net.
  EXPECT_FALSE(Covers({true, true, false}, {false, false, true}));
  EXPECT_TRUE(Covers({false, false, true}, {false, false, true}));
  EXPECT_TRUE(Covers({false, false, false}, {false, false, false}));
}

}  // namespace
}  // namespace gateway_serves_test
}  // namespace anvil::session
