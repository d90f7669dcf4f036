// `anvil run`: load one plugin, admit it (consent on the terminal), run one command, print it.
#include "cli/run_command.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/audit_view.h"
#include "cli/plugin_cli.h"
#include "cli/plugin_new_command.h"
#include "cli/run_watch.h"
#include "cli/terminal_progress.h"
#include "common/interrupt.h"
#include "common/json_depth.h"
#include "common/unique_fd.h"
#include "fs/file_io.h"
#include "fs/workspace_path.h"
#include "ipc/plugin_trace.h"
#include "policy/consent.h"
#include "policy/display_text.h"
#include "policy/grant_store.h"
#include "policy/lockfile.h"
#include "policy/manifest.h"
#include "policy/manifest_signature.h"
#include "policy/trusted_keys.h"
#include "policy/workspace_config.h"
#include "session/gateway_serves.h"
#include "session/plugin_admission.h"
#include "session/plugin_catalog.h"
#include "session/plugin_session.h"

namespace anvil::cli {

using namespace plugin_cli;  // the terminal helpers these three commands share
using namespace std::chrono_literals;

namespace {

// What one command of `anvil run` may print to stderr as the plugin's: notifications and log
// lines (each already cut at 2,000 characters), at most this many lines and bytes together.
// `anvil serve` bounds the same lines by rate instead (serve_server.h, kLogBurst).
constexpr uint64_t kRunPluginLinesMax = 10000;
constexpr uint64_t kRunPluginBytesMax = uint64_t{4} << 20;

class PluginLineBudget {
 public:
  // Whether a line of `bytes` may be shown; once one is refused, every later one is too.
  bool Take(uint64_t bytes) {
    if (dropped_ == 0 && lines_ < kRunPluginLinesMax && bytes_ + bytes <= kRunPluginBytesMax) {
      ++lines_;
      bytes_ += bytes;
      return true;
    }
    ++dropped_;
    return false;
  }
  uint64_t dropped() const { return dropped_; }

