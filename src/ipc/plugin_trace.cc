#include "ipc/plugin_trace.h"

#include "policy/display_text.h"

namespace anvil::ipc {
namespace {

using nlohmann::json;

constexpr int kMaxLine = 100'000'000;

// The sanitizer counts code points; the caps here are bytes, so give it the larger bound and
// let the byte cap (applied first) decide.
std::string Shown(std::string_view text, std::size_t max_bytes) {
  return SanitizeForDisplay(CapUtf8(text, max_bytes), max_bytes);
}

}  // namespace

std::string CapUtf8(std::string_view text, std::size_t max) {
  if (text.size() <= max) return std::string(text);
  std::size_t end = max;
  // Back up over continuation bytes so no code point is cut in half.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end));
}

std::string SourceLine(std::string_view code, int line) {
  if (line <= 0) return "";
  std::size_t start = 0;
  for (int i = 1; i < line; ++i) {
    const auto nl = code.find('\n', start);
    if (nl == std::string_view::npos) return "";
    start = nl + 1;
  }
  auto end = code.find('\n', start);
  if (end == std::string_view::npos) end = code.size();
  std::string_view text = code.substr(start, end - start);
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  return CapUtf8(text, kMaxTraceSourceBytes);
}

std::string EncodePluginTrace(const PluginTrace& trace) {
  if (trace.empty()) return "";
  json j = json::object();
  if (!trace.file.empty()) {
    j["file"] = CapUtf8(trace.file, kMaxTraceFileBytes);
    j["line"] = trace.line;
    if (trace.column > 0) j["column"] = trace.column;
    if (!trace.source.empty()) j["source"] = CapUtf8(trace.source, kMaxTraceSourceBytes);
  }
  json stack = json::array();
  for (std::size_t i = 0; i < trace.stack.size() && i < kMaxTraceFrames; ++i) {
    stack.push_back(CapUtf8(trace.stack[i], kMaxTraceFrameBytes));
  }
  if (!stack.empty()) j["stack"] = std::move(stack);
  if (trace.stack_truncated || trace.stack.size() > kMaxTraceFrames) j["stackTruncated"] = true;
  if (!trace.note.empty()) j["note"] = CapUtf8(trace.note, kMaxTraceFrameBytes);
  std::string out = j.dump(-1, ' ', false, json::error_handler_t::replace);
  // Every field is capped, so this holds; should the caps ever grow, drop the stack first.
  if (out.size() > kMaxTraceWireBytes) {
    j.erase("stack");
    j["stackTruncated"] = true;
    out = j.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  return out;
}

std::optional<PluginTrace> DecodePluginTrace(std::string_view text) {
  if (text.empty() || text.size() > kMaxTraceWireBytes) return std::nullopt;
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  PluginTrace t;
  auto str = [&](const char* key, std::size_t max, std::string* out) {
    auto it = j.find(key);
    if (it == j.end()) return true;
    if (!it->is_string()) return false;
    *out = CapUtf8(it->get_ref<const std::string&>(), max);
    return true;
  };
  auto num = [&](const char* key, int* out) {
    auto it = j.find(key);
    if (it == j.end()) return true;
    if (!it->is_number_integer()) return false;
    const auto v = it->get<int64_t>();
    if (v < 0 || v > kMaxLine) return false;
    *out = static_cast<int>(v);
    return true;
  };
  if (!str("file", kMaxTraceFileBytes, &t.file) || !num("line", &t.line) ||
      !num("column", &t.column) || !str("source", kMaxTraceSourceBytes, &t.source) ||
      !str("note", kMaxTraceFrameBytes, &t.note)) {
    return std::nullopt;
  }
  if (auto it = j.find("stack"); it != j.end()) {
    if (!it->is_array()) return std::nullopt;
    for (const auto& frame : *it) {
      if (!frame.is_string()) return std::nullopt;
      if (t.stack.size() == kMaxTraceFrames) {
        t.stack_truncated = true;
        break;
      }
      t.stack.push_back(CapUtf8(frame.get_ref<const std::string&>(), kMaxTraceFrameBytes));
    }
  }
  if (auto it = j.find("stackTruncated"); it != j.end()) {
    if (!it->is_boolean()) return std::nullopt;
    t.stack_truncated = t.stack_truncated || it->get<bool>();
  }
  if (t.file.empty()) {
    t.line = 0;
    t.column = 0;
    t.source.clear();
  }
  if (t.empty()) return std::nullopt;
  return t;
}

std::string TraceLocation(const PluginTrace& t) {
  if (t.file.empty()) return "";
  std::string out = Shown(t.file, kMaxTraceFileBytes);
  if (t.line > 0) out += ":" + std::to_string(t.line);
  if (t.line > 0 && t.column > 0) out += ":" + std::to_string(t.column);
  return out;
}

std::string FormatPluginTrace(const PluginTrace& t, std::string_view indent) {
  const std::string in(indent);
  std::string out;
  auto line = [&](const std::string& text) {
    if (!out.empty()) out += '\n';
    out += in + text;
  };
  if (!t.file.empty()) {
    line("at " + TraceLocation(t));
    if (!t.source.empty() && t.line > 0) {
      line("  " + std::to_string(t.line) + " | " + Shown(t.source, kMaxTraceSourceBytes));
    }
  }
  if (!t.note.empty()) line("(" + Shown(t.note, kMaxTraceFrameBytes) + ")");
  if (!t.stack.empty()) {
    line("stack:");
    for (const auto& frame : t.stack) line("  " + Shown(frame, kMaxTraceFrameBytes));
    if (t.stack_truncated) line("  ...");
  }
  return out;
}

json PluginTraceJson(const PluginTrace& t) {
  json j = json::object();
  if (!t.file.empty()) {
    j["file"] = Shown(t.file, kMaxTraceFileBytes);
    if (t.line > 0) j["line"] = t.line;
    if (t.column > 0) j["column"] = t.column;
    if (!t.source.empty()) j["source"] = Shown(t.source, kMaxTraceSourceBytes);
  }
  if (!t.stack.empty()) {
    json stack = json::array();
    for (const auto& frame : t.stack) stack.push_back(Shown(frame, kMaxTraceFrameBytes));
    j["stack"] = std::move(stack);
  }
  if (t.stack_truncated) j["stackTruncated"] = true;
  if (!t.note.empty()) j["note"] = Shown(t.note, kMaxTraceFrameBytes);
  return j;
}

}  // namespace anvil::ipc
