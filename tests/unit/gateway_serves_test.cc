// What a gateway is started to serve for the grants of its plugins, whether it serves a plugin
// admitted later, and the flags that leave the rest out (session/gateway_serves.h).
#include "session/gateway_serves.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace anvil::session {
namespace {

using Args = std::vector<std::string>;

Grant GrantOf(std::vector<std::string> fs_write, std::vector<std::string> exec) {
  Grant g;
  g.fs_read = {"**"};
  g.net_hosts = {"api.example.com"};
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
  } cases[] = {
      {"read and net only", GrantOf({}, {}), {false, false}, {"--no-exec", "--no-fs-write"}},
      {"writes", GrantOf({"notes/**"}, {}), {true, false}, {"--no-exec"}},
      {"exec", GrantOf({}, {"rg"}), {false, true}, {"--no-fs-write"}},
      {"both", GrantOf({"**"}, {"rg", "git"}), {true, true}, {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(ServesFor(c.grant), c.serves);
    EXPECT_EQ(GatewayArgsFor(c.serves), c.args);
  }
}

TEST(GatewayServesTest, AGatewayServesAPluginOnlyWhenItHasEverythingItNeeds) {
  const GatewayServes none{false, false}, write{true, false}, exec{false, true}, both{true, true};
  struct Case {
    GatewayServes have, need;
    bool covers;
  } cases[] = {
      {none, none, true},  {none, write, false}, {none, exec, false},  {none, both, false},
      {write, none, true}, {write, write, true}, {write, exec, false}, {write, both, false},
      {exec, none, true},  {exec, write, false}, {exec, exec, true},   {exec, both, false},
      {both, none, true},  {both, write, true},  {both, exec, true},   {both, both, true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(testing::Message() << "have " << c.have.fs_write << c.have.exec << " need "
                                    << c.need.fs_write << c.need.exec);
    EXPECT_EQ(Covers(c.have, c.need), c.covers);
    // Widening by what is needed always covers it, and keeps what was served.
    const GatewayServes widened = Union(c.have, c.need);
    EXPECT_TRUE(Covers(widened, c.need));
    EXPECT_TRUE(Covers(widened, c.have));
    EXPECT_EQ(widened == c.have, c.covers);
  }
}

}  // namespace
}  // namespace anvil::session
