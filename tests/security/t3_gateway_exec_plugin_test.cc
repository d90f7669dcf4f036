// sys.exec end to end from a real plugin (`anvil run`: session, gateway, exec broker, runner),
// as root and as an unprivileged user: the runner takes different paths for each (uid 0 keeps
// its uid inside and is bounded by a pids cgroup; a user gets a user namespace).
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>

#include "common/unique_fd.h"
#include "sandbox_harness.h"

namespace anvil::testing {
namespace t3_gateway_exec_plugin_test {
namespace {

class ExecFromPlugin : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_EQ(Shell("mkdir -p '" + ws_.path() + "/src'"), 0);
    WriteFile(ws_ / "src/main.c", "int main() { return 0; } // TODO: error handling\n");
    WriteFile(ws_ / ".env", "TOKEN=TODO-not-for-plugins\n");
    WriteFile(plugin_ / "anvil-plugin.toml",
              "id = \"test.todo\"\nversion = \"1.0.0\"\nruntime = \"lua\"\nentry = \"main.lua\"\n"
              "\n[permissions]\nfs.read = [\"src/**\"]\nexec = [\"rg\", \"fd\"]\n");
    WriteFile(plugin_ / "main.lua",
              "anvil.command('todos', function()\n"
              "  local r = sys.exec{program = 'rg', args = {'-n', '--no-heading', 'TODO'}}\n"
              "  return r.stdout\n"
              "end)\n"
              "anvil.command('shell', function()\n"
              "  local ok, err = pcall(sys.exec, {program = 'sh', args = {'-c', 'id'}})\n"
              "  return err\n"
              "end)\n"
              // Any tool with any operand: prints the output, or the error raised.
              "anvil.command('run', function(args)\n"
              "  local argv = {}\n"
              "  for i = 2, #args do argv[#argv + 1] = args[i] end\n"
              "  local ok, r = pcall(sys.exec, {program = args[1], args = argv})\n"
              "  if not ok then return 'ERROR ' .. r end\n"
              "  return r.stdout\n"
              "end)\n");
    caller_.Give(ws_.path());
    caller_.Give(plugin_.path());
    caller_.Give(state_.path());
  }
  RunResult Anvil(std::vector<std::string> args) {
    args.insert(args.begin(), {AnvilBin(), "run", "--workspace", ws_.path(), "--approve"});
    RunOptions o;
    o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path(),
             "XDG_RUNTIME_DIR=" + state_.path()};
    return testing::Run(args, Opts(o));
  }
  // A plugin granted `read` (globs) and rg and fd, with the same 'run' command.
  std::string GlobPlugin(const std::string& read) {
    WriteFile(glob_plugin_ / "anvil-plugin.toml",
              "id = \"test.glob\"\nversion = \"1.0.0\"\nruntime = \"lua\"\nentry = \"main.lua\"\n"
              "\n[permissions]\nfs.read = [" +
                  read + "]\nexec = [\"rg\", \"fd\"]\n");
    WriteFile(glob_plugin_ / "main.lua", ReadFile(plugin_ / "main.lua"));
    caller_.Give(glob_plugin_.path());
    return glob_plugin_.path();
  }
  TempDir ws_{"anvil-exec-ws"};
  TempDir glob_plugin_{"anvil-exec-glob-plugin"};
  TempDir plugin_{"anvil-exec-plugin"};
  TempDir state_{"anvil-exec-state"};
};

