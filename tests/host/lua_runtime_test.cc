// The Lua runtime: the API, the removed standard library, and budgets that pcall cannot swallow.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fake_host_api.h"
#include "host/runtime.h"

namespace anvil::host {
namespace {

using testing::FakeHostApi;

class LuaRuntimeTest : public ::testing::Test {
 protected:
  std::unique_ptr<Runtime> Make(RuntimeLimits limits = {}) {
    auto rt = MakeLuaRuntime(api_, limits);
    EXPECT_NE(rt, nullptr);
    return rt;
  }
  // Loads `code` as main.lua and runs command "t" with `args`.
  Result<std::string> RunSnippet(const std::string& body, RuntimeLimits limits = {},
                                 const std::string& args = "{}") {
    runtime_ = Make(limits);
    PluginSource src{"main.lua", "anvil.command('t', function(args)\n" + body + "\nend)", {}};
    if (auto s = runtime_->Load(src); !s) return tl::unexpected(s.error());
    return runtime_->RunCommand("t", args);
  }
  FakeHostApi api_;
  std::unique_ptr<Runtime> runtime_;
};

TEST_F(LuaRuntimeTest, CommandsReturnJsonAndStrings) {
  auto r = RunSnippet("return {found = 2, items = {'a', 'b'}}");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, R"({"found":2,"items":["a","b"]})");
  r = RunSnippet("return 'plain'");
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, R"("plain")");
  r = RunSnippet("return args.x + 1", {}, R"({"x": 41})");
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, "42");
  EXPECT_EQ(runtime_->Commands(), std::vector<std::string>{"t"});
}

TEST_F(LuaRuntimeTest, SysFsCallsTheGatewayAndRaisesStableCodes) {
  api_.handlers["fs.read"] =
      [](const std::vector<std::string>& a) -> Result<std::vector<std::string>> {
    if (a[0] == "src/a.c") return std::vector<std::string>{"int x;"};
    return Fail("denied", "fs.read outside the grant: " + a[0]);
  };
  auto r = RunSnippet("return sys.fs.read('src/a.c')");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, R"("int x;")");
  r = RunSnippet("local ok, e = pcall(sys.fs.read, '../x'); return e");
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, R"("denied: fs.read outside the grant: ../x")");
  r = RunSnippet("return sys.fs.read('../x')");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "denied");
}

TEST_F(LuaRuntimeTest, ListStatWriteExecFetchEditorShapes) {
  api_.handlers["fs.list"] = [](const auto&) -> Result<std::vector<std::string>> {
    return std::vector<std::string>{"0", std::string("a.c\0file\0src\0dir\0", 17)};
  };
  api_.handlers["fs.stat"] = [](const auto&) -> Result<std::vector<std::string>> {
    return std::vector<std::string>{"file", "12", "100", "500000000"};
  };
  api_.handlers["exec"] = [](const auto&) -> Result<std::vector<std::string>> {
    return std::vector<std::string>{"0", "out", "err", "0", "0", ""};
  };
  api_.handlers["net.fetch"] = [](const auto&) -> Result<std::vector<std::string>> {
    return std::vector<std::string>{"200", R"({"content-type":"text/plain"})", "body"};
  };
  api_.handlers["editor.buffer.get"] = [](const auto&) -> Result<std::vector<std::string>> {
    return std::vector<std::string>{"file:///a", "3", "text"};
  };
  api_.handlers["editor.buffer.edit"] = [](const auto&) -> Result<std::vector<std::string>> {
    return Fail("stale", "buffer changed since version 3");
  };
  auto r = RunSnippet(R"(
    local l = sys.fs.list('.')
    local s = sys.fs.stat('a.c')
    sys.fs.write('notes/x', 'data')
    local e = sys.exec{program='rg', args={'TODO', '.'}}
    local f = sys.net.fetch{url='https://api.example.com/', headers={accept='*/*'}}
    local b = editor.buffer.get('file:///a')
    editor.notify('hi')
    local ok, err = pcall(editor.buffer.edit, b.uri, b.version, {{text='x'}})
    return {l[2].name, l[2].type, s.size, s.mtime, e.stdout, f.status, f.headers['content-type'],
            b.version, err}
  )");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(
      *r,
      R"(["src","dir",12,100.5,"out",200,"text/plain",3,"stale: buffer changed since version 3"])");
  bool saw_write = false, saw_exec = false;
  for (const auto& c : api_.calls) {
    if (c.op == "fs.write") saw_write = c.args == std::vector<std::string>{"notes/x", "data"};
    if (c.op == "exec") saw_exec = c.args[0] == "rg" && c.args[1] == R"(["TODO","."])";
  }
  EXPECT_TRUE(saw_write);
  EXPECT_TRUE(saw_exec);
}

