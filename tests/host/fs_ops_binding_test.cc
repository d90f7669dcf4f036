// sys.fs.mkdir, sys.fs.remove, sys.fs.rename and sys.fs.write's options, in both runtimes.
// These functions have no code of their own in either runtime: they are bound from the plugin
// API description (policy/plugin_api.h, GenericBinding), so what is checked here is that the
// description's parameters become the described request fields, that options are checked by
// name and type (a misspelt option is refused, never silently the default), and that the
// gateway's errors reach the plugin as "code: message". Each bad call sits next to the ordinary
// one that works.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fake_host_api.h"
#include "host/runtime.h"

namespace anvil::host {
namespace fs_ops_binding_test {
namespace {

using Fields = std::vector<std::string>;
using testing::FakeHostApi;

class FsOpsBinding : public ::testing::TestWithParam<bool> {
 protected:
  bool js() const { return GetParam(); }
  // Runs `lua` or `js` (one statement each, the call under test) in command "t" and returns the
  // error message it raised, or "ok".
  std::string Call(const std::string& lua, const std::string& js_code) {
    api_.calls.clear();
    std::unique_ptr<Runtime> rt;
    PluginSource src;
    if (js()) {
      rt = MakeJsRuntime(api_, {});
      src = {"main.js",
             "anvil.command('t', () => { try { " + js_code +
                 "; return 'ok'; } catch (e) { return String(e.message); } });",
             {}};
    } else {
      rt = MakeLuaRuntime(api_, {});
      src = {"main.lua",
             "anvil.command('t', function() local ok, e = pcall(function() " + lua +
                 " end) if ok then return 'ok' end return tostring(e) end)",
             {}};
    }
    if (auto s = rt->Load(src); !s) return "load failed: " + s.error().ToString();
    auto r = rt->RunCommand("t", "[]");
    if (!r) return "command failed: " + r.error().ToString();
    return nlohmann::json::parse(*r).get<std::string>();
  }
  // The one call the last Call made, as "op field field ...".
  Fields Sent() const {
    if (api_.calls.size() != 1) return {"calls: " + std::to_string(api_.calls.size())};
    Fields out{api_.calls[0].op};
    out.insert(out.end(), api_.calls[0].args.begin(), api_.calls[0].args.end());
    return out;
  }
  FakeHostApi api_;
};

TEST_P(FsOpsBinding, EachCallSendsItsDescribedFields) {
  struct Case {
    std::string lua, js;
    Fields sent;
  };
  const std::vector<Case> cases = {
      {"sys.fs.mkdir('notes/a')", "sys.fs.mkdir('notes/a')", {"fs.mkdir", "notes/a", "0"}},
      {"sys.fs.mkdir('notes/a/b', {recursive = true})",
       "sys.fs.mkdir('notes/a/b', {recursive: true})",
       {"fs.mkdir", "notes/a/b", "1"}},
      {"sys.fs.mkdir('notes/a', {recursive = false})",
       "sys.fs.mkdir('notes/a', {recursive: false})",
       {"fs.mkdir", "notes/a", "0"}},
      {"sys.fs.mkdir('notes/a', {})", "sys.fs.mkdir('notes/a', {})", {"fs.mkdir", "notes/a", "0"}},
      {"sys.fs.mkdir('notes/a', nil)",
       "sys.fs.mkdir('notes/a', null)",
       {"fs.mkdir", "notes/a", "0"}},
      {"sys.fs.remove('notes/a')", "sys.fs.remove('notes/a')", {"fs.remove", "notes/a", "0"}},
      {"sys.fs.remove('notes/a', {recursive = true})",
       "sys.fs.remove('notes/a', {recursive: true})",
       {"fs.remove", "notes/a", "1"}},
      {"sys.fs.rename('notes/a', 'notes/b')",
       "sys.fs.rename('notes/a', 'notes/b')",
       {"fs.rename", "notes/a", "notes/b"}},
      {"sys.fs.write('notes/a/b.txt', 'x', {parents = true})",
       "sys.fs.write('notes/a/b.txt', 'x', {parents: true})",
       {"fs.write", "notes/a/b.txt", "x", "1"}},
      {"sys.fs.write('notes/b.txt', 'x')",
       "sys.fs.write('notes/b.txt', 'x')",
       {"fs.write", "notes/b.txt", "x", "0"}},
      {"sys.fs.write('notes/b.txt', 'x', {parents = true, extra = nil})",
       "sys.fs.write('notes/b.txt', 'x', {parents: undefined})",
       {"fs.write", "notes/b.txt", "x", js() ? "0" : "1"}},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(Call(c.lua, c.js), "ok") << (js() ? c.js : c.lua);
    EXPECT_EQ(Sent(), c.sent) << (js() ? c.js : c.lua);
  }
}

TEST_P(FsOpsBinding, BadArgumentsAndOptionsAreRefusedBeforeAnyRequest) {
  struct Case {
    std::string lua, js, lua_error, js_error;
  };
  const std::vector<Case> cases = {
      {"sys.fs.mkdir('notes/a', {recurse = true})", "sys.fs.mkdir('notes/a', {recurse: true})",
       "invalid: sys.fs.mkdir: unknown option 'recurse' (known: recursive)",
       "invalid: sys.fs.mkdir: unknown option 'recurse' (known: recursive)"},
      {"sys.fs.write('a', 'x', {parent = true})", "sys.fs.write('a', 'x', {parent: true})",
       "invalid: sys.fs.write: unknown option 'parent' (known: parents)",
       "invalid: sys.fs.write: unknown option 'parent' (known: parents)"},
      {"sys.fs.remove('a', {recursive = 'yes'})", "sys.fs.remove('a', {recursive: 'yes'})",
       "invalid: sys.fs.remove: option 'recursive' must be a boolean (got string)",
       "invalid: sys.fs.remove: option 'recursive' must be a boolean"},
      {"sys.fs.remove('a', {recursive = 1})", "sys.fs.remove('a', {recursive: 1})",
       "invalid: sys.fs.remove: option 'recursive' must be a boolean (got number)",
       "invalid: sys.fs.remove: option 'recursive' must be a boolean"},
      {"sys.fs.mkdir('a', true)", "sys.fs.mkdir('a', true)",
       "invalid: sys.fs.mkdir: options must be a table (got boolean)",
       "invalid: sys.fs.mkdir: options must be an object"},
      {"sys.fs.mkdir('a', {true})", "sys.fs.mkdir('a', [true])",
       "invalid: sys.fs.mkdir: options are named (known: recursive)",
       "invalid: sys.fs.mkdir: options must be an object"},
      {"sys.fs.mkdir()", "sys.fs.mkdir()",
       "invalid: sys.fs.mkdir: path must be a string (got nothing)",
       "invalid: sys.fs.mkdir: path must be a string"},
      {"sys.fs.rename('a')", "sys.fs.rename('a')",
       "invalid: sys.fs.rename: to must be a string (got nothing)",
       "invalid: sys.fs.rename: to must be a string"},
      {"sys.fs.rename('a', 'b\\xff')", "sys.fs.rename('a', 'b\\uD800')",
       "invalid: sys.fs.rename: to is not valid UTF-8 (at byte 1)",
       "invalid: sys.fs.rename: to is not valid Unicode (it holds a lone surrogate)"},
      // (Lua takes a number where a string goes, as its own string functions do.)
      {"sys.fs.remove({})", "sys.fs.remove(42)",
       "invalid: sys.fs.remove: path must be a string (got table)",
       "invalid: sys.fs.remove: path must be a string"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(Call(c.lua, c.js), js() ? c.js_error : c.lua_error) << (js() ? c.js : c.lua);
    EXPECT_TRUE(api_.calls.empty()) << (js() ? c.js : c.lua) << ": a request was made";
  }
  // The neighbour: the same calls, spelt right, are sent.
  EXPECT_EQ(Call("sys.fs.mkdir('a', {recursive = true})", "sys.fs.mkdir('a', {recursive: true})"),
            "ok");
  EXPECT_EQ(Sent(), (Fields{"fs.mkdir", "a", "1"}));
}

TEST_P(FsOpsBinding, GatewayErrorsReachThePluginAsCodeAndMessage) {
  api_.handlers["fs.rename"] = [](const Fields&) -> Result<Fields> {
    return Fail("denied", "fs.write: directory holds protected sub/.git: notes/vendor");
  };
  api_.handlers["fs.mkdir"] = [](const Fields& a) -> Result<Fields> {
    return Fail("denied", "fs.write outside the grant: " + a[0]);
  };
  EXPECT_EQ(
      Call("sys.fs.rename('notes/vendor', 'moved')", "sys.fs.rename('notes/vendor', 'moved')"),
      "denied: fs.write: directory holds protected sub/.git: notes/vendor");
  EXPECT_EQ(Call("sys.fs.mkdir('.git/hooks')", "sys.fs.mkdir('.git/hooks')"),
            "denied: fs.write outside the grant: .git/hooks");
  // A reply with fields where the description has none is ignored, not returned.
  api_.handlers["fs.remove"] = [](const Fields&) -> Result<Fields> { return Fields{}; };
  EXPECT_EQ(Call("assert(sys.fs.remove('notes/a') == nil)",
                 "if (sys.fs.remove('notes/a') !== undefined) throw new Error('a value')"),
            "ok");
}

INSTANTIATE_TEST_SUITE_P(Runtimes, FsOpsBinding, ::testing::Bool(),
                         [](const auto& info) { return std::string(info.param ? "Js" : "Lua"); });

}  // namespace
}  // namespace fs_ops_binding_test
}  // namespace anvil::host
