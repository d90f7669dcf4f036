// Everyday development under the DEFAULT policy (workspace-write, network none), as root and as
// an unprivileged user with a lived-in home (home_fixture.h): builds, tests, virtualenvs, caches
// under $HOME, per-user tools and pyenv shims, temporary files, git's read commands, pipes and
// exit codes all work — while the home's secrets stay unreadable and the real home unchanged.
#include <sys/stat.h>

#include <string>
#include <vector>

#include "home_fixture.h"
#include "sandbox_harness.h"

namespace anvil::testing {
namespace t3_sandbox_everyday_test {
namespace {

class T3SandboxEveryday : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    ws_ = home_.workspace();
    Put(ws_ + "/Makefile",
        "app: main.c\n\tcc -O0 -o app main.c\n\ntest: app\n\t./app | grep -q 'hello 42'\n");
    Put(ws_ + "/main.c", "#include <stdio.h>\nint main(void){printf(\"hello %d\\n\", 42);}\n");
    Put(ws_ + "/build.sh", "#!/bin/sh\nset -e\nmkdir -p out\necho built > out/artifact\n", 0755);
    Put(ws_ + "/test_math.py",
        "import unittest, tempfile, os\n"
        "class T(unittest.TestCase):\n"
        "    def test_add(self): self.assertEqual(1 + 1, 2)\n"
        "    def test_tmp(self):\n"
        "        with tempfile.NamedTemporaryFile() as f: f.write(b'x')\n"
        "    def test_home_cache(self):\n"
        "        d = os.path.expanduser('~/.cache/pytest-like'); os.makedirs(d, exist_ok=True)\n"
        "        open(os.path.join(d, 'v'), 'w').write('1')\n");
    Shell("cd " + ShellQuote(ws_) +
          " && git init -q . && git add . && git -c user.name=t -c user.email=t@t commit -qm "
          "init");
    home_.GiveTo(caller_);
    before_ = Snapshot();
  }
  void TearDown() override {
    if (IsSkipped()) return;
    EXPECT_EQ(Snapshot(), before_) << "the real home changed outside its state directory";
  }
  // The real home's files (not the workspace, not Anvil's state): names and sizes.
  std::string Snapshot() const {
    std::string out;
    FILE* p = ::popen(("cd " + ShellQuote(home_.home()) +
                       " && find . -path ./proj -prune -o -path ./.local/state -prune -o -print "
                       "| sort | xargs -d '\\n' stat -c '%n %s' 2>/dev/null")
                          .c_str(),
                      "r");
    if (p == nullptr) return out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    ::pclose(p);
    return out;
  }
  RunResult Sh(const std::string& script, const std::vector<std::string>& flags = {}) {
    RunOptions o;
    o.cwd = ws_;
    o.env = home_.Env();
    o.timeout_seconds = 120;
    return SandboxSh(ws_, script, flags, Opts(o));
  }