TEST_F(LuaRuntimeTest, RemovedStandardLibraryIsAbsent) {
  auto r = RunSnippet(R"(
    return {io == nil, os.execute == nil, os.getenv == nil, os.remove == nil, debug == nil,
            package == nil, dofile == nil, loadfile == nil, string.dump == nil,
            os.time() > 0, type(os.clock()) == 'number'}
  )");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, "[true,true,true,true,true,true,true,true,true,true,true]");
}

TEST_F(LuaRuntimeTest, BinaryChunksAreRefused) {
  // A precompiled chunk starts with "\27Lua": load() is text-only.
  auto r = RunSnippet(R"(
    local f, err = load("\27LuaT\0\25\147\13\10\26\10", "x", "b")
    local g, err2 = load("\27LuaT\0\25\147\13\10\26\10")
    return {f == nil, g == nil, tostring(err2)}
  )");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_NE(r->find("[true,true,"), std::string::npos) << *r;
  EXPECT_NE(r->find("binary"), std::string::npos) << *r;
  runtime_ = Make();
  PluginSource binary{"main.lua", std::string("\x1bLuaT\0\x19\x93\r\n\x1a\n", 12), {}};
  EXPECT_FALSE(runtime_->Load(binary));
  // Text load still works.
  r = RunSnippet("return load('return 1 + 1')()");
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, "2");
}

TEST_F(LuaRuntimeTest, AnvilTablesAreReadOnlyEvenWithRawset) {
  api_.handlers["fs.read"] = [](const auto&) -> Result<std::vector<std::string>> {
    return std::vector<std::string>{"real"};
  };
  auto r = RunSnippet(R"(
    local a = pcall(function() sys.fs.read = function() return 'fake' end end)
    local b = pcall(rawset, sys.fs, 'read', function() return 'fake' end)
    local c = pcall(setmetatable, sys, {})
    local d = pcall(function() anvil.command = nil end)
    return {a, b, c, d, sys.fs.read('x'), getmetatable(sys)}
  )");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, R"([false,false,false,false,"real","locked"])");
}

TEST_F(LuaRuntimeTest, RequireLoadsOnlyThePluginsOwnModules) {
  runtime_ = Make();
  PluginSource src{"main.lua",
                   "local u = require('lib.util')\n"
                   "anvil.command('t', function() return {u.twice(21), pcall(require, 'os')} end)",
                   {{"lib.util", "return {twice = function(x) return 2 * x end}"}}};
  ASSERT_TRUE(runtime_->Load(src));
  auto r = runtime_->RunCommand("t", "{}");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, R"([42,false,"not_found: no module 'os' in this plugin"])");
}

TEST_F(LuaRuntimeTest, InfiniteLoopStopsAtTheInstructionBudgetEvenUnderPcall) {
  RuntimeLimits limits;
  limits.instructions = 1'000'000;
  // The budget is under test, not the clock: a loaded CI machine (the error path of the third
  // snippet is slow in a debug build) must not reach the 10 s default deadline first.
  limits.deadline = std::chrono::minutes(5);
  auto r = RunSnippet("while true do end", limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "limit");
  // The classic escape: keep catching the error and loop on.
  r = RunSnippet("while true do pcall(function() while true do end end) end", limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "limit");
  r = RunSnippet("local f = function() end; for i = 1, 1e12 do pcall(error, 'x') end", limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "limit");
  // And the next command gets a fresh budget.
  auto again = runtime_->RunCommand("t", "{}");
  EXPECT_FALSE(again);
}

TEST_F(LuaRuntimeTest, InfiniteLoopStopsAtTheDeadline) {
  RuntimeLimits limits;
  limits.instructions = UINT64_MAX / 2;
  limits.deadline = std::chrono::milliseconds(200);
  auto start = std::chrono::steady_clock::now();
  auto r = RunSnippet("while true do pcall(function() while true do end end) end", limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "timeout");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_F(LuaRuntimeTest, MemoryBalloonStopsAtTheBudgetEvenUnderPcall) {
  RuntimeLimits limits;
  limits.memory_bytes = 8 << 20;
  auto r =
      RunSnippet("local t = {} for i = 1, 1e9 do t[i] = string.rep('x', 1000) .. i end", limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "limit");
  r = RunSnippet(R"(
    local keep = {}
    while true do pcall(function() keep[#keep + 1] = string.rep('y', 1e6) .. #keep end) end
  )",
                 limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "limit");
  r = RunSnippet("return #string.rep('x', 1e8)", limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "limit");
}

TEST_F(LuaRuntimeTest, DeepRecursionIsAnErrorNotACrash) {
  auto r = RunSnippet("local function f(n) return f(n + 1) + 1 end return f(1)");
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().code == "error" || r.error().code == "limit") << r.error().ToString();
  r = RunSnippet(
      "local t = setmetatable({}, {__index = function(t, k) return t[k] end}) return t.x");
  ASSERT_FALSE(r);
}

TEST_F(LuaRuntimeTest, CyclicResultIsAnErrorNotACrash) {
  auto r = RunSnippet("local t = {} t.self = t return t");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "invalid");
}

