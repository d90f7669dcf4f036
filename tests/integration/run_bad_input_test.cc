// Bad input that used to crash or mislead, against the real `anvil run` (gateway, plugin host,
// exec runner) and the other executables: standard descriptors closed at start, arguments that
// are not UTF-8, a manifest whose entry is a symlink or missing, a write and a result over the
// frame cap, names that are not UTF-8 in a listing. Each attack sits next to its benign
// neighbour, and no failing run leaves a process behind.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace run_bad_input_test {
namespace {

class RunBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(ws_ / "a.txt", "alpha");
    ASSERT_EQ(Shell("mkdir -p '" + ws_.path() + "/notes' '" + plugin_.path() + "/lib'"), 0);
  }
  void Plugin(const std::string& runtime, const std::string& permissions, const std::string& code) {
    WriteFile(plugin_ / "anvil-plugin.toml",
              "id = \"test.bad\"\nversion = \"1.0.0\"\nruntime = \"" + runtime +
                  "\"\nentry = \"main." + runtime + "\"\n\n[permissions]\n" + permissions);
    WriteFile(plugin_ / ("main." + runtime), code);
  }
  RunOptions Options() const {
    RunOptions o;
    o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path()};
    return o;
  }
  RunResult Anvil(std::vector<std::string> args) {
    args.insert(args.begin(), AnvilBin());
    return testing::Run(args, Options());
  }
  // A generous deadline: the 17 MiB cases copy and escape that much in a debug build, on a
  // machine that may be loaded; the default 10 s is not what is tested here.
  RunResult RunCmd(const std::vector<std::string>& tail) {
    std::vector<std::string> args = {"run",       "--workspace", ws_.path(),    "--approve",
                                     "--timeout", "120",         plugin_.path()};
    args.insert(args.end(), tail.begin(), tail.end());
    return Anvil(args);
  }
  // `anvil run` through /bin/sh with `redirections` (e.g. "<&-") applied to it.
  RunResult RunWithRedirections(const std::string& redirections, const std::string& command) {
    return testing::Run(
        {"/bin/sh", "-c",
         ShellQuote(AnvilBin()) + " run --workspace " + ShellQuote(ws_.path()) + " --approve " +
             ShellQuote(plugin_.path()) + " " + command + " " + redirections},
        Options());
  }
  // No gateway, host or runner of this workspace outlives a run.
  void ExpectNoProcessLeft() {
    EXPECT_TRUE(WaitUntil([&] { return ProcessesWithMarker(ws_.path()).empty(); }))
        << "a process of this session is still alive";
  }
  TempDir ws_{"anvil-bad-ws"};
  TempDir plugin_{"anvil-bad-plugin"};
  TempDir state_{"anvil-bad-state"};
};

// Editors and CI start `anvil run` with stdin (or stdout, stderr) closed. Every executable of a
// run — anvil, anvil-gateway, anvil-plugin-host, anvil-exec-runner (sys.exec) — works.
TEST_F(RunBadInput, RunWorksWithAnyStandardDescriptorClosed) {
  if (Shell("command -v rg >/dev/null") != 0) GTEST_SKIP() << "rg is not installed";
  WriteFile(ws_ / "src.txt", "one TODO\n");
  Plugin("lua", "fs.read = [\"**\"]\nfs.write = [\"notes/**\"]\nexec = [\"rg\"]\n",
         "anvil.command('x', function(args)\n"
         "  local r = sys.exec{program = 'rg', args = {'-c', 'TODO', 'src.txt'}}\n"
         "  sys.fs.write('notes/' .. args[1], sys.fs.read('a.txt') .. ' ' .. r.stdout)\n"
         "  return 'done'\n"
         "end)");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"<&-", "in"},           {">&-", "out"},         {"2>&-", "err"},
      {"<&- >&- 2>&-", "all"}, {"<&- 2>&-", "in-err"}, {">&- 2>&-", "out-err"}};
  for (const auto& [redirections, tag] : cases) {
    auto r = RunWithRedirections(redirections, "x " + tag);
    EXPECT_EQ(r.status, 0) << redirections << ": " << r.err;
    EXPECT_EQ(ReadFile(ws_ / ("notes/" + tag)), "alpha 1\n") << redirections;
    if (redirections.find(">&-") == std::string::npos) {
      EXPECT_EQ(r.out, "done\n") << redirections;
    }
  }
  ExpectNoProcessLeft();
}

