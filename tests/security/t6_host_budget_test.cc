// T6 end to end (`anvil run`: session, gateway, a real locked-down plugin host): a plugin that
// spends its budget in one thread of its VM (a coroutine, a promise executor) and carries on in
// another, under pcall or past a builtin that swallows errors, is stopped there: the command
// ends as `limit:` (exit 1) and the sys.fs.write it makes afterwards never happens. As root and
// as an unprivileged user (the host's lockdown takes different paths).
#include <gtest/gtest.h>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace t6_host_budget_test {
namespace {

class HostBudget : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_EQ(
        Shell("mkdir -p '" + ws_.path() + "/notes' '" + lua_.path() + "' '" + js_.path() + "'"), 0);
    const std::string permissions =
        "\n[permissions]\nfs.read = [\"notes/**\"]\nfs.write = [\"escaped.txt\", \"notes/**\"]\n";
    WriteFile(lua_ / "anvil-plugin.toml",
              "id = \"test.budget-lua\"\nversion = \"1.0.0\"\nruntime = \"lua\"\n"
              "entry = \"main.lua\"\n" +
                  permissions);
    WriteFile(lua_ / "main.lua", R"(
-- The memory budget runs out in a coroutine; the main thread goes on and writes.
anvil.command('memory', function()
  local co = coroutine.wrap(function()
    local keep = {}
    while true do keep[#keep + 1] = string.rep('x', 1 << 16) .. #keep end
  end)
  pcall(co)
  local n = 0
  for i = 1, 1e8 do n = n + 1 end
  sys.fs.write('escaped.txt', tostring(n))
  return 'escaped'
end)
-- The instruction budget runs out in a coroutine; the main thread loops on under pcall.
anvil.command('instructions', function()
  pcall(coroutine.wrap(function() while true do end end))
  local n = 0
  for i = 1, 1e8 do pcall(function() n = n + 1 end) end
  sys.fs.write('escaped.txt', tostring(n))
  return 'escaped'
end)
-- The work runs in short-lived coroutines, each ending before its thread's first count hook:
-- ~5e8 instructions against the default budget of 2e8.
anvil.command('coroutines', function()
  local work = function() local x = 0 for i = 1, 240 do x = x + i end end
  for k = 1, 1000000 do coroutine.resume(coroutine.create(work)) end
  sys.fs.write('escaped.txt', 'after')
  return 'escaped'
end)
-- A message handler: Lua runs it with every hook off.
anvil.command('handler', function()
  xpcall(function() while true do end end, function(e)
    for i = 1, 1e8 do end
    sys.fs.write('escaped.txt', 'from the handler')
    return e
  end)
  sys.fs.write('escaped.txt', 'after')
end)
-- A DAG: one table per level in the VM, 2^30 copies as data (F3): the conversion to the
-- result, or to sys.exec's args, fails fast at its budget instead of filling host memory.
anvil.command('dag', function()
  local x = {string.rep('x', 200)} for i = 1, 30 do x = {x, x} end
  return x
end)
anvil.command('dagexec', function()
  local x = {'a'} for i = 1, 30 do x = {x, x} end
  sys.exec{program = 'true', args = x}
  sys.fs.write('escaped.txt', 'after')
end)
-- One builtin that never comes back to the VM (F4): a pattern match with no counted instruction.
anvil.command('find', function()
  local r = ("a"):rep(200):find(".-.-.-.-b")
  sys.fs.write('escaped.txt', 'after')
  return r
end)
-- The benign neighbour: coroutines, pcall, xpcall and yields across pcall within the budget.
anvil.command('benign', function()
  local gen = coroutine.wrap(function()
    for i = 1, 3 do pcall(function() coroutine.yield(i) end) end
  end)
  local ok, e = pcall(error, {code = 'x'})
  local ok2, h = xpcall(function() error('boom', 0) end, function(m) return 'handled ' .. m end)
  local sum = gen() + gen() + gen()
  sys.fs.write('notes/ok.txt', h .. ' ' .. sum .. ' ' .. e.code)
  return sum
end)
)");
    WriteFile(js_ / "anvil-plugin.toml",
              "id = \"test.budget-js\"\nversion = \"1.0.0\"\nruntime = \"js\"\n"
              "entry = \"main.js\"\n" +
                  permissions);
    WriteFile(js_ / "main.js", R"(
// The budget runs out in a promise executor, which turns the interrupt into a rejection; the
// loop around it would go on for ever (until the deadline killed the host: "timeout"), and
// its writes are made from executors too.
anvil.command('executor', () => {
  for (;;) {
    new Promise(() => { for (;;) {} });
    new Promise(() => sys.fs.write('escaped.txt', 'x'));
  }
});
anvil.command('dag', () => {
  let x = ['x'.repeat(200)];
  for (let i = 0; i < 30; i++) x = [x, x];
  return x;
});
anvil.command('includes', () => {
  const r = Array.prototype.includes.call({length: 2 ** 53 - 1}, 1);
  sys.fs.write('escaped.txt', 'after');
  return r;
});
anvil.command('benign', async () => {
  const v = await new Promise((resolve) => resolve(20));
  function* g() { yield 1; yield 2; }
  let caught = '';
  try { await Promise.reject(new Error('boom')); } catch (e) { caught = e.message; }
  sys.fs.write('notes/ok.txt', caught + ' ' + (v + [...g()].length));
  return v + 2;
});
)");
    caller_.Give(ws_.path());
    caller_.Give(lua_.path());
    caller_.Give(js_.path());
    caller_.Give(state_.path());
  }
  // `timeout`: generous, the default instruction budget takes seconds to spend in a debug
  // build; a plugin the budget failed to stop runs into it ("timeout", exit 124).
  RunResult Anvil(const std::string& plugin, const std::string& command,
                  const std::string& timeout = "300") {
    std::vector<std::string> args = {AnvilBin(),  "run",   "--workspace", ws_.path(), "--approve",
                                     "--timeout", timeout, plugin,        command};
    RunOptions o;
    o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path(),
             "XDG_RUNTIME_DIR=" + state_.path()};
    o.timeout_seconds = 400;
    return testing::Run(args, Opts(o));
  }
  void ExpectStopped(const std::string& plugin, const std::string& command,
                     const std::string& error, const std::string& timeout = "300") {
    auto r = Anvil(plugin, command, timeout);
    EXPECT_EQ(r.status, 1) << command << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("anvil run: " + error), std::string::npos) << command << "\n" << r.err;
    EXPECT_EQ(r.out.find("escaped"), std::string::npos) << command << "\n" << r.out;
    EXPECT_FALSE(Exists(ws_ / "escaped.txt")) << command << ": the write after the budget happened";
  }
  TempDir ws_{"anvil-budget-ws"};
  TempDir lua_{"anvil-budget-lua"};
  TempDir js_{"anvil-budget-js"};
  TempDir state_{"anvil-budget-state"};
};