  LivedInHome home_;
  std::string ws_;
  std::string before_;
};

TEST_P(T3SandboxEveryday, ScriptsAndMakeBuildsAndTheirExitCodes) {
  auto r = Sh("./build.sh && cat out/artifact && make -s test && echo made");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("built"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("made"), std::string::npos) << r.out << r.err;
  EXPECT_TRUE(Exists(ws_ + "/app"));
  EXPECT_EQ(Sh("exit 7").status, 7);
  EXPECT_EQ(Sh("make -s no-such-target 2>/dev/null").status, 2);
  auto pipes = Sh("seq 1 1000 | sort -rn | head -1 | tr 0 o");
  EXPECT_EQ(pipes.out, "1ooo\n");
}

TEST_P(T3SandboxEveryday, ScriptsRunByPathSeeTheirOwnPath) {
  // Build scripts, wrappers and tools find their files from $0, BASH_SOURCE or __file__.
  Put(ws_ + "/scripts/gen.sh",
      "#!/bin/sh\nset -e\necho \"zero=$0\"\nhere=$(cd \"$(dirname \"$0\")\" && pwd)\n"
      "echo \"dir=$here\"\ncat \"$here/data.txt\"\n",
      0755);
  Put(ws_ + "/scripts/data.txt", "data-beside-the-script\n");
  Put(ws_ + "/scripts/src.bash", "#!/bin/bash\necho \"source=${BASH_SOURCE[0]}\"\n", 0755);
  // The interpreter found through PATH: env runs the pyenv shim, which runs pyenv's python3.
  Put(ws_ + "/tools/where.py",
      "#!/usr/bin/env python3\nimport os, sys\nprint('file=' + os.path.abspath(__file__))\n"
      "print('exe=' + os.path.realpath(sys.executable))\n",
      0755);
  caller_.Give(ws_);
  auto r = Sh("./scripts/gen.sh && scripts/src.bash && cd tools && ./where.py");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  for (const std::string& expected : std::vector<std::string>{
           "zero=./scripts/gen.sh\n", "dir=" + ws_ + "/scripts\n", "data-beside-the-script\n",
           "source=scripts/src.bash\n", "file=" + ws_ + "/tools/where.py\n"}) {
    EXPECT_NE(r.out.find(expected), std::string::npos) << expected << "\n" << r.out << r.err;
  }
  EXPECT_EQ(r.out.find("/dev/fd"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("/proc/self/fd"), std::string::npos) << r.out;
}

TEST_P(T3SandboxEveryday, LocalTestServerOnLoopbackButNotTheHosts) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  // A service of the host on its loopback, with a secret answer.
  const std::string secret = UniqueToken("HOST-LOOPBACK");
  Spawned host({kPython, "-c",
                "import socket,sys\n"
                "s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                "s.bind(('127.0.0.1', 0)); s.listen(8)\n"
                "open(sys.argv[1] + '.tmp','w').write(str(s.getsockname()[1]))\n"
                "import os; os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
                "while True:\n c,_=s.accept(); c.sendall(sys.argv[2].encode()); c.close()\n",
                home_.home() + "/port", secret});
  ASSERT_TRUE(WaitUntil([&] { return Exists(home_.home() + "/port"); }));
  const std::string port = ReadFile(home_.home() + "/port");
  ::unlink((home_.home() + "/port").c_str());
  // The test suite's own server on the sandbox's loopback, on the host service's port too.
  Put(ws_ + "/test_server.py",
      "import http.server, threading, urllib.request, socket, sys\n"
      "class H(http.server.BaseHTTPRequestHandler):\n"
      "    def do_GET(self):\n"
      "        self.send_response(200); self.end_headers(); self.wfile.write(b'served-locally')\n"
      "    def log_message(self, *a): pass\n"
      "for port in (0, int(sys.argv[1])):\n"
      "    srv = http.server.HTTPServer(('127.0.0.1', port), H)\n"
      "    threading.Thread(target=srv.serve_forever, daemon=True).start()\n"
      "    url = 'http://127.0.0.1:%d/' % srv.server_address[1]\n"
      "    print(urllib.request.urlopen(url, timeout=10).read().decode())\n"
      "    srv.shutdown(); srv.server_close()\n");
  caller_.Give(ws_);
  auto r = Sh("python3 test_server.py " + port +
              " && python3 -c 'import socket,sys\n"
              "s=socket.create_connection((\"127.0.0.1\", int(sys.argv[1])), timeout=5)\n"
              "print(s.recv(100))' " +
              port + " 2>&1; echo done");
  EXPECT_NE(r.out.find("served-locally\nserved-locally\n"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("done"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(r.out.find(secret), std::string::npos) << "the host's loopback was reached: " << r.out;
  // Control: unconfined, the same client reaches the host's service (the attack is a real one).
  auto control =
      Sh("python3 -c 'import socket,sys\n"
         "s=socket.create_connection((\"127.0.0.1\", int(sys.argv[1])), timeout=5)\n"
         "print(s.recv(100))' " +
             port,
         {"--policy", "danger-full-access"});
  EXPECT_NE(control.out.find(secret), std::string::npos) << control.out << control.err;
}

TEST_P(T3SandboxEveryday, CmakeBuild) {
  if (!Exists("/usr/bin/cmake")) GTEST_SKIP() << "SKIPPED: cmake is missing";
  Put(ws_ + "/cm/CMakeLists.txt",
      "cmake_minimum_required(VERSION 3.10)\nproject(p C)\nadd_executable(app ../main.c)\n");
  caller_.Give(ws_);
  auto r =
      Sh("cmake -S cm -B cm/build >/dev/null && cmake --build cm/build >/dev/null && "
         "cm/build/app");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("hello 42"), std::string::npos) << r.out << r.err;
}

TEST_P(T3SandboxEveryday, PythonTestsVirtualenvsAndPyenvShims) {
  auto tests = Sh("python3 -m unittest -q test_math 2>&1; echo rc=$?");
  EXPECT_NE(tests.out.find("rc=0"), std::string::npos) << tests.out << tests.err;
  auto venv =
      Sh("python3 -m venv --without-pip .venv && .venv/bin/python -c 'import sys; "
         "print(sys.prefix)'");
  EXPECT_EQ(venv.status, 0) << venv.out << venv.err;
  EXPECT_NE(venv.out.find(ws_ + "/.venv"), std::string::npos) << venv.out;
  auto cache = Sh("cat ~/.cache/pytest-like/v");
  EXPECT_EQ(cache.out, "1") << "a cache written under $HOME survives to the next run";
}

TEST_P(T3SandboxEveryday, NodeAndNpm) {
  if (!Exists("/usr/bin/node")) GTEST_SKIP() << "SKIPPED: node is missing";
  Put(ws_ + "/test.js",
      "const assert = require('assert'); assert.equal(2 + 2, 4); "
      "require('fs').writeFileSync(require('os').tmpdir() + '/n', 'x'); "
      "console.log('node ok');\n");
  Put(ws_ + "/package.json",
      "{\"name\":\"p\",\"version\":\"1.0.0\",\"scripts\":{\"test\":"
      "\"node test.js\"}}\n");
  caller_.Give(ws_);
  auto r = Sh("node test.js && npm test 2>&1 | tail -1");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("node ok"), std::string::npos) << r.out << r.err;
}

TEST_P(T3SandboxEveryday, UserToolsTempFilesAndGitReadCommands) {
  auto r =
      Sh("mytool x && t=$(mktemp) && echo tmp > \"$t\" && cat \"$t\" && "
         "d=$(mktemp -d) && touch \"$d/f\" && ls \"$d\" && "
         "git log --oneline | wc -l && git status --short && git diff --stat && "
         "git show --stat HEAD | head -1 && git rev-parse --show-toplevel");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  for (const char* expected : {"mytool-ran x", "tmp", "f\n", "1\n", "commit ", ws_.c_str()}) {
    EXPECT_NE(r.out.find(expected), std::string::npos) << expected << "\n" << r.out << r.err;
  }
  EXPECT_EQ(r.err.find("anvil: the sandbox refused"), std::string::npos) << r.err;
}

// A package of a monorepo as the workspace (red team s6 liv1): git run there uses the
// repository above, which the command now sees read-only, so git's read commands work and a
// write above the workspace fails loudly. Neighbours: the workspace stays writable; a
// repository at the home itself (dotfiles) shows nothing of the home.
TEST_P(T3SandboxEveryday, AWorkspaceInsideARepositorySeesTheRepositoryReadOnly) {
  const std::string pkg = ws_ + "/pkg";
  Put(pkg + "/lib.c", "int lib;\n");
  ASSERT_EQ(Shell("cd " + ShellQuote(ws_) +
                  " && git -c safe.directory=* add pkg && git -c safe.directory=* -c user.name=t "
                  "-c user.email=t@t commit -qm pkg"),
            0);
  home_.GiveTo(caller_);
  RunOptions o;
  o.cwd = pkg;
  o.env = home_.Env();
  auto r = SandboxSh(pkg,
                     "git log --oneline | wc -l && git rev-parse --show-toplevel && "
                     "head -1 ../Makefile && (echo x > ../above.txt) 2>/dev/null; echo above=$?; "
                     "echo y > here.txt && echo wrote",
                     {"--json"}, Opts(o));
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  for (const char* expected : {"2\n", "app: main.c", "above=", "wrote"}) {
    EXPECT_NE(r.out.find(expected), std::string::npos) << expected << "\n" << r.out << r.err;
  }
  EXPECT_NE(r.out.find(ws_ + "\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("above=0"), std::string::npos) << r.out;
  EXPECT_FALSE(Exists(ws_ + "/above.txt"));
  EXPECT_TRUE(Exists(pkg + "/here.txt"));
  EXPECT_NE(r.err.find("\"repository_top\""), std::string::npos) << r.err;

  // A repository at the home: the home stays the sandbox's own.
  const std::string home = home_.home();
  const std::string other = home + "/other";
  ASSERT_EQ(Shell("cd " + ShellQuote(home) +
                  " && git init -q . && mkdir -p other && "
                  "echo home-only > notes-at-home.txt"),
            0);
  home_.GiveTo(caller_);
  o.cwd = other;
  auto h = SandboxSh(other, "cat ../notes-at-home.txt; git rev-parse --show-toplevel; true", {},
                     Opts(o));
  EXPECT_EQ(h.out.find("home-only"), std::string::npos) << h.out;
  ASSERT_EQ(Shell("cd " + ShellQuote(home) + " && rm -rf .git other notes-at-home.txt"), 0);
}

// Unpacking an archive made elsewhere (sweep liv12b): GNU tar run as uid 0 restores each
// member's owner, which root's sandbox (a user namespace owning only the caller's ids) cannot
// do, so it exited 2 on every `tar xf`; it now extracts as for any user, the files the
// extracting user's. Packing the workspace works too.
TEST_P(T3SandboxEveryday, TarExtractsAnArchiveMadeElsewhereAndPacksTheWorkspace) {
  ASSERT_EQ(Shell("cd " + ShellQuote(ws_) +
                  " && tar cf foreign.tar --owner=1234 --group=1234 main.c Makefile"),
            0);
  caller_.Give(ws_);
  auto r =
      Sh("mkdir x && tar xf foreign.tar -C x && [ \"$(stat -c %u x/main.c)\" = \"$(id -u)\" ] "
         "&& echo own && tar czf back.tgz --exclude=.git . 2>/dev/null; tar tzf back.tgz | "
         "grep -c main.c");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "own\n2\n") << r.err;
  EXPECT_EQ(r.err.find("Cannot change ownership"), std::string::npos) << r.err;
  EXPECT_TRUE(Exists(ws_ + "/x/Makefile"));
}

// A cache directory the host keeps outside every root (sweep liv12b: CCACHE_DIR=/var/tmp/cc):
// `mkdir -p` stops at the first directory on the way that the view does not show. The summary
// names that host directory (the cache itself, or /var/tmp where the view shows nothing of
// /var), never its parent /var; run with that flag, the same command works.
TEST_P(T3SandboxEveryday, AWriteToAHostDirectoryTheViewHidesNamesThatDirectory) {
  const std::string dir = "/var/tmp/" + UniqueToken("anvil-liv-cache");
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  caller_.Give(dir);
  auto r = Sh("mkdir -p " + dir + "/cache");
  EXPECT_NE(r.status, 0);
  const std::string flag = "allow with --writable-root ";
  const auto at = r.err.find(flag);
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string named = r.err.substr(at + flag.size(), r.err.find('\n', at) - at - flag.size());
  EXPECT_TRUE(named == dir || named == "/var/tmp") << r.err;
  if (named == dir) {
    // Only the cache itself is opened here (/var/tmp may hold the test's home).
    auto allowed = Sh("mkdir -p " + dir + "/cache && echo made", {"--writable-root", dir});
    EXPECT_EQ(allowed.out, "made\n") << allowed.err;
    EXPECT_TRUE(Exists(dir + "/cache"));
  }
  Shell("rm -rf " + ShellQuote(dir));
}

// A submodule's checkout as the workspace (sweep liv12b): its `.git` is a file pointing at the
// superproject's `.git/modules/NAME`, so git there needs the superproject, which is shown
// read-only as for any directory in it: git's read commands work; the workspace stays
// writable; `git add` (a write to that git dir) and a write above the workspace are refused.
TEST_P(T3SandboxEveryday, ASubmodulesCheckoutAsTheWorkspaceRunsGitsReadCommands) {
  const std::string g = "git -c safe.directory=* -c user.name=t -c user.email=t@t ";
  ASSERT_EQ(
      Shell("cd " + ShellQuote(ws_) + " && mkdir subsrc && cd subsrc && git init -q . && " +
            "echo lib > lib.txt && " + g + "add lib.txt && " + g + "commit -qm lib && cd .. && " +
            g + "-c protocol.file.allow=always submodule add -q ./subsrc libs/sub " +
            ">/dev/null 2>&1 && " + g + "commit -qm sub && rm -rf subsrc"),
      0);
  const std::string sub = ws_ + "/libs/sub";
  ASSERT_TRUE(Exists(sub + "/lib.txt"));
  const std::string gitdir = ws_ + "/.git/modules/libs/sub";
  ASSERT_TRUE(Exists(gitdir + "/HEAD"));
  const std::string index_before = ReadFile(gitdir + "/index");
  home_.GiveTo(caller_);
  RunOptions o;
  o.cwd = sub;
  o.env = home_.Env();
  auto r = SandboxSh(sub,
                     "git log --oneline | wc -l && git status --short && git blame lib.txt | "
                     "wc -l && echo y > here.txt && git status --short && "
                     "(git add here.txt) 2>/dev/null; echo add=$?; "
                     "(echo x > ../above.txt) 2>/dev/null && echo above || echo not-above",
                     {"--json"}, Opts(o));
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "1\n1\n?? here.txt\nadd=128\nnot-above\n") << r.err;
  EXPECT_NE(r.err.find("the repository above the workspace"), std::string::npos) << r.err;
  EXPECT_TRUE(Exists(sub + "/here.txt"));
  EXPECT_FALSE(Exists(ws_ + "/libs/above.txt"));
  EXPECT_FALSE(Exists(gitdir + "/index.lock"));
  EXPECT_EQ(ReadFile(gitdir + "/index"), index_before);
  EXPECT_NE(r.err.find("\"repository_top\""), std::string::npos) << r.err;
  // Unconfined, the same command stages the file (the refusal above is the sandbox's).
  auto control = SandboxSh(sub, "git add here.txt && git status --short",
                           {"--policy", "danger-full-access"}, Opts(o));
  EXPECT_EQ(control.out, "A  here.txt\n") << control.err;
}

// An agent's steps are separate runs (red team s6 liv7): `pytest > /tmp/out.txt`, then `grep
// FAIL /tmp/out.txt`. The workspace's /tmp is kept between its runs, beside its sandbox home
// (--json names the host path); `--tmp private` and `--limit tmp=` give a throw-away one, and
// the host's /tmp is never written.
TEST_P(T3SandboxEveryday, TmpIsKeptBetweenTheWorkspacesRuns) {
  const std::string name = UniqueToken("anvil-kept");
  auto first = Sh("echo step1 > /tmp/" + name + " && echo wrote", {"--json"});
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_NE(first.err.find("/anvil/homes/"), std::string::npos) << first.err;
  EXPECT_FALSE(Exists("/tmp/" + name));
  auto second = Sh("cat /tmp/" + name);
  EXPECT_EQ(second.status, 0) << second.err;
  EXPECT_EQ(second.out, "step1\n");
  for (const std::vector<std::string>& flags :
       std::vector<std::vector<std::string>>{{"--tmp", "private"}, {"--limit", "tmp=64M"}}) {
    auto fresh = Sh("cat /tmp/" + name + " 2>/dev/null || echo absent", flags);
    EXPECT_EQ(fresh.out, "absent\n") << flags[0];
  }
  auto read_only =
      Sh("cat /tmp/" + name + " 2>/dev/null || echo absent", {"--policy", "read-only"});
  EXPECT_EQ(read_only.out, "absent\n");
}

// An agent changes its working directory per command: `pytest > /tmp/out.txt` at the
// repository's top, then `cat /tmp/out.txt` in a subdirectory. Every directory of one
// repository shares its sandbox home and kept /tmp (keyed by the repository's top); another
// repository keeps its own.
TEST_P(T3SandboxEveryday, TheRepositorysDirectoriesShareOneHomeAndTmp) {
  const std::string sub = ws_ + "/sub/deeper";
  Put(sub + "/f", "x\n");
  home_.GiveTo(caller_);
  const std::string name = UniqueToken("anvil-shared");
  auto top = Sh("echo step1 > /tmp/" + name + " && echo cached > ~/" + name, {"--json"});
  ASSERT_EQ(top.status, 0) << top.err;
  auto in = [&](const std::string& dir, const std::string& script) {
    RunOptions o;
    o.cwd = dir;
    o.env = home_.Env();
    return SandboxSh(dir, script, {"--json"}, Opts(o));
  };
  auto below = in(sub, "cat /tmp/" + name + " ~/" + name);
  EXPECT_EQ(below.status, 0) << below.err;
  EXPECT_EQ(below.out, "step1\ncached\n") << below.err;
  auto top_report = JsonReport(top);
  auto below_report = JsonReport(below);
  ASSERT_TRUE(top_report.is_object() && below_report.is_object());
  EXPECT_EQ(top_report["home"]["sandbox_home"], below_report["home"]["sandbox_home"]);
  EXPECT_EQ(below_report["home"]["keyed_by"], ws_);
  // Another repository: a home and /tmp of its own.
  const std::string repo2 = home_.home() + "/repo2";
  Put(repo2 + "/sub/f", "y\n");
  ASSERT_EQ(Shell("cd " + ShellQuote(repo2) + " && git init -q ."), 0);
  home_.GiveTo(caller_);
  auto other = in(repo2 + "/sub", "cat /tmp/" + name + " ~/" + name + " 2>/dev/null; echo end");
  EXPECT_EQ(other.out, "end\n") << other.err;
  auto other_report = JsonReport(other);
  ASSERT_TRUE(other_report.is_object());
  EXPECT_NE(other_report["home"]["sandbox_home"], top_report["home"]["sandbox_home"]);
  ASSERT_EQ(Shell("rm -rf " + ShellQuote(repo2)), 0);
}

// Package metadata is the system's, world-readable: dpkg's database and apt's lists are shown
// read-only, so `dpkg -s`, `dpkg -S` and `apt-cache policy` answer. Neighbours: nothing else
// of /var is shown, nothing there can be written, and what only root may read there (dpkg's
// lock, 0640) stays unreadable to root's sandbox too.
TEST_P(T3SandboxEveryday, PackageMetadataIsShownReadOnly) {
  if (!Exists("/var/lib/dpkg/status") || !Exists("/usr/bin/dpkg-query")) {
    GTEST_SKIP() << "SKIPPED: no dpkg database";
  }
  auto r =
      Sh("dpkg -s dpkg | grep -c '^Status: install ok installed'; dpkg -S /usr/bin/dpkg-query; "
         "(touch /var/lib/dpkg/anvil-probe) 2>/dev/null; echo write=$?; "
         "test -r /var/lib/dpkg/lock && echo lock-readable; ls /var/lib | tr '\\n' ' '; echo; "
         "ls /var/log 2>/dev/null | wc -l");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("1\ndpkg: /usr/bin/dpkg-query\nwrite=1\n"), std::string::npos)
      << r.out << r.err;
  EXPECT_EQ(r.out.find("lock-readable"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(Exists("/var/lib/apt/lists") ? "\napt dpkg \n0\n" : "\ndpkg \n0\n"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(Exists("/var/lib/dpkg/anvil-probe"));
  if (Exists("/usr/bin/apt-cache") && Shell("ls /var/lib/apt/lists | grep -q _Packages") == 0) {
    auto apt = Sh("apt-cache policy dpkg 2>/dev/null");
    EXPECT_NE(apt.out.find("Candidate:"), std::string::npos) << apt.out << apt.err;
    EXPECT_EQ(apt.out.find("Candidate: (none)"), std::string::npos) << apt.out;
  }
}

TEST_P(T3SandboxEveryday, SecretsStayUnreadableWhileAllThisWorks) {
  auto r =
      Sh("make -s test && cat ~/.ssh/id_ed25519 ~/.aws/secret ~/.netrc 2>/dev/null; "
         "grep -rs CRED ~ /var/tmp 2>/dev/null; true");
  EXPECT_EQ(r.status, 0) << r.err;
  for (const auto& [rel, secret] : home_.secrets()) {
    EXPECT_EQ(r.out.find(secret.second), std::string::npos) << rel;
  }
}

INSTANTIATE_TEST_SUITE_P(Callers, T3SandboxEveryday, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t3_sandbox_everyday_test
}  // namespace anvil::testing
