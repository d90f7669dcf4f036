#include "gateway/gateway_flags.h"

#include <chrono>
#include <climits>
#include <cstdint>
#include <string>

#include "policy/display_text.h"

namespace anvil::gateway {
namespace {

// A default as --help shows it: bytes in the largest unit that divides them ("8M").
std::string Bytes(uint64_t n) {
  for (const auto& [unit, shift] : {std::pair{"G", 30}, std::pair{"M", 20}, std::pair{"K", 10}}) {
    if (n != 0 && n % (uint64_t{1} << shift) == 0) {
      return std::to_string(n >> shift) + unit;
    }
  }
  return std::to_string(n);
}
std::string Default(uint64_t n) { return "(default " + std::to_string(n) + ")"; }
std::string DefaultBytes(uint64_t n) { return "(default " + Bytes(n) + ")"; }

// The flags' value kinds with the gateway's words for them: "a positive number up to 255".
std::string Words(std::string noun, const Bounds& bounds) {
  const bool positive = bounds.min >= 1 || (bounds.min >= 0 && bounds.min_exclusive);
  std::string words = std::string(positive ? "a positive " : "a ") + std::move(noun);
  if (bounds.max < 18446744073709551615.0) {
    words += " up to " + std::to_string(static_cast<uint64_t>(bounds.max));
  }
  return words;
}

template <typename T>
Flag CountOf(std::string name, std::string metavar, std::string help, T& field,
             Bounds bounds = UpTo<T>()) {
  return Count(std::move(name), std::move(metavar), std::move(help), bounds,
               [&field](uint64_t n) { field = static_cast<T>(n); })
      .Expects(Words("number", bounds));
}
template <typename T>
Flag BytesOf(std::string name, std::string help, T& field, Bounds bounds = UpTo<T>()) {
  return ByteSize(std::move(name), "BYTES", std::move(help), bounds,
                  [&field](uint64_t n) { field = static_cast<T>(n); })
      .Expects(bounds.min > 1 ? "a number of bytes, at least " + Bytes(bounds.min)
                              : Words("number of bytes", bounds));
}
Flag Milliseconds(std::string name, std::string help, std::chrono::milliseconds& field,
                  Bounds bounds) {
  return Count(std::move(name), "MS", std::move(help), bounds,
               [&field](uint64_t ms) { field = std::chrono::milliseconds(ms); })
      .Expects(Words("number", bounds));
}

// sys.net.fetch: every number positive and at most 2^40.
constexpr double kNetMax = double(uint64_t{1} << 40);

std::vector<Flag> NetFetchFlags(NetFetchOptions& o) {
  const NetFetchOptions d;
  return {
      BytesOf("--net-max-body-bytes",
              "response body cap after decompression " + DefaultBytes(d.limits.max_body_bytes),
              o.limits.max_body_bytes, Between(1, kNetMax))
          .Heading("sys.net.fetch"),
      BytesOf("--net-max-header-bytes",
              "response header cap " + DefaultBytes(d.limits.max_header_bytes),
              o.limits.max_header_bytes, Between(1, kNetMax)),
      Milliseconds("--net-connect-timeout-ms",
                   "connecting " + Default(d.limits.connect_timeout.count()),
                   o.limits.connect_timeout, Between(1, kNetMax)),
      Milliseconds("--net-timeout-ms", "total " + Default(d.limits.total_timeout.count()),
                   o.limits.total_timeout, Between(1, kNetMax)),
      Count("--net-low-speed-time", "S",
            "abort below 1 KiB/s for S seconds " + Default(d.limits.low_speed_time.count()),
            Between(1, kNetMax),
            [&o](uint64_t s) { o.limits.low_speed_time = std::chrono::seconds(s); })
          .Expects(Words("number", Between(1, kNetMax))),
      CountOf("--net-max-fetches-per-plugin", "N",
              "fetches at once per plugin " + Default(d.max_fetches_per_plugin),
              o.max_fetches_per_plugin, Between(1, UINT32_MAX)),
      CountOf("--net-max-fetches", "N",
              "fetches at once per session " + Default(d.max_fetches_per_session),
              o.max_fetches_per_session, Between(1, UINT32_MAX)),
      Milliseconds("--net-dns-timeout-ms", "whole DNS lookup " + Default(d.dns_deadline.count()),
                   o.dns_deadline, Between(1, kNetMax)),
      Text("--unsafe-test-resolver", "ADDR:PORT", "ask this DNS server instead of resolv.conf",
           [&o](const std::string& v) -> Status {
             ANVIL_TRY(server, ParseDnsServer(v));
             o.unsafe_test_resolver = *server;
             return Ok();
           })
          .Heading("TEST ONLY -- never in production; they widen what plugins can reach"),
      Text("--unsafe-test-allow-address", "ADDR[:PORT]",
           "treat ADDR as global; allow PORT (default 443)",
           [&o](const std::string& v) -> Status {
             ANVIL_TRY(entry, ParseUnsafeTestAllowAddress(v));
             o.unsafe_test_allow_addresses.push_back(*entry);
             return Ok();
           })
          .Repeatable(),
      Text("--unsafe-test-ca", "FILE", "trust this CA as well as the system's",
           [&o](const std::string& v) -> Status {
             if (v.empty() || v[0] != '/') {
               return Fail("invalid", "--unsafe-test-ca needs an absolute path");
             }
             o.unsafe_test_ca_file = v;
             return Ok();
           }),
  };
}

std::vector<Flag> ExecFlags(GatewayOptions& o) {
  const ExecLimits d;
  return {
      Text("--exec-runner", "PATH", "anvil-exec-runner (default: next to this program)",
           [&o](const std::string& v) -> Status {
             if (v.empty()) return Fail("invalid", "--exec-runner needs a path");
             o.exec_runner = v;
             o.exec_unavailable.clear();
             return Ok();
           })
          .Heading("sys.exec (the tools of the executable policy table, run by anvil-exec-runner)"),
      Switch("--no-fs-write",
             "refuse every write op (no plugin of this session has fs.write); the workspace is "
             "then not scanned for what git runs from it",
             [&o] { o.no_fs_write = true; }),
      Switch("--no-exec", "refuse every sys.exec",
             [&o] {
               o.exec_runner.clear();
               o.exec_unavailable.clear();
             }),
      Number("--exec-timeout", "SECONDS",
             "per call " + Default(d.timeout.count() / 1000) + "; the whole process tree is killed",
             Above(0, 86400),
             [&o](double secs) {
               o.exec_limits.timeout = std::chrono::milliseconds(static_cast<int64_t>(secs * 1000));
             })
          .Expects("a positive number of seconds, at most 86400"),
      BytesOf("--exec-max-stdout", "a tool's output kept " + DefaultBytes(d.max_stdout_bytes),
              o.exec_limits.max_stdout_bytes),
      BytesOf("--exec-max-stderr", "a tool's errors kept " + DefaultBytes(d.max_stderr_bytes),
              o.exec_limits.max_stderr_bytes),
      BytesOf("--exec-max-stdin", "a call's input " + DefaultBytes(d.max_stdin_bytes),
              o.exec_limits.max_stdin_bytes),
      CountOf("--exec-max-processes", "N",
              "processes inside one call's sandbox " + Default(d.max_processes),
              o.exec_limits.max_processes, AtLeast(1)),
      BytesOf("--exec-max-memory",
              "heap a tool may allocate (RLIMIT_DATA) " + DefaultBytes(d.max_memory_bytes),
              o.exec_limits.max_memory_bytes, AtLeast(1 << 20)),
      CountOf("--exec-concurrency", "N",
              "calls running at once per session " + Default(d.max_concurrent) + "; beyond: busy",
              o.exec_limits.max_concurrent, Between(1, UINT32_MAX)),
  };
}

}  // namespace

CommandSpec GatewayFlags(GatewayOptions& o) {
  CommandSpec spec;
  spec.program = "anvil-gateway";
  spec.synopsis = "--workspace DIR --control-fd N [options]";
  spec.description =
      "The per-session policy gateway. Started by `anvil run` / `anvil serve` (the trusted "
      "side),\nwhich keeps the other end of the control socketpair; not meant to be run by hand.";
  spec.style.wording = ParseStyle::Wording::kExpectsGot;
  spec.echo = SanitizeFlagArgument;
  GatewayLimits& l = o.limits;
  const GatewayLimits d;
  spec.flags = {
      TextInto("--workspace", "DIR", "the workspace root (a symlink is resolved once and pinned)",
               o.workspace),
      DescriptorInto("--control-fd", "the inherited control channel (required)", o.control_fd),
      TextInto("--runtime-dir", "DIR",
               "per-session directory (0700; default $XDG_RUNTIME_DIR/anvil/<session>)",
               o.runtime_dir),
      TextInto("--session", "ID", "session id for the audit log", o.session_id),
      TextInto("--audit-log", "FILE", "JSON-lines audit log (default <runtime-dir>/audit.jsonl)",
               o.audit_log),
      BytesOf("--audit-log-max-bytes",
              "the audit log's cap: past it the oldest lines are dropped, the newest half "
              "stays " +
                  DefaultBytes(kDefaultLogMaxBytes),
              o.audit_log_max_bytes, AtLeast(static_cast<double>(kMinLogMaxBytes))),
      DescriptorInto("--pending-writes-fd",
                     "journal of temporary names for the supervisor to sweep", o.pending_writes_fd),
      DescriptorInto("--write-usage-fd",
                     "the session's table of what each plugin wrote, kept by the supervisor\n"
                     "across gateways (a sealed memfd)",
                     o.write_usage_fd),
      Switch("--no-symlinks", "never follow symlinks, even inside the workspace",
             [&o] { o.no_symlinks = true; }),
      Switch("--allow-hardlinked-reads", "allow reading files with more than one hard link",
             [&o] { o.allow_hardlinked_reads = true; }),
      BytesOf("--max-frame-bytes",
              "largest frame on a connection " + DefaultBytes(d.max_frame_bytes),
              l.max_frame_bytes),
      BytesOf("--max-read-bytes", "largest sys.fs.read " + DefaultBytes(d.max_read_bytes),
              l.max_read_bytes),
      BytesOf("--max-write-bytes", "largest sys.fs.write " + DefaultBytes(d.max_write_bytes),
              l.max_write_bytes),
      CountOf("--max-connections", "N", "connections at once " + Default(d.max_connections),
              l.max_connections),
      CountOf("--max-inflight", "N",
              "requests at once per connection " + Default(d.max_inflight_per_connection) +
                  "; beyond: busy",
              l.max_inflight_per_connection),
      CountOf("--max-queued", "N",
              "requests queued, all connections " + Default(d.max_queued_jobs) + "; beyond: busy",
              l.max_queued_jobs),
      CountOf("--requests-per-second", "N",
              "per plugin registration " + Default(d.plugin_requests_per_second),
              l.plugin_requests_per_second),
      BytesOf("--bytes-per-second",
              "per plugin registration " + DefaultBytes(d.plugin_bytes_per_second),
              l.plugin_bytes_per_second),
      BytesOf("--max-plugin-write-bytes",
              "bytes one plugin's fs.write calls may write in the session " +
                  DefaultBytes(d.plugin_write_bytes),
              l.plugin_write_bytes),
      CountOf("--max-plugin-new-entries", "N",
              "files and directories one plugin may make in the session " +
                  Default(d.plugin_new_entries),
              l.plugin_new_entries),
      CountOf("--workers", "N", "worker threads " + Default(d.worker_threads), l.worker_threads),
      CountOf("--max-rename-entries", "N",
              "entries of a directory fs.rename may move " + Default(d.max_rename_entries),
              l.max_rename_entries),
      CountOf(
          "--hello-timeout-ms", "MS",
          "a connection that has not said hello by then is closed " + Default(d.hello_timeout_ms),
          l.hello_timeout_ms, Between(1, UINT32_MAX)),
      Switch("--no-harden", "skip self-hardening (tests that need to inspect the process)",
             [&o] { o.harden = false; }),
  };
  for (Flag& f : ExecFlags(o)) spec.flags.push_back(std::move(f));
  for (Flag& f : NetFetchFlags(o.net)) spec.flags.push_back(std::move(f));
  return spec;
}

}  // namespace anvil::gateway