TEST_P(ExecFromPlugin, RgFindsTodosInTheGrantedTreeOnly) {
  auto r = Anvil({plugin_.path(), "todos"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("src/main.c:1:int main() { return 0; } // TODO: error handling"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("not-for-plugins"), std::string::npos) << r.out;
}

TEST_P(ExecFromPlugin, AShellIsNeverAProgram) {
  auto r = Anvil({plugin_.path(), "shell"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "denied: executable not in the policy table: sh\n");
}

// Issue 18, section 5, from a real plugin: links in the granted tree to /etc, /proc, /usr and
// another workspace, named as operands or through path-valued flags, are refused.
TEST_P(ExecFromPlugin, OperandLinksOutOfTheWorkspaceAreRefused) {
  TempDir other("anvil-exec-other");
  WriteFile(other / "notes.txt", "OTHER\n");
  caller_.Give(other.path());
  for (const auto& [target, name] :
       std::vector<std::pair<std::string, std::string>>{{"/etc", "etc-link"},
                                                        {"/proc/self", "proc-link"},
                                                        {"/usr", "usr-link"},
                                                        {other.path(), "other-ws"},
                                                        {"../..", "up"}}) {
    ASSERT_EQ(::symlink(target.c_str(), (ws_.path() + "/src/" + name).c_str()), 0);
  }
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"rg", "-uu", "root", "src/etc-link"},
                                             {"rg", "--files", "src/proc-link"},
                                             {"rg", "-f", "src/etc-link/passwd", "src"},
                                             {"fd", "--search-path", "src/usr-link"},
                                             {"rg", "OTHER", "src/other-ws"},
                                             {"fd", ".", "src/up"}}) {
    std::vector<std::string> cmd = {plugin_.path(), "run"};
    cmd.insert(cmd.end(), args.begin(), args.end());
    auto r = Anvil(cmd);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(
        r.out.rfind("ERROR denied: " + args[0] + " path operand: path escapes the workspace", 0),
        0u)
        << args[1] << " " << args.back() << " -> " << r.out;
  }
  // The benign neighbour: the granted tree.
  auto r = Anvil({plugin_.path(), "run", "rg", "-l", "TODO", "src"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "src/main.c\n\n");  // anvil run ends the result with a newline
}

// Issue 19, section 2, from a real plugin: fs.read = ["*.md"] with exec = ["rg", "fd"]. The tools
// read and list the markdown files at the top only, as sys.fs.read would: not .env, not
// config/prod.ini, not .git/config; and a hard link to a file outside is not read under a grant
// of the whole tree either.
TEST_P(ExecFromPlugin, AGlobGrantAndAHardLinkLimitTheToolsAsTheyLimitSysFsRead) {
  ASSERT_EQ(Shell("mkdir -p '" + ws_.path() + "/config' '" + ws_.path() + "/.git'"), 0);
  WriteFile(ws_ / "README.md", "SEEKME readme\n");
  WriteFile(ws_ / "config/prod.ini", "password=SEEKME\n");
  WriteFile(ws_ / ".git/config", "url = https://SEEKME@example.com\n");
  WriteFile(ws_ / ".env", "TOKEN=SEEKME\n");
  TempDir home("anvil-exec-home", "/tmp");  // the workspace's file system: a hard link needs it
  WriteFile(home / "id_ed25519", "SEEKME private key\n", 0600);
  caller_.Give(home.path());
  ASSERT_EQ(::link((home / "id_ed25519").c_str(), (ws_.path() + "/src/key.txt").c_str()), 0);
  caller_.Give(ws_.path());
  const std::string md = GlobPlugin("\"*.md\"");
  auto r = Anvil({md, "run", "rg", "-uu", "--no-heading", "SEEKME"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "README.md:SEEKME readme\n\n");  // anvil run ends the result with a newline
  r = Anvil({md, "run", "fd", "-H", "-I"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "README.md\n\n");
  r = Anvil({md, "run", "rg", "SEEKME", ".env"});
  EXPECT_EQ(r.out, "ERROR denied: rg path operand outside the grant: .env\n");
  const std::string all = GlobPlugin("\"**\"");
  r = Anvil({all, "run", "rg", "-uu", "--no-heading", "-l", "SEEKME"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::set<std::string> files;
  for (const auto& line : Lines(r.out)) {
    if (!line.empty()) files.insert(line);
  }
  // Everything sys.fs.read reads under "**" (.git and .env included), but not the hard link.
  EXPECT_EQ(files, (std::set<std::string>{"README.md", "config/prod.ini", ".git/config", ".env"}))
      << r.out;
  r = Anvil({all, "run", "rg", "SEEKME", "src/key.txt"});
  EXPECT_EQ(r.out.rfind("ERROR denied: rg path operand has 2 hard links", 0), 0u) << r.out;
}

// The tool's view, looked at from outside while rg is held in its sandbox (a lease on the file it
// opens): no /etc/passwd, no /etc or /usr as a whole, no /proc; the granted tree only.
TEST_P(ExecFromPlugin, TheToolsViewHasNoSystemFileButItsOwn) {
  const std::string held = UniqueToken("held") + ".c";
  WriteFile(ws_ / ("src/" + held), "x\n");
  caller_.Give(ws_.path());
  signal(SIGIO, SIG_IGN);
  UniqueFd lease(::open((ws_.path() + "/src/" + held).c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_EQ(::fcntl(lease.Get(), F_SETLEASE, F_WRLCK), 0);
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path(),
           "XDG_RUNTIME_DIR=" + state_.path()};
  Spawned run({AnvilBin(), "run", "--workspace", ws_.path(), "--approve", plugin_.path(), "run",
               "rg", "x", "src/" + held},
              Opts(o));
  std::vector<pid_t> rg;
  ASSERT_TRUE(WaitUntil([&] {
    for (pid_t p : ProcessesWithMarker(held)) {
      if (ReadFile("/proc/" + std::to_string(p) + "/comm") == "rg\n") rg = {p};
    }
    return !rg.empty();
  })) << "rg never started";
  const std::string root = "/proc/" + std::to_string(rg[0]) + "/root";
  auto exists = [&](const std::string& path) {
    struct stat st {};
    return ::lstat((root + path).c_str(), &st) == 0;
  };
  EXPECT_FALSE(exists("/etc/passwd"));
  EXPECT_FALSE(exists("/etc/shadow"));
  EXPECT_FALSE(exists("/etc/ssh"));
  EXPECT_FALSE(exists("/proc/self"));
  EXPECT_FALSE(exists("/usr/bin/sh"));
  EXPECT_FALSE(exists("/bin/sh"));
  EXPECT_TRUE(exists("/etc/ld.so.cache"));
  EXPECT_TRUE(exists("/usr/bin/rg"));
  std::set<std::string> etc, ws;
  if (DIR* d = ::opendir((root + "/etc").c_str())) {
    while (dirent* e = ::readdir(d)) etc.insert(e->d_name);
    ::closedir(d);
  }
  EXPECT_EQ(etc, (std::set<std::string>{".", "..", "ld.so.cache"}));
  if (DIR* d = ::opendir((root + ws_.path()).c_str())) {
    while (dirent* e = ::readdir(d)) ws.insert(e->d_name);
    ::closedir(d);
  }
  EXPECT_EQ(ws, (std::set<std::string>{".", "..", "src"})) << "more than the grant (.env)";
  ::fcntl(lease.Get(), F_SETLEASE, F_UNLCK);
  auto status = run.Wait(std::chrono::seconds(30));
  ASSERT_TRUE(status);
  EXPECT_EQ(*status, 0);
}

INSTANTIATE_TEST_SUITE_P(Callers, ExecFromPlugin, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t3_gateway_exec_plugin_test
}  // namespace anvil::testing
