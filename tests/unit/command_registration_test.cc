// Which workspace/executeCommand registrations `anvil serve` withdraws and adds as the commands
// of its plugins change.
#include "session/lsp/command_registration.h"

#include <gtest/gtest.h>

namespace anvil::session {
namespace command_registration_test {
namespace {

using Names = std::set<std::string>;
using Regs = std::vector<CommandRegistration>;

TEST(CommandRegistrationTest, WithdrawsStaleRegistrationsWholeAndAddsOneForTheRest) {
  struct Case {
    const char* what;
    Names offered;
    Names static_commands;  // the initialize answer's list
    Regs current;
    int64_t next;  // the number of the next registration
    std::vector<std::string> unregister;
    Regs kept;
    std::optional<CommandRegistration> added;
  } cases[] = {
      {"nothing offered, nothing registered", {}, {}, {}, 1, {}, {}, std::nullopt},
      {"all in the initialize answer", {"a/x", "b/y"}, {"a/x", "b/y"}, {}, 1, {}, {}, std::nullopt},
      {"a plugin ready after initialize",
       {"a/x", "b/y", "b/z"},
       {"a/x"},
       {},
       1,
       {},
       {},
       CommandRegistration{"anvil-commands-1", {"b/y", "b/z"}}},
      {"already registered: nothing to do",
       {"a/x", "b/y"},
       {"a/x"},
       {{"anvil-commands-1", {"b/y"}}},
       2,
       {},
       {{"anvil-commands-1", {"b/y"}}},
       std::nullopt},
      {"a command gone: its registration withdrawn, the rest registered again",
       {"b/y"},
       {},
       {{"anvil-commands-1", {"b/y", "b/z"}}},
       2,
       {"anvil-commands-1"},
       {},
       CommandRegistration{"anvil-commands-2", {"b/y"}}},
      {"a plugin stopped: withdrawn, nothing added",
       {"a/x"},
       {"a/x"},
       {{"anvil-commands-1", {"b/y"}}},
       2,
       {"anvil-commands-1"},
       {},
       std::nullopt},
      {"only the stale one of several is withdrawn; the kept stay in order",
       {"b/y", "d/w", "e/v"},
       {},
       {{"anvil-commands-1", {"b/y"}},
        {"anvil-commands-2", {"c/q"}},
        {"anvil-commands-3", {"d/w"}}},
       4,
       {"anvil-commands-2"},
       {{"anvil-commands-1", {"b/y"}}, {"anvil-commands-3", {"d/w"}}},
       CommandRegistration{"anvil-commands-4", {"e/v"}}},
      {"two stale registrations, withdrawn in the order they were made",
       {},
       {},
       {{"anvil-commands-1", {"b/y"}}, {"anvil-commands-2", {"c/q"}}},
       3,
       {"anvil-commands-1", "anvil-commands-2"},
       {},
       std::nullopt},
      {"a static command gone: the static list cannot be withdrawn",
       {"b/y"},
       {"a/x"},
       {},
       4,
       {},
       {},
       CommandRegistration{"anvil-commands-4", {"b/y"}}},
      {"a static command back: still static, not registered",
       {"a/x"},
       {"a/x"},
       {},
       4,
       {},
       {},
       std::nullopt},
      {"a command both static and in a kept registration: nothing added",
       {"a/x", "b/y"},
       {"a/x"},
       {{"anvil-commands-1", {"a/x", "b/y"}}},
       2,
       {},
       {{"anvil-commands-1", {"a/x", "b/y"}}},
       std::nullopt},
  };
  for (const auto& c : cases) {
    const RegistrationChange change =
        DiffCommandRegistrations(c.offered, c.static_commands, c.current, c.next);
    EXPECT_EQ(change.unregister, c.unregister) << c.what;
    EXPECT_EQ(change.kept, c.kept) << c.what;
    EXPECT_EQ(change.added, c.added) << c.what;
  }
}

}  // namespace
}  // namespace command_registration_test
}  // namespace anvil::session
