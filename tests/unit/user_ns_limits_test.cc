#include "linux/user_ns_limits.h"

#include <gtest/gtest.h>

namespace anvil {
namespace user_ns_limits_test {
namespace {

TEST(SandboxUserNsLimits, ASandboxGetsAQuarterOfEachOfTheCallersLimits) {
  auto out = SandboxUserNsLimits({{"max_inotify_instances", 128},
                                  {"max_inotify_watches", 192546},
                                  {"max_user_namespaces", 3},
                                  {"max_fanotify_groups", 0}});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].name, "max_inotify_instances");
  EXPECT_EQ(out[0].value, 32u);
  EXPECT_EQ(out[1].value, 192546u / 4);
  EXPECT_EQ(out[2].value, 1u);  // a small limit still leaves the sandbox one
  EXPECT_EQ(out[3].value, 0u);  // none for the caller: none for the sandbox
}

TEST(SandboxUserNsLimits, TheCallersLimitsAreReadFromItsNamespace) {
  auto limits = ReadUserNsLimits();
  bool inotify = false;
  for (const auto& l : limits) inotify |= l.name == "max_inotify_instances" && l.value > 0;
  EXPECT_TRUE(inotify);
}

}  // namespace
}  // namespace user_ns_limits_test
}  // namespace anvil
