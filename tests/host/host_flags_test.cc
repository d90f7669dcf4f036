// anvil-plugin-host's flag table (src/host/host_flags.h): each flag sets its option, the others
// keep their defaults, a bad value is refused in words that name the flag, and --help lists the
// table.
#include "host/host_flags.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace anvil::host {
namespace host_flags_test {
namespace {

// Whether --help has a row for `flag` (its help on the same line or the next).
bool Lists(const std::string& help, const std::string& flag) {
  const std::string row = "\n  " + flag;
  for (size_t at = help.find(row); at != std::string::npos; at = help.find(row, at + 1)) {
    const size_t end = at + row.size();
    if (end < help.size() && (help[end] == ' ' || help[end] == '\n')) return true;
  }
  return false;
}

using Args = std::vector<std::string>;

TEST(HostFlags, EachFlagSetsItsOptionAndTheOthersKeepTheirDefaults) {
  HostOptions o;
  const CommandSpec spec = HostFlags(o);
  auto r = ParseFlags(spec, {"--plugin-dir",   "/p",      "--runtime",       "js",
                             "--entry",        "main.js", "--plugin-id",     "a.b",
                             "--workspace",    "/w",      "--gateway-fd",    "3",
                             "--session-fd",   "4",       "--token-fd",      "5",
                             "--memory-limit", "32M",     "--instructions",  "100000000000000",
                             "--deadline-ms",  "100000",  "--address-space", "2147483648"});
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(o.plugin_dir, "/p");
  EXPECT_EQ(o.runtime, "js");
  EXPECT_EQ(o.entry, "main.js");
  EXPECT_EQ(o.plugin_id, "a.b");
  EXPECT_EQ(o.workspace, "/w");
  EXPECT_EQ(o.gateway_fd, 3);
  EXPECT_EQ(o.session_fd, 4);
  EXPECT_EQ(o.token_fd, 5);
  EXPECT_EQ(o.limits.memory_bytes, 32u << 20);
  EXPECT_EQ(o.limits.instructions, 100000000000000u);
  EXPECT_EQ(o.limits.deadline, std::chrono::milliseconds(100000));
  EXPECT_EQ(o.lockdown.address_space, 2ull << 30);

  HostOptions d;
  const HostOptions untouched;
  ASSERT_TRUE(ParseFlags(HostFlags(d), {}));
  EXPECT_EQ(d.gateway_fd, -1);
  EXPECT_EQ(d.limits.memory_bytes, untouched.limits.memory_bytes);
  EXPECT_EQ(d.limits.deadline, untouched.limits.deadline);
  EXPECT_EQ(d.lockdown.address_space, untouched.lockdown.address_space);
  // The runtime's name is checked where the host starts (RunPluginHost), as it always was.
  HostOptions any;
  EXPECT_TRUE(ParseFlags(HostFlags(any), {"--runtime", "python"}));
}

TEST(HostFlags, ABadValueIsRefusedInWordsThatNameTheFlag) {
  struct Row {
    Args args;
    const char* message;
  };
  const Row rows[] = {
      {{"--gateway-fd"}, "--gateway-fd needs a value"},
      {{"--token-fd", "-1"}, "--token-fd expects a descriptor number, got -1"},
      {{"--memory-limit", "64 MiB"}, "--memory-limit expects a number of bytes, got 64 MiB"},
      {{"--instructions", "1e9"}, "--instructions expects a number, got 1e9"},
      {{"--deadline-ms", "-5"}, "--deadline-ms expects a number, got -5"},
      {{"--test-fail-layer", "landlock"},
       "unknown option --test-fail-layer (see anvil-plugin-host --help)"},
      {{"--entri", "main.lua"},
       "unknown option --entri (see anvil-plugin-host --help); did you mean --entry?"},
  };
  for (const Row& row : rows) {
    HostOptions o;
    auto r = ParseFlags(HostFlags(o), row.args);
    ASSERT_FALSE(r) << row.args[0];
    EXPECT_EQ(r.error().code, "invalid");
    EXPECT_EQ(r.error().message, row.message);
  }
}

TEST(HostFlags, HelpListsEveryFlag) {
  HostOptions o;
  const CommandSpec spec = HostFlags(o);
  const std::string help = RenderHelp(spec);
  EXPECT_EQ(help.rfind("usage: anvil-plugin-host --plugin-dir DIR --runtime lua|js", 0), 0u);
  for (const Flag& f : spec.flags) {
    EXPECT_TRUE(Lists(help, f.name)) << f.name;
  }
}

}  // namespace
}  // namespace host_flags_test
}  // namespace anvil::host
