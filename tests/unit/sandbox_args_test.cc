// `anvil sandbox`'s and anvil-exec-runner's arguments before anything is resolved
// (cli/sandbox_spec.h): parsing looks at no path, and each combination the validation refuses,
// in its exact words; then what the validation settles and the command's environment.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/sandbox_spec.h"

namespace anvil::cli {
namespace sandbox_args_test {
namespace {

using Args = std::vector<std::string>;
constexpr auto kSandbox = SandboxFrontEnd::kAnvilSandbox;
constexpr auto kRunner = SandboxFrontEnd::kExecRunner;

// Descriptors 7 and 8 are "open"; nothing else is (and nothing is asked of the process).
bool FakeOpen(int fd) { return fd == 7 || fd == 8; }

Result<SandboxArgs> Parse(const Args& args, SandboxFrontEnd front_end = kRunner) {
  return ParseSandboxFlags(args, front_end, FakeOpen);
}

TEST(SandboxArgs, ParsingLooksAtNoPath) {
  auto a = Parse({"--writable-root", "/no/such/dir", "--cwd", "/no/such/ws", "--workdir", "sub",
                  "--read-only-subpath", "rel", "--", "no-such-program", "x"},
                 kSandbox);
  ASSERT_TRUE(a) << a.error().ToString();
  EXPECT_EQ(a->inv.spec.policy.extra_writable_roots, Args{"/no/such/dir"});
  EXPECT_EQ(a->inv.spec.policy.extra_read_only_subpaths, Args{"rel"});
  EXPECT_EQ(a->cwd, "/no/such/ws");
  EXPECT_EQ(a->workdir, "sub");
  EXPECT_EQ(a->command, (Args{"no-such-program", "x"}));
  auto r = Parse({"--readable-root", "/no/such/root", "--", "true"}, kSandbox);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->config_flags.readable_roots, Args{"/no/such/root"});
}

TEST(SandboxArgs, TheTmpfsSizes) {
  // Unset: /tmp's default and DevShmSize's rule for /dev/shm (linux/memory_cgroup.h).
  auto a = Parse({"--", "true"}, kSandbox);
  ASSERT_TRUE(a) << a.error().ToString();
  EXPECT_FALSE(a->inv.spec.limits.shm_size);
  EXPECT_FALSE(a->inv.spec.limits.tmp_size_set);
  // Each its own: a small /tmp does not shrink /dev/shm, nor the other way round.
  a = Parse({"--limit", "shm=2G", "--limit", "tmp=16M", "--", "true"}, kSandbox);
  ASSERT_TRUE(a) << a.error().ToString();
  EXPECT_EQ(a->inv.spec.limits.shm_size, std::optional<uint64_t>(2ULL << 30));
  EXPECT_EQ(a->inv.spec.limits.tmp_size, 16ULL << 20);
  a = Parse({"--limit", "shm=1", "--", "true"}, kRunner);
  ASSERT_TRUE(a) << a.error().ToString();
  EXPECT_EQ(a->inv.spec.limits.shm_size, std::optional<uint64_t>(1));
}

TEST(SandboxArgs, DescriptorFlagsAskOnlyTheProbe) {
  auto a = Parse({"--report-fd", "7", "--exec-fd", "8", "--", "true"});
  ASSERT_TRUE(a) << a.error().ToString();
  EXPECT_EQ(a->inv.report_fd, 7);
  EXPECT_TRUE(a->inv.json);
  EXPECT_EQ(a->exec_fd, 8);
  auto c = Parse({"--call-fd", "8", "--policy", "read-only"});
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->call_fd, 8);
}

// Each value is checked on its own, in words that name the flag.
TEST(SandboxArgs, ABadValueIsRefusedWhileParsing) {
  struct Row {
    SandboxFrontEnd front_end;
    Args args;
    const char* message;
  };
  const Row rows[] = {
      {kRunner,
       {"--report-fd", "9", "--", "true"},
       "--report-fd expects an open descriptor number >= 3, got 9"},
      {kRunner, {"--call-fd", "3"}, "--call-fd expects an open descriptor number >= 3, got 3"},
      {kSandbox,
       {"--readable-root", "rel", "--", "true"},
       "--readable-root rel: no such absolute path"},
      {kSandbox, {"--readable-root=", "--", "true"}, "--readable-root : no such absolute path"},
      {kSandbox,
       {"--workdir", "", "--", "true"},
       "--workdir: empty path (fix: a directory inside the workspace)"},
      {kSandbox, {"--setenv", "=x", "--", "true"}, "--setenv expects NAME=VALUE, got =x"},
      {kSandbox,
       {"--limit", "mem=0", "--", "true"},
       "--limit mem: 0 is no memory at all (fix: a size, or unlimited)"},
      {kSandbox,
       {"--limit", "x=1", "--", "true"},
       "--limit: unknown limit 'x' (nproc, nofile, as, data, fsize, cpu, tmp, shm, mem)"},
      {kSandbox,
       {"--limit", "shm=0", "--", "true"},
       "--limit shm: 0 would leave the tmpfs unbounded (fix: a size)"},
      {kSandbox,
       {"--limit", "tmp=0", "--", "true"},
       "--limit tmp: 0 would leave the tmpfs unbounded (fix: a size)"},
      {kSandbox,
       {"--timeout", "-1", "--", "true"},
       "--timeout expects a positive number of seconds, got -1"},
      {kSandbox, {"--json", "--help"}, "--help goes alone (see anvil sandbox --help)"},
  };
  for (const Row& row : rows) {
    auto r = Parse(row.args, row.front_end);
    ASSERT_FALSE(r) << row.args[0];
    EXPECT_EQ(r.error().code, "invalid");
    EXPECT_EQ(r.error().message, row.message);
  }
}

// Where the command comes from: CMD, --exec-fd, or the warm call (--call-fd).
TEST(SandboxArgs, TheCommandSourceCombinations) {
  struct Row {
    Args args;
    const char* error;  // "" when accepted
  };
  const Row rows[] = {
      {{"--", "true"}, ""},
      {{"--exec-fd", "7", "--", "true"}, ""},
      {{"--policy", "read-only", "--call-fd", "7"}, ""},
      {{}, "no command given (usage: ... -- CMD [ARGS...])"},
      {{"--exec-fd", "7"}, "no command given (usage: ... -- CMD [ARGS...])"},
      {{"--runtime-from-call", "--", "true"}, "--runtime-from-call needs --call-fd"},
      {{"--policy", "read-only", "--call-fd", "7", "--", "true"},
       "--call-fd takes the command, --exec-fd and the readable paths from the call"},
      {{"--policy", "read-only", "--call-fd", "7", "--exec-fd", "8"},
       "--call-fd takes the command, --exec-fd and the readable paths from the call"},
      {{"--policy", "read-only", "--call-fd", "7", "--readable-path", "src"},
       "--call-fd takes the command, --exec-fd and the readable paths from the call"},
      {{"--policy", "read-only", "--call-fd", "7", "--no-workspace-read"},
       "--call-fd takes the command, --exec-fd and the readable paths from the call"},
      {{"--call-fd", "7"}, "--call-fd needs --policy read-only --read-access restricted"},
      {{"--policy", "read-only", "--read-access", "full", "--call-fd", "7"},
       "--call-fd needs --policy read-only --read-access restricted"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(::testing::PrintToString(row.args));
    auto a = Parse(row.args);
    ASSERT_TRUE(a) << a.error().ToString();
    auto s = ValidateCommandSource(*a);
    if (*row.error == '\0') {
      EXPECT_TRUE(s) << s.error().ToString();
      continue;
    }
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, "invalid");
    EXPECT_EQ(s.error().message, row.error);
  }
  // The warm call names the readable paths: the list starts empty, not absent.
  auto warm = Parse({"--policy", "read-only", "--call-fd", "7"});
  ASSERT_TRUE(warm && ValidateCommandSource(*warm));
  ASSERT_TRUE(warm->inv.spec.policy.workspace_read_subpaths.has_value());
  EXPECT_TRUE(warm->inv.spec.policy.workspace_read_subpaths->empty());
}

// The flags parsed, the workspace set (what the resolution does before this step).
Result<SandboxArgs> Validated(const Args& args, SandboxFrontEnd front_end = kRunner) {
  auto a = Parse(args, front_end);
  if (!a) return a;
  if (auto s = ValidateCommandSource(*a); !s) return tl::unexpected(s.error());
  a->inv.spec.policy.workspace = "/w";
  if (auto s = ValidatePolicyCombination(*a); !s) return tl::unexpected(s.error());
  return a;
}

TEST(SandboxArgs, ThePolicyCombinations) {
  struct Row {
    SandboxFrontEnd front_end;
    Args args;
    const char* error;  // "" when accepted
  };
  const char* kNeedsProxy = "--allow-host and the --unsafe-test-* options need --network proxy";
  const Row rows[] = {
      {kSandbox, {"--", "true"}, ""},
      {kRunner, {"--policy", "read-only", "--readable-path", "src", "--", "true"}, ""},
      {kRunner,
       {"--readable-path", "src", "--", "true"},
       "--readable-path/--no-workspace-read need --policy read-only"},
      {kRunner,
       {"--policy", "danger-full-access", "--no-workspace-read", "--", "true"},
       "--readable-path/--no-workspace-read need --policy read-only"},
      {kSandbox, {"--read-only-subpath=", "--", "true"}, "--read-only-subpath: empty path"},
      {kSandbox, {"--allow-host", "example.com", "--", "true"}, kNeedsProxy},
      {kSandbox, {"--network", "full", "--allow-host", "example.com", "--", "true"}, kNeedsProxy},
      {kSandbox, {"--unsafe-test-allow-address", "127.0.0.1", "--", "true"}, kNeedsProxy},
      {kSandbox, {"--unsafe-test-resolver", "127.0.0.1:53", "--", "true"}, kNeedsProxy},
      {kSandbox, {"--unsafe-test-ca", "/w/ca.pem", "--", "true"}, kNeedsProxy},
      {kSandbox, {"--network", "proxy", "--allow-host", "example.com", "--", "true"}, ""},
      {kSandbox, {"--network", "proxy", "--policy", "read-only", "--", "true"}, ""},
      {kSandbox,
       {"--network", "proxy", "--policy", "danger-full-access", "--", "true"},
       "--network proxy needs --policy read-only or workspace-write"},
      {kSandbox,
       {"--network", "proxy", "--policy", "external-sandbox", "--", "true"},
       "--network proxy needs --policy read-only or workspace-write"},
      {kSandbox,
       {"--policy", "danger-full-access", "--writable-root", "/x", "--", "true"},
       "--writable-root/--read-only-subpath have no effect with danger-full-access"},
      {kSandbox,
       {"--policy", "external-sandbox", "--read-only-subpath", "x", "--", "true"},
       "--writable-root/--read-only-subpath have no effect with external-sandbox"},
      {kSandbox, {"--policy", "read-only", "--writable-root", "/x", "--", "true"}, ""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(::testing::PrintToString(row.args));
    auto a = Validated(row.args, row.front_end);
    if (*row.error == '\0') {
      EXPECT_TRUE(a) << a.error().ToString();
      continue;
    }
    ASSERT_FALSE(a);
    EXPECT_EQ(a.error().code, "invalid");
    EXPECT_EQ(a.error().message, row.error);
  }
}

TEST(SandboxArgs, WhatTheValidationSettles) {
  // Relative read-only subpaths are the workspace's.
  auto sub = Validated({"--read-only-subpath", "gen", "--read-only-subpath", "/abs", "--", "t"});
  ASSERT_TRUE(sub) << sub.error().ToString();
  EXPECT_EQ(sub->inv.spec.policy.extra_read_only_subpaths, (Args{"/w/gen", "/abs"}));
  // "." among the readable paths is the whole workspace.
  auto dot = Validated(
      {"--policy", "read-only", "--readable-path", "src", "--readable-path", ".", "--", "t"});
  ASSERT_TRUE(dot) << dot.error().ToString();
  EXPECT_FALSE(dot->inv.spec.policy.workspace_read_subpaths.has_value());
  auto some = Validated({"--policy", "read-only", "--readable-path", "src", "--", "t"});
  ASSERT_TRUE(some && some->inv.spec.policy.workspace_read_subpaths);
  EXPECT_EQ(*some->inv.spec.policy.workspace_read_subpaths, Args{"src"});
  // danger-full-access has the full network unless --network says otherwise.
  auto full = Validated({"--policy", "danger-full-access", "--", "t"});
  ASSERT_TRUE(full);
  EXPECT_EQ(full->inv.spec.policy.network, NetworkMode::kFull);
  auto none = Validated({"--policy", "danger-full-access", "--network", "none", "--", "t"});
  ASSERT_TRUE(none);
  EXPECT_EQ(none->inv.spec.policy.network, NetworkMode::kNone);
}

bool Has(const Args& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

bool HasName(const Args& env, const std::string& name) {
  return std::any_of(env.begin(), env.end(),
                     [&](const std::string& e) { return e.rfind(name + "=", 0) == 0; });
}

// Attack: a caller's ZDOTDIR, BASH_ENV, ENV or XDG_CONFIG_HOME naming a place of the home
// leads a shell to start-up files of the sandbox home that an earlier command wrote (INPUTRC:
// readline's key bindings, which can type a command). Under a confining policy zsh reads $HOME
// (Anvil's files), BASH_ENV, ENV and INPUTRC are gone, and fish's
// XDG directories are the home's usual ones; a --setenv stands; unconfined, nothing changes.
TEST(SandboxArgs, ShellStartupVariablesLeadOnlyToAnvilsFiles) {
  const Args caller = {"PATH=/usr/bin:/bin",
                       "HOME=/home/u",
                       "ZDOTDIR=/home/u/.config/zsh",
                       "BASH_ENV=/home/u/.bash_env",
                       "ENV=/home/u/.shinit",
                       "XDG_CONFIG_HOME=/home/u/xdg",
                       "INPUTRC=/home/u/.config/readline/inputrc",
                       "XDG_DATA_HOME=/home/u/.local/share"};
  auto plain = Validated({"--", "t"});
  ASSERT_TRUE(plain);
  Args env = SandboxEnvironment(*plain, caller, "");
  EXPECT_TRUE(Has(env, "ZDOTDIR=/home/u"));
  EXPECT_FALSE(HasName(env, "BASH_ENV"));
  EXPECT_FALSE(HasName(env, "ENV"));
  EXPECT_FALSE(HasName(env, "INPUTRC"));  // readline reads Anvil's ~/.inputrc
  EXPECT_TRUE(Has(env, "XDG_CONFIG_HOME=/home/u/.config"));
  EXPECT_FALSE(Has(env, "XDG_CONFIG_HOME=/home/u/xdg"));
  // Benign: the usual directory stays as it is, one outside the home too.
  EXPECT_TRUE(Has(env, "XDG_DATA_HOME=/home/u/.local/share"));
  Args outside = caller;
  outside.push_back("XDG_CACHE_HOME=/srv/cache");
  outside[5] = "XDG_CONFIG_HOME=/etc/xdg-u";
  EXPECT_TRUE(Has(SandboxEnvironment(*plain, outside, ""), "XDG_CONFIG_HOME=/etc/xdg-u"));
  // The caller's explicit choice stands.
  auto named = Validated({"--setenv", "BASH_ENV=/w/env.sh", "--setenv", "ZDOTDIR=/w/z", "--", "t"});
  ASSERT_TRUE(named);
  env = SandboxEnvironment(*named, caller, "");
  EXPECT_TRUE(Has(env, "BASH_ENV=/w/env.sh"));
  EXPECT_TRUE(Has(env, "ZDOTDIR=/w/z"));
  // Unconfined: the real home, nothing to own.
  auto danger = Validated({"--policy", "danger-full-access", "--", "t"});
  ASSERT_TRUE(danger);
  env = SandboxEnvironment(*danger, caller, "");
  EXPECT_TRUE(Has(env, "BASH_ENV=/home/u/.bash_env"));
  EXPECT_TRUE(Has(env, "ZDOTDIR=/home/u/.config/zsh"));
}

// Root's confined command is uid 0 of a user namespace that owns only the caller's ids: GNU
// tar is told not to restore an archive's owners (it would exit 2 on every `tar xf`). Before the
// caller's own TAR_OPTIONS; a --setenv stands; not for other callers, nor unconfined, nor with
// --clear-env.
TEST(SandboxArgs, RootsConfinedTarKeepsTheExtractingOwner) {
  const Args caller = {"PATH=/usr/bin:/bin", "HOME=/root"};
  auto plain = Validated({"--", "t"});
  ASSERT_TRUE(plain);
  EXPECT_TRUE(Has(SandboxEnvironment(*plain, caller, "", true), "TAR_OPTIONS=--no-same-owner"));
  EXPECT_FALSE(HasName(SandboxEnvironment(*plain, caller, "", false), "TAR_OPTIONS"));
  Args with_own = caller;
  with_own.push_back("TAR_OPTIONS=--same-owner -v");
  Args env = SandboxEnvironment(*plain, with_own, "", true);
  EXPECT_TRUE(Has(env, "TAR_OPTIONS=--no-same-owner --same-owner -v"));
  EXPECT_EQ(std::count_if(env.begin(), env.end(),
                          [](const std::string& e) { return e.rfind("TAR_OPTIONS=", 0) == 0; }),
            1);
  auto named = Validated({"--setenv", "TAR_OPTIONS=--same-owner", "--", "t"});
  ASSERT_TRUE(named);
  EXPECT_TRUE(Has(SandboxEnvironment(*named, caller, "", true), "TAR_OPTIONS=--same-owner"));
  auto danger = Validated({"--policy", "danger-full-access", "--", "t"});
  ASSERT_TRUE(danger);
  EXPECT_FALSE(HasName(SandboxEnvironment(*danger, caller, "", true), "TAR_OPTIONS"));
  auto read_only = Validated({"--policy", "read-only", "--", "t"});
  ASSERT_TRUE(read_only);
  EXPECT_TRUE(Has(SandboxEnvironment(*read_only, caller, "", true), "TAR_OPTIONS=--no-same-owner"));
  auto cleared = Validated({"--clear-env", "--", "t"});
  ASSERT_TRUE(cleared);
  EXPECT_FALSE(HasName(SandboxEnvironment(*cleared, caller, "", true), "TAR_OPTIONS"));
}

TEST(SandboxArgs, TheCommandsEnvironment) {
  const Args caller = {"PATH=/usr/bin:/bin",          "HOME=/home/u",      "TMPDIR=/tmp/u",
                       "HTTP_PROXY=http://corp:8080", "NO_PROXY=internal", "SSL_CERT_FILE=/c"};
  auto plain = Validated({"--", "t"});
  ASSERT_TRUE(plain);
  Args env = SandboxEnvironment(*plain, caller, "");
  EXPECT_TRUE(Has(env, "ANVIL_SANDBOX=workspace-write"));
  EXPECT_TRUE(Has(env, "PATH=/usr/bin:/bin"));
  EXPECT_FALSE(HasName(env, "TMPDIR")) << "/tmp inside is the sandbox's own";
  EXPECT_TRUE(Has(env, "SSL_CERT_FILE=/c"));

  auto danger = Validated({"--policy", "danger-full-access", "--", "t"});
  ASSERT_TRUE(danger);
  EXPECT_TRUE(Has(SandboxEnvironment(*danger, caller, ""), "TMPDIR=/tmp/u"));

  auto proxied = Validated({"--network", "proxy", "--unsafe-test-ca", "/w/ca.pem", "--", "t"});
  ASSERT_TRUE(proxied) << proxied.error().ToString();
  env = SandboxEnvironment(*proxied, caller, "/w/ca.pem");
  for (const char* v :
       {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}) {
    EXPECT_TRUE(Has(env, std::string(v) + "=http://127.0.0.1:3128")) << v;
  }
  EXPECT_FALSE(Has(env, "HTTP_PROXY=http://corp:8080"));
  EXPECT_FALSE(HasName(env, "NO_PROXY")) << "nothing may be exempted from the proxy";
  EXPECT_TRUE(Has(env, "SSL_CERT_FILE=/w/ca.pem"));
  EXPECT_FALSE(Has(env, "SSL_CERT_FILE=/c"));
  EXPECT_TRUE(Has(env, "GIT_SSL_CAINFO=/w/ca.pem"));

  auto cleared = Validated({"--clear-env", "--setenv", "A=1", "--", "t"});
  ASSERT_TRUE(cleared);
  env = SandboxEnvironment(*cleared, caller, "");
  EXPECT_FALSE(HasName(env, "PATH"));
  EXPECT_FALSE(HasName(env, "HOME"));
  EXPECT_TRUE(Has(env, "A=1"));

  // --minimal-env: Anvil's fixed environment, never the caller's (--clear-env is moot).
  auto minimal = Validated({"--minimal-env", "--clear-env", "--", "t"});
  ASSERT_TRUE(minimal);
  env = SandboxEnvironment(*minimal, caller, "");
  EXPECT_FALSE(Has(env, "HOME=/home/u"));
  EXPECT_FALSE(Has(env, "HTTP_PROXY=http://corp:8080"));
  EXPECT_TRUE(HasName(env, "PATH"));
}

}  // namespace
}  // namespace sandbox_args_test
}  // namespace anvil::cli
