// The helper executables' flag tables (common/flag_set.h): anvil-gateway's, anvil-proxy's and
// anvil-exec-runner's. Each flag sets its option, the others keep their defaults, a bad value is
// refused in words that name the flag, and --help lists the table.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/sandbox_command.h"
#include "common/flag_set.h"
#include "gateway/gateway_flags.h"
#include "net/proxy_flags.h"

namespace anvil {
namespace front_end_flags_test {
namespace {

// Whether --help has a row for `flag` (its help on the same line or the next).
bool Lists(const std::string& help, const std::string& flag) {
  const std::string row = "\n  " + flag;
  for (size_t at = help.find(row); at != std::string::npos; at = help.find(row, at + 1)) {
    const size_t end = at + row.size();
    if (end < help.size() && (help[end] == ' ' || help[end] == '\n')) return true;
  }
  return false;
}

using Args = std::vector<std::string>;

TEST(GatewayFlags, EachFlagSetsItsOptionAndTheOthersKeepTheirDefaults) {
  gateway::GatewayOptions o;
  const CommandSpec spec = gateway::GatewayFlags(o);
  auto r = ParseFlags(spec, {"--workspace",
                             "/w",
                             "--control-fd",
                             "3",
                             "--runtime-dir",
                             "/r",
                             "--session",
                             "s",
                             "--audit-log",
                             "/a",
                             "--pending-writes-fd",
                             "4",
                             "--no-symlinks",
                             "--allow-hardlinked-reads",
                             "--max-frame-bytes",
                             "64K",
                             "--max-read-bytes",
                             "1M",
                             "--max-write-bytes",
                             "2097152",
                             "--max-connections",
                             "9",
                             "--max-inflight",
                             "3",
                             "--max-queued",
                             "7",
                             "--requests-per-second",
                             "100",
                             "--bytes-per-second",
                             "1G",
                             "--workers",
                             "5",
                             "--max-rename-entries",
                             "10",
                             "--hello-timeout-ms",
                             "300",
                             "--no-harden",
                             "--exec-runner",
                             "/x/runner",
                             "--exec-timeout",
                             "0.5",
                             "--exec-max-stdout",
                             "4096",
                             "--exec-max-stderr",
                             "1k",
                             "--exec-max-stdin",
                             "2k",
                             "--exec-max-processes",
                             "8",
                             "--exec-max-memory",
                             "128M",
                             "--exec-concurrency",
                             "2",
                             "--net-max-body-bytes",
                             "1M",
                             "--net-max-header-bytes",
                             "8K",
                             "--net-connect-timeout-ms",
                             "100",
                             "--net-timeout-ms",
                             "200",
                             "--net-low-speed-time",
                             "3",
                             "--net-max-fetches-per-plugin",
                             "1",
                             "--net-max-fetches",
                             "2",
                             "--net-dns-timeout-ms",
                             "50",
                             "--unsafe-test-resolver",
                             "127.0.0.1:5353",
                             "--unsafe-test-allow-address",
                             "127.0.0.1",
                             "--unsafe-test-allow-address",
                             "127.0.0.2:8443",
                             "--unsafe-test-ca",
                             "/ca.pem"});
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_FALSE(r->help);
  EXPECT_EQ(o.workspace, "/w");
  EXPECT_EQ(o.control_fd, 3);
  EXPECT_EQ(o.runtime_dir, "/r");
  EXPECT_EQ(o.session_id, "s");
  EXPECT_EQ(o.audit_log, "/a");
  EXPECT_EQ(o.pending_writes_fd, 4);
  EXPECT_TRUE(o.no_symlinks);
  EXPECT_TRUE(o.allow_hardlinked_reads);
  EXPECT_FALSE(o.harden);
  EXPECT_EQ(o.limits.max_frame_bytes, 64u << 10);
  EXPECT_EQ(o.limits.max_read_bytes, 1u << 20);
  EXPECT_EQ(o.limits.max_write_bytes, 2u << 20);
  EXPECT_EQ(o.limits.max_connections, 9u);
  EXPECT_EQ(o.limits.max_inflight_per_connection, 3u);
  EXPECT_EQ(o.limits.max_queued_jobs, 7u);
  EXPECT_EQ(o.limits.plugin_requests_per_second, 100u);
  EXPECT_EQ(o.limits.plugin_bytes_per_second, 1u << 30);
  EXPECT_EQ(o.limits.worker_threads, 5u);
  EXPECT_EQ(o.limits.max_rename_entries, 10u);
  EXPECT_EQ(o.limits.hello_timeout_ms, 300u);
  EXPECT_EQ(o.exec_runner, "/x/runner");
  EXPECT_EQ(o.exec_limits.timeout, std::chrono::milliseconds(500));
  EXPECT_EQ(o.exec_limits.max_stdout_bytes, 4096u);
  EXPECT_EQ(o.exec_limits.max_stderr_bytes, 1024u);
  EXPECT_EQ(o.exec_limits.max_stdin_bytes, 2048u);
  EXPECT_EQ(o.exec_limits.max_processes, 8u);
  EXPECT_EQ(o.exec_limits.max_memory_bytes, 128u << 20);
  EXPECT_EQ(o.exec_limits.max_concurrent, 2u);
  EXPECT_EQ(o.net.limits.max_body_bytes, 1u << 20);
  EXPECT_EQ(o.net.limits.max_header_bytes, 8u << 10);
  EXPECT_EQ(o.net.limits.connect_timeout, std::chrono::milliseconds(100));
  EXPECT_EQ(o.net.limits.total_timeout, std::chrono::milliseconds(200));
  EXPECT_EQ(o.net.limits.low_speed_time, std::chrono::seconds(3));
  EXPECT_EQ(o.net.max_fetches_per_plugin, 1u);
  EXPECT_EQ(o.net.max_fetches_per_session, 2u);
  EXPECT_EQ(o.net.dns_deadline, std::chrono::milliseconds(50));
  ASSERT_TRUE(o.net.unsafe_test_resolver);
  EXPECT_EQ(o.net.unsafe_test_allow_addresses.size(), 2u);
  EXPECT_EQ(o.net.unsafe_test_ca_file, "/ca.pem");

  // Nothing given: the defaults stand.
  gateway::GatewayOptions d;
  const gateway::GatewayOptions untouched;
  ASSERT_TRUE(ParseFlags(gateway::GatewayFlags(d), {}));
  EXPECT_EQ(d.control_fd, -1);
  EXPECT_EQ(d.pending_writes_fd, -1);
  EXPECT_TRUE(d.harden);
  EXPECT_EQ(d.limits.max_frame_bytes, untouched.limits.max_frame_bytes);
  EXPECT_EQ(d.exec_limits.timeout, untouched.exec_limits.timeout);
  EXPECT_EQ(d.net.dns_deadline, untouched.net.dns_deadline);
}

// The runner found beside the gateway is kept unless a flag says otherwise; the last of
// --exec-runner and --no-exec decides.
TEST(GatewayFlags, ExecRunnerAndNoExecInOrder) {
  for (const auto& [args, runner] :
       std::vector<std::pair<Args, std::string>>{{{}, "/found"},
                                                 {{"--no-exec"}, ""},
                                                 {{"--exec-runner", "/x", "--no-exec"}, ""},
                                                 {{"--no-exec", "--exec-runner", "/x"}, "/x"}}) {
    gateway::GatewayOptions o;
    o.exec_runner = "/found";
    o.exec_unavailable = "";
    ASSERT_TRUE(ParseFlags(gateway::GatewayFlags(o), args));
    EXPECT_EQ(o.exec_runner, runner);
  }
  gateway::GatewayOptions o;
  o.exec_unavailable = "not found";
  ASSERT_TRUE(ParseFlags(gateway::GatewayFlags(o), {"--exec-runner", "/x"}));
  EXPECT_EQ(o.exec_unavailable, "");
}

TEST(GatewayFlags, ABadValueIsRefusedInWordsThatNameTheFlag) {
  struct Row {
    Args args;
    const char* message;
  };
  const Row rows[] = {
      {{"--control-fd"}, "--control-fd needs a value"},
      {{"--workspace"}, "--workspace needs a value"},
      {{"--control-fd", "-1"}, "--control-fd expects a descriptor number, got -1"},
      {{"--control-fd", "2147483648"}, "--control-fd expects a descriptor number, got 2147483648"},
      {{"--max-connections", "4294967296"},
       "--max-connections expects a number up to 4294967295, got 4294967296"},
      {{"--max-read-bytes", "8 M"}, "--max-read-bytes expects a number of bytes, got 8 M"},
      {{"--max-frame-bytes", "4G"},
       "--max-frame-bytes expects a number of bytes up to 4294967295, got 4G"},
      {{"--hello-timeout-ms", "0"},
       "--hello-timeout-ms expects a positive number up to 4294967295, got 0"},
      {{"--exec-timeout", "0"},
       "--exec-timeout expects a positive number of seconds, at most 86400, got 0"},
      {{"--exec-timeout", "86401"},
       "--exec-timeout expects a positive number of seconds, at most 86400, got 86401"},
      {{"--exec-max-processes", "0"}, "--exec-max-processes expects a positive number, got 0"},
      {{"--exec-max-memory", "1048575"},
       "--exec-max-memory expects a number of bytes, at least 1M, got 1048575"},
      {{"--exec-concurrency", "0"},
       "--exec-concurrency expects a positive number up to 4294967295, got 0"},
      {{"--exec-runner", ""}, "--exec-runner needs a path"},
      {{"--net-max-body-bytes", "-1"},
       "--net-max-body-bytes expects a positive number of bytes up to 1099511627776, got -1"},
      {{"--net-timeout-ms", "1099511627777"},
       "--net-timeout-ms expects a positive number up to 1099511627776, got 1099511627777"},
      {{"--net-max-fetches", "0"},
       "--net-max-fetches expects a positive number up to 4294967295, got 0"},
      {{"--unsafe-test-ca", "relative.pem"}, "--unsafe-test-ca needs an absolute path"},
      {{"--unsafe-test-resolver", "127.0.0.1"},
       "--unsafe-test-resolver needs ADDR:PORT: 127.0.0.1"},
      {{"--workspce", "/w"},
       "unknown option --workspce (see anvil-gateway --help); did you mean --workspace?"},
      {{"--unsafe-test-exec-fail-layer", "landlock"},
       "unknown option --unsafe-test-exec-fail-layer (see anvil-gateway --help)"},
  };
  for (const Row& row : rows) {
    gateway::GatewayOptions o;
    auto r = ParseFlags(gateway::GatewayFlags(o), row.args);
    ASSERT_FALSE(r) << row.args[0];
    EXPECT_EQ(r.error().code, "invalid") << row.args[0];
    EXPECT_EQ(r.error().message, row.message);
  }
}

TEST(GatewayFlags, HelpListsEveryFlagInItsGroup) {
  gateway::GatewayOptions o;
  const CommandSpec spec = gateway::GatewayFlags(o);
  const std::string help = RenderHelp(spec);
  EXPECT_EQ(help.rfind("usage: anvil-gateway --workspace DIR --control-fd N [options]\n", 0), 0u);
  for (const Flag& f : spec.flags) {
    EXPECT_TRUE(Lists(help, f.name)) << f.name;
  }
  const size_t exec = help.find("\nsys.exec"), net = help.find("\nsys.net.fetch:\n"),
               test = help.find("\nTEST ONLY");
  ASSERT_NE(exec, std::string::npos);
  ASSERT_NE(net, std::string::npos);
  ASSERT_NE(test, std::string::npos);
  EXPECT_LT(help.find("--no-harden"), exec);
  EXPECT_LT(exec, help.find("--exec-max-memory"));
  EXPECT_LT(help.find("--exec-max-memory"), net);
  EXPECT_LT(net, help.find("--net-dns-timeout-ms"));
  EXPECT_LT(help.find("--net-dns-timeout-ms"), test);
  EXPECT_LT(test, help.find("--unsafe-test-ca"));
}

TEST(ProxyFlags, EachFlagSetsItsOptionAndBadValuesAreRefused) {
  ProxyOptions o;
  const CommandSpec spec = ProxyFlags(o);
  auto r = ParseFlags(
      spec, {"--channel-fd", "3", "--status-fd", "4", "--allow-host", "a.test", "--allow-host",
             "b.test:8443", "--audit-log", "/l", "--unsafe-test-allow-address", "127.0.0.1",
             "--unsafe-test-resolver", "127.0.0.1:53"});
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(o.channel_fd, 3);
  EXPECT_EQ(o.status_fd, 4);
  EXPECT_EQ(o.allow_hosts, (Args{"a.test", "b.test:8443"}));
  EXPECT_EQ(o.audit_log, "/l");
  EXPECT_EQ(o.unsafe_test_allow_addresses, (Args{"127.0.0.1"}));
  EXPECT_EQ(o.unsafe_test_resolver, "127.0.0.1:53");
  struct Row {
    Args args;
    const char* message;
  };
  for (const Row& row : {
           Row{{"--channel-fd"}, "--channel-fd needs a value"},
           Row{{"--status-fd", "65536"},
               "--status-fd expects a descriptor number (0 to 65535), got 65536"},
           Row{{"--channel-fd", "x"},
               "--channel-fd expects a descriptor number (0 to 65535), got x"},
           Row{{"--allow", "a"},
               "unknown option --allow (see anvil-proxy --help); did you mean --allow-host?"},
       }) {
    ProxyOptions p;
    auto bad = ParseFlags(ProxyFlags(p), row.args);
    ASSERT_FALSE(bad) << row.args[0];
    EXPECT_EQ(bad.error().message, row.message);
  }
  const std::string help = RenderHelp(spec);
  for (const Flag& f : spec.flags) {
    EXPECT_TRUE(Lists(help, f.name)) << f.name;
  }
}

// `anvil sandbox`'s commands may trace their own processes (gdb, strace, LeakSanitizer);
// sys.exec's tools, run by anvil-exec-runner, never.
TEST(RunnerFlags, OnlyAnvilSandboxLetsTheCommandTraceItsOwnProcesses) {
  for (auto front_end : {cli::SandboxFrontEnd::kAnvilSandbox, cli::SandboxFrontEnd::kExecRunner}) {
    auto r = cli::ParseSandboxArgs({"--policy", "read-only", "--", "true"}, {"PATH=/usr/bin:/bin"},
                                   front_end);
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->spec.allow_tracing, front_end == cli::SandboxFrontEnd::kAnvilSandbox);
  }
}

// anvil-exec-runner's own flags, in the words the gateway's exec broker has always seen.
TEST(RunnerFlags, ABadValueIsRefusedInWordsThatNameTheFlag) {
  struct Row {
    Args args;
    const char* message;
  };
  const Row rows[] = {
      {{"--exec-fd", "-1", "--", "true"}, "--exec-fd expects a descriptor number, got -1"},
      {{"--exec-fd", "x", "--", "true"}, "--exec-fd expects a descriptor number, got x"},
      {{"--call-fd", "2"}, "--call-fd expects an open descriptor number >= 3, got 2"},
      {{"--call-fd", "987654"}, "--call-fd expects an open descriptor number >= 3, got 987654"},
      {{"--report-fd=987654", "--", "true"},
       "--report-fd expects an open descriptor number >= 3, got 987654"},
      {{"--call-fd"}, "--call-fd needs a value"},
      {{"--timeout", "0", "--", "true"}, "--timeout expects a positive number of seconds, got 0"},
      {{"--limit", "as=1T", "--", "true"}, "--limit as: bad unit in 1T (use K, M or G)"},
      {{"--quiet", "--", "true"}, "unknown option --quiet (see anvil-exec-runner --help)"},
      {{"--runtime-from-call", "--", "true"}, "--runtime-from-call needs --call-fd"},
  };
  for (const Row& row : rows) {
    auto r =
        cli::ParseSandboxArgs(row.args, {"PATH=/usr/bin:/bin"}, cli::SandboxFrontEnd::kExecRunner);
    ASSERT_FALSE(r) << row.args[0];
    EXPECT_EQ(r.error().code, "invalid") << row.args[0];
    EXPECT_EQ(r.error().message, row.message);
  }
}

}  // namespace
}  // namespace front_end_flags_test
}  // namespace anvil
