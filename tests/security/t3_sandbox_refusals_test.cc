// What the sandbox refused, said after the command exits (policy/refusals.h,
// linux/refusal_observer.h): a short summary on stderr only when something was refused, with the
// one-line way to allow it; silent with --quiet; the same facts in --json's `refusals`. The
// entries are facts recorded during the run: a command that merely prints "Read-only file
// system", or a write that fails for another reason, yields none.
#include <string>
#include <vector>

#include "home_fixture.h"
#include "sandbox_harness.h"

namespace anvil::testing {
namespace t3_sandbox_refusals_test {
namespace {

class T3SandboxRefusals : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    ws_ = home_.workspace();
    Shell("cd " + ShellQuote(ws_) +
          " && git init -q . && git -c user.name=t -c user.email=t@t commit -q --allow-empty "
          "-m init && echo hi > f.txt");
    home_.GiveTo(caller_);
  }
  RunResult Sh(const std::string& script, const std::vector<std::string>& flags = {}) {
    RunOptions o;
    o.cwd = ws_;
    o.env = home_.Env();
    return SandboxSh(ws_, script, flags, Opts(o));
  }
  static size_t Count(const std::string& text, const std::string& needle) {
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
      ++n;
    }
    return n;
  }

  LivedInHome home_;
  std::string ws_;
};

TEST_P(T3SandboxRefusals, GitCommitNamesWritableGit) {
  auto r = Sh("git add f.txt");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("index.lock"), std::string::npos) << r.err;  // git's own message
  EXPECT_NE(r.err.find("anvil: the sandbox refused"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("git: write .git/index.lock"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("allow with --writable-git"), std::string::npos) << r.err;

  auto quiet = Sh("git add f.txt", {"--quiet"});
  EXPECT_EQ(quiet.err.find("anvil: the sandbox refused"), std::string::npos) << quiet.err;

  auto json = JsonReport(Sh("git add f.txt", {"--json", "--quiet"}));
  ASSERT_TRUE(json.is_object());
  ASSERT_TRUE(json["refusals"].is_array());
  ASSERT_GE(json["refusals"].size(), 1u);
  EXPECT_EQ(json["refusals"][0]["kind"], "write");
  EXPECT_EQ(json["refusals"][0]["area"], "git");
  EXPECT_EQ(json["refusals"][0]["path"], ws_ + "/.git/index.lock");
  EXPECT_EQ(json["refusals"][0]["allow"], "--writable-git");
  EXPECT_EQ(json["layers"]["refusal_observer"], true);

  // The benign neighbour: with --writable-git the commit works and nothing is reported.
  auto allowed =
      Sh("git add f.txt && git -c user.name=t -c user.email=t@t commit -qm x && "
         "git log --oneline | wc -l",
         {"--writable-git"});
  EXPECT_EQ(allowed.status, 0) << allowed.err;
  EXPECT_EQ(allowed.err.find("anvil: the sandbox refused"), std::string::npos) << allowed.err;
}

TEST_P(T3SandboxRefusals, NothingRefusedMeansNoSummary) {
  auto r =
      Sh("mkdir -p build ~/.cache/x /tmp/y && echo x > build/out && cat /etc/hostname "
         ">/dev/null; ls .git >/dev/null; mkdir -p /usr/lib; cat /nonexistent; "
         "echo 'Read-only file system' >&2; exit 3");
  EXPECT_EQ(r.status, 3);
  EXPECT_EQ(r.err.find("anvil: the sandbox refused"), std::string::npos)
      << "a failing command, an existing directory and a message are not refusals: " << r.err;
  auto json = JsonReport(Sh("mkdir -p /usr/lib build; false", {"--json"}));
  ASSERT_TRUE(json.is_object());
  EXPECT_TRUE(json["refusals"].empty()) << json.dump();
}

TEST_P(T3SandboxRefusals, ACommandThatSucceededIsNotInterruptedButJsonListsTheRefusal) {
  // git status refreshes the index when it can and carries on when it cannot.
  auto r = Sh("git status --short");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find("anvil: the sandbox refused"), std::string::npos) << r.err;
  auto json = JsonReport(Sh("echo x > /usr/lib/anvil-ok 2>/dev/null; true", {"--json"}));
  ASSERT_TRUE(json.is_object());
  ASSERT_EQ(json["refusals"].size(), 1u) << json.dump();
  EXPECT_EQ(json["refusals"][0]["area"], "system");
}