 private:
  uint64_t lines_ = 0, bytes_ = 0, dropped_ = 0;
};

// What the flags of `anvil run` set; the spec's handlers write here.
struct RunArgs {
  std::string workspace_arg = ".";
  bool approve = false, json = false, require_signed = false, watch = false, clear = false;
  double timeout = 10;
  session::UnsafeNetTestOptions unsafe_net_test;
};

CommandSpec RunSpec(RunArgs& a) {
  CommandSpec spec;
  spec.echo = SanitizeFlagArgument;
  spec.name = "run";
  spec.program = "anvil run";
  spec.summary = "run one command of a plugin, sandboxed";
  spec.synopsis =
      "[--workspace DIR] [--approve] [--require-signed] [--timeout SECONDS]\n"
      "                 [--watch [--clear]] PLUGIN_DIR COMMAND [ARGS...]";
  spec.description =
      "Start a session, load one plugin, run one of its commands, print what it returns (strings\n"
      "as text, other values as JSON; anything that could act on the terminal is shown as\n"
      "\\u{HEX}) and its notifications, and stop.";
  spec.flags = {
      Text("--workspace", "DIR", "the workspace (default: the current directory)",
           [&a](const std::string& v) {
             a.workspace_arg = v;
             return Ok();
           })
          .Expects("a directory")
          .Completes(Completion::kDirectory),
      Switch("--approve", "grant exactly what the manifest requests, without asking (scripts)",
             [&a] { a.approve = true; }),
      Number("--timeout", "SECONDS",
             "wall-clock deadline of the command (default 10; the plugin is killed)", Above(0, 1e7),
             [&a](double v) { a.timeout = v; })
          .Expects("a positive number of seconds"),
      Switch("--require-signed",
             "refuse a plugin whose manifest is not signed by a key you trust\n"
             "(`anvil plugin trust-key`); a signature that is present is always checked",
             [&a] { a.require_signed = true; }),
      Switch("--json",
             "print the result as one JSON object {\"ok\",\"result\"|\"error\"}: the\n"
             "exact value, every non-ASCII character \\u-escaped",
             [&a] { a.json = true; }),
      Switch("--watch",
             "run again whenever a file of the plugin changes (Ctrl-C stops); a\n"
             "manifest that asks for more is asked about again (--approve covers only\n"
             "the manifest it started with)",
             [&a] { a.watch = true; }),
      Switch("--clear", "with --watch: clear the terminal before each run",
             [&a] { a.clear = true; }),
  };
  spec.positionals = {{"PLUGIN_DIR", Completion::kPluginDirectory},
                      {"COMMAND", Completion::kNone},
                      {"ARGS", Completion::kNone}};
  spec.sections = {
      {"Test only",
       "Never in real use: they let plugins reach loopback test servers (docs/plugin-api.md).\n"
       "  --unsafe-test-resolver ADDR:PORT  --unsafe-test-allow-address ADDR[:PORT]  "
       "--unsafe-test-ca FILE",
       false},
      {"",
       "Without a stored grant for this plugin, workspace and manifest hash, the requested "
       "permissions\n"
       "are shown and you are asked. Exit: 0 ok, 1 the command raised an error, 2 usage, 3 "
       "permission\n"
       "refused, 124 deadline passed, 125 the sandbox could not be set up, 130 Ctrl-C (143\n"
       "SIGTERM, 129 SIGHUP): the plugin was stopped and the session ended in order.",
       false},
  };
  spec.examples = {
      "anvil run examples/plugins/todo-finder find-todos        # asks first, then lists TODOs",
      "anvil run --approve examples/plugins/hello-lua summary   # scripts: grant without asking",
      "anvil run --workspace ~/proj --json examples/plugins/todo-finder find-todos FIXME",
      "anvil run --watch --clear ./word-count count             # the author's edit-run loop",
  };
  spec.style.operands = ParseStyle::Operands::kFirstThenAll;
  spec.style.dash_dash_ends = false;
  // Trusted-side test options, passed to the gateway (INTERFACES.md); never from a plugin.
  spec.extra = [&a](const std::vector<std::string>& args, size_t& i, std::string& error) {
    return a.unsafe_net_test.Take(args, i, error);
  };
  return spec;
}

}  // namespace

CommandSpec RunCommandSpec() {
  static RunArgs unused;
  return RunSpec(unused);
}

namespace {

struct RunSettings {
  std::string workspace, plugin_dir;    // canonical
  std::vector<std::string> positional;  // PLUGIN_DIR COMMAND ARGS...
  bool approve = false, json = false, require_signed = false;
  double timeout = 10;
  session::UnsafeNetTestOptions unsafe_net_test;
  // --watch --approve: the manifest (SHA-256) that --approve covers; a changed manifest is
  // looked up like any other (asks when it asks for more).
  std::optional<std::string> approve_only_sha;
  // One run, not --watch: stdout is given up once the answer is on it (see RunOnce).
  bool release_stdout = false;  // also: the gateway may be forked (RunOnce)
};

// One run: manifest, lock, signature, grant, session, the command. Says what went wrong on
// stderr and returns the exit status.
int RunOnce(const RunSettings& r) {
  const std::string& workspace = r.workspace;
  const std::string& plugin_dir = r.plugin_dir;
  const bool json = r.json, require_signed = r.require_signed;
  const double timeout = r.timeout;
  const std::vector<std::string>& positional = r.positional;
  auto manifest = LoadManifest(plugin_dir);
  if (manifest) {
    if (auto entry = CheckManifestEntry(plugin_dir, *manifest); !entry) {
      manifest = tl::unexpected(entry.error());
    }
  }
  if (!manifest) {
    std::cerr << ErrorLine("anvil run", manifest.error());
    return kExitUsage;
  }
  // The entry file was checked with the manifest above (a usage error, not a refusal).
  const session::AdmissionRequest request{workspace, plugin_dir, require_signed,
                                          /*entry_checked=*/true};
  auto store = GrantStore::Open();
  if (!store) {
    std::cerr << ErrorLine("anvil run", store.error());
    return kExitUsage;
  }
  session::Admission admission = session::AdmitPlugin(request, *manifest, *store);
  if (admission.verdict == session::AdmissionVerdict::kNeedsConsent) {
    // Under --watch, --approve covers the manifest it started with, not what it may become.
    const bool approve =
        r.approve && (!r.approve_only_sha || *r.approve_only_sha == manifest->sha256);
    if (!approve &&
        !AskOnTerminal("\n" +
                       session::ConsentText(workspace, *manifest, admission.lookup.previous,
                                            admission.signer, admission.lookup.other_copy,
                                            request.plugin_dir, admission.lookup.copy_of) +
                       "Allow? [y/N] ")) {
      std::cerr << ErrorLine("anvil run",
                             Error{"denied",
                                   "permission not granted for " + manifest->id +
                                       " (approve with --approve or `anvil plugin approve`)",
                                   0});
      return kExitRefused;
    }
    (void)session::ApproveAdmission(request, *manifest, *store, admission);
  }
  if (admission.verdict != session::AdmissionVerdict::kAdmitted) {
    std::cerr << ErrorLine("anvil run", *admission.error);
    return admission.verdict == session::AdmissionVerdict::kRefused ? kExitRefused : kExitUsage;
  }
  const Grant* grant = &*admission.grant;
  // Only what the grant needs (session/gateway_serves.h).
  session::PluginSessionConfig config{
      workspace, plugin_dir, *manifest, *grant, session::GatewayArgsFor(session::ServesFor(*grant)),
      {}};
  config.unsafe_net_test = r.unsafe_net_test;
  // One run, one thread: the offline gateway can be this program's own forked child. Not under
  // --watch: every run's gateway would then be a fork of one long-lived process (its memory of
  // the runs before, one address-space layout and stack canary for all of them).
  config.gateway_in_process = r.release_stdout;
  config.pinned_files = std::move(admission.pinned_files);
  // Anvil.toml settings reach the plugin as data. A broken file passes none (and says so): it
  // is untrusted input and never stops or widens anything.
  if (auto ws_config = LoadWorkspaceConfig(workspace); ws_config) {
    config.settings_json = ws_config->SettingsFor(manifest->id)
                               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    std::cerr << "anvil run: warning: " << Shown(ws_config.error().ToString(), 1000)
              << " (no settings passed to the plugin)\n";
  }
  config.host_args = {"--deadline-ms", std::to_string(static_cast<int64_t>(timeout * 1000))};
  // Only while Anvil waits, and only on a terminal (stderr a pipe: nothing changes).
  const std::string id = SanitizeForDisplay(manifest->id);
  TerminalProgress progress(STDERR_FILENO);
  progress.Show("starting the sandbox for " + id);
  auto session = session::PluginSession::Start(config);
  progress.Clear();
  if (!session) {
    std::cerr << PluginErrorLines(id, session.error());
    return kExitSandbox;
  }
  // Interrupted while it started: nothing of the plugin runs (the caller says why).
  if (InterruptSignal() != 0) {
    (void)(*session)->Stop();
    return kExitSandbox;
  }
  auto deadline = std::chrono::milliseconds(static_cast<int64_t>(timeout * 1000));
  const std::string& command = positional[1];
  nlohmann::json cmd_args = nlohmann::json::array();
  for (size_t k = 2; k < positional.size(); ++k) cmd_args.push_back(positional[k]);

  // Notifications and logs are shown attributed to the plugin, sanitized: a plugin cannot
  // write escape sequences to the user's terminal or make a line look like Anvil's own. They
  // share one budget per command (PluginLineBudget): a plugin printing in a loop cannot fill
  // the terminal's scrollback, or the disk when stderr goes to a file.
  PluginLineBudget shown;
  auto show = [&](const std::string& line) {
    if (!shown.Take(line.size() + 1)) {
      if (shown.dropped() == 1) {
        progress.Clear();
        std::cerr << "anvil run: " << id << " passed its budget of " << kRunPluginLinesMax
                  << " log and notification lines (" << (kRunPluginBytesMax >> 20)
                  << " MiB) for one command; the rest are dropped\n";
        progress.Redraw();
      }
      return;
    }
    progress.Clear();
    std::cerr << line << "\n";
    progress.Redraw();
  };
  session::EditorHandler editor =
      [&](const std::string& op,
          const std::vector<std::string>& a) -> Result<std::vector<std::string>> {
    if (op == "editor.notify" && a.size() == 1) {
      show("[" + id + "] " + SanitizeForDisplay(a[0], 2000));
      return std::vector<std::string>{};
    }
    if (op == "editor.buffer.get" || op == "editor.buffer.edit") {
      return Fail("not_found", "no editor buffers in `anvil run` (use `anvil serve`)");
    }
    return Fail("invalid", "unknown editor request");
  };
  session::LogHandler log = [&](const std::string& level, const std::string& text) {
    show("[" + id + " " + SanitizeForDisplay(level, 8) + "] " + SanitizeForDisplay(text, 2000));
  };
  progress.Show("running " + id + " " + SanitizeForDisplay(command, 64));
  // Every argument was checked to be UTF-8 above: this dump cannot fail.
  auto result = (*session)->Run(
      command, cmd_args.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), deadline,
      editor, log);
  progress.Clear();
  // The command is run without asking the host for its commands first (one round trip fewer
  // on every run); only a not_found asks, to tell a command the plugin does not have from a
  // command that failed with not_found. (A plugin that did not load answers the command with
  // its load error, as it would have answered the question.)
  if (!result && result.error().code == "not_found") {
    auto commands = (*session)->Commands(deadline);
    if (commands && std::find(commands->begin(), commands->end(), command) == commands->end()) {
      std::string known;
      for (const auto& c : *commands) {
        known += (known.empty() ? "" : ", ") + SanitizeForDisplay(c);
      }
      std::cerr << "anvil run: not_found: plugin " << id << " has no command '"
                << SanitizeForDisplay(command) << "' (it has: " << known << ")\n";
      (void)(*session)->Stop();
      return kExitUsage;
    }
  }
  if (shown.dropped() > 0) {
    std::cerr << "anvil run: " << shown.dropped() << " log and notification lines of " << id
              << " were dropped (budget: " << kRunPluginLinesMax << " lines or "
              << (kRunPluginBytesMax >> 20) << " MiB per command)\n";
  }
  // The answer first, then the teardown: a caller reading the output has it while the host and
  // the gateway are stopped (Stop still runs to the end before this process exits).
  int code = kExitOk;
  // Bounded: a (compromised) host's result of a million nested arrays would parse, then
  // overflow the stack when dumped below.
  bool too_deep = false;
  const nlohmann::json value = result ? ParseBoundedJson(*result, &too_deep)
                                      : nlohmann::json(nlohmann::json::value_t::discarded);
  if (!result) {
    if (json) {
      nlohmann::json out{{"ok", false}, {"error", CapErrorText(result.error().ToString())}};
      if (auto trace = ipc::DecodePluginTrace(result.error().trace)) {
        out["trace"] = ipc::PluginTraceJson(*trace);
      }
      std::cout << JsonLine(out);
    } else {
      std::cerr << PluginErrorLines(id, result.error()) << TraceLines(id, result.error());
    }
    code = ExitFor(result.error());
  } else if (value.is_discarded()) {
    Error e = too_deep ? Error{"limit",
                               "the command's result is nested deeper than " +
                                   std::to_string(kMaxJsonNesting) + " levels",
                               0}
                       : Error{"error", "the plugin host returned a result that is not JSON", 0};
    if (json) {
      std::cout << JsonLine({{"ok", false}, {"error", e.ToString()}});
    } else {
      std::cerr << ErrorLine("anvil run", e);
    }
    code = kExitPluginError;
  } else if (json) {
    std::cout << JsonLine({{"ok", true}, {"result", value}});
  } else {
    const std::string text =
        value.is_string() ? value.get<std::string>()
                          : value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    std::cout << ResultLines(id, text);
  }
  std::cout.flush();
  std::cerr.flush();
  // The answer is complete: a caller reading stdout to its end (`out=$(anvil run …)`) has it
  // now, not after the teardown. Stop still runs to the end, and this process exits only after
  // it, so nothing it started outlives it; the gateway's and the host's stdout are not ours.
  if (r.release_stdout) {
    if (int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC); null_fd >= 0) {
      (void)::dup2(null_fd, STDOUT_FILENO);
      ::close(null_fd);
    }
  }
  (void)(*session)->Stop();
  return code;
}

}  // namespace

