// LSP workspace/executeCommand in `anvil serve`: the plugins' commands as "PLUGIN_ID/COMMAND",
// the request mapped onto anvil/runCommand, and the commands' dynamic registration with the
// client (what to withdraw and add: command_registration.h).
#include <set>
#include <string>
#include <utility>

#include "session/lsp/command_registration.h"
#include "session/serve_server.h"

namespace anvil::session::serve {

// "PLUGIN_ID/COMMAND" for every command of every ready plugin: what workspace/executeCommand
// accepts. A plugin id never contains '/', so the first '/' splits it unambiguously.
json Server::ExecuteCommandList() const {
  json commands = json::array();
  for (const auto& p : plugins_) {
    if (p->state != PluginState::kReady) continue;
    for (const auto& c : p->commands) commands.push_back(p->entry.id + "/" + c);
  }
  return commands;
}

void Server::SyncCommandRegistrations() {
  if (!dynamic_commands_ || !client_initialized_ || pending_initialize_id_ || shutdown_requested_) {
    return;
  }
  std::set<std::string> offered;
  for (const auto& c : ExecuteCommandList()) offered.insert(c.get<std::string>());
  // Every registration that names a command no longer offered is withdrawn; its other commands
  // are registered again, in the one new registration.
  RegistrationChange change = DiffCommandRegistrations(offered, static_commands_,
                                                       command_registrations_, next_registration_);
  command_registrations_ = std::move(change.kept);
  if (!change.unregister.empty()) {
    json gone = json::array();
    for (const auto& id : change.unregister) {
      gone.push_back({{"id", id}, {"method", "workspace/executeCommand"}});
    }
    // LSP 3.17 spells the array "unregisterations".
    SendRequest("client/unregisterCapability", {{"unregisterations", gone}},
                [](const json*, const json*) {});
  }
  if (!change.added) return;
  ++next_registration_;
  json reg = {{"id", change.added->id},
              {"method", "workspace/executeCommand"},
              {"registerOptions", {{"commands", json(change.added->commands)}}}};
  SendRequest("client/registerCapability", {{"registrations", json::array({reg})}},
              [](const json*, const json*) {});
  command_registrations_.push_back(std::move(*change.added));
}

// The standard LSP request, mapped onto anvil/runCommand: command "PLUGIN_ID/COMMAND",
// arguments passed to the plugin as its argument array, the same consent state checks, queue,
// deadline, $/cancelRequest and workDoneToken progress. The answer is the command's value.
void Server::ExecuteCommand(const json& id, const json& params) {
  const json* command = Find(params, {"command"});
  if (!command || !command->is_string()) {
    return ReplyError(id, kInvalidParams, "invalid params: params.command must be a string");
  }
  const std::string& text = command->get_ref<const std::string&>();
  const auto slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == text.size()) {
    return ReplyError(id, kInvalidParams,
                      "invalid params: command must be \"PLUGIN_ID/COMMAND\", got \"" +
                          SanitizeForDisplay(text, 200) + "\"");
  }
  json mapped = {{"plugin", text.substr(0, slash)}, {"command", text.substr(slash + 1)}};
  if (params.contains("arguments")) {
    if (!params["arguments"].is_array()) {
      return ReplyError(id, kInvalidParams, "invalid params: params.arguments must be an array");
    }
    mapped["arguments"] = params["arguments"];
  }
  if (params.contains("workDoneToken")) mapped["workDoneToken"] = params["workDoneToken"];
  RunCommand(id, mapped, /*bare_result=*/true);
}

}  // namespace anvil::session::serve
