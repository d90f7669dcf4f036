// Which workspace/executeCommand registrations `anvil serve` withdraws and which it adds when
// the commands its plugins offer change (LSP dynamic registration: client/registerCapability,
// client/unregisterCapability). Pure; the session sends the requests.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace anvil::session {

// One client/registerCapability of workspace/executeCommand: its id and the commands it named.
struct CommandRegistration {
  std::string id;
  std::set<std::string> commands;

  bool operator==(const CommandRegistration&) const = default;
};

struct RegistrationChange {
  // Registrations that name a command no longer offered, withdrawn whole (a registration cannot
  // shrink): their ids, in the order they were registered.
  std::vector<std::string> unregister;
  // The registrations that stay, in order.
  std::vector<CommandRegistration> kept;
  // One new registration, "anvil-commands-N" (N = `next_number`), of every offered command that
  // neither the initialize answer's static list nor a kept registration names: the commands of
  // a withdrawn registration that are still offered are registered again here. None when
  // nothing is left to register.
  std::optional<CommandRegistration> added;
};

// `offered`: "PLUGIN_ID/COMMAND" of every command of every ready plugin; `static_commands`: the
// list the initialize answer gave (it cannot be withdrawn); `current`: the registrations made so
// far, oldest first.
RegistrationChange DiffCommandRegistrations(const std::set<std::string>& offered,
                                            const std::set<std::string>& static_commands,
                                            const std::vector<CommandRegistration>& current,
                                            int64_t next_number);

}  // namespace anvil::session
