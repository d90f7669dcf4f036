// Where a plugin error happened: the file, line and column the VM gives, the source line and a
// short stack. Made by the plugin host (untrusted: a compromised VM can send anything) and sent
// as the optional third field of an error response on the session channel; the trusted side
// decodes it again with the same caps and shows it through SanitizeForDisplay, one field per
// line, so no plugin text can start a line of its own, move the cursor or exceed the caps.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace anvil::ipc {

// Caps, applied when a trace is made (host) and again when it is read (trusted side).
inline constexpr std::size_t kMaxTraceFrames = 8;         // frames kept, innermost first
inline constexpr std::size_t kMaxTraceFrameBytes = 160;   // one frame's text
inline constexpr std::size_t kMaxTraceFileBytes = 128;    // the file name
inline constexpr std::size_t kMaxTraceSourceBytes = 160;  // the source line
inline constexpr std::size_t kMaxTraceWireBytes = 4096;   // the encoded trace

struct PluginTrace {
  std::string file;                // "main.lua", "lib/util.js"; empty when the VM gave no location
  int line = 0;                    // 1-based; 0 unknown
  int column = 0;                  // 1-based; 0 when the runtime gives none (Lua)
  std::string source;              // the text of that line of the plugin's file (untrusted)
  std::vector<std::string> stack;  // "at f (main.js:3:5)", "main.lua:3: in function 'f'"
  bool stack_truncated = false;    // more frames than kMaxTraceFrames
  std::string note;  // why the location is approximate or missing (fixed text from the host)

  bool empty() const { return file.empty() && stack.empty() && note.empty(); }
};

// Cuts `text` to at most `max` bytes on a UTF-8 boundary (no partial code point).
std::string CapUtf8(std::string_view text, std::size_t max);

// Line `line` (1-based) of `code`, without its newline, capped; empty when out of range.
std::string SourceLine(std::string_view code, int line);

// JSON text for the wire, with every cap applied ("" for an empty trace).
std::string EncodePluginTrace(const PluginTrace& trace);

// Reads a trace from untrusted JSON text: wrong types, oversized or malformed input give
// nullopt (the error is shown without a location); strings and frames are capped again.
std::optional<PluginTrace> DecodePluginTrace(std::string_view text);

// For people: lines (no trailing newline) each starting with `indent`, every plugin string
// sanitized for a terminal:
//   at main.js:3:9
//      3 | let x = ;
//   stack:
//     at run (main.js:3:9)
std::string FormatPluginTrace(const PluginTrace& trace, std::string_view indent = "  ");

// "main.js:3:9" / "main.lua:3" (sanitized), or "" without a location.
std::string TraceLocation(const PluginTrace& trace);

// For JSON-RPC error data (docs/protocol.md): {"file","line","column","source","stack",
// "stackTruncated","note"}, strings sanitized; absent fields left out.
nlohmann::json PluginTraceJson(const PluginTrace& trace);

}  // namespace anvil::ipc
