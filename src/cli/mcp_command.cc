// `anvil mcp`: --help, the start-up checks, the tools it offers and the stop signals; the server
// itself is in mcp_server.h's files.
#include "cli/mcp_command.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "cli/exec_command.h"
#include "cli/mcp_server.h"
#include "cli/mcp_spec.h"
#include "policy/display_text.h"
#include "policy/grant_store.h"
#include "policy/workspace_config.h"
#include "session/gateway_serves.h"
#include "session/plugin_admission.h"
#include "session/plugin_catalog.h"
#include "session/plugin_session.h"

extern char** environ;

namespace anvil::cli {
namespace {

using mcp_server::ExecArgs;
using mcp_server::json;
using mcp_server::kPluginListDeadline;
using mcp_server::McpOptions;
using mcp_server::ParseMcpArgs;
using mcp_server::PluginTool;
using mcp_server::Server;
namespace mcp = agent::mcp;

constexpr int kExitUsage = 2;

// The plugins of the workspace's plugin set with an approved grant for exactly this manifest
// and copy, and their commands (listed by loading each one, as `anvil run` does).
std::vector<PluginTool> DiscoverPluginTools(const McpOptions& o) {
  std::vector<PluginTool> tools;
  session::CatalogOptions catalog_options{o.workspace, o.plugin_dirs, o.search_paths};
  if (o.default_path) {
    const std::string dir =
        session::DefaultPluginSearchPath(std::getenv("XDG_DATA_HOME"), std::getenv("HOME"));
    if (!dir.empty()) catalog_options.search_paths.push_back(dir);
  }
  session::Catalog catalog = session::DiscoverPlugins(catalog_options);
  auto store = GrantStore::Open();
  if (!store) {
    std::cerr << "anvil mcp: plugins not offered: " << store.error().ToString() << "\n";
    return tools;
  }
  for (const auto& entry : catalog.plugins) {
    if (!entry.enabled || !entry.manifest || entry.error) continue;
    const Manifest& manifest = *entry.manifest;
    const std::string id = SanitizeForDisplay(manifest.id, 100);
    // `fix`: a command to paste, shown as it is (PasteableShellWord made its words safe to show:
    // sanitized or cut again, it would no longer be the command).
    auto skip = [&](const std::string& why, const std::string& fix = "") {
      std::cerr << "anvil mcp: plugin " << id << " not offered: " << SanitizeForDisplay(why, 600)
                << fix << "\n";
    };
    // `anvil mcp` asks nobody about plugins: only an approved grant admits one.
    session::Admission admission = session::AdmitPlugin(
        {o.workspace, entry.dir, /*require_signed=*/false, /*entry_checked=*/false}, manifest,
        *store);
    if (admission.verdict == session::AdmissionVerdict::kNeedsConsent) {
      skip("no approved grant for this manifest",
           " (fix: anvil plugin approve " + PasteableShellWord(entry.dir) + " --workspace " +
               PasteableShellWord(o.workspace) + ", or anvil run once)");
      continue;
    }
    if (admission.verdict != session::AdmissionVerdict::kAdmitted) {
      skip(admission.error->ToString());
      continue;
    }
    // Only what the grant needs (session/gateway_serves.h).
    std::vector<std::string> gateway_args =
        session::GatewayArgsFor(session::ServesFor(*admission.grant));
    session::PluginSessionConfig config{o.workspace,      entry.dir,    manifest,
                                        *admission.grant, gateway_args, {}};
    config.pinned_files = std::move(admission.pinned_files);
    if (auto ws_config = LoadWorkspaceConfig(o.workspace); ws_config) {
      config.settings_json =
          ws_config->SettingsFor(manifest.id).dump(-1, ' ', false, json::error_handler_t::replace);
    }
    auto session = session::PluginSession::Start(config);
    if (!session) {
      skip(session.error().ToString());
      continue;
    }
    auto commands = (*session)->Commands(kPluginListDeadline);
    (void)(*session)->Stop();
    if (!commands) {
      skip(commands.error().ToString());
      continue;
    }
    std::string prefix = manifest.id;
    for (char& c : prefix) {
      if (c == '.') c = '_';
    }
    for (const auto& command : *commands) {
      std::string name = mcp::ToolName("plugin__" + prefix + "__" + command);
      bool taken = name == "run_command";
      for (const auto& t : tools) taken = taken || t.name == name;
      if (taken) {
        skip("command " + command + ": its tool name " + name + " is taken");
        continue;
      }
      tools.push_back({name, manifest.id, entry.dir, command, manifest.description});
    }
  }
  return tools;
}

}  // namespace

int RunMcpCommand(const std::vector<std::string>& args) {
  // --help or -h anywhere asks for the help, as it always did (also as a flag's value).
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << RenderHelp(McpCommandSpec());
      return 0;
    }
  }
  auto options = ParseMcpArgs(args);
  if (!options) {
    std::cerr << "anvil mcp: " << SanitizeForDisplay(options.error().ToString(), 2000) << "\n";
    return kExitUsage;
  }
  // The sandbox flags and rules are checked once, before serving: a typo is a startup error.
  {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
    mcp::RunCommandArgs probe;
    probe.argv = {"true"};
    auto parsed = ParseExecArgs(ExecArgs(*options, "", probe), env);
    if (!parsed) {
      std::cerr << "anvil mcp: " << SanitizeForDisplay(parsed.error().ToString(), 2000) << "\n";
      return kExitUsage;
    }
    auto rules = LoadCommandRules(parsed->request.rules);
    if (!rules) {
      std::cerr << "anvil mcp: " << SanitizeForDisplay(rules.error().ToString(), 2000) << "\n";
      return kExitUsage;
    }
  }
  if (::isatty(STDIN_FILENO)) {
    std::cerr << "anvil mcp: serving the Model Context Protocol on stdin/stdout; an agent "
                 "starts this (docs/agents.md); Ctrl-D stops\n";
  }
  // A client that went away mid-write must not kill the server before it stops its calls.
  ::signal(SIGPIPE, SIG_IGN);

  std::vector<mcp::ToolDef> tools;
  tools.push_back(
      {"run_command", "Run a command in Anvil's sandbox",
       "Run a command in the workspace, in Anvil's sandbox, after the user's command rules "
       "(and the user, when a rule asks) allowed it. Returns the exit status, stdout and "
       "stderr (each capped: the first 16 KiB and the last 48 KiB are kept), what the sandbox "
       "refused, and the one widening that would let a refused command through (ask for it "
       "with widen + reason).",
       mcp::RunCommandInputSchema(), mcp::RunCommandOutputSchema()});
  std::vector<PluginTool> plugin_tools;
  if (options->plugins) plugin_tools = DiscoverPluginTools(*options);
  for (const auto& p : plugin_tools) {
    std::string description = "Run the command '" + SanitizeForDisplay(p.command, 100) +
                              "' of the plugin " + SanitizeForDisplay(p.plugin_id, 100) +
                              " (approved; runs in Anvil's sandbox exactly as `anvil run` would)";
    if (!p.description.empty()) {
      description += ". The plugin says: " + SanitizeForDisplay(p.description, 500);
    }
    tools.push_back({p.name, SanitizeForDisplay(p.plugin_id + " " + p.command, 200), description,
                     mcp::PluginInputSchema(), nullptr});
  }
  // A client ends its server with a signal as often as by closing stdin: blocked here, before
  // any thread exists (so in every thread; children unblock them), and read from a signalfd by the
  // main loop.
  sigset_t stop_set;
  sigemptyset(&stop_set);
  sigaddset(&stop_set, SIGTERM);
  sigaddset(&stop_set, SIGINT);
  sigaddset(&stop_set, SIGHUP);
  UniqueFd stop_fd;
  if (::pthread_sigmask(SIG_BLOCK, &stop_set, nullptr) == 0) {
    stop_fd.Reset(::signalfd(-1, &stop_set, SFD_CLOEXEC));
    if (!stop_fd) ::pthread_sigmask(SIG_UNBLOCK, &stop_set, nullptr);
  }
  Server server(std::move(*options), std::move(tools), std::move(plugin_tools));
  server.SetStopSignals(std::move(stop_fd));
  return server.Serve();
}

}  // namespace anvil::cli
