// Bad input at the plugin API, the same in both runtimes (Lua and QuickJS): argument errors are
// "code: text" with nothing in front (a Lua position prefix would hide the code from
// err:match("^(%w+):")), strings that are not valid Unicode are refused by name before any
// request is made (a lone surrogate in JS, bytes that are not UTF-8 in Lua), results that are
// not text are refused, and sys.fs.list tells the plugin how many entries it left out.
// Each attack sits next to the ordinary call that must keep working.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fake_host_api.h"
#include "host/runtime.h"

namespace anvil::host {
namespace api_bad_input_test {
namespace {

using testing::FakeHostApi;

class ApiBadInput : public ::testing::Test {
 protected:
  // Runs `body` as the function body of command "t" in a fresh runtime.
  Result<std::string> Lua(const std::string& body) {
    runtime_ = MakeLuaRuntime(api_, {});
    PluginSource src{"main.lua", "anvil.command('t', function(args)\n" + body + "\nend)", {}};
    if (auto s = runtime_->Load(src); !s) return tl::unexpected(s.error());
    return runtime_->RunCommand("t", "{}");
  }
  Result<std::string> Js(const std::string& body) {
    runtime_ = MakeJsRuntime(api_, {});
    PluginSource src{"main.js", "anvil.command('t', function (args) {\n" + body + "\n});", {}};
    if (auto s = runtime_->Load(src); !s) return tl::unexpected(s.error());
    return runtime_->RunCommand("t", "{}");
  }
  // The error message `call` raises, as the plugin's own handler sees it (Lua: pcall).
  std::string LuaError(const std::string& call) {
    auto r = Lua("local ok, e = pcall(function() " + call +
                 " end)\nif ok then return 'no error' end\nreturn tostring(e)");
    if (!r) return "command failed: " + r.error().ToString();
    return nlohmann::json::parse(*r).get<std::string>();
  }
  std::string JsError(const std::string& call) {
    auto r = Js("try { " + call + "; return 'no error'; } catch (e) { return String(e.message); }");
    if (!r) return "command failed: " + r.error().ToString();
    return nlohmann::json::parse(*r).get<std::string>();
  }
  bool Called(const std::string& op) const {
    for (const auto& c : api_.calls) {
      if (c.op == op) return true;
    }
    return false;
  }
  FakeHostApi api_;
  std::unique_ptr<Runtime> runtime_;
};

// What err:match("^(%w+):") finds: the code, with no "main.lua:3:" in front.
TEST_F(ApiBadInput, LuaArgumentErrorsCarryTheCodeFirst) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"sys.net.fetch{url = 42}", "invalid: field 'url' must be a string (got number)"},
      {"sys.net.fetch('https://x')",
       "invalid: sys.net.fetch expects an options table (got string)"},
      {"sys.net.fetch{}", "invalid: fetch needs url"},
      {"sys.exec{program = 'rg', args = {1}}", "invalid: args must be a list of strings"},
      {"sys.exec{program = {}}", "invalid: field 'program' must be a string (got table)"},
      {"sys.exec()", "invalid: sys.exec expects an options table (got no value)"},
      {"sys.fs.read()", "invalid: sys.fs.read: path must be a string (got nothing)"},
      {"sys.fs.read({})", "invalid: sys.fs.read: path must be a string (got table)"},
      {"sys.fs.write('a', nil)", "invalid: sys.fs.write: data must be a string (got nil)"},
      {"sys.fs.list(true)", "invalid: sys.fs.list: dir must be a string (got boolean)"},
      {"editor.buffer.edit('file:///a', 'x', {})",
       "invalid: editor.buffer.edit: version must be an integer"},
      {"anvil.command('x y', function() end)", "invalid: command names use [A-Za-z0-9._-]"},
      {"anvil.command('d', print) anvil.command('d', print)",
       "invalid: anvil.command: 'd' is already registered (fix: give each command its own "
       "name)"},
      {"require('nope')", "not_found: no module 'nope' in this plugin"},
      {"sys.fs = 1", "denied: Anvil's tables are read-only"},
      {"rawset(sys, 'x', 1)", "denied: Anvil's tables are read-only"},
      {"os.time({})", "invalid: os.time takes no arguments here"},
  };
  for (const auto& [call, want] : cases) {
    const std::string got = LuaError(call);
    EXPECT_EQ(got, want) << call;
  }
  // The documented idiom finds the code.
  auto r = Lua("local ok, e = pcall(sys.net.fetch, {url = 42}); return e:match('^(%w+):')");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, R"("invalid")");
  // Errors from the API behind it keep the same form.
  api_.handlers["fs.read"] = [](const auto& a) -> Result<std::vector<std::string>> {
    return Fail("denied", "fs.read outside the grant: " + a[0]);
  };
  EXPECT_EQ(LuaError("sys.fs.read('x')"), "denied: fs.read outside the grant: x");
  // Benign: a number is still a string argument, as Lua converts it.
  api_.handlers["fs.read"] = [](const auto&) -> Result<std::vector<std::string>> {
    return std::vector<std::string>{"ok"};
  };
  EXPECT_EQ(LuaError("sys.fs.write('n.txt', 42)"), "no error");
}

