// What `anvil run`, `anvil plugin` and `anvil audit` share on the terminal: exit codes, how an
// error, a plugin's error and a command's result are shown (every plugin- or file-controlled
// string sanitized), the --json line, and asking the person on the controlling terminal.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/result.h"

namespace anvil::cli::plugin_cli {

inline constexpr int kExitOk = 0, kExitPluginError = 1, kExitUsage = 2, kExitRefused = 3,
                     kExitTimeout = 124, kExitSandbox = 125;

// Under a plugin error (PluginErrorLines): where it happened and the stack (ipc/plugin_trace.h),
// each line marked as the plugin's like the error's own further lines ("[id]   at main.lua:2"),
// every plugin string sanitized to one line and capped; "" without a trace.
std::string TraceLines(const std::string& id, const Error& e);

// The exit code of a failed command: 124 timeout, 125 sandbox, 1 anything else.
int ExitFor(const Error& e);

// What Anvil prints on a terminal passes SanitizeForDisplay (policy/display_text.h): errors
// carry plugin-, manifest- and file-controlled text (a module name, a thrown message, a path, the
// host's stderr), and a raw escape sequence in them would reach the user's terminal.
std::string Shown(std::string_view text, size_t max = 2000);

// "<who>: <code>: <message>" on one line.
std::string ErrorLine(std::string_view who, const Error& e);

// An error that carries the plugin's own words (a load, start-up or command failure): its lines
// are kept, the first after "anvil run: ", every later one marked "[plugin.id] ", so no line of
// it can pass for one of Anvil's own ("anvil: Allow ... [y/N]").
std::string PluginErrorLines(const std::string& id, const Error& e);

// The command's result as shown to a person (not --json): sanitized with its lines kept, as
// is, except that a line that could pass for one of Anvil's own ("anvil: Allow ... [y/N]",
// look-alike letters included) starts with the plugin's mark.
std::string ResultLines(const std::string& id, const std::string& text);

// JSON for --json: every non-ASCII character \u-escaped (so nothing in it can act on a terminal,
// C1 controls and bidi characters included) and invalid UTF-8 replaced (never an exception).
// Decoding it gives back exactly the value the plugin returned.
std::string JsonLine(const nlohmann::json& j);

// A plugin's error text for --json: at most `max` bytes, cut before a UTF-8 character's
// continuation bytes and followed by how many were cut (text mode shows at most a few KiB).
inline constexpr size_t kJsonErrorTextMax = 64 * 1024;
std::string CapErrorText(const std::string& text, size_t max = kJsonErrorTextMax);

// realpath(3) of `path`; "" when it does not exist.
std::string Canonical(const std::string& path);

// Asks on the controlling terminal (never stdin: a script's input must not answer for the
// user). No terminal: no consent.
bool AskOnTerminal(const std::string& prompt);

Result<std::string> ReadSmallFile(const std::string& path, size_t max);

// Writes a new file only (O_EXCL): keygen never overwrites a key someone already relies on.
Status WriteNewFile(const std::string& path, const std::string& bytes, mode_t mode);

}  // namespace anvil::cli::plugin_cli