// The same for an unprivileged caller, whose sandboxes start another way (no root remap, user
// namespaces made by the user): the host, the gateway and the exec runner all still start.
TEST_F(RunBadInput, RunWorksWithStandardDescriptorsClosedForAnUnprivilegedCaller) {
  if (Shell("command -v rg >/dev/null") != 0) GTEST_SKIP() << "rg is not installed";
  ANVIL_CALLER_OR_END_TEST(caller, Caller::kUnprivileged);
  WriteFile(ws_ / "src.txt", "one TODO\n");
  Plugin("lua", "fs.read = [\"**\"]\nfs.write = [\"notes/**\"]\nexec = [\"rg\"]\n",
         "anvil.command('x', function(args)\n"
         "  local r = sys.exec{program = 'rg', args = {'-c', 'TODO', 'src.txt'}}\n"
         "  sys.fs.write('notes/' .. args[1], sys.fs.read('a.txt') .. ' ' .. r.stdout)\n"
         "  return 'done'\n"
         "end)");
  for (const std::string& dir : {ws_.path(), plugin_.path(), state_.path()}) caller->Give(dir);
  for (const auto& [redirections, tag] : std::vector<std::pair<std::string, std::string>>{
           {"<&-", "in"}, {"2>&-", "err"}, {"<&- >&- 2>&-", "all"}}) {
    auto r = testing::Run(
        {"/bin/sh", "-c",
         ShellQuote(AnvilBin()) + " run --workspace " + ShellQuote(ws_.path()) + " --approve " +
             ShellQuote(plugin_.path()) + " x " + tag + " " + redirections},
        caller->Options(Options()));
    EXPECT_EQ(r.status, 0) << redirections << ": " << r.err;
    EXPECT_EQ(ReadFile(ws_ / ("notes/" + tag)), "alpha 1\n") << redirections;
    if (tag != "all") {
      EXPECT_EQ(r.out, "done\n") << redirections;
    }
  }
  ExpectNoProcessLeft();
}

// The same for the command sandbox and its proxy, and for `anvil serve`'s diagnostics.
TEST_F(RunBadInput, SandboxAndProxyWorkWithStandardDescriptorsClosed) {
  for (const std::string redirections : {"<&-", "2>&-", "<&- 2>&-"}) {
    auto r = testing::Run({"/bin/sh", "-c",
                           ShellQuote(AnvilBin()) + " sandbox --cwd " + ShellQuote(ws_.path()) +
                               " -- /bin/cat a.txt " + redirections},
                          Options());
    EXPECT_EQ(r.status, 0) << redirections << ": " << r.err;
    EXPECT_EQ(r.out, "alpha") << redirections;
    r = testing::Run(
        {"/bin/sh", "-c",
         ShellQuote(AnvilBin()) +
             " sandbox --policy read-only --network proxy --allow-host example.com" + " --cwd " +
             ShellQuote(ws_.path()) + " -- /bin/cat a.txt " + redirections},
        Options());
    EXPECT_EQ(r.status, 0) << "proxy " << redirections << ": " << r.err;
    EXPECT_EQ(r.out, "alpha") << "proxy " << redirections;
  }
}

