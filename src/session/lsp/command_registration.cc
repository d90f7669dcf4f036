#include "session/lsp/command_registration.h"

namespace anvil::session {

RegistrationChange DiffCommandRegistrations(const std::set<std::string>& offered,
                                            const std::set<std::string>& static_commands,
                                            const std::vector<CommandRegistration>& current,
                                            int64_t next_number) {
  RegistrationChange change;
  std::set<std::string> registered = static_commands;
  for (const auto& r : current) {
    bool stale = false;
    for (const auto& c : r.commands) stale = stale || !offered.count(c);
    if (stale) {
      change.unregister.push_back(r.id);
    } else {
      registered.insert(r.commands.begin(), r.commands.end());
      change.kept.push_back(r);
    }
  }
  CommandRegistration added{"anvil-commands-" + std::to_string(next_number), {}};
  for (const auto& c : offered) {
    if (!registered.count(c)) added.commands.insert(c);
  }
  if (!added.commands.empty()) change.added = std::move(added);
  return change;
}

}  // namespace anvil::session