TEST_F(LuaRuntimeTest, PrintGoesToThePluginLog) {
  auto r = RunSnippet("print('hello', 42) warn('careful') return true");
  ASSERT_TRUE(r);
  ASSERT_EQ(api_.logs.size(), 2u);
  EXPECT_EQ(api_.logs[0].second, "hello\t42");
  EXPECT_EQ(api_.logs[1].first, "warn");
}

TEST_F(LuaRuntimeTest, ErrorTextThatMerelyContainsACodeIsAPluginError) {
  // "xdenied: ..." once crashed the host (an out-of-range compare while looking for a code).
  auto r = RunSnippet("error('xdenied: y', 0)");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "error");
}

TEST_F(LuaRuntimeTest, PluginErrorsKeepTheirMessage) {
  auto r = RunSnippet("error('something broke')");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "error");
  EXPECT_NE(r.error().message.find("something broke"), std::string::npos);
  ASSERT_TRUE(runtime_);
  auto missing = runtime_->RunCommand("nope", "{}");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, "not_found");
}

// anvil.settings (Anvil.toml, untrusted data): readable like a table, writable nowhere.
TEST_F(LuaRuntimeTest, SettingsAreReadableAndReadOnlyAtEveryDepth) {
  const std::string settings =
      R"({"pattern":"TODO","max":200,"nested":{"list":[1,2,{"deep":true}]},"empty":{}})";
  runtime_ = MakeLuaRuntime(api_, {}, settings);
  ASSERT_NE(runtime_, nullptr);
  PluginSource src{"main.lua",
                   R"(
local s = anvil.settings
anvil.command('read', function()
  local keys = {}
  for k in pairs(s) do keys[#keys + 1] = k end
  table.sort(keys)
  local sum = 0
  for _, v in ipairs(s.nested.list) do if type(v) == 'number' then sum = sum + v end end
  return {pattern = s.pattern, max = s.max, keys = table.concat(keys, ','), n = #s.nested.list,
          sum = sum, deep = s.nested.list[3].deep}
end)
anvil.command('attack', function()
  local out = {}
  local function try(name, f) local ok, e = pcall(f); out[name] = ok and 'WROTE' or tostring(e) end
  try('assign', function() s.pattern = 'x' end)
  try('add', function() s.new = 1 end)
  try('nested', function() s.nested.list[1] = 99 end)
  try('deeper', function() s.nested.list[3].deep = false end)
  try('rawset', function() rawset(s, 'pattern', 'x') end)
  try('rawset_nested', function() rawset(s.nested, 'list', {}) end)
  try('replace', function() anvil.settings = {} end)
  try('setmetatable', function() setmetatable(s, nil) end)
  try('insert', function() table.insert(s.nested.list, 4) end)
  try('pairs_state', function() local _, st = pairs(s); st.pattern = 'x' end)
  out.meta = tostring(getmetatable(s))
  out.after = s.pattern .. ',' .. s.nested.list[1] .. ',' .. tostring(s.nested.list[3].deep)
  return out
end)
)",
                   {}};
  ASSERT_TRUE(runtime_->Load(src));
  auto r = runtime_->RunCommand("read", "{}");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(nlohmann::json::parse(*r),
            nlohmann::json::parse(
                R"({"pattern":"TODO","max":200,"keys":"empty,max,nested,pattern","n":3,"sum":3,
                    "deep":true})"));
  r = runtime_->RunCommand("attack", "{}");
  ASSERT_TRUE(r) << r.error().ToString();
  auto out = nlohmann::json::parse(*r);
  for (const char* k : {"assign", "add", "nested", "deeper", "rawset", "rawset_nested", "replace",
                        "setmetatable", "insert", "pairs_state"}) {
    ASSERT_TRUE(out.contains(k)) << k;
    EXPECT_NE(out[k].get<std::string>(), "WROTE") << k;
  }
  EXPECT_NE(out["rawset"].get<std::string>().find("denied: Anvil's tables are read-only"),
            std::string::npos)
      << out;
  EXPECT_EQ(out["meta"], "locked");
  EXPECT_EQ(out["after"], "TODO,1,true");
}

TEST_F(LuaRuntimeTest, NoSettingsIsAnEmptyTableAndNonObjectsAreRefused) {
  auto r = RunSnippet("return next(anvil.settings) == nil and #anvil.settings");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, "0");
  EXPECT_EQ(MakeLuaRuntime(api_, {}, "[1,2]"), nullptr);
  EXPECT_EQ(MakeLuaRuntime(api_, {}, "not json"), nullptr);
}

}  // namespace
}  // namespace anvil::host
