// The refusal observer's seccomp program (linux/refusal_observer.h) is baked at build time like
// the others; it must be exactly what libseccomp makes of its rules now.
#include <gtest/gtest.h>

#include <cstring>

#include "linux/refusal_observer.h"
#include "linux/seccomp_compile.h"

namespace anvil {
namespace refusal_observer_filter_test {
namespace {

TEST(RefusalObserverFilter, BakedProgramsAreByteIdenticalToAFreshCompile) {
  for (bool connect : {false, true}) {
    SCOPED_TRACE(connect ? "with connect" : "writes only");
    auto baked = RefusalObserverProgram(connect);
    auto fresh = seccomp::CompileRefusalObserverFilter(connect);
    ASSERT_TRUE(fresh) << fresh.error().ToString();
    ASSERT_EQ(baked.size(), fresh->size());
    EXPECT_EQ(std::memcmp(baked.data(), fresh->data(), baked.size() * sizeof(baked[0])), 0);
  }
  EXPECT_GT(RefusalObserverProgram(true).size(), RefusalObserverProgram(false).size());
}

}  // namespace
}  // namespace refusal_observer_filter_test
}  // namespace anvil