int RunRunCommand(const std::vector<std::string>& args) {
  RunArgs a;
  const CommandSpec spec = RunSpec(a);
  const std::string kRunUsage = RenderHelp(spec);
  auto parsed = ParseFlags(spec, args);
  if (!parsed) {
    std::cerr << ErrorLine("anvil run", parsed.error());
    return kExitUsage;
  }
  if (parsed->help) {
    std::cout << kRunUsage;
    return kExitOk;
  }
  const std::string& workspace_arg = a.workspace_arg;
  const std::vector<std::string>& positional = parsed->operands;
  if (a.watch && a.json) {
    std::cerr << "anvil run: invalid: --watch and --json do not go together (fix: drop one)\n";
    return kExitUsage;
  }
  if (positional.size() < 2) {
    std::cerr << "anvil run: invalid: need PLUGIN_DIR and COMMAND\n" << kRunUsage;
    return kExitUsage;
  }
  std::string workspace = Canonical(workspace_arg);
  if (workspace.empty()) {
    std::cerr << "anvil run: invalid: workspace " << Shown(workspace_arg) << " does not exist\n";
    return kExitUsage;
  }
  // Before anything starts: the workspace path travels in JSON (the gateway's control channel,
  // the audit log) and every argument reaches the plugin as a JSON string, which can only hold
  // Unicode text. A byte string that is not UTF-8 is refused here, not guessed at.
  if (!IsValidUtf8(workspace)) {
    std::cerr << "anvil run: invalid: the workspace path " << Shown(workspace)
              << " is not valid UTF-8 (fix: run in a directory whose path is UTF-8)\n";
    return kExitUsage;
  }
  for (size_t k = 2; k < positional.size(); ++k) {
    if (!IsValidUtf8(positional[k])) {
      std::cerr << "anvil run: invalid: argument " << k - 1 << " (" << Shown(positional[k], 100)
                << ") is not valid UTF-8 (fix: pass arguments as UTF-8 text; a plugin receives "
                   "them as JSON strings)\n";
      return kExitUsage;
    }
  }
  std::string plugin_dir = Canonical(positional[0]);
  if (plugin_dir.empty()) {
    std::cerr << "anvil run: invalid: plugin directory " << Shown(positional[0])
              << " does not exist\n";
    return kExitUsage;
  }
  RunSettings settings{workspace,        plugin_dir, positional,        a.approve,   a.json,
                       a.require_signed, a.timeout,  a.unsafe_net_test, std::nullopt};
  if (!a.watch) {
    settings.release_stdout = true;
    // Ctrl-C, SIGTERM, SIGHUP: the session is stopped in order (common/interrupt.h), then the
    // exit status says which signal, as under --watch.
    CatchInterrupts();
    const int code = RunOnce(settings);
    if (const int sig = InterruptSignal(); sig != 0) {
      std::cerr << "anvil run: interrupted (" << SignalName(sig)
                << "); the plugin was stopped and its session ended\n";
      return 128 + sig;
    }
    return code;
  }
  // --approve covers the manifest as it is now; one that cannot be read approves nothing.
  if (a.approve) {
    auto manifest = LoadManifest(plugin_dir);
    settings.approve_only_sha = manifest ? manifest->sha256 : std::string("-");
  }
  // During a run as without --watch (the session stopped in order); between runs the watch's
  // own wait takes the signal.
  CatchInterrupts();
  return WatchAndRerun(plugin_dir, a.clear, [&settings] { return RunOnce(settings); });
}

}  // namespace anvil::cli