TEST_P(HostBudget, BudgetSpentInACoroutineStopsTheWholeLuaVm) {
  ExpectStopped(lua_.path(), "memory", "limit: memory budget exhausted");
  ExpectStopped(lua_.path(), "instructions", "limit: instruction budget exhausted");
  ExpectStopped(lua_.path(), "handler", "limit: instruction budget exhausted");
}

// Instructions run in coroutines too short to reach their thread's count hook are charged.
TEST_P(HostBudget, InstructionsInShortLivedCoroutinesSpendTheLuaBudget) {
  ExpectStopped(lua_.path(), "coroutines", "limit: instruction budget exhausted", "60");
}

TEST_P(HostBudget, BudgetSpentInAPromiseExecutorStopsTheWholeJsVm) {
  ExpectStopped(js_.path(), "executor", "limit: instruction budget exhausted", "60");
}

// F3: a value the VM holds cheaply but that is huge as data is refused while it is converted
// (well before the deadline: "limit", not "timeout"), by the budget named in the error.
TEST_P(HostBudget, ADagIsRefusedWhileConvertingNotExpandedInHostMemory) {
  ExpectStopped(lua_.path(), "dag", "limit: the command's result is over the cap of 16777216 bytes",
                "60");
  ExpectStopped(lua_.path(), "dagexec",
                "limit: sys.exec: the args table takes more than 67108864 bytes of host memory",
                "60");
  ExpectStopped(js_.path(), "dag", "limit: memory budget exhausted", "60");
}

// F4: a VM inside one builtin runs no instruction the budget counts; the trusted side stops
// the host at the budget's CPU-time equivalent (10 s for the default budget), before the
// deadline, with the instruction budget's code (a run the deadline stopped says "timeout").
// The deadline is long because 10 s of CPU can take minutes of wall time on a loaded machine;
// one language per test, so that each stays well inside the suite's per-test timeout.
TEST_P(HostBudget, ABuiltinThatNeverReturnsStopsAtTheBudgetsCpuTimeLua) {
  ExpectStopped(lua_.path(), "find", "limit: instruction budget exhausted: the command used",
                "240");
}

TEST_P(HostBudget, ABuiltinThatNeverReturnsStopsAtTheBudgetsCpuTimeJs) {
  ExpectStopped(js_.path(), "includes", "limit: instruction budget exhausted: the command used",
                "240");
}

TEST_P(HostBudget, CoroutinesPcallAndPromisesWithinTheBudgetStillWork) {
  auto r = Anvil(lua_.path(), "benign");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "6\n");
  EXPECT_EQ(ReadFile(ws_ / "notes/ok.txt"), "handled boom 6 x");
  r = Anvil(js_.path(), "benign");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "22\n");
  EXPECT_EQ(ReadFile(ws_ / "notes/ok.txt"), "boom 22");
}

INSTANTIATE_TEST_SUITE_P(Callers, HostBudget, ::testing::ValuesIn(kAllCallers), CallerParamName);

}  // namespace
}  // namespace t6_host_budget_test
}  // namespace anvil::testing