// anvil-gateway started directly with 0, 1 and 2 closed: it reports ready on its control
// channel (fd 3), and its standard descriptors are /dev/null, not a socket it opened.
TEST_F(RunBadInput, GatewayStartsWithStandardDescriptorsClosed) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  const std::string gateway = BinDir() + "/anvil-gateway";
  const std::string audit = state_ / "audit.jsonl";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (dup2(sv[1], 3) != 3) _exit(120);
    ::close(0);
    ::close(1);
    ::close(2);
    ExecOrExit({gateway, "--workspace", ws_.path(), "--control-fd", "3", "--audit-log", audit,
                "--runtime-dir", state_ / "rt", "--no-exec"},
               {"PATH=/usr/bin:/bin"});
  }
  ::close(sv[1]);
  std::string got;
  char buf[4096];
  pollfd p{sv[0], POLLIN, 0};
  while (got.find("ready") == std::string::npos && poll(&p, 1, 10000) > 0) {
    ssize_t n = ::read(sv[0], buf, sizeof(buf));
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  EXPECT_NE(got.find("\"ready\""), std::string::npos) << got;
  for (int fd = 0; fd <= 2; ++fd) {
    char link[256] = {};
    std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
    ssize_t n = ::readlink(path.c_str(), link, sizeof(link) - 1);
    EXPECT_EQ(n > 0 ? std::string(link, static_cast<size_t>(n)) : "(closed)", "/dev/null")
        << "fd " << fd;
  }
  ::close(sv[0]);  // EOF: the gateway shuts down
  int status = 0;
  EXPECT_TRUE(WaitUntil([&] { return waitpid(pid, &status, WNOHANG) == pid; }));
}

