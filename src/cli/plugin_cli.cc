#include "cli/plugin_cli.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/fd_io.h"
#include "common/unique_fd.h"
#include "fs/file_io.h"
#include "ipc/plugin_trace.h"
#include "policy/display_text.h"

namespace anvil::cli::plugin_cli {

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
std::string Shown(std::string_view text, size_t max) { return SanitizeForDisplay(text, max); }

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

std::string CapErrorText(const std::string& text, size_t max) {
  if (text.size() <= max) return text;
  size_t keep = max;
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  return text.substr(0, keep) + " [" + std::to_string(text.size() - keep) + " more bytes cut]";
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
  if (!fd_io::WriteAll(fd, bytes, fd_io::Wait::NoWait())) {
    const int saved = errno;
    ::close(fd);
    return SysFail("io", "write " + path, saved);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) return SysFail("io", "write " + path);
  return Ok();
}

}  // namespace anvil::cli::plugin_cli