TEST_F(ApiBadInput, JsArgumentErrorsCarryTheCodeFirst) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"sys.net.fetch({url: 42})", "invalid: sys.net.fetch: url must be a string"},
      {"sys.net.fetch('https://x')", "invalid: sys.net.fetch expects an options object"},
      {"sys.exec({program: 'rg', args: [1]})",
       "invalid: sys.exec: args must be an array of strings"},
      {"sys.fs.read()", "invalid: sys.fs.read: path must be a string"},
      {"sys.fs.write('a')", "invalid: sys.fs.write: data must be a string"},
  };
  for (const auto& [call, want] : cases) EXPECT_EQ(JsError(call), want) << call;
}

// "src/\uD800.c" is not a name: converted, it would write a file called "src/\uFFFD.c".
TEST_F(ApiBadInput, JsLoneSurrogatesAreRefusedBeforeAnyRequest) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"sys.fs.write('src/\\uD800.c', 'x')", "sys.fs.write: path"},
      {"sys.fs.read('src/\\uDBFF')", "sys.fs.read: path"},
      {"sys.fs.list('\\uD800')", "sys.fs.list: dir"},
      {"sys.fs.stat('a\\uDFFFb')", "sys.fs.stat: path"},
      {"sys.net.fetch({url: 'https://api.example.com/\\uD800'})", "sys.net.fetch: url"},
      {"sys.net.fetch({url: 'https://a.example', method: 'G\\uD800'})", "sys.net.fetch: method"},
      {"sys.exec({program: 'rg\\uD800'})", "sys.exec: program"},
      {"editor.buffer.get('file:///\\uD800')", "editor.buffer.get: uri"},
  };
  for (const auto& [call, what] : cases) {
    api_.calls.clear();
    EXPECT_EQ(JsError(call),
              "invalid: " + what + " is not valid Unicode (it holds a lone surrogate)")
        << call;
    EXPECT_TRUE(api_.calls.empty()) << call << " reached the host API";
  }
  for (const std::string call :
       {"sys.exec({program: 'rg', args: ['\\uD800']})",
        "sys.net.fetch({url: 'https://a.example', headers: {'x-a': '\\uDC00'}})"}) {
    api_.calls.clear();
    EXPECT_EQ(JsError(call).rfind("invalid: ", 0), 0u) << call;
    EXPECT_TRUE(api_.calls.empty()) << call << " reached the host API";
  }
  // Benign: a surrogate pair is one character (U+1F600) and goes through as UTF-8.
  api_.calls.clear();
  EXPECT_EQ(JsError("sys.fs.write('notes/\\uD83D\\uDE00.txt', 'ok \\uD83D\\uDE00')"), "no error");
  ASSERT_EQ(api_.calls.size(), 1u);
  EXPECT_EQ(api_.calls[0].args[0], "notes/\xF0\x9F\x98\x80.txt");
  EXPECT_EQ(api_.calls[0].args[1], "ok \xF0\x9F\x98\x80");
  // Contents are not names: a lone surrogate in written data becomes U+FFFD, as TextEncoder
  // does (js_runtime_test.cc, FsWriteSendsUtf8AndReplacesLoneSurrogates).
  api_.calls.clear();
  EXPECT_EQ(JsError("sys.fs.write('a.txt', 'x\\uDC00')"), "no error");
  ASSERT_EQ(api_.calls.size(), 1u);
  EXPECT_EQ(api_.calls[0].args[1], "x\xEF\xBF\xBD");
  // Shown text only: a notification with a lone surrogate is still shown (U+FFFD).
  api_.calls.clear();
  EXPECT_EQ(JsError("editor.notify('a\\uD800b')"), "no error");
  ASSERT_EQ(api_.calls.size(), 1u);
  EXPECT_EQ(api_.calls[0].args[0],
            "a\xEF\xBF\xBD"
            "b");
}

