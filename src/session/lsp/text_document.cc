#include "session/lsp/text_document.h"

#include <algorithm>

#include "session/lsp/document_uri.h"

namespace anvil::session {
namespace {

using nlohmann::json;

// Length of the UTF-8 sequence led by `c` (text from JSON is valid UTF-8; a stray byte counts
// as one so a bad input can never make the walk stall).
std::size_t SequenceLength(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c & 0xe0) == 0xc0) return 2;
  if ((c & 0xf0) == 0xe0) return 3;
  if ((c & 0xf8) == 0xf0) return 4;
  return 1;
}

std::size_t Units(std::size_t sequence_length, PositionEncoding encoding) {
  if (encoding == PositionEncoding::kUtf8) return sequence_length;
  return sequence_length == 4 ? 2 : 1;  // astral code points are a surrogate pair in UTF-16
}

Result<Position> ParsePosition(const json& j, const char* what) {
  if (!j.is_object() || !j.contains("line") || !j.contains("character") ||
      !j["line"].is_number_integer() || !j["character"].is_number_integer() || j.size() != 2) {
    return Fail("invalid", std::string(what) + " must be {line=, character=} (integers)");
  }
  Position p{j["line"].get<int64_t>(), j["character"].get<int64_t>()};
  if (p.line < 0 || p.character < 0) {
    return Fail("invalid", std::string(what) + " has a negative line or character");
  }
  return p;
}

json ToJson(Position p) { return {{"line", p.line}, {"character", p.character}}; }

}  // namespace

std::string_view ToString(PositionEncoding encoding) {
  return encoding == PositionEncoding::kUtf8 ? "utf-8" : "utf-16";
}

LineIndex::LineIndex(std::string_view text) : text_(text) {
  starts_.push_back(0);
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
    if (text[i] == '\n' || text[i] == '\r') starts_.push_back(i + 1);
  }
}

std::size_t LineIndex::LineEnd(std::size_t line) const {
  if (line + 1 >= starts_.size()) return text_.size();
  std::size_t next = starts_[line + 1];
  if (next >= 2 && text_[next - 2] == '\r' && text_[next - 1] == '\n') return next - 2;
  return next - 1;
}

Result<std::size_t> LineIndex::Offset(Position p, PositionEncoding encoding, bool strict) const {
  if (p.line < 0 || p.character < 0) return Fail("invalid", "negative line or character");
  if (static_cast<uint64_t>(p.line) >= starts_.size()) {
    if (strict) {
      return Fail("invalid", "line " + std::to_string(p.line) + " is past the end (the text has " +
                                 std::to_string(starts_.size()) + " lines)");
    }
    return text_.size();
  }
  std::size_t line = static_cast<std::size_t>(p.line);
  std::size_t pos = starts_[line], end = LineEnd(line);
  uint64_t want = static_cast<uint64_t>(p.character), have = 0;
  while (have < want && pos < end) {
    std::size_t len = std::min(SequenceLength(static_cast<unsigned char>(text_[pos])), end - pos);
    std::size_t units = Units(len, encoding);
    if (have + units > want) {
      if (strict) {
        return Fail("invalid", "line " + std::to_string(p.line) + " character " +
                                   std::to_string(p.character) + " is inside a character");
      }
      break;
    }
    have += units;
    pos += len;
  }
  if (have < want && strict) {
    return Fail("invalid", "character " + std::to_string(p.character) +
                               " is past the end of line " + std::to_string(p.line));
  }
  return pos;
}

Position LineIndex::PositionAt(std::size_t offset, PositionEncoding encoding) const {
  offset = std::min(offset, text_.size());
  auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
  std::size_t line = static_cast<std::size_t>(it - starts_.begin()) - 1;
  std::size_t pos = starts_[line];
  int64_t character = 0;
  while (pos < offset) {
    std::size_t len =
        std::min(SequenceLength(static_cast<unsigned char>(text_[pos])), offset - pos);
    character += static_cast<int64_t>(Units(len, encoding));
    pos += len;
  }
  return {static_cast<int64_t>(line), character};
}

Status BufferStore::Open(const std::string& uri, const std::string& language, int64_t version,
                         std::string text) {
  if (uri.empty() || uri.size() > 4096)
    return Fail("invalid", "a document uri must be 1-4096 bytes");
  if (text.size() > kMaxBufferBytes) {
    docs_.erase(uri);
    return Fail("limit", "document " + uri + " is over 8 MiB; plugins will not see it");
  }
  if (!docs_.count(uri) && docs_.size() >= kMaxBuffers) {
    return Fail("limit", "more than 1024 open documents; " + uri + " is not tracked");
  }
  TextDocument doc;
  doc.uri = uri;
  doc.language = language.substr(0, 64);
  doc.version = version;
  doc.text = std::move(text);
  docs_[uri] = std::move(doc);
  return Ok();
}

