// `anvil plugin new` end to end, as an author uses it: a plugin made in each runtime, the JS
// one type-checked with tsc against its anvil.d.ts (TypeScript pinned in scripts/npm, installed
// by scripts/install-deps.sh), the Lua annotations loaded by the project's own Lua, then both
// plugins' commands run with `anvil run` and through the test each plugin carries
// (sh test/run.sh), as root and as an unprivileged user.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>

#include "policy/plugin_api.h"
#include "policy/plugin_api_stubs.h"
#include "sandbox_harness.h"

namespace anvil::testing {
namespace plugin_new_test {
namespace {

const std::string kTsc = ANVIL_TSC;

bool HaveTsc() { return ::access(kTsc.c_str(), X_OK) == 0; }

// TypeScript is a test dependency like the compilers: scripts/install-deps.sh (which the README's
// test command runs first) installs the version pinned in scripts/npm. A missing tsc fails the
// test rather than skipping it, so a type check never silently goes undone.
#define ANVIL_NEED_TSC()                                                                   \
  if (!HaveTsc()) {                                                                        \
    FAIL() << kTsc                                                                         \
           << " is missing (fix: run scripts/install-deps.sh; it installs the TypeScript " \
              "pinned in scripts/npm)";                                                    \
  }

RunResult Tsc(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kTsc};
  argv.insert(argv.end(), args.begin(), args.end());
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent"};
  o.timeout_seconds = 120;
  return testing::Run(argv, o);
}

// The functions a Lua file defines when run in a bare state (no libraries at all): the meta
// file is plain Lua that builds the API's tables and empty functions. "" on a load error.
Result<std::set<std::string>> LuaDefinedFunctions(const std::string& file) {
  lua_State* L = luaL_newstate();
  if (!L) return Fail("internal", "no Lua state");
  std::string error;
  if (luaL_loadfilex(L, file.c_str(), "t") != LUA_OK || lua_pcall(L, 0, 0, 0) != LUA_OK) {
    error = lua_tostring(L, -1) ? lua_tostring(L, -1) : "?";
  }
  std::set<std::string> found;
  // Walks the globals two levels deep (sys.fs.read): every function, by path.
  auto walk = [&](auto&& self, int index, const std::string& prefix, int depth) -> void {
    lua_pushnil(L);
    while (lua_next(L, index) != 0) {
      if (lua_type(L, -2) == LUA_TSTRING) {
        const std::string path = prefix + lua_tostring(L, -2);
        if (lua_type(L, -1) == LUA_TFUNCTION) found.insert(path);
        if (lua_type(L, -1) == LUA_TTABLE && depth < 3 && path != "_G") {
          self(self, lua_gettop(L), path + ".", depth + 1);
        }
      }
      lua_pop(L, 1);
    }
  };
  if (error.empty()) {
    lua_pushglobaltable(L);
    walk(walk, lua_gettop(L), "", 0);
  }
  lua_close(L);
  if (!error.empty()) return Fail("invalid", error);
  return found;
}

// Only a syntax check: compiles `file` without running it.
std::string LuaSyntaxError(const std::string& file) {
  lua_State* L = luaL_newstate();
  std::string error;
  if (luaL_loadfilex(L, file.c_str(), "t") != LUA_OK) error = lua_tostring(L, -1);
  lua_close(L);
  return error;
}

class PluginNew : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    caller_.Give(work_.path());
    caller_.Give(state_.path());
  }
  RunOptions Env(RunOptions o = {}) const {
    o.env = {"PATH=/usr/bin:/bin", "HOME=" + work_.path(), "XDG_STATE_HOME=" + state_.path(),
             "ANVIL=" + AnvilBin(), "LANG=C.UTF-8"};
    o.cwd = work_.path();
    o.timeout_seconds = 180;
    return Opts(o);
  }
  RunResult Anvil(std::vector<std::string> args) {
    args.insert(args.begin(), AnvilBin());
    return testing::Run(args, Env());
  }
  TempDir work_{"anvil-plugin-new"};
  TempDir state_{"anvil-plugin-new-state"};
};