TEST_P(T3SandboxRefusals, EachReadOnlyPlaceSaysHowToAllowIt) {
  auto r =
      Sh("echo x > ~/.pyenv/version; echo x > /usr/lib/anvil-test; mkdir /opt-nope; "
         "mv ~/.local/bin/mytool ~/mt; false");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("write ~/.pyenv/version"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("allow with --writable-root ~/.pyenv"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("write /usr/lib/anvil-test - system directories are read-only"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("write /opt-nope - outside what the sandbox can write"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("allow with --writable-root ~/.local/bin"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("--writable-root /\n"), std::string::npos) << r.err;
}

TEST_P(T3SandboxRefusals, ReadOnlyPolicyNamesWorkspaceWrite) {
  auto r = Sh("echo x > out.txt", {"--policy", "read-only"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("allow with --policy workspace-write"), std::string::npos) << r.err;
}

TEST_P(T3SandboxRefusals, ProxyRefusalNamesTheHostToAllow) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  // CONNECT through the proxy by hand (no DNS needed: the host is refused before resolving).
  const std::string script =
      std::string(kPython) +
      " -c 'import socket; s=socket.create_connection((\"127.0.0.1\",3128)); "
      "s.sendall(b\"CONNECT example.org:443 HTTP/1.1\\r\\nHost: example.org:443\\r\\n\\r\\n\"); "
      "print(s.recv(200).split(b\"\\r\\n\")[0].decode()); raise SystemExit(1)'";
  auto r = Sh(script, {"--network", "proxy", "--allow-host", "pypi.org"});
  EXPECT_NE(r.out.find("403"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.err.find("example.org:443 through the proxy - host not on the --allow-host list; "
                       "allow with --allow-host example.org"),
            std::string::npos)
      << r.err;
  auto json = JsonReport(Sh(script, {"--network", "proxy", "--json", "--quiet"}));
  ASSERT_TRUE(json.is_object());
  ASSERT_EQ(json["refusals"].size(), 1u) << json.dump();
  EXPECT_EQ(json["refusals"][0]["kind"], "proxy");
  EXPECT_EQ(json["refusals"][0]["target"], "example.org:443");
  EXPECT_EQ(json["refusals"][0]["allow"], "--allow-host example.org");
}

TEST_P(T3SandboxRefusals, ConnectionWithoutNetworkNamesTheProxy) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  const std::string script =
      std::string(kPython) +
      " -c 'import socket\ntry:\n s=socket.socket()\nexcept OSError as e:\n print(\"nosocket\", "
      "e.errno); raise SystemExit(0)\ntry:\n s.connect((\"192.0.2.10\",443))\nexcept OSError as "
      "e:\n print(\"refused\", e.errno); raise SystemExit(1)'";
  auto r = Sh(script);
  if (r.out.find("nosocket") != std::string::npos) {
    GTEST_SKIP() << "SKIPPED: this build refuses IP sockets outright under --network none, so "
                    "there is no connect to observe";
  }
  EXPECT_NE(r.out.find("refused"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.err.find("connect to 192.0.2.10:443 - no network (--network none); allow with "
                       "--network proxy --allow-host"),
            std::string::npos)
      << r.err;
}

TEST_P(T3SandboxRefusals, ManyRefusalsStayShort) {
  auto r = Sh("for i in $(seq 1 200); do (echo x > /usr/lib/anvil-$i) 2>/dev/null; done; false");
  const auto summary = r.err.find("anvil: the sandbox refused");
  ASSERT_NE(summary, std::string::npos) << r.err;
  EXPECT_LE(Count(r.err.substr(summary), "\n"), 4u) << r.err;
  EXPECT_NE(r.err.find("more"), std::string::npos) << r.err;
}

// A program that maps a full /dev/shm (PyTorch's DataLoader, Chromium) dies of SIGBUS with no
// message of its own: after status 135 the summary names the size and --limit shm=. Beside it: a
// command that fails otherwise, or the same under --quiet, says nothing of /dev/shm.
TEST_P(T3SandboxRefusals, ABusErrorFromAFullDevShmNamesTheShmLimit) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  const std::string fill =
      "python3 -c 'import mmap, os\n"
      "f = os.open(\"/dev/shm/x\", os.O_CREAT | os.O_RDWR)\n"
      "os.ftruncate(f, 8 << 20)\n"
      "m = mmap.mmap(f, 8 << 20)\n"
      "m[:] = b\"x\" * (8 << 20)\n'";
  auto r = Sh(fill, {"--limit", "shm=1M"});
  EXPECT_EQ(r.status, 135) << r.err;
  EXPECT_NE(r.err.find("exit status 135 is SIGBUS"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the sandbox's /dev/shm is 1M. fix: a larger one, --limit shm=SIZE"),
            std::string::npos)
      << r.err;
  r = Sh(fill, {"--limit", "shm=1M", "--quiet"});
  EXPECT_EQ(r.status, 135);
  EXPECT_EQ(r.err.find("SIGBUS"), std::string::npos) << r.err;
  r = Sh("exit 1", {"--limit", "shm=1M"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err.find("/dev/shm"), std::string::npos) << r.err;
}

// A cache the host keeps in a directory the view does not show (CCACHE_DIR=/var/tmp/cc with a
// workspace in the home; here /srv/cc): its `mkdir -p` is refused at /srv, and the fix names the
// host's /srv/cc (what the process's environment or arguments name beneath /srv), which is
// enough, not all of /srv. Beside it: a directory the host does not have yet names /srv, the
// narrowest that exists; the fix named works.
TEST_P(T3SandboxRefusals, AWriteUnderAHiddenHostDirectoryNamesTheNarrowestExistingOne) {
  if (!Exists("/srv")) GTEST_SKIP() << "SKIPPED: no /srv on this host";
  TempDir cache("anvil-cc", "/srv");
  caller_.Give(cache.path());
  const std::string make = "mkdir -p \"$CCACHE_DIR/0/1\"";
  auto r = Sh(make, {"--setenv", "CCACHE_DIR=" + cache.path()});
  EXPECT_NE(r.status, 0);
  if (r.err.find("the host's /srv is not shown") == std::string::npos) {
    GTEST_SKIP() << "SKIPPED: the view shows /srv here: " << r.err;
  }
  EXPECT_NE(r.err.find("allow with --writable-root " + cache.path() + "\n"), std::string::npos)
      << r.err;
  // Named in its arguments only (mkdir -p writes NULs into its own argument as it goes).
  r = Sh("mkdir -p " + ShellQuote(cache.path() + "/2/3"));
  EXPECT_NE(r.err.find("allow with --writable-root " + cache.path() + "\n"), std::string::npos)
      << r.err;
  r = Sh(make, {"--setenv", "CCACHE_DIR=" + cache.path() + "-not-on-the-host"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("allow with --writable-root /srv\n"), std::string::npos) << r.err;
  r = Sh(make, {"--setenv", "CCACHE_DIR=" + cache.path(), "--writable-root", cache.path()});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(Exists(cache.path() + "/0/1"));
}

INSTANTIATE_TEST_SUITE_P(Callers, T3SandboxRefusals, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t3_sandbox_refusals_test
}  // namespace anvil::testing
