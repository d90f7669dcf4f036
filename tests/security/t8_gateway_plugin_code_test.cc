// T8/T5 through the gateway's fs ops: a plugin never writes plugin code. Plugin A, granted
// fs.write = ["**"] over a workspace that holds plugin B's directory (a `--plugin-dir` inside
// the workspace, or the plugin search path of a workspace at or above $HOME), rewrote B's
// main.lua; the next `anvil run` of B (or `anvil serve`'s reload of it) ran A's code with B's
// grant, since edits of an approved directory never ask again (red team, plugdirs). The
// gateway now refuses fs.write, fs.mkdir, fs.remove and fs.rename at or beneath any directory
// that holds an `anvil-plugin.toml`, and a move or removal of a tree that holds one
// (policy/plugin_code_paths.h). Each attack beside its benign neighbour: A still writes
// ordinary files next to B's directory, and the user's own edit of B still runs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gateway_fixture.h"

namespace anvil::testing {
namespace t8_gateway_plugin_code_test {
namespace {

void WriteLuaPlugin(const std::string& dir, const std::string& id, const std::string& permissions,
                    const std::string& code) {
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(dir)), 0);
  WriteFile(dir + "/anvil-plugin.toml", "id = \"" + id +
                                            "\"\nversion = \"1.0.0\"\nruntime = \"lua\"\n"
                                            "entry = \"main.lua\"\n\n[permissions]\n" +
                                            permissions);
  WriteFile(dir + "/main.lua", code);
}

class T8GatewayPluginCode : public GatewayTest {
 protected:
  void Start() {
    StartGateway();
    Grant grant;
    grant.fs_read = {"**"};
    grant.fs_write = {"**"};
    client_ = Client(RegisterPlugin("t8.writer", grant), "t8.writer");
  }
  std::string Do(const std::string& op, const std::vector<std::string>& args) {
    auto r = client_->Call(op, args);
    if (!r) return "transport: " + r.error().ToString();
    return r->ok ? "ok" : r->ErrorText();
  }
  static bool Denied(const std::string& r) { return r.rfind("denied: ", 0) == 0; }

  std::unique_ptr<ipc::GatewayClient> client_;
};

TEST_F(T8GatewayPluginCode, NoRouteIntoAnotherPluginsDirectory) {
  WriteLuaPlugin(*ws_ / "tools/b", "t8.victim", "fs.read = [\"secret/**\"]\n",
                 "anvil.command('x', function() return 'b' end)\n");
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(*ws_ / "tools/b/lib")), 0);
  WriteFile(*ws_ / "tools/b/lib/util.lua", "return {}\n");
  Start();
  // The red team's repro: B's entry rewritten.
  std::string r = Do("fs.write", {"tools/b/main.lua", "-- evil"});
  EXPECT_TRUE(Denied(r)) << r;
  EXPECT_NE(r.find("t8.victim"), std::string::npos) << r;  // the plugin whose code it is
  EXPECT_NE(r.find("tools/b"), std::string::npos) << r;
  EXPECT_NE(r.find("fix:"), std::string::npos) << r;
  // Every other route into B's code.
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"fs.write", "tools/b/anvil-plugin.toml", "id = \"t8.victim\""},
           {"fs.write", "tools/b/lib/util.lua", "-- evil"},
           {"fs.write", "tools/b/new.lua", "-- evil"},
           {"fs.write", "tools/b/deep/er/x.lua", "-- evil", "1"},
           {"fs.mkdir", "tools/b/more", "0"},
           {"fs.remove", "tools/b/main.lua", "0"},
           {"fs.remove", "tools/b/lib", "1"},
           {"fs.remove", "tools/b", "1"},
           {"fs.remove", "tools", "1"},
           {"fs.rename", "tools/b", "tools/b-old"},
           {"fs.rename", "tools", "tools-old"},
           {"fs.rename", "tools/b/main.lua", "tools/b/old.lua"},
       }) {
    std::vector<std::string> call(args.begin() + 1, args.end());
    r = Do(args[0], call);
    EXPECT_TRUE(Denied(r)) << args[0] << " " << args[1] << ": " << r;
  }
  ASSERT_EQ(Do("fs.write", {"notes.lua", "-- evil"}), "ok");
  EXPECT_TRUE(Denied(Do("fs.rename", {"notes.lua", "tools/b/main2.lua"})));
  EXPECT_EQ(ReadFile(*ws_ / "tools/b/main.lua"), "anvil.command('x', function() return 'b' end)\n");
  EXPECT_EQ(ReadFile(*ws_ / "tools/b/lib/util.lua"), "return {}\n");
  EXPECT_FALSE(Exists(*ws_ / "tools/b/new.lua"));
  // The benign neighbours: files next to B's directory, and directories without a manifest.
  EXPECT_EQ(Do("fs.write", {"tools/notes.txt", "x"}), "ok");
  EXPECT_EQ(Do("fs.write", {"tools/b-notes/x.lua", "x", "1"}), "ok");
  EXPECT_EQ(Do("fs.mkdir", {"tools/c/d", "1"}), "ok");
  EXPECT_EQ(Do("fs.write", {"tools/c/d/main.lua", "x"}), "ok");
  EXPECT_EQ(Do("fs.rename", {"tools/c", "tools/c2"}), "ok");
  EXPECT_EQ(Do("fs.remove", {"tools/c2", "1"}), "ok");
  EXPECT_EQ(Do("fs.remove", {"tools/notes.txt", "0"}), "ok");
  EXPECT_EQ(Do("fs.write", {"README.md", "x"}), "ok");
}