TEST_P(PluginNew, BothRuntimesTypeCheckParseAndRun) {
  auto lua = Anvil({"plugin", "new", "me.word-count"});
  ASSERT_EQ(lua.status, 0) << lua.err;
  EXPECT_NE(lua.out.find("created plugin me.word-count (lua) in word-count:"), std::string::npos)
      << lua.out;
  auto js = Anvil({"plugin", "new", "--js", "me.notes", "js-notes"});
  ASSERT_EQ(js.status, 0) << js.err;
  const std::string lua_dir = work_ / "word-count", js_dir = work_ / "js-notes";
  for (const auto& f : {"anvil-plugin.toml", "main.lua", "types/anvil.lua", ".luarc.json",
                        "test/run.sh", "test/cases.sh", "test/fixture/src/hello.txt"}) {
    EXPECT_TRUE(Exists(lua_dir + "/" + f)) << f;
  }
  for (const auto& f : {"anvil-plugin.toml", "main.js", "anvil.d.ts", "jsconfig.json"}) {
    EXPECT_TRUE(Exists(js_dir + "/" + f)) << f;
  }
  struct stat st {};
  ASSERT_EQ(::stat((lua_dir + "/test/run.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  EXPECT_EQ(st.st_uid, caller_.uid()) << "the author's own files";

  // The JS plugin type-checks against its generated anvil.d.ts, as its jsconfig.json says and
  // with the options spelled out on the command line.
  {
    ANVIL_NEED_TSC();
    auto project = Tsc({"--noEmit", "-p", js_dir + "/jsconfig.json"});
    EXPECT_EQ(project.status, 0) << project.out << project.err;
    auto direct =
        Tsc({"--noEmit", "--checkJs", "--allowJs", "--strict", "--target", "es2023", "--lib",
             "es2023", "--moduleDetection", "force", js_dir + "/anvil.d.ts", js_dir + "/main.js"});
    EXPECT_EQ(direct.status, 0) << direct.out << direct.err;
  }

  // The Lua annotations and the entry parse with the project's Lua; run in a bare state, the
  // meta file defines exactly the Lua functions of the API description.
  EXPECT_EQ(LuaSyntaxError(lua_dir + "/types/anvil.lua"), "");
  EXPECT_EQ(LuaSyntaxError(lua_dir + "/main.lua"), "");
  auto defined = LuaDefinedFunctions(lua_dir + "/types/anvil.lua");
  ASSERT_TRUE(defined) << defined.error().ToString();
  std::set<std::string> described;
  for (const auto& f : PluginApi().functions) {
    if (InRuntime(f.runtimes, false)) described.insert(f.path);
  }
  EXPECT_EQ(*defined, described);

  // Both plugins run: directly, and through the test each carries.
  for (const auto& [dir, id] : {std::pair{lua_dir, "me.word-count"}, {js_dir, "me.notes"}}) {
    SCOPED_TRACE(id);
    auto r = Anvil({"run", "--approve", "--workspace", dir + "/test/fixture", dir, "hello"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, std::string("hello from ") + id + ": src/hello.txt has 2 lines\n");
    auto denied = Anvil({"run", "--workspace", dir + "/test/fixture", dir, "hello", "private.txt"});
    EXPECT_EQ(denied.status, 1);
    EXPECT_NE(denied.err.find("anvil run: denied: fs.read outside the grant: private.txt"),
              std::string::npos)
        << denied.err;
    auto tests = testing::Run({"/bin/sh", dir + "/test/run.sh"}, Env());
    EXPECT_EQ(tests.status, 0) << tests.out << tests.err;
    EXPECT_NE(tests.out.find("3 passed, 0 failed"), std::string::npos) << tests.out;
  }

  // The carried test is real: a plugin that no longer does what its cases say fails it.
  WriteFile(lua_dir + "/main.lua", "anvil.command('hello', function() return 'changed' end)");
  caller_.Give(lua_dir + "/main.lua");
  auto broken = testing::Run({"/bin/sh", lua_dir + "/test/run.sh"}, Env());
  EXPECT_EQ(broken.status, 1) << broken.out << broken.err;
  EXPECT_NE(broken.out.find("FAIL  hello\n  want:   hello from me.word-count: src/hello.txt has 2 "
                            "lines\n  got:    changed"),
            std::string::npos)
      << broken.out;
  EXPECT_NE(broken.out.find("0 passed, 3 failed"), std::string::npos) << broken.out;
}

INSTANTIATE_TEST_SUITE_P(Callers, PluginNew, ::testing::ValuesIn(kAllCallers), CallerParamName);

// The JS plugin type-checks against the generated anvil.d.ts (through its jsconfig.json and on
// the command line), and a plugin that misuses the API does not.
TEST(PluginNewTypes, JsPluginTypeChecksAndMisuseIsCaught) {
  ANVIL_NEED_TSC();
  TempDir work("anvil-plugin-tsc");
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent"};
  o.cwd = work.path();
  auto made = testing::Run({AnvilBin(), "plugin", "new", "--js", "me.notes"}, o);
  ASSERT_EQ(made.status, 0) << made.err;
  const std::string dir = work / "notes";
  auto project = Tsc({"--noEmit", "-p", dir + "/jsconfig.json"});
  EXPECT_EQ(project.status, 0) << project.out << project.err;
  auto direct =
      Tsc({"--noEmit", "--checkJs", "--allowJs", "--strict", "--target", "es2023", "--lib",
           "es2023", "--moduleDetection", "force", dir + "/anvil.d.ts", dir + "/main.js"});
  EXPECT_EQ(direct.status, 0) << direct.out << direct.err;

  WriteFile(dir + "/misuse.js",
            "sys.fs.read(1);\n"
            "const r = sys.exec({program: 'rg', args: 'TODO'});\n"
            "r.exitCode;\n"
            "sys.net.fetch({url: 'https://api.example.com/', method: 'PUT'});\n"
            "editor.buffer.edit('file:///a', '3', []);\n"
            "if (sys.fs.list('.')[0].type === 'folder') {}\n"
            "anvil.settings.x = 1;\n");
  auto bad = Tsc({"--noEmit", "-p", dir + "/jsconfig.json"});
  EXPECT_NE(bad.status, 0);
  for (const char* want : {"misuse.js(1,13): error TS2345", "misuse.js(2,36): error TS2322",
                           "misuse.js(3,3): error TS2339", "misuse.js(4,49): error TS2322",
                           "misuse.js(5,33): error TS2345", "misuse.js(6,5): error TS2367",
                           "misuse.js(7,1): error TS2542"}) {
    EXPECT_NE(bad.out.find(want), std::string::npos) << want << " in:\n" << bad.out;
  }
}

// `anvil plugin types` writes the generated declarations again (an edited or stale copy is
// replaced) and keeps the author's editor configuration.
TEST(PluginNewTypes, TypesRewritesTheDeclarationsAndKeepsTheConfig) {
  TempDir work("anvil-plugin-types");
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent"};
  o.cwd = work.path();
  ASSERT_EQ(testing::Run({AnvilBin(), "plugin", "new", "--js", "me.notes"}, o).status, 0);
  ASSERT_EQ(testing::Run({AnvilBin(), "plugin", "new", "me.lua"}, o).status, 0);
  WriteFile(work / "notes/anvil.d.ts", "// stale\n");
  WriteFile(work / "notes/jsconfig.json", "{\"mine\": true}\n");
  ::unlink((work / "lua/types/anvil.lua").c_str());
  ::rmdir((work / "lua/types").c_str());
  auto js = testing::Run({AnvilBin(), "plugin", "types", "notes"}, o);
  ASSERT_EQ(js.status, 0) << js.err;
  EXPECT_EQ(ReadFile(work / "notes/anvil.d.ts"), RenderTypeScriptDeclarations(PluginApi()));
  EXPECT_EQ(ReadFile(work / "notes/jsconfig.json"), "{\"mine\": true}\n");
  EXPECT_NE(js.out.find("kept    notes/jsconfig.json"), std::string::npos) << js.out;
  o.cwd = work / "lua";
  auto lua = testing::Run({AnvilBin(), "plugin", "types"}, o);
  ASSERT_EQ(lua.status, 0) << lua.err;
  EXPECT_EQ(ReadFile(work / "lua/types/anvil.lua"), RenderLuaMeta(PluginApi()));
}

// What `anvil plugin new` refuses, and that a refusal leaves nothing behind.
TEST(PluginNewRefusals, BadNamesAndOccupiedOrLinkedDirectories) {
  TempDir work("anvil-plugin-new-refusals");
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent"};
  o.cwd = work.path();
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {AnvilBin(), "plugin", "new"});
    return testing::Run(args, o);
  };
  auto upper = run({"Me.Notes"});
  EXPECT_EQ(upper.status, 2);
  EXPECT_NE(upper.err.find("invalid: NAME is the plugin id: plugin id 'Me.Notes' must start with "
                           "a-z or 0-9"),
            std::string::npos)
      << upper.err;
  EXPECT_FALSE(Exists(work / "Notes"));
  auto usage = run({});
  EXPECT_EQ(usage.status, 2);
  EXPECT_EQ(run({"--python", "x"}).status, 2);

  ASSERT_EQ(::mkdir((work / "taken").c_str(), 0755), 0);
  WriteFile(work / "taken/keep.txt", "mine");
  auto taken = run({"me.taken", "taken"});
  EXPECT_EQ(taken.status, 2);
  EXPECT_NE(taken.err.find("taken exists and is not empty"), std::string::npos) << taken.err;
  EXPECT_EQ(ReadFile(work / "taken/keep.txt"), "mine");
  EXPECT_FALSE(Exists(work / "taken/anvil-plugin.toml"));

  // A symlink named as the directory is not followed (the files would land elsewhere).
  TempDir elsewhere("anvil-plugin-new-elsewhere");
  ASSERT_EQ(::symlink(elsewhere.path().c_str(), (work / "link").c_str()), 0);
  auto link = run({"me.link", "link"});
  EXPECT_NE(link.status, 0);
  EXPECT_FALSE(Exists(elsewhere / "anvil-plugin.toml"));

  // Benign neighbours: an existing empty directory, and "." in one.
  ASSERT_EQ(::mkdir((work / "empty").c_str(), 0755), 0);
  EXPECT_EQ(run({"me.empty", "empty"}).status, 0);
  EXPECT_TRUE(Exists(work / "empty/anvil-plugin.toml"));
  ASSERT_EQ(::mkdir((work / "here").c_str(), 0755), 0);
  o.cwd = work / "here";
  auto here = run({"--js", "me.here", "."});
  EXPECT_EQ(here.status, 0) << here.err;
  EXPECT_TRUE(Exists(work / "here/main.js"));
}

}  // namespace
}  // namespace plugin_new_test
}  // namespace anvil::testing
