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
#include "cli/command_docs.h"
#include "cli/plugin_new_command.h"
#include "cli/run_watch.h"
#include "cli/terminal_progress.h"
#include "common/json_depth.h"
#include "common/unique_fd.h"
#include "fs/workspace_path.h"
#include "ipc/plugin_trace.h"
#include "policy/consent.h"
#include "policy/display_text.h"
#include "policy/file_io.h"
#include "policy/grant_store.h"
#include "policy/lockfile.h"
#include "policy/manifest.h"
#include "policy/manifest_signature.h"
#include "policy/trusted_keys.h"
#include "policy/workspace_config.h"
#include "session/plugin_admission.h"
#include "session/plugin_catalog.h"
#include "session/plugin_session.h"

namespace anvil::cli {
namespace {

using namespace std::chrono_literals;

constexpr int kExitOk = 0, kExitPluginError = 1, kExitUsage = 2, kExitRefused = 3,
              kExitTimeout = 124, kExitSandbox = 125;

// Under a plugin error (PluginErrorLines): where it happened and the stack (ipc/plugin_trace.h),
// each line marked as the plugin's like the error's own further lines ("[id]   at main.lua:2"),
// every plugin string sanitized to one line and capped; "" without a trace.
std::string TraceLines(const std::string& id, const Error& e) {
  auto trace = ipc::DecodePluginTrace(e.trace);
  return trace ? ipc::FormatPluginTrace(*trace, "[" + id + "]   ") + "\n" : std::string();
}

int ExitFor(const Error& e) {
  if (e.code == "timeout") return kExitTimeout;
  if (e.code == "sandbox") return kExitSandbox;
  return kExitPluginError;
}

// What Anvil prints on a terminal passes SanitizeForDisplay (policy/display_text.h): errors
// carry plugin-, manifest- and file-controlled text (a module name, a thrown message, a path, the
// host's stderr), and a raw escape sequence in them would reach the user's terminal.
std::string Shown(std::string_view text, size_t max = 2000) {
  return SanitizeForDisplay(text, max);
}

// "<who>: <code>: <message>" on one line.
std::string ErrorLine(std::string_view who, const Error& e) {
  return std::string(who) + ": " + Shown(e.ToString(), 4000) + "\n";
}

// An error that carries the plugin's own words (a load, start-up or command failure): its lines
// are kept, the first after "anvil run: ", every later one marked "[plugin.id] ", so no line of
// it can pass for one of Anvil's own ("anvil: Allow ... [y/N]").
std::string PluginErrorLines(const std::string& id, const Error& e) {
  return MarkedLines("anvil run: ", SanitizeForDisplay(e.ToString(), 4000, LineBreaks::kKeep),
                     "[" + id + "] ");
}

// The command's result as shown to a person (not --json): sanitized with its lines kept, as
// is, except that a line that could pass for one of Anvil's own ("anvil: Allow ... [y/N]",
// look-alike letters included) starts with the plugin's mark.
std::string ResultLines(const std::string& id, const std::string& text) {
  const std::string shown = SanitizeForDisplay(text, kNoDisplayCap, LineBreaks::kKeep);
  const std::string mark = "[" + id + "] ";
  std::string out;
  size_t start = 0;
  while (true) {
    const size_t nl = shown.find('\n', start);
    std::string_view line = std::string_view(shown).substr(
        start, nl == std::string::npos ? std::string::npos : nl - start);
    if (LooksLikeAnvilLine(line)) out += mark;
    out += line;
    out += '\n';
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return out;
}

// JSON for --json: every non-ASCII character \u-escaped (so nothing in it can act on a terminal,
// C1 controls and bidi characters included) and invalid UTF-8 replaced (never an exception).
// Decoding it gives back exactly the value the plugin returned.
std::string JsonLine(const nlohmann::json& j) {
  return j.dump(-1, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string Canonical(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

// Asks on the controlling terminal (never stdin: a script's input must not answer for the
// user). No terminal: no consent.
bool AskOnTerminal(const std::string& prompt) {
  int fd = ::open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return false;
  ssize_t ignored = ::write(fd, prompt.data(), prompt.size());
  (void)ignored;
  char buf[16] = {};
  ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  return n > 0 && (buf[0] == 'y' || buf[0] == 'Y');
}

Result<std::string> ReadSmallFile(const std::string& path, size_t max) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Fail("not_found", "cannot read " + path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > max) return Fail("invalid", path + " is too large for a key");
  return text;
}

// Writes a new file only (O_EXCL): keygen never overwrites a key someone already relies on.
Status WriteNewFile(const std::string& path, const std::string& bytes, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return SysFail("io", "create " + path);
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return SysFail("io", "write " + path);
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) return SysFail("io", "write " + path);
  return Ok();
}

int RunKeyCommand(const std::string& sub, const std::vector<std::string>& rest, const char* usage) {
  auto fail = [](const Error& e) {
    std::cerr << ErrorLine("anvil plugin", e);
    return kExitPluginError;
  };
  auto usage_error = [&](const std::string& text) {
    std::cerr << "anvil plugin " << sub << ": invalid: " << Shown(text) << "\n" << usage;
    return kExitUsage;
  };
  if (sub == "trusted-keys") {
    if (!rest.empty()) return usage_error("takes no arguments");
    auto keys = LoadTrustedKeys();
    if (!keys) return fail(keys.error());
    for (const auto& k : *keys) {
      std::cout << Shown(k.name) << "  key id " << KeyId(k.public_key) << "\n";
    }
    return kExitOk;
  }
  if (sub == "keygen") {
    if (rest.size() != 1) return usage_error("needs FILE");
    auto pair = GenerateEd25519KeyPair();
    if (!pair) return fail(pair.error());
    if (auto s = WriteNewFile(rest[0], pair->private_pem, 0600); !s) return fail(s.error());
    if (auto s = WriteNewFile(rest[0] + ".pub", PublicKeyPem(pair->public_raw), 0644); !s) {
      return fail(s.error());
    }
    std::cout << "private key: " << Shown(rest[0])
              << " (keep it secret)\npublic key:  " << Shown(rest[0])
              << ".pub\nkey id:      " << KeyId(pair->public_raw) << "\n";
    return kExitOk;
  }
  if (sub == "sign") {
    if (rest.size() != 3 || rest[0] != "--key") return usage_error("needs --key FILE PLUGIN_DIR");
    auto key = ReadSmallFile(rest[1], 16384);
    if (!key) return fail(key.error());
    std::string plugin_dir = Canonical(rest[2]);
    if (plugin_dir.empty()) return usage_error("no such plugin directory " + rest[2]);
    auto manifest = LoadManifest(plugin_dir);
    if (!manifest) return fail(manifest.error());
    auto sig = SignManifest(manifest->sha256, *key);
    if (!sig) return fail(sig.error());
    UniqueFd dir(::open(plugin_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir) return fail(Error{"io", "open " + plugin_dir + ": " + std::strerror(errno), errno});
    if (auto s = WriteFileAtomically(dir.Get(), std::string(kSignatureFileName), *sig, 0644); !s) {
      return fail(s.error());
    }
    std::cout << "signed " << SanitizeForDisplay(manifest->id) << " (manifest sha256 "
              << manifest->sha256.substr(0, 12) << ") into " << Shown(plugin_dir) << "/"
              << kSignatureFileName << "\n";
    return kExitOk;
  }
  if (sub == "trust-key") {
    if (rest.size() != 2) return usage_error("needs NAME FILE");
    auto text = ReadSmallFile(rest[1], 4096);
    if (!text) return fail(text.error());
    auto raw = ParsePublicKey(*text);
    if (!raw) return fail(raw.error());
    if (auto s = TrustKey(rest[0], *raw); !s) return fail(s.error());
    std::cout << "trusting " << Shown(rest[0]) << " (key id " << KeyId(*raw) << ")\n";
    return kExitOk;
  }
  // untrust-key
  if (rest.size() != 1) return usage_error("needs NAME");
  if (auto s = UntrustKey(rest[0]); !s) return fail(s.error());
  std::cout << "no longer trusting " << Shown(rest[0]) << "\n";
  return kExitOk;
}

// What the flags of `anvil run` set; the spec's handlers write here.
struct RunArgs {
  std::string workspace_arg = ".";
  bool approve = false, json = false, require_signed = false, watch = false, clear = false;
  double timeout = 10;
  session::UnsafeNetTestOptions unsafe_net_test;
};

CommandSpec RunSpec(RunArgs& a) {
  CommandSpec spec;
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
       "refused, 124 deadline passed, 125 the sandbox could not be set up.",
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
};

// One run: manifest, lock, signature, grant, session, the command. Says what went wrong on
// stderr and returns the exit status.
int RunOnce(const RunSettings& r) {
  const std::string& workspace = r.workspace;
  const std::string& plugin_dir = r.plugin_dir;
  const bool json = r.json, require_signed = r.require_signed;
  const double timeout = r.timeout;
  std::vector<std::string> gateway_args;
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
                                            admission.signer, admission.lookup.other_copy) +
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

  // Only what the grant needs: without `exec` no exec broker and no warm runners (their
  // namespaces and views are most of a session's start and of its teardown).
  if (grant->exec.empty()) gateway_args.emplace_back("--no-exec");
  session::PluginSessionConfig config{workspace, plugin_dir, *manifest, *grant, gateway_args, {}};
  config.unsafe_net_test = r.unsafe_net_test;
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
  auto deadline = std::chrono::milliseconds(static_cast<int64_t>(timeout * 1000));
  progress.Show("loading " + id);
  auto commands = (*session)->Commands(deadline);
  progress.Clear();
  if (!commands) {
    std::cerr << PluginErrorLines(id, commands.error()) << TraceLines(id, commands.error());
    (void)(*session)->Stop();
    return ExitFor(commands.error());
  }
  const std::string& command = positional[1];
  if (std::find(commands->begin(), commands->end(), command) == commands->end()) {
    std::string known;
    for (const auto& c : *commands) known += (known.empty() ? "" : ", ") + SanitizeForDisplay(c);
    std::cerr << "anvil run: not_found: plugin " << id << " has no command '"
              << SanitizeForDisplay(command) << "' (it has: " << known << ")\n";
    (void)(*session)->Stop();
    return kExitUsage;
  }
  nlohmann::json cmd_args = nlohmann::json::array();
  for (size_t k = 2; k < positional.size(); ++k) cmd_args.push_back(positional[k]);

  // Notifications and logs are shown attributed to the plugin, sanitized: a plugin cannot
  // write escape sequences to the user's terminal or make a line look like Anvil's own.
  session::EditorHandler editor =
      [&](const std::string& op,
          const std::vector<std::string>& a) -> Result<std::vector<std::string>> {
    if (op == "editor.notify" && a.size() == 1) {
      progress.Clear();
      std::cerr << "[" << id << "] " << SanitizeForDisplay(a[0], 2000) << "\n";
      progress.Redraw();
      return std::vector<std::string>{};
    }
    if (op == "editor.buffer.get" || op == "editor.buffer.edit") {
      return Fail("not_found", "no editor buffers in `anvil run` (use `anvil serve`)");
    }
    return Fail("invalid", "unknown editor request");
  };
  session::LogHandler log = [&](const std::string& level, const std::string& text) {
    progress.Clear();
    std::cerr << "[" << id << " " << SanitizeForDisplay(level, 8) << "] "
              << SanitizeForDisplay(text, 2000) << "\n";
    progress.Redraw();
  };
  progress.Show("running " + id + " " + SanitizeForDisplay(command, 64));
  // Every argument was checked to be UTF-8 above: this dump cannot fail.
  auto result = (*session)->Run(
      command, cmd_args.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), deadline,
      editor, log);
  progress.Clear();
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
      nlohmann::json out{{"ok", false}, {"error", result.error().ToString()}};
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
  if (!a.watch) return RunOnce(settings);
  // --approve covers the manifest as it is now; one that cannot be read approves nothing.
  if (a.approve) {
    auto manifest = LoadManifest(plugin_dir);
    settings.approve_only_sha = manifest ? manifest->sha256 : std::string("-");
  }
  return WatchAndRerun(plugin_dir, a.clear, [&settings] { return RunOnce(settings); });
}

namespace {

CommandSpec PluginSpec(std::string& workspace_arg) {
  CommandSpec spec;
  spec.name = "plugin";
  spec.program = "anvil plugin";
  spec.summary = "inspect, approve, revoke and lock plugins";
  spec.synopsis =
      "<new|types|list|inspect|approve|revoke|lock|keygen|sign|trust-key|untrust-key|"
      "trusted-keys> ...";
  const Positional plugin_dir{"PLUGIN_DIR", Completion::kPluginDirectory};
  spec.subcommands = {
      // new and types parse their own flags (cli/plugin_new_command.cc).
      {"new",
       "[--lua|--js] NAME [DIR]",
       "create a working plugin: manifest, a command, a test, editor\n"
       "types (anvil plugin new --help)",
       {{"NAME"}, {"DIR", Completion::kDirectory}}},
      {"types",
       "[PLUGIN_DIR]",
       "write the plugin's editor types (anvil.d.ts / types/anvil.lua) again",
       {plugin_dir}},
      {"list", "", "the grants stored for the workspace", {}, true},
      {"inspect",
       "PLUGIN_DIR",
       "the manifest, what it requests, and whether it is granted here",
       {plugin_dir},
       true},
      {"approve",
       "PLUGIN_DIR",
       "grant exactly what the manifest requests (keyed by its SHA-256)",
       {plugin_dir},
       true},
      {"revoke", "PLUGIN_ID", "remove the plugin's grants in the workspace", {{"PLUGIN_ID"}}, true},
      {"lock",
       "PLUGIN_DIR",
       "pin the plugin's manifest and code hashes in <workspace>/anvil.lock",
       {plugin_dir},
       true},
      {"keygen",
       "FILE",
       "write a new private key to FILE (0600) and its public key to FILE.pub",
       {{"FILE", Completion::kFile}}},
      {"sign",
       "--key FILE PLUGIN_DIR",
       "sign PLUGIN_DIR/anvil-plugin.toml into anvil-plugin.toml.sig",
       // Completed as operands: --key is skipped like any flag.
       {{"FILE", Completion::kFile}, plugin_dir}},
      {"trust-key",
       "NAME FILE",
       "trust the public key in FILE (PEM or 64 hex) as NAME",
       {{"NAME"}, {"FILE", Completion::kFile}}},
      {"untrust-key", "NAME", "stop trusting the key NAME", {{"NAME"}}},
      {"trusted-keys", "", "list the keys you trust", {}},
  };
  spec.sections_before_flags = {
      {"",
       "Manifest signatures (ed25519; docs/plugin-api.md \"Signed manifests\"): keygen, sign,\n"
       "trust-key, untrust-key and trusted-keys.",
       false},
  };
  spec.flags = {
      Text("--workspace", "DIR",
           "the workspace (default: the current directory; list, inspect,\n"
           "approve, revoke and lock)",
           [&workspace_arg](const std::string& v) {
             workspace_arg = v;
             return Ok();
           })
          .Expects("a directory")
          .Completes(Completion::kDirectory),
  };
  spec.examples = {
      "anvil plugin new --js me.notes                     # ./notes: a JS plugin to start from",
      "anvil plugin inspect examples/plugins/notes-js     # what it asks for, granted or not",
      "anvil plugin approve examples/plugins/notes-js     # grant exactly that, for this workspace",
      "anvil plugin list                                  # the grants stored for this workspace",
      "anvil plugin revoke example.notes",
      "anvil plugin lock examples/plugins/notes-js        # pin it in ./anvil.lock",
  };
  spec.style.operands = ParseStyle::Operands::kAnywhere;
  spec.style.dash_is_operand = true;
  return spec;
}

}  // namespace

CommandSpec PluginCommandSpec() {
  static std::string unused;
  return PluginSpec(unused);
}

int RunPluginCommand(const std::vector<std::string>& args) {
  std::string workspace_arg = ".";
  const CommandSpec spec = PluginSpec(workspace_arg);
  const std::string usage = RenderHelp(spec);
  const char* kUsage = usage.c_str();
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return args.empty() ? kExitUsage : kExitOk;
  }
  std::string sub = args[0];
  std::vector<std::string> known;
  for (const auto& s : spec.subcommands) known.push_back(s.name);
  if (std::find(known.begin(), known.end(), sub) == known.end()) {
    std::string names;
    for (const auto& k : known) names += (names.empty() ? "" : ", ") + k;
    std::cerr << "anvil plugin: invalid: unknown subcommand '" << SanitizeForDisplay(sub, 100)
              << "' (the subcommands: " << names << "; see anvil plugin --help)";
    if (auto s = Suggest(sub, known)) std::cerr << "; did you mean " << *s << "?";
    std::cerr << "\n";
    return kExitUsage;
  }
  if (sub == "new") return RunPluginNewCommand({args.begin() + 1, args.end()});
  if (sub == "types") return RunPluginTypesCommand({args.begin() + 1, args.end()});
  if (sub == "keygen" || sub == "sign" || sub == "trust-key" || sub == "untrust-key" ||
      sub == "trusted-keys") {
    return RunKeyCommand(sub, std::vector<std::string>(args.begin() + 1, args.end()), kUsage);
  }
  auto parsed = ParseFlags(spec, std::vector<std::string>(args.begin() + 1, args.end()));
  if (!parsed) {
    std::cerr << ErrorLine("anvil plugin " + Shown(sub, 64), parsed.error());
    return kExitUsage;
  }
  if (parsed->help) {
    std::cout << kUsage;
    return kExitOk;
  }
  const std::vector<std::string>& rest = parsed->operands;
  std::string workspace = Canonical(workspace_arg);
  if (workspace.empty()) {
    std::cerr << "anvil plugin: invalid: no such workspace " << Shown(workspace_arg) << "\n";
    return kExitUsage;
  }
  auto store = GrantStore::Open();
  if (!store) {
    std::cerr << ErrorLine("anvil plugin", store.error());
    return kExitPluginError;
  }
  if (sub == "list") {
    for (const auto& e : store->List(workspace)) {
      std::cout << SanitizeForDisplay(e.plugin_id) << "  manifest "
                << e.manifest_sha256.substr(0, 12) << "\n"
                << DescribeGrant(e.grant) << "\n";
    }
    return kExitOk;
  }
  if (rest.size() != 1) {
    std::cerr << "anvil plugin " << Shown(sub, 64) << ": invalid: needs one argument\n" << kUsage;
    return kExitUsage;
  }
  if (sub == "revoke") {
    auto revoked = store->Revoke(workspace, rest[0]);
    if (!revoked) {
      std::cerr << ErrorLine("anvil plugin", revoked.error());
      return kExitPluginError;
    }
    // What is gone, in the words the grant was given in: a revoke the user can check.
    for (const auto& e : *revoked) {
      std::cout << "revoked " << SanitizeForDisplay(e.plugin_id) << " in " << Shown(workspace)
                << " (manifest " << e.manifest_sha256.substr(0, 12)
                << (e.copy ? ", copy in " + SanitizeForDisplay(e.copy->dir) : std::string())
                << "); it may no longer:\n"
                << DescribeGrant(e.grant) << "\n";
    }
    return kExitOk;
  }
  std::string plugin_dir = Canonical(rest[0]);
  auto manifest = plugin_dir.empty()
                      ? Result<Manifest>(Fail("not_found", "no such plugin directory " + rest[0]))
                      : LoadManifest(plugin_dir);
  // inspect and approve look at what would run: an entry the host could never open (missing, a
  // symlink) is refused here, with its line and column, before anyone approves it.
  if (manifest && (sub == "inspect" || sub == "approve")) {
    if (auto entry = CheckManifestEntry(plugin_dir, *manifest); !entry) {
      manifest = tl::unexpected(entry.error());
    }
  }
  if (!manifest) {
    std::cerr << ErrorLine("anvil plugin", manifest.error());
    return kExitUsage;
  }
  // A grant is for one copy of the plugin: this directory, or this code. A module under lib/
  // that cannot be hashed (a symlink, a name that is not allowed) is refused by inspect and
  // approve as `anvil run` refuses it, before anything is shown as fine.
  auto code = HashPluginDir(plugin_dir, *manifest);
  if (!code && (sub == "inspect" || sub == "approve")) {
    std::cerr << ErrorLine("anvil plugin", code.error());
    return kExitPluginError;
  }
  if (sub == "inspect") {
    bool granted = code && store
                               ->FindForCopy(workspace, manifest->id, manifest->sha256,
                                             PluginCopy{plugin_dir, code->code_sha256})
                               .has_value();
    auto signature = session::CheckSignature(plugin_dir, *manifest, false);
    std::string signed_by =
        !signature ? "REFUSED: " + SanitizeForDisplay(signature.error().ToString(), 1000)
        : signature->signed_by_trusted_key ? "signed by " + Shown(signature->signer, 64)
                                           : "not signed";
    std::cout << "id:       " << SanitizeForDisplay(manifest->id)
              << "\nversion:  " << SanitizeForDisplay(manifest->version)
              << "\nruntime:  " << ToString(manifest->runtime) << "\nmanifest: sha256 "
              << manifest->sha256 << "\nsigned:   " << signed_by << "\ngranted:  "
              << (granted ? "yes (this manifest, this copy of the plugin, this workspace)" : "no")
              << "\nrequests:\n"
              << DescribeGrant(manifest->requested) << "\n";
    return kExitOk;
  }
  if (sub == "approve") {
    if (auto s = store->Approve(workspace, manifest->id, manifest->sha256, manifest->requested,
                                PluginCopy{plugin_dir, code->code_sha256});
        !s) {
      std::cerr << ErrorLine("anvil plugin", s.error());
      return kExitPluginError;
    }
    std::cout << "granted " << SanitizeForDisplay(manifest->id) << " in " << Shown(workspace)
              << ":\n"
              << DescribeGrant(manifest->requested) << "\n";
    return kExitOk;
  }
  if (sub == "lock") {
    auto lock = ReadLockfile(workspace);
    Lockfile lf = lock ? *lock : Lockfile{};
    if (!lock && lock.error().code != "not_found") {
      std::cerr << ErrorLine("anvil plugin", lock.error());
      return kExitPluginError;
    }
    auto hashes = HashPluginDir(plugin_dir, *manifest);
    if (!hashes) {
      std::cerr << ErrorLine("anvil plugin", hashes.error());
      return kExitPluginError;
    }
    lf.plugins[manifest->id] = *hashes;
    if (auto s = WriteLockfile(workspace, lf); !s) {
      std::cerr << ErrorLine("anvil plugin", s.error());
      return kExitPluginError;
    }
    std::cout << "locked " << SanitizeForDisplay(manifest->id) << " in " << Shown(workspace)
              << "/anvil.lock\n";
    return kExitOk;
  }
  std::cerr << "anvil plugin: invalid: unknown subcommand " << Shown(sub, 64) << "\n" << kUsage;
  return kExitUsage;
}

namespace {

struct AuditArgs {
  std::string workspace_arg = ".", file;
  bool follow = false, json = false;
  AuditFilter filter;
};

CommandSpec AuditSpec(AuditArgs& a) {
  CommandSpec spec;
  spec.name = "audit";
  spec.program = "anvil audit";
  spec.summary = "read the audit log of a workspace";
  spec.synopsis =
      "[--workspace DIR | --file FILE] [--follow] [--json]\n"
      "                   [--plugin ID] [--since TIME] [--denied] [--all]";
  spec.description =
      "Print the audit log of the workspace's sessions: one line per decision, with its time\n"
      "(UTC). The session's housekeeping (register, hello, connect, ping, revoke) is hidden\n"
      "unless --all.";
  spec.flags = {
      Text("--workspace", "DIR", "the workspace (default: the current directory)",
           [&a](const std::string& v) {
             a.workspace_arg = v;
             return Ok();
           })
          .Expects("a directory")
          .Completes(Completion::kDirectory),
      Text("--file", "FILE", "read this audit log file instead",
           [&a](const std::string& v) {
             a.file = v;
             return Ok();
           })
          .Expects("a file")
          .Completes(Completion::kFile),
      Switch("--follow", "keep printing new entries as they are written",
             [&a] { a.follow = true; }),
      Switch("--json", "one JSON object per line, as stored", [&a] { a.json = true; }),
      Text("--plugin", "ID", "only this plugin's entries",
           [&a](const std::string& v) -> Status {
             if (v.empty() || v[0] == '-') {
               return Fail("invalid", "--plugin needs a plugin id (fix: --plugin example.notes)");
             }
             a.filter.plugin = v;
             return Ok();
           })
          .Expects("a plugin id (fix: --plugin example.notes)"),
      Text("--since", "TIME",
           "only entries from TIME on: RFC 3339 (2026-05-01T12:00:00Z) or\n"
           "relative (30s, 10m, 2h, 7d)",
           [&a](const std::string& v) -> Status {
             auto since = ParseAuditSince(v, std::chrono::system_clock::now());
             if (!since) return tl::unexpected(since.error());
             a.filter.since = *since;
             return Ok();
           })
          .Expects("a time (fix: --since 2026-05-01T12:00:00Z, or relative: --since 10m)"),
      Switch("--denied", "only denials", [&a] { a.filter.denied = true; }),
      Switch("--all", "also the session's housekeeping (register, hello, connect, ping, revoke)",
             [&a] { a.filter.all = true; }),
  };
  spec.examples = {
      "anvil audit                     # what plugins did in this workspace",
      "anvil audit --denied --since 2h # what was refused lately",
      "anvil audit --follow            # watch a session live",
      "anvil audit --json | jq 'select(.verdict == \"deny\")'",
  };
  spec.style.see_help_hint = false;
  return spec;
}

}  // namespace

CommandSpec AuditCommandSpec() {
  static AuditArgs unused;
  return AuditSpec(unused);
}

int RunAuditCommand(const std::vector<std::string>& args) {
  AuditArgs a;
  const CommandSpec spec = AuditSpec(a);
  auto parsed = ParseFlags(spec, args);
  if (!parsed) {
    std::cerr << ErrorLine("anvil audit", parsed.error());
    return kExitUsage;
  }
  if (parsed->help) {
    std::cout << RenderHelp(spec);
    return kExitOk;
  }
  const std::string& workspace_arg = a.workspace_arg;
  std::string file = a.file;
  const bool follow = a.follow, json = a.json;
  if (file.empty()) {
    auto path = session::AuditLogPath(Canonical(workspace_arg).empty() ? workspace_arg
                                                                       : Canonical(workspace_arg));
    if (!path) {
      std::cerr << ErrorLine("anvil audit", path.error());
      return kExitUsage;
    }
    file = *path;
  }
  std::ifstream in(file);
  if (!in) {
    std::cerr << "anvil audit: not_found: no audit log at " << Shown(file) << "\n";
    return kExitPluginError;
  }
  auto print = [&](const std::string& line) {
    auto j = ParseBoundedJson(line);
    if (!j.is_object()) return;  // a line torn by a crash, not an entry, or nested too deep
    if (!AuditMatches(j, a.filter)) return;
    if (json) {
      // As stored, re-encoded with every non-ASCII character escaped: same values for jq,
      // nothing that can act on a terminal.
      std::cout << JsonLine(j);
      return;
    }
    std::cout << FormatAuditLine(j) << "\n";
  };
  std::string line;
  while (true) {
    while (std::getline(in, line)) print(line);
    if (!follow) break;
    in.clear();
    std::this_thread::sleep_for(200ms);
  }
  return kExitOk;
}

}  // namespace anvil::cli