// Bytes that are not UTF-8 in a Lua string that names something (a path, a program, an
// argument, a URL, a header) or in data that must travel as JSON.
TEST_F(ApiBadInput, LuaInvalidUtf8NamesAreRefusedBeforeAnyRequest) {
  const std::vector<std::string> calls = {
      "sys.fs.write('src/\\xff.c', 'x')",
      "sys.fs.read('a\\xc0\\xae')",
      "sys.fs.list('\\xed\\xa0\\x80')",
      "sys.fs.stat('\\x80')",
      "sys.net.fetch{url = 'https://api.example.com/\\xff'}",
      "sys.net.fetch{url = 'https://a.example', headers = {['x-a'] = '\\xff'}}",
      "sys.net.fetch{url = 'https://a.example', headers = {['x-\\xff'] = 'v'}}",
      "sys.exec{program = 'rg\\xff'}",
      "sys.exec{program = 'rg', args = {'TODO\\xff'}}",
      "editor.buffer.get('file:///\\xff')",
      "editor.buffer.edit('file:///a', 1, {{text = '\\xff'}})",
  };
  for (const std::string& call : calls) {
    api_.calls.clear();
    const std::string got = LuaError(call);
    EXPECT_EQ(got.rfind("invalid: ", 0), 0u) << call << " -> " << got;
    EXPECT_NE(got.find("not valid UTF-8"), std::string::npos) << call << " -> " << got;
    EXPECT_TRUE(api_.calls.empty()) << call << " reached the host API";
  }
  // Benign: data is bytes (a binary file's content, a command's stdin).
  api_.calls.clear();
  EXPECT_EQ(LuaError("sys.fs.write('bin.dat', '\\xff\\x00\\xfe')"), "no error");
  ASSERT_EQ(api_.calls.size(), 1u);
  EXPECT_EQ(api_.calls[0].args[1], std::string("\xff\0\xfe", 3));
  api_.handlers["exec"] = [](const auto&) -> Result<std::vector<std::string>> {
    return std::vector<std::string>{"0", "", "", "0", "0", ""};
  };
  EXPECT_EQ(LuaError("sys.exec{program = 'rg', stdin = '\\xff'}"), "no error");
}

// A result crosses to Anvil as JSON: it must be text.
TEST_F(ApiBadInput, ResultsThatAreNotTextAreRefusedByName) {
  auto r = Lua("return 'caf\\xe9'");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "invalid") << r.error().ToString();
  EXPECT_NE(r.error().message.find("not valid UTF-8"), std::string::npos) << r.error().message;
  r = Lua("return {['\\xff'] = 1}");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "invalid") << r.error().ToString();
  // Benign.
  r = Lua("return 'café'");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, "\"café\"");
}

TEST_F(ApiBadInput, FsListSaysHowManyEntriesWereLeftOut) {
  api_.handlers["fs.list"] = [](const auto&) -> Result<std::vector<std::string>> {
    return std::vector<std::string>{"3", std::string("a.c\0file\0", 9)};
  };
  auto r = Lua("local l, omitted = sys.fs.list('.'); return {#l, l[1].name, omitted}");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, R"([1,"a.c",3])");
  r = Js("const l = sys.fs.list('.'); return [l.length, l[0].name, l.omitted, JSON.stringify(l)];");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, R"([1,"a.c",3,"[{\"name\":\"a.c\",\"type\":\"file\"}]"])");
  // Nothing left out: 0, and the list serializes as before.
  api_.handlers["fs.list"] = [](const auto&) -> Result<std::vector<std::string>> {
    return std::vector<std::string>{"0", ""};
  };
  r = Lua("local l, omitted = sys.fs.list('.'); return {n = #l, omitted = omitted}");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, R"({"n":0,"omitted":0})");
  r =
      Js("const l = sys.fs.list('.'); return {n: l.length, omitted: l.omitted,"
         " keys: Object.keys(l).length};");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, R"({"n":0,"omitted":0,"keys":0})");
  // A malformed count is the gateway's fault, not a silent zero.
  api_.handlers["fs.list"] = [](const auto&) -> Result<std::vector<std::string>> {
    return std::vector<std::string>{"x", ""};
  };
  EXPECT_EQ(LuaError("sys.fs.list('.')"), "internal: malformed fs.list reply");
}

}  // namespace
}  // namespace api_bad_input_test
}  // namespace anvil::host
