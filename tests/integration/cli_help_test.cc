// `anvil --help` and every subcommand's help: usage, options and examples a new user can
// copy, on stdout with exit 0 (so `anvil x --help | less` works).
#include <gtest/gtest.h>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace {

TEST(CliHelp, TopLevelHelpListsEveryCommandWithExamples) {
  auto r = testing::Run({AnvilBin(), "--help"});
  EXPECT_EQ(r.status, 0) << r.err;
  for (const char* command : {"sandbox", "run", "serve", "plugin", "audit", "rules", "doctor"}) {
    EXPECT_NE(r.out.find(std::string("(anvil ") + command + " --help)"), std::string::npos)
        << command << "\n"
        << r.out;
  }
  EXPECT_NE(r.out.find("Examples:"), std::string::npos) << r.out;
}

TEST(CliHelp, EachSubcommandHelpHasUsageAndExamples) {
  for (const char* command : {"sandbox", "run", "serve", "plugin", "audit", "rules", "doctor"}) {
    auto r = testing::Run({AnvilBin(), command, "--help"});
    EXPECT_EQ(r.status, 0) << command << ": " << r.err;
    EXPECT_EQ(r.out.rfind(std::string("usage: anvil ") + command, 0), 0u) << r.out;
    // Every example is a complete command line of this subcommand.
    auto at = r.out.find("Examples:\n");
    ASSERT_NE(at, std::string::npos) << command << " --help has no examples:\n" << r.out;
    EXPECT_NE(r.out.find(std::string("\n  anvil ") + command + " ", at), std::string::npos)
        << r.out;
  }
}

}  // namespace
}  // namespace anvil::testing