// The workspace itself is a plugin's directory (a plugin author's checkout): every write in it
// would be plugin code, so a plugin writes none of it.
TEST_F(T8GatewayPluginCode, AWorkspaceThatIsAPluginIsNotWritten) {
  WriteLuaPlugin(ws_->path(), "t8.self", "", "anvil.command('x', function() return 1 end)\n");
  Start();
  std::string r = Do("fs.write", {"main.lua", "-- evil"});
  EXPECT_TRUE(Denied(r)) << r;
  EXPECT_NE(r.find("t8.self"), std::string::npos) << r;
  EXPECT_TRUE(Denied(Do("fs.write", {"notes/x.txt", "x", "1"})));
}

// A directory's manifest that does not parse still marks plugin code: it is named by its
// directory.
TEST_F(T8GatewayPluginCode, ABrokenManifestStillProtectsItsDirectory) {
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(*ws_ / "plug")), 0);
  WriteFile(*ws_ / "plug/anvil-plugin.toml", "not toml [");
  Start();
  std::string r = Do("fs.write", {"plug/main.lua", "x"});
  EXPECT_TRUE(Denied(r)) << r;
  EXPECT_NE(r.find("plug"), std::string::npos) << r;
}

// `anvil run` twice, end to end: A (fs.write = ["**"]) writes B's main.lua, then B runs with its
// own stored grant. Before the fix B ran A's code and read the secret only B may read.
class T8RunPluginCode : public ::testing::Test {
 protected:
  RunResult Anvil(std::vector<std::string> args) {
    args.insert(args.begin(), {AnvilBin(), "run", "--workspace", ws_.path()});
    RunOptions o;
    o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path()};
    return testing::Run(args, o);
  }
  TempDir ws_{"anvil-t8-code-ws"};
  TempDir state_{"anvil-t8-code-state"};
};

TEST_F(T8RunPluginCode, APluginCannotRunItsCodeWithAnotherPluginsGrant) {
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(ws_ / "secret")), 0);
  WriteFile(ws_ / "secret/key", "SECRET-KEY");
  WriteLuaPlugin(ws_ / "tools/b", "t8.b", "fs.read = [\"secret/**\"]\n",
                 "anvil.command('x', function() return 'b' end)\n");
  WriteLuaPlugin(
      ws_ / "tools/a", "t8.a", "fs.write = [\"**\"]\n",
      "anvil.command('x', function()\n"
      "  local ok, err = pcall(sys.fs.write, 'tools/b/main.lua',\n"
      "    \"anvil.command('x', function() return 'pwned ' .. sys.fs.read('secret/key') end)\")\n"
      "  sys.fs.write('tools/a-notes.txt', 'written next to b')\n"
      "  return ok and 'wrote' or tostring(err)\n"
      "end)\n");
  auto b = Anvil({"--approve", ws_ / "tools/b", "x"});
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(b.out, "b\n");
  auto a = Anvil({"--approve", ws_ / "tools/a", "x"});
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_NE(a.out.find("denied"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("t8.b"), std::string::npos) << a.out;
  // The benign neighbour: A's ordinary write next to B's directory.
  EXPECT_EQ(ReadFile(ws_ / "tools/a-notes.txt"), "written next to b");
  b = Anvil({ws_ / "tools/b", "x"});  // B's stored grant: no consent asked
  EXPECT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(b.out, "b\n");
  EXPECT_EQ(b.out.find("SECRET-KEY"), std::string::npos) << b.out;
  // The user's own edit of B's code runs as before, under B's grant.
  WriteFile(ws_ / "tools/b/main.lua",
            "anvil.command('x', function() return 'b2 ' .. sys.fs.read('secret/key') end)\n");
  b = Anvil({ws_ / "tools/b", "x"});
  EXPECT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(b.out, "b2 SECRET-KEY\n");
}

