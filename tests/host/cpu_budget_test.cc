// T6: CPU time spent inside builtins, where no instruction is counted, spends the instruction
// budget too (its CPU-time equivalent, ipc/cpu_budget.h): a loop of few instructions around an
// expensive builtin ends with the instruction budget's error, not at the deadline. In-process:
// the host's own check, from the count hook and the interrupt poll. (A VM that never comes
// back from one builtin is stopped from outside: t6_host_budget_test.cc.)
#include <gtest/gtest.h>

#include <chrono>

#include "fake_host_api.h"
#include "host/runtime.h"

namespace anvil::host {
namespace cpu_budget_test {
namespace {

using testing::FakeHostApi;

class CpuBudgetRuntime : public ::testing::Test {
 protected:
  Result<std::string> Run(bool lua, const std::string& body, RuntimeLimits limits) {
    runtime_ = lua ? MakeLuaRuntime(api_, limits) : MakeJsRuntime(api_, limits);
    EXPECT_NE(runtime_, nullptr);
    PluginSource src =
        lua ? PluginSource{"main.lua", "anvil.command('t', function(args)\n" + body + "\nend)", {}}
            : PluginSource{
                  "main.js", "anvil.command('t', function (args) {\n" + body + "\n});", {}};
    if (auto s = runtime_->Load(src); !s) return tl::unexpected(s.error());
    return runtime_->RunCommand("t", "{}");
  }
  FakeHostApi api_;
  std::unique_ptr<Runtime> runtime_;
};

TEST_F(CpuBudgetRuntime, BuiltinHeavyLoopsStopAtTheBudgetsCpuTime) {
  RuntimeLimits limits;
  limits.instructions = 1'000'000;  // 1 s of CPU time (the floor)
  limits.deadline = std::chrono::minutes(2);
  for (auto [lua, body] : {
           std::pair<bool, std::string>{true,
                                        "local s = string.rep('a', 1000)\n"
                                        "for i = 1, 1e9 do s:find('.-b') end"},
           {false,
            "const s = 'a'.repeat(2000), n = 'a'.repeat(200) + 'b';\n"
            "for (let i = 0; i < 1e9; i++) s.indexOf(n);"},
       }) {
    const auto start = std::chrono::steady_clock::now();
    auto r = Run(lua, body, limits);
    ASSERT_FALSE(r) << lua;
    EXPECT_EQ(r.error().code, "limit") << r.error().ToString();
    EXPECT_EQ(r.error().message, "instruction budget exhausted") << r.error().ToString();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60)) << lua;
  }
}

TEST_F(CpuBudgetRuntime, ALegitHeavyStringOpUnderTheBudgetFinishes) {
  RuntimeLimits limits;
  limits.instructions = 1'000'000;
  limits.deadline = std::chrono::minutes(2);
  auto r = Run(true,
               "local s = string.rep('ab', 1000000) local n = 0\n"
               "for w in s:gmatch('ab') do n = n + 1 end return n",
               {});
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, "1000000");
  r = Run(false, "return 'ab'.repeat(1000000).split('b').length;", limits);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, "1000001");
}

}  // namespace
}  // namespace cpu_budget_test
}  // namespace anvil::host
