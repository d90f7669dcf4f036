// T6: a plugin value converted to host data outside the VM's allocator (a result, sys.exec
// args, fetch headers, buffer edits) is charged to a ConvertBudget as it is built: a table the
// VM holds once but references many times (a DAG doubling at each level) fails fast with
// "limit:" instead of being expanded in host memory. The budget itself, table-tested, then the
// Lua and JS runtimes in-process.
#include "host/convert_budget.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fake_host_api.h"
#include "host/runtime.h"

namespace anvil::host {
namespace convert_budget_test {
namespace {

using testing::FakeHostApi;

TEST(ConvertBudget, ChargesTextAndHostBytesAndStopsAtTheFirstOver) {
  struct Case {
    const char* name;
    uint64_t text_cap, host_cap;
    std::vector<std::pair<char, size_t>> nodes;  // 's' string, 'k' key, 'c' container, 'n' scalar
    bool spent;
    const char* why;  // part of Why("x") when spent
  } cases[] = {
      {"empty", 10, 1000, {}, false, ""},
      {"a string within both", 10, 1000, {{'s', 7}}, false, ""},
      {"a string one over the text cap", 9, 1000, {{'s', 7}}, true, "over the cap of 9 bytes"},
      {"many scalars pass the host cap",
       1000,
       100,
       {{'n', 0}, {'n', 0}, {'n', 0}, {'n', 0}},
       true,
       "more than 100 bytes of host memory"},
      {"containers and keys", 1000, 1000, {{'c', 0}, {'k', 3}, {'s', 3}}, false, ""},
      {"text is reported first", 5, 5, {{'s', 100}}, true, "over the cap of 5"},
  };
  for (const auto& c : cases) {
    ConvertBudget b(c.text_cap, c.host_cap);
    bool ok = true;
    for (auto [kind, len] : c.nodes) {
      bool charged = kind == 's'   ? b.String(len)
                     : kind == 'k' ? b.Key(len)
                     : kind == 'c' ? b.Container()
                                   : b.Scalar();
      ok = ok && charged;
    }
    EXPECT_EQ(b.spent(), c.spent) << c.name;
    EXPECT_EQ(ok, !c.spent) << c.name;
    if (c.spent) {
      EXPECT_NE(b.Why("x").find(std::string("x ") + (c.why[0] == 'o' ? "is " : "takes ") + c.why),
                std::string::npos)
          << c.name << ": " << b.Why("x");
      // Once spent, every later charge fails too.
      EXPECT_FALSE(b.Scalar()) << c.name;
    }
  }
}

// A DAG of `levels` levels over a 200-byte string: one table per level in the VM, 2^levels
// copies of the string as data.
std::string Dag(int levels) {
  return "local x = {string.rep('x', 200)} for i = 1, " + std::to_string(levels) +
         " do x = {x, x} end ";
}

class ConvertBudgetRuntime : public ::testing::Test {
 protected:
  Result<std::string> Run(bool lua, const std::string& body, RuntimeLimits limits = {}) {
    runtime_ = lua ? MakeLuaRuntime(api_, limits) : MakeJsRuntime(api_, limits);
    EXPECT_NE(runtime_, nullptr);
    PluginSource src =
        lua ? PluginSource{"main.lua", "anvil.command('t', function(args)\n" + body + "\nend)", {}}
            : PluginSource{
                  "main.js", "anvil.command('t', function (args) {\n" + body + "\n});", {}};
    if (auto s = runtime_->Load(src); !s) return tl::unexpected(s.error());
    return runtime_->RunCommand("t", "{}");
  }
  void SetUp() override {
    api_.handlers["exec"] = [](const auto&) -> Result<std::vector<std::string>> {
      return std::vector<std::string>{"0", "", "", "0", "0", ""};
    };
  }
  FakeHostApi api_;
  std::unique_ptr<Runtime> runtime_;
};

TEST_F(ConvertBudgetRuntime, LuaDagResultFailsFastAtTheMessageCap) {
  // 2^17 copies of 200 bytes: 26 MB as JSON, over the 16 MiB cap; 2^40 would never finish.
  for (int levels : {17, 40}) {
    auto r = Run(true, Dag(levels) + "return x");
    ASSERT_FALSE(r) << levels;
    EXPECT_EQ(r.error().code, "limit") << r.error().ToString();
    EXPECT_NE(r.error().message.find("the command's result is over the cap of 16777216 bytes"),
              std::string::npos)
        << r.error().ToString();
  }
  // Benign: the same DAG under the cap (2^15 copies, 6.6 MB) converts whole.
  auto r = Run(true, Dag(15) + "return x");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_GT(r->size(), 6'000'000u);
  // Benign: a large result of distinct values (100k strings, 10 MB) converts whole.
  r = Run(true, "local t = {} for i = 1, 100000 do t[i] = string.rep('y', 95) .. i end return t");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_GT(r->size(), 10'000'000u);
}

TEST_F(ConvertBudgetRuntime, LuaArgumentsAreChargedBeforeAnyRequest) {
  // 2^22 one-byte strings: 16 MB as JSON but ~300 MB as a host tree: the memory bound.
  const std::string small_dag = "local x = {'a'} for i = 1, 22 do x = {x, x} end ";
  for (const char* call : {"sys.exec{program = 'true', args = x}",
                           "sys.net.fetch{url = 'https://example.org', headers = {h = x}}",
                           "editor.buffer.edit('file:///a', 1, x)"}) {
    auto r = Run(true, small_dag + "local ok, e = pcall(function() " + call + " end) return e");
    ASSERT_TRUE(r) << call << ": " << r.error().ToString();
    const std::string e = nlohmann::json::parse(*r).get<std::string>();
    EXPECT_EQ(e.rfind("limit: ", 0), 0u) << call << ": " << e;
    EXPECT_NE(e.find("bytes of host memory to convert"), std::string::npos) << call << ": " << e;
  }
  EXPECT_TRUE(api_.calls.empty());
  // Benign: ordinary arguments still go through.
  auto r = Run(true, "sys.exec{program = 'true', args = {'a', 'b'}} return 1");
  ASSERT_TRUE(r) << r.error().ToString();
  ASSERT_EQ(api_.calls.size(), 1u);
  EXPECT_EQ(api_.calls[0].args[1], R"(["a","b"])");
}

TEST_F(ConvertBudgetRuntime, JsStringListsAreChargedBeforeTheTreeIsBuilt) {
  // 3M one-byte strings: 12 MB of JSON text (inside the VM's budget) but ~200 MB as a host tree.
  RuntimeLimits limits;
  limits.memory_bytes = 128ull << 20;
  auto r = Run(false,
               "const a = new Array(3000000).fill('a');\n"
               "try { sys.exec({program: 'true', args: a}); } catch (e) { return e.message; }",
               limits);
  ASSERT_TRUE(r) << r.error().ToString();
  const std::string e = nlohmann::json::parse(*r).get<std::string>();
  EXPECT_EQ(e.rfind("limit: sys.exec: args as JSON takes more than", 0), 0u) << e;
  EXPECT_TRUE(api_.calls.empty());
  // Benign: ordinary arguments still go through.
  r = Run(false, "sys.exec({program: 'true', args: ['a', 'b']}); return 1;");
  ASSERT_TRUE(r) << r.error().ToString();
  ASSERT_EQ(api_.calls.size(), 1u);
  EXPECT_EQ(api_.calls[0].args[1], R"(["a","b"])");
}

TEST_F(ConvertBudgetRuntime, JsDagResultStopsAtTheVmMemoryBudget) {
  // JSON.stringify expands the DAG inside the VM's metered allocator: the memory budget.
  auto r =
      Run(false, "let x = ['x'.repeat(200)]; for (let i = 0; i < 40; i++) x = [x, x]; return x;");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "limit") << r.error().ToString();
}

}  // namespace
}  // namespace convert_budget_test
}  // namespace anvil::host