// The same class through a removed directory: once the user removes B's directory (uninstalls
// it), nothing holds a manifest there and A may make it again, with B's manifest bytes and A's
// code. B's grant stayed stored for that path; before the fix the remade directory matched it
// as "the approved directory, edited" and ran A's code with B's grant without asking. A grant
// is for the directory that was approved, not for whatever later takes its name: the remade one
// asks again (no terminal here: refused), unless its code is byte-identical to what was
// approved (a reinstall of the same code).
TEST_F(T8RunPluginCode, ARemovedPluginDirectoryRemadeWithOtherCodeAsksAgain) {
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(ws_ / "secret")), 0);
  WriteFile(ws_ / "secret/key", "SECRET-KEY");
  const std::string b_code = "anvil.command('x', function() return 'b' end)\n";
  WriteLuaPlugin(ws_ / "tools/b", "t8.b", "fs.read = [\"secret/**\"]\n", b_code);
  const std::string b_manifest = ReadFile(ws_ / "tools/b/anvil-plugin.toml");
  auto lua_string = [](const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '\n') {
        out += "\\n";
      } else {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
      }
    }
    return out + "\"";
  };
  WriteLuaPlugin(
      ws_ / "tools/a", "t8.a", "fs.write = [\"**\"]\n",
      "anvil.command('x', function()\n"
      "  sys.fs.write('tools/b/main.lua',\n"
      "    \"anvil.command('x', function() return 'pwned ' .. sys.fs.read('secret/key') end)\",\n"
      "    {parents = true})\n"
      "  sys.fs.write('tools/b/anvil-plugin.toml', " +
          lua_string(b_manifest) +
          ")\n"
          "  return 'remade'\n"
          "end)\n");
  auto b = Anvil({"--approve", ws_ / "tools/b", "x"});
  ASSERT_EQ(b.status, 0) << b.err;
  auto a = Anvil({"--approve", ws_ / "tools/a", "x"});  // B is there: refused, as above
  ASSERT_EQ(a.status, 1) << a.out << a.err;
  // The user uninstalls B.
  ASSERT_EQ(Shell("rm -rf " + ShellQuote(ws_ / "tools/b")), 0);
  a = Anvil({ws_ / "tools/a", "x"});
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(a.out, "remade\n");
  ASSERT_EQ(ReadFile(ws_ / "tools/b/anvil-plugin.toml"), b_manifest);
  b = Anvil({ws_ / "tools/b", "x"});  // no terminal to ask on
  EXPECT_EQ(b.status, 3) << b.out << b.err;
  EXPECT_NE(b.err.find("denied: permission not granted"), std::string::npos) << b.err;
  EXPECT_EQ(b.out.find("SECRET-KEY"), std::string::npos) << b.out;

  // The benign neighbours. B reinstalled with exactly the approved code: its grant applies.
  ASSERT_EQ(Shell("rm -rf " + ShellQuote(ws_ / "tools/b")), 0);
  WriteLuaPlugin(ws_ / "tools/b", "t8.b", "fs.read = [\"secret/**\"]\n", b_code);
  b = Anvil({ws_ / "tools/b", "x"});
  EXPECT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(b.out, "b\n");
  // Reinstalled with other code (a new version in a new directory): asked again, and once
  // approved, the user's edits of that directory (in place, or saved by rename as many editors
  // do) run under its grant without asking.
  ASSERT_EQ(Shell("rm -rf " + ShellQuote(ws_ / "tools/b")), 0);
  WriteLuaPlugin(ws_ / "tools/b", "t8.b", "fs.read = [\"secret/**\"]\n",
                 "anvil.command('x', function() return 'b2' end)\n");
  EXPECT_EQ(Anvil({ws_ / "tools/b", "x"}).status, 3);
  b = Anvil({"--approve", ws_ / "tools/b", "x"});
  EXPECT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(b.out, "b2\n");
  WriteFile(ws_ / "tools/b/main.lua", "anvil.command('x', function() return 'b3' end)\n");
  b = Anvil({ws_ / "tools/b", "x"});
  EXPECT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(b.out, "b3\n");
  WriteFile(ws_ / "tools/b/main.lua.tmp", "anvil.command('x', function() return 'b4' end)\n");
  ASSERT_EQ(Shell("mv " + ShellQuote(ws_ / "tools/b/main.lua.tmp") + " " +
                  ShellQuote(ws_ / "tools/b/main.lua")),
            0);
  b = Anvil({ws_ / "tools/b", "x"});
  EXPECT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(b.out, "b4\n");
}

}  // namespace
}  // namespace t8_gateway_plugin_code_test
}  // namespace anvil::testing