Status BufferStore::Change(const std::string& uri, int64_t version, const json& changes,
                           PositionEncoding encoding) {
  auto it = docs_.find(uri);
  if (it == docs_.end())
    return Fail("not_found", "didChange for a document that is not open: " + uri);
  TextDocument& doc = it->second;
  auto refuse = [&](const std::string& why) -> Status {
    docs_.erase(it);  // a copy that may be wrong is worse than none
    return Fail("invalid", "didChange of " + uri + " refused (" + why +
                               "); the document is no longer tracked until it is reopened");
  };
  if (version <= doc.version) {
    return refuse("version " + std::to_string(version) + " is not after " +
                  std::to_string(doc.version));
  }
  if (!changes.is_array()) return refuse("contentChanges must be an array");
  std::string text = doc.text;
  for (const auto& change : changes) {
    if (!change.is_object() || !change.contains("text") || !change["text"].is_string()) {
      return refuse("each content change needs a text string");
    }
    const std::string& piece = change["text"].get_ref<const std::string&>();
    if (!change.contains("range")) {
      text = piece;
    } else {
      const json& range = change["range"];
      if (!range.is_object() || !range.contains("start") || !range.contains("end")) {
        return refuse("range needs start and end");
      }
      auto start = ParsePosition(range["start"], "range.start");
      auto end = ParsePosition(range["end"], "range.end");
      if (!start || !end) return refuse((!start ? start : end).error().message);
      LineIndex index(text);
      std::size_t a = *index.Offset(*start, encoding, false);
      std::size_t b = *index.Offset(*end, encoding, false);
      if (b < a) return refuse("range end is before its start");
      text.replace(a, b - a, piece);
    }
    if (text.size() > kMaxBufferBytes) return refuse("the document grew over 8 MiB");
  }
  doc.text = std::move(text);
  doc.version = version;
  doc.version_consumed = false;
  doc.edit_in_flight = 0;
  return Ok();
}

Status BufferStore::Close(const std::string& uri) {
  if (docs_.erase(uri) == 0)
    return Fail("not_found", "didClose for a document that is not open: " + uri);
  return Ok();
}

const TextDocument* BufferStore::Find(const std::string& uri) const {
  auto it = docs_.find(uri);
  return it == docs_.end() ? nullptr : &it->second;
}

const TextDocument* BufferStore::FindByPath(std::string_view path,
                                            std::string_view workspace) const {
  for (const auto& [uri, doc] : docs_) {
    auto rel = WorkspacePathOfUri(uri, workspace);
    if (rel && *rel == path) return &doc;
  }
  return nullptr;
}

Result<PreparedEdit> BufferStore::PrepareEdit(const std::string& uri, int64_t version,
                                              std::string_view edits_json,
                                              PositionEncoding encoding) {
  auto it = docs_.find(uri);
  if (it == docs_.end()) return Fail("not_found", "no open buffer " + uri);
  TextDocument& doc = it->second;
  if (version != doc.version || doc.version_consumed) {
    return Fail("stale", "buffer " + uri + " changed since version " + std::to_string(version) +
                             " (read it again with editor.buffer.get)");
  }
  if (doc.edit_in_flight) {
    return Fail("stale", "another edit of " + uri + " is in flight (read it again and retry)");
  }
  json edits = json::parse(edits_json, nullptr, false);
  if (edits.is_discarded() || !edits.is_array() || edits.empty()) {
    return Fail("invalid", "edits must be a non-empty list");
  }
  if (edits.size() > kMaxEditsPerCall) return Fail("invalid", "more than 1000 edits in one call");
  struct Span {
    std::size_t start, end;
    std::string text;
  };
  std::vector<Span> spans;
  LineIndex index(doc.text);
  std::size_t added = 0;
  for (const auto& e : edits) {
    if (!e.is_object() || !e.contains("text") || !e["text"].is_string()) {
      return Fail("invalid", "each edit needs a text string");
    }
    for (const auto& [key, value] : e.items()) {
      if (key != "text" && key != "range") {
        return Fail("invalid", "unknown edit field '" + key + "' (edits have text and range)");
      }
    }
    Span s{0, doc.text.size(), e["text"].get<std::string>()};
    added += s.text.size();
    if (e.contains("range")) {
      const json& r = e["range"];
      if (!r.is_object() || r.size() != 2 || !r.contains("start") || !r.contains("end")) {
        return Fail("invalid", "range must be {start=, end=}");
      }
      ANVIL_TRY(a, ParsePosition(r["start"], "range.start"));
      ANVIL_TRY(b, ParsePosition(r["end"], "range.end"));
      ANVIL_TRY(from, index.Offset(*a, PositionEncoding::kUtf8, true));
      ANVIL_TRY(to, index.Offset(*b, PositionEncoding::kUtf8, true));
      if (*to < *from) return Fail("invalid", "range end is before its start");
      s.start = *from;
      s.end = *to;
    } else if (edits.size() != 1) {
      return Fail("invalid", "an edit without a range replaces the whole buffer and must be alone");
    }
    spans.push_back(std::move(s));
  }
  std::stable_sort(spans.begin(), spans.end(),
                   [](const Span& x, const Span& y) { return x.start < y.start; });
  for (std::size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].start < spans[i - 1].end) return Fail("invalid", "edits overlap");
  }
  if (doc.text.size() + added > kMaxBufferBytes + kMaxBufferBytes) {
    return Fail("limit", "the edits are too large");
  }
  PreparedEdit out;
  out.uri = uri;
  out.version = version;
  out.lsp_edits = json::array();
  std::size_t copied = 0;
  for (const auto& s : spans) {
    out.new_text.append(doc.text, copied, s.start - copied);
    out.new_text += s.text;
    copied = s.end;
    out.lsp_edits.push_back({{"range",
                              {{"start", ToJson(index.PositionAt(s.start, encoding))},
                               {"end", ToJson(index.PositionAt(s.end, encoding))}}},
                             {"newText", s.text}});
  }
  out.new_text.append(doc.text, copied, std::string::npos);
  if (out.new_text.size() > kMaxBufferBytes)
    return Fail("limit", "the edited buffer is over 8 MiB");
  out.sequence = next_edit_++;
  doc.edit_in_flight = out.sequence;
  return out;
}

void BufferStore::FinishEdit(const PreparedEdit& edit, bool applied) {
  auto it = docs_.find(edit.uri);
  if (it == docs_.end() || it->second.edit_in_flight != edit.sequence) return;
  it->second.edit_in_flight = 0;
  if (applied && it->second.version == edit.version) {
    it->second.text = edit.new_text;
    it->second.version_consumed = true;
  }
}

}  // namespace anvil::session