// A command argument that is not UTF-8 cannot become a JSON string: a clear error before
// anything starts (it used to abort with an uncaught exception, exit 134, and leave the
// gateway running).
TEST_F(RunBadInput, NonUtf8ArgumentIsInvalidNotACrash) {
  Plugin("lua", "", "anvil.command('x', function(args) return #args end)");
  for (const std::vector<std::string>& tail :
       {std::vector<std::string>{"x", "\xff"}, std::vector<std::string>{"x", "ok", "a\xc0\xae"},
        std::vector<std::string>{"x", "\xed\xa0\x80"}, std::vector<std::string>{"x", "\x80"}}) {
    auto r = RunCmd(tail);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("anvil run: invalid: argument "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("not valid UTF-8"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\xff'), std::string::npos) << "raw byte echoed";
  }
  ExpectNoProcessLeft();
  // Benign: UTF-8 arguments reach the plugin.
  auto r = RunCmd({"x", "café", "日本"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "2\n");
}

TEST_F(RunBadInput, NonUtf8WorkspacePathIsInvalid) {
  Plugin("lua", "", "anvil.command('x', function() return 1 end)");
  const std::string odd = ws_ / "caf\xe9";
  ASSERT_EQ(::mkdir(odd.c_str(), 0755), 0);
  auto r = Anvil({"run", "--workspace", odd, "--approve", plugin_.path(), "x"});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("invalid: the workspace path"), std::string::npos) << r.err;
  ExpectNoProcessLeft();
}

// The entry is read by the host beneath the plugin directory without following symlinks; a
// manifest naming a symlink, a missing file or a directory is refused where manifests are read,
// with its line, column and a fix — not a host that fails to start (exit 125).
TEST_F(RunBadInput, ManifestEntryThatIsASymlinkOrMissingIsAManifestError) {
  Plugin("lua", "", "anvil.command('x', function() return 1 end)");
  const std::string manifest = ReadFile(plugin_ / "anvil-plugin.toml");
  struct Case {
    std::string what;
    std::function<void()> setup;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"symlink to a file outside",
       [&] {
         ASSERT_EQ(::unlink((plugin_ / "main.lua").c_str()), 0);
         WriteFile(ws_ / "evil.lua", "anvil.command('x', function() return 2 end)");
         ASSERT_EQ(::symlink((ws_ / "evil.lua").c_str(), (plugin_ / "main.lua").c_str()), 0);
       },
       "symbolic link"},
      {"symlink inside the plugin",
       [&] {
         ASSERT_EQ(::unlink((plugin_ / "main.lua").c_str()), 0);
         WriteFile(plugin_ / "real.lua", "anvil.command('x', function() return 3 end)");
         ASSERT_EQ(::symlink("real.lua", (plugin_ / "main.lua").c_str()), 0);
       },
       "symbolic link"},
      {"a symlinked directory on the way",
       [&] {
         WriteFile(plugin_ / "anvil-plugin.toml",
                   "id = \"test.bad\"\nversion = \"1.0.0\"\nruntime = \"lua\"\n"
                   "entry = \"src/main.lua\"\n");
         ASSERT_EQ(Shell("mkdir -p '" + ws_.path() + "/d' && cp '" + plugin_.path() +
                         "/real.lua' '" + ws_.path() + "/d/main.lua'"),
                   0);
         ASSERT_EQ(::symlink((ws_ / "d").c_str(), (plugin_ / "src").c_str()), 0);
       },
       "symbolic link"},
      {"missing",
       [&] {
         WriteFile(plugin_ / "anvil-plugin.toml", manifest);
         ASSERT_EQ(::unlink((plugin_ / "main.lua").c_str()), 0);
       },
       "does not exist"},
      {"a directory", [&] { ASSERT_EQ(::mkdir((plugin_ / "main.lua").c_str(), 0755), 0); },
       "not a regular file"},
  };
  for (const Case& c : cases) {
    c.setup();
    for (const std::string sub : {"inspect", "approve"}) {
      auto r = Anvil({"plugin", sub, "--workspace", ws_.path(), plugin_.path()});
      EXPECT_EQ(r.status, 2) << c.what << " " << sub << ": " << r.err << r.out;
      EXPECT_NE(r.err.find("anvil-plugin.toml:4:9: entry "), std::string::npos)
          << c.what << ": " << r.err;
      EXPECT_NE(r.err.find(c.says), std::string::npos) << c.what << ": " << r.err;
      EXPECT_NE(r.err.find("(fix: "), std::string::npos) << c.what << ": " << r.err;
    }
    auto r = RunCmd({"x"});
    EXPECT_EQ(r.status, 2) << c.what << ": " << r.err;
    EXPECT_NE(r.err.find("anvil run: invalid: "), std::string::npos) << c.what << ": " << r.err;
    EXPECT_EQ(r.out, "") << c.what;
  }
  ExpectNoProcessLeft();
  // Benign: a regular entry file runs.
  ASSERT_EQ(::rmdir((plugin_ / "main.lua").c_str()), 0);
  WriteFile(plugin_ / "main.lua", "anvil.command('x', function() return 1 end)");
  auto r = RunCmd({"x"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "1\n");
}

// A module under lib/ that is a symlink: refused before anything starts, by `anvil run` (exit 3,
// as anvil.lock and the grant's code check refuse it) and by `anvil plugin inspect`/`approve`
// alike, never "the sandbox could not be set up" (125). (If it is swapped in after that check,
// the host answers it as the load error, exit 1: T4HostEscape.UnreadablePluginFile...)
TEST_F(RunBadInput, SymlinkedModuleIsRefusedBeforeAnythingStarts) {
  Plugin("lua", "", "anvil.command('x', function() return 1 end)");
  ASSERT_EQ(::symlink("/etc/passwd", (plugin_ / "lib/util.lua").c_str()), 0);
  auto r = RunCmd({"x"});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("lib/util.lua is a symbolic link"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  for (const std::string sub : {"inspect", "approve"}) {
    auto p = Anvil({"plugin", sub, "--workspace", ws_.path(), plugin_.path()});
    EXPECT_EQ(p.status, 1) << sub << ": " << p.err << p.out;
    EXPECT_NE(p.err.find("lib/util.lua is a symbolic link"), std::string::npos) << sub << p.err;
    EXPECT_EQ(p.out, "") << sub;
  }
  ExpectNoProcessLeft();
  // Benign: the module as a regular file runs, and inspect shows the plugin.
  ASSERT_EQ(::unlink((plugin_ / "lib/util.lua").c_str()), 0);
  WriteFile(plugin_ / "lib/util.lua", "return {}");
  r = RunCmd({"x"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "1\n");
  auto p = Anvil({"plugin", "inspect", "--workspace", ws_.path(), plugin_.path()});
  EXPECT_EQ(p.status, 0) << p.err;
}

// A write over the gateway's frame cap used to close the host's connection, and every later
// sys.* call failed with "io: gateway unreachable". It is a limit error, checked before sending,
// and the next call works.
TEST_F(RunBadInput, WriteOverTheFrameCapIsALimitAndTheConnectionSurvives) {
  Plugin("lua", "fs.read = [\"**\"]\nfs.write = [\"notes/**\"]\n",
         "anvil.command('x', function()\n"
         "  local ok, e = pcall(sys.fs.write, 'notes/big', string.rep('x', 17 * 1024 * 1024))\n"
         "  sys.fs.write('notes/after', 'ok')\n"
         "  return tostring(ok) .. '|' .. e .. '|' .. sys.fs.read('a.txt')\n"
         "end)");
  auto r = RunCmd({"x"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("false|limit: fs.write: request of ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("over the gateway's frame cap of 16777216 bytes; nothing was sent|alpha"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(ReadFile(ws_ / "notes/after"), "ok");
  EXPECT_FALSE(Exists(ws_ / "notes/big"));
  // JS: the same.
  Plugin("js", "fs.read = [\"**\"]\nfs.write = [\"notes/**\"]\n",
         "anvil.command('x', function () {\n"
         "  let e = '';\n"
         "  try { sys.fs.write('notes/big', 'x'.repeat(17 * 1024 * 1024)); } catch (x) {"
         " e = x.message; }\n"
         "  return e.split(':')[0] + '|' + sys.fs.read('a.txt');\n"
         "});");
  r = RunCmd({"x"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "limit|alpha\n");
  // Benign: a write under the gateway's write cap works.
  Plugin("lua", "fs.write = [\"notes/**\"]\n",
         "anvil.command('x', function() sys.fs.write('notes/mid', string.rep('y', 1024 * 1024))"
         " return 'ok' end)");
  r = RunCmd({"x"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(ReadFile(ws_ / "notes/mid").size(), 1024u * 1024u);
}

// A result over the cap of one message to Anvil: "limit:" with the cap, not "malformed frame".
TEST_F(RunBadInput, ResultOverTheCapIsALimitNamingTheCap) {
  for (const auto& [runtime, code] :
       {std::pair<std::string, std::string>{
            "lua", "anvil.command('x', function() return string.rep('x', 17 * 1024 * 1024) end)"},
        std::pair<std::string, std::string>{
            "js", "anvil.command('x', function () { return 'x'.repeat(17 * 1024 * 1024); });"}}) {
    Plugin(runtime, "", code);
    auto r = RunCmd({"x"});
    EXPECT_EQ(r.status, 1) << runtime << ": " << r.err;
    EXPECT_NE(r.err.find("anvil run: limit: the command's result is "), std::string::npos)
        << runtime << ": " << r.err;
    EXPECT_NE(r.err.find("over the cap of 16777216 bytes"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("malformed"), std::string::npos) << r.err;
  }
  ExpectNoProcessLeft();
  // Benign: a large result under the cap is printed whole.
  Plugin("lua", "", "anvil.command('x', function() return string.rep('z', 4 * 1024 * 1024) end)");
  auto r = RunCmd({"x"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.size(), 4u * 1024u * 1024u + 1u);
}

// A JS result holding a lone surrogate has no UTF-8 form: refused by name.
TEST_F(RunBadInput, JsResultWithALoneSurrogateIsInvalid) {
  Plugin("js", "", "anvil.command('x', function () { return {a: 'x\\uD800'}; });");
  auto r = RunCmd({"x"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("anvil run: invalid: the command's result is not valid Unicode"),
            std::string::npos)
      << r.err;
}

// Names that are not UTF-8 are left out of a listing; the plugin is told how many, in both
// runtimes.
TEST_F(RunBadInput, ListingSaysHowManyNamesWereLeftOut) {
  WriteFile(ws_ / "notes/ok.txt", "1");
  WriteFile(ws_ / "notes/bad\xff.txt", "2");
  WriteFile(ws_ / "notes/ctl\x1b.txt", "3");
  Plugin("lua", "fs.read = [\"**\"]\n",
         "anvil.command('x', function()\n"
         "  local l, omitted = sys.fs.list('notes')\n"
         "  return #l .. ' ' .. l[1].name .. ' ' .. omitted\n"
         "end)");
  auto r = RunCmd({"x"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "1 ok.txt 2\n");
  Plugin("js", "fs.read = [\"**\"]\n",
         "anvil.command('x', function () {\n"
         "  const l = sys.fs.list('notes');\n"
         "  return l.length + ' ' + l[0].name + ' ' + l.omitted;\n"
         "});");
  r = RunCmd({"x"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "1 ok.txt 2\n");
}

// JSON nested a million deep parses (nlohmann keeps its own stack) and then overflows the stack
// where it is dumped: an editor's executeCommand arguments crashed `anvil serve` (SIGSEGV). Such
// a message is a JSON-RPC parse error, and the session goes on.
TEST_F(RunBadInput, DeeplyNestedEditorMessageIsAParseErrorNotACrash) {
  auto frame = [](const std::string& body) {
    return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  };
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  RunOptions o = Options();
  o.stdin_data =
      frame(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})") +
      frame(R"({"jsonrpc":"2.0","method":"initialized","params":{}})") +
      frame(
          R"({"jsonrpc":"2.0","id":2,"method":"workspace/executeCommand","params":{"command":"a.b/c","arguments":)" +
          deep + "}}") +
      // Benign neighbour: nested, but within the bound; then an orderly shutdown.
      frame(
          R"({"jsonrpc":"2.0","id":3,"method":"workspace/executeCommand","params":{"command":"a.b/c","arguments":)" +
          std::string(100, '[') + std::string(100, ']') + "}}") +
      frame(R"({"jsonrpc":"2.0","id":4,"method":"shutdown"})") +
      frame(R"({"jsonrpc":"2.0","method":"exit"})");
  auto r = testing::Run({AnvilBin(), "serve", "--workspace", ws_.path()}, o);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("deeper than 512 levels"), std::string::npos) << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find(R"("id":3)"), std::string::npos) << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find(R"("id":4,"jsonrpc":"2.0","result":null)"), std::string::npos)
      << r.out.substr(0, 2000);
  ExpectNoProcessLeft();
}

// A command's result nested deeper than the bound is a `limit:` error naming it (a compromised
// host's million-deep result crashed `anvil run` when printed); a nested result within it prints.
TEST_F(RunBadInput, DeeplyNestedResultIsALimitNotACrash) {
  Plugin("js", "",
         "anvil.command('x', function (args) {\n"
         "  let v = []; for (let i = 1; i < Number(args[0]); i++) v = [v];\n"
         "  return v;\n"
         "});");
  auto r = RunCmd({"x", "600"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("limit: the command's result is nested deeper than 512 levels"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
  r = RunCmd({"x", "100"});
  EXPECT_EQ(r.status, 0) << r.err.substr(0, 2000);
  EXPECT_NE(r.out.find("[]"), std::string::npos);
  ExpectNoProcessLeft();
}

}  // namespace
}  // namespace run_bad_input_test
}  // namespace anvil::testing
