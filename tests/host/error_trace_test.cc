// Where a plugin error happened, in both runtimes: syntax errors, runtime errors and thrown
// values (tables, non-Error values, Error subclasses), at load time and inside a command, in the
// entry and in a module. Budget errors keep their codes.
#include <gtest/gtest.h>

#include "fake_host_api.h"
#include "host/runtime.h"
#include "ipc/plugin_trace.h"

namespace anvil::host {
namespace error_trace_test {
namespace {

using testing::FakeHostApi;

struct Where {
  std::string code, message, file, source, note;
  int line = 0, column = 0;
  std::vector<std::string> stack;
};

Where Describe(const Error& e) {
  Where w{e.code, e.message, "", "", "", 0, 0, {}};
  if (auto t = ipc::DecodePluginTrace(e.trace)) {
    w.file = t->file;
    w.line = t->line;
    w.column = t->column;
    w.source = t->source;
    w.note = t->note;
    w.stack = t->stack;
  }
  return w;
}

class ErrorTraceTest : public ::testing::Test {
 protected:
  // Loads `entry` (and `modules`) in the runtime; on success runs command "t".
  Where Fails(bool lua, const std::string& entry, std::map<std::string, std::string> modules = {},
              RuntimeLimits limits = {}) {
    runtime_ = lua ? MakeLuaRuntime(api_, limits) : MakeJsRuntime(api_, limits);
    EXPECT_NE(runtime_, nullptr);
    PluginSource src{lua ? "main.lua" : "main.js", entry, std::move(modules)};
    if (auto s = runtime_->Load(src); !s) return Describe(s.error());
    auto r = runtime_->RunCommand("t", "{}");
    if (!r) return Describe(r.error());
    ADD_FAILURE() << "no error; returned " << *r;
    return {};
  }
  FakeHostApi api_;
  std::unique_ptr<Runtime> runtime_;
};

// ---- Lua ---------------------------------------------------------------------------------

TEST_F(ErrorTraceTest, LuaSyntaxErrorAtLoadNamesFileLineAndSource) {
  Where w = Fails(true, "local a = 1\nlocal b = = 2\n");
  EXPECT_EQ(w.code, "error");
  EXPECT_EQ(w.file, "main.lua");
  EXPECT_EQ(w.line, 2);
  EXPECT_EQ(w.column, 0);  // Lua gives no column
  EXPECT_EQ(w.source, "local b = = 2");
}

TEST_F(ErrorTraceTest, LuaRuntimeErrorInACommandHasATraceback) {
  Where w = Fails(true,
                  "local function inner(t)\n"
                  "  return t.x.y\n"
                  "end\n"
                  "local function outer() local v = inner({}) return v end\n"
                  "anvil.command('t', function() return outer() + 1 end)\n");
  EXPECT_EQ(w.code, "error");
  EXPECT_NE(w.message.find("attempt to index"), std::string::npos) << w.message;
  EXPECT_EQ(w.file, "main.lua");
  EXPECT_EQ(w.line, 2);
  EXPECT_EQ(w.source, "  return t.x.y");
  ASSERT_GE(w.stack.size(), 3u);
  EXPECT_EQ(w.stack[0], "main.lua:2: in upvalue 'inner'");
  EXPECT_NE(w.stack[1].find("main.lua:4:"), std::string::npos) << w.stack[1];
  EXPECT_NE(w.stack[2].find("main.lua:5:"), std::string::npos) << w.stack[2];
}

TEST_F(ErrorTraceTest, LuaErrorWithATableSaysWhatIsInItAndWhere) {
  Where w = Fails(true, "anvil.command('t', function()\n  error({code = 1})\nend)\n");
  EXPECT_EQ(w.code, "error");
  EXPECT_EQ(w.message, "error object is a table: {code = 1}");
  EXPECT_EQ(w.file, "main.lua");
  EXPECT_EQ(w.line, 2);
  EXPECT_EQ(w.source, "  error({code = 1})");
  // A table's __tostring is plugin code: it never runs while the error is described.
  w = Fails(true,
            "anvil.command('t', function()\n"
            "  error(setmetatable({}, {__tostring = function() while true do end end}))\n"
            "end)\n");
  EXPECT_EQ(w.code, "error");
  EXPECT_EQ(w.message, "error object is a table: {}");
  EXPECT_EQ(w.line, 2);
}

TEST_F(ErrorTraceTest, LuaNonStringValuesAndLevelZeroErrorsGetTheRaisingLine) {
  Where w = Fails(true, "anvil.command('t', function()\n  error(false)\nend)\n");
  EXPECT_EQ(w.message, "error object is a boolean");
  EXPECT_EQ(w.line, 2);
  w = Fails(true, "anvil.command('t', function()\n\n  error('plain', 0)\nend)\n");
  EXPECT_EQ(w.message, "plain");
  EXPECT_EQ(w.line, 3);
  // error(msg, 2): the position Lua gives (the caller's line) is the one shown.
  w = Fails(true,
            "local function check(x) if not x then error('need x', 2) end end\n"
            "anvil.command('t', function()\n  check(nil)\nend)\n");
  EXPECT_EQ(w.line, 3);
  EXPECT_EQ(w.source, "  check(nil)");
}

TEST_F(ErrorTraceTest, LuaErrorsAtLoadTimeAndInModulesNameTheirFile) {
  Where w = Fails(true, "local x = nil\nx.y = 1\n");
  EXPECT_EQ(w.file, "main.lua");
  EXPECT_EQ(w.line, 2);
  EXPECT_NE(w.stack.at(0).find("main chunk"), std::string::npos) << w.stack[0];
  w = Fails(true,
            "local u = require('lib.util')\nanvil.command('t', function() return u.f() end)\n",
            {{"lib.util", "local M = {}\nfunction M.f()\n  return nil + 1\nend\nreturn M\n"}});
  EXPECT_EQ(w.file, "lib/util.lua");
  EXPECT_EQ(w.line, 3);
  EXPECT_EQ(w.source, "  return nil + 1");
  // A syntax error in a module, found when the entry requires it at load.
  w = Fails(true, "local u = require('lib.bad')\n", {{"lib.bad", "return {\n  x = = 1\n}\n"}});
  EXPECT_EQ(w.file, "lib/bad.lua");
  EXPECT_EQ(w.line, 2);
  EXPECT_EQ(w.source, "  x = = 1");
}

TEST_F(ErrorTraceTest, LuaApiErrorsKeepTheirCodeAndPointAtTheCall) {
  api_.handlers["fs.read"] = [](const auto&) -> Result<std::vector<std::string>> {
    return Fail("denied", "outside the grant");
  };
  Where w = Fails(true, "anvil.command('t', function()\n  return sys.fs.read('../x')\nend)\n");
  EXPECT_EQ(w.code, "denied");
  EXPECT_EQ(w.file, "main.lua");
  EXPECT_EQ(w.line, 2);
}

TEST_F(ErrorTraceTest, LuaStacksAreBoundedInDeepRecursion) {
  Where w = Fails(true,
                  "local function f(n) if n == 0 then error('bottom') end return f(n - 1) + 1 end\n"
                  "anvil.command('t', function() return f(500) end)\n");
  EXPECT_EQ(w.line, 1);
  EXPECT_EQ(w.stack.size(), ipc::kMaxTraceFrames);
}

TEST_F(ErrorTraceTest, LuaBudgetErrorsKeepTheirCodes) {
  RuntimeLimits limits;
  limits.instructions = 100000;
  Where w = Fails(true, "anvil.command('t', function() while true do end end)\n", {}, limits);
  EXPECT_EQ(w.code, "limit");
  EXPECT_TRUE(w.file.empty());
  limits = {};
  limits.memory_bytes = 4 << 20;
  w = Fails(true,
            "anvil.command('t', function() local t = {} for i = 1, 1e9 do t[i] = "
            "string.rep('x', 100) .. i end end)\n",
            {}, limits);
  EXPECT_EQ(w.code, "limit");
}

// ---- JavaScript --------------------------------------------------------------------------

TEST_F(ErrorTraceTest, JsSyntaxErrorAtLoadNamesFileLineColumnAndSource) {
  Where w = Fails(false, "const a = 1;\nlet x = ;\n");
  EXPECT_EQ(w.code, "error");
  EXPECT_NE(w.message.find("SyntaxError"), std::string::npos) << w.message;
  EXPECT_EQ(w.file, "main.js");
  EXPECT_EQ(w.line, 2);
  EXPECT_GT(w.column, 0);
  EXPECT_EQ(w.source, "let x = ;");
}

TEST_F(ErrorTraceTest, JsRuntimeErrorInACommandHasAStack) {
  Where w = Fails(false,
                  "function inner(o) {\n"
                  "  return o.x.y;\n"
                  "}\n"
                  "function outer() { return inner({}); }\n"
                  "anvil.command('t', () => outer());\n");
  EXPECT_EQ(w.code, "error");
  EXPECT_NE(w.message.find("TypeError"), std::string::npos) << w.message;
  EXPECT_EQ(w.file, "main.js");
  EXPECT_EQ(w.line, 2);
  EXPECT_GT(w.column, 0);
  EXPECT_EQ(w.source, "  return o.x.y;");
  ASSERT_GE(w.stack.size(), 3u);
  EXPECT_NE(w.stack[0].find("inner (main.js:2:"), std::string::npos) << w.stack[0];
  EXPECT_NE(w.stack[1].find("outer (main.js:4:"), std::string::npos) << w.stack[1];
}

TEST_F(ErrorTraceTest, JsErrorSubclassesAndApiErrorsPointAtTheirLine) {
  Where w = Fails(false,
                  "class MyError extends Error { constructor(m) { super(m); this.name = "
                  "'MyError'; } }\n"
                  "anvil.command('t', () => {\n  throw new MyError('custom');\n});\n");
  EXPECT_EQ(w.message, "MyError: custom");
  EXPECT_EQ(w.file, "main.js");
  // QuickJS records the stack where the Error is made: inside the subclass's constructor (its
  // super() on line 1); the throw is the next frame.
  EXPECT_EQ(w.line, 1);
  ASSERT_GE(w.stack.size(), 2u);
  EXPECT_NE(w.stack[0].find("MyError (main.js:1:"), std::string::npos) << w.stack[0];
  EXPECT_NE(w.stack[1].find("(main.js:3:"), std::string::npos) << w.stack[1];
  api_.handlers["fs.read"] = [](const auto&) -> Result<std::vector<std::string>> {
    return Fail("denied", "outside the grant");
  };
  w = Fails(false, "anvil.command('t', () => {\n  return sys.fs.read('../x');\n});\n");
  EXPECT_EQ(w.code, "denied");
  EXPECT_EQ(w.line, 2);
  // A rejected promise of an async command.
  w = Fails(false,
            "anvil.command('t', async () => {\n  await 1;\n  throw new Error('late');\n});\n");
  EXPECT_EQ(w.message, "late");
  EXPECT_EQ(w.line, 3);
}

TEST_F(ErrorTraceTest, JsThrownNonErrorsNameTheCommandsFunctionAndSaySo) {
  Where w = Fails(false, "const x = 1;\nanvil.command('t', () => {\n  throw {code: 1};\n});\n");
  EXPECT_EQ(w.code, "error");
  EXPECT_EQ(w.file, "main.js");
  EXPECT_EQ(w.line, 2);  // where the command's function is: QuickJS keeps no throw site
  EXPECT_NE(w.note.find("throw new Error"), std::string::npos) << w.note;
  w = Fails(false, "anvil.command('t', () => {\n  throw 'just text';\n});\n");
  EXPECT_EQ(w.message, "just text");
  EXPECT_EQ(w.line, 1);
  // At load time there is no command: the note says why there is no line.
  w = Fails(false, "throw 42;\n");
  EXPECT_EQ(w.message, "42");
  EXPECT_TRUE(w.file.empty());
  EXPECT_NE(w.note.find("throw new Error"), std::string::npos) << w.note;
}

TEST_F(ErrorTraceTest, JsStackGettersAreNeverCalled) {
  // e.stack as an accessor: describing the error must not run it (it would loop forever).
  Where w = Fails(false,
                  "anvil.command('t', () => {\n"
                  "  const e = new Error('x');\n"
                  "  Object.defineProperty(e, 'stack', {get() { for (;;) {} }});\n"
                  "  throw e;\n});\n");
  EXPECT_EQ(w.code, "error");
  EXPECT_EQ(w.message, "x");
}

TEST_F(ErrorTraceTest, JsErrorsInModulesNameTheModuleFileAndItsOwnColumns) {
  Where w = Fails(false, "const u = require('lib/util');\nanvil.command('t', () => u.f());\n",
                  {{"lib/util", "exports.f = () => null.x;\n"}});
  EXPECT_EQ(w.file, "lib/util.js");
  EXPECT_EQ(w.line, 1);
  EXPECT_EQ(w.source, "exports.f = () => null.x;");
  EXPECT_GT(w.column, 0);
  EXPECT_LE(w.column, 26);  // within the module's own line, not the wrapper's
  w = Fails(false, "require('lib/bad');\n", {{"lib/bad", "\nlet = ;\n"}});
  EXPECT_EQ(w.file, "lib/bad.js");
  EXPECT_EQ(w.line, 2);
}

TEST_F(ErrorTraceTest, JsBudgetErrorsKeepTheirCodes) {
  RuntimeLimits limits;
  limits.instructions = 100000;
  Where w = Fails(false, "anvil.command('t', () => { for (;;) {} });\n", {}, limits);
  EXPECT_EQ(w.code, "limit");
  EXPECT_TRUE(w.file.empty());
  w = Fails(false, "function f() { return f() + 1; }\nanvil.command('t', () => f());\n");
  EXPECT_EQ(w.code, "limit");
}

}  // namespace
}  // namespace error_trace_test
}  // namespace anvil::host
