// The trusted side's copy of the editor's open buffers (invariant 8: a stale snapshot cannot
// mutate the editor buffer). The editor owns the versions (LSP textDocument versions); a plugin
// reads a snapshot {uri, version, text} and submits edits against that version. An edit is
// accepted only against the current version, only once per version and only when no other
// edit is in flight: anything else is refused "stale", never merged or rebased. The accepted
// edit goes to the editor as a *versioned* workspace/applyEdit, so the editor refuses it too if
// its buffer moved on meanwhile.
//
// Positions: the editor side uses LSP positions (line, character) in the negotiated encoding
// (UTF-16 code units by default, UTF-8 bytes when the client offers it). Plugins address text
// by line and UTF-8 byte column, the unit of the string they were given. Lines end at "\n",
// "\r\n" or "\r", as in LSP.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace anvil::session {

inline constexpr std::size_t kMaxBufferBytes = 8u << 20;
inline constexpr std::size_t kMaxBuffers = 1024;
inline constexpr std::size_t kMaxEditsPerCall = 1000;

enum class PositionEncoding { kUtf16, kUtf8 };
std::string_view ToString(PositionEncoding encoding);  // "utf-16", "utf-8"

struct Position {
  int64_t line = 0;
  int64_t character = 0;
};

// Line starts of a text, to turn positions into byte offsets and back.
class LineIndex {
 public:
  explicit LineIndex(std::string_view text);
  // Strict: a position past the end of its line or of the text, or inside a character, is an
  // "invalid" error. Lenient (LSP rules for editor input): clamped to the line / the text.
  Result<std::size_t> Offset(Position p, PositionEncoding encoding, bool strict) const;
  Position PositionAt(std::size_t offset, PositionEncoding encoding) const;

 private:
  std::string_view text_;
  std::vector<std::size_t> starts_;             // byte offset of each line's first byte
  std::size_t LineEnd(std::size_t line) const;  // offset of the line's terminator (or text end)
};

struct TextDocument {
  std::string uri;
  std::string language;
  int64_t version = 0;
  std::string text;
  uint64_t edit_in_flight = 0;    // sequence of a plugin edit sent to the editor (0: none)
  bool version_consumed = false;  // an edit was applied against `version`: next needs a new one
};

// An accepted plugin edit: what to send to the editor and what the text becomes.
struct PreparedEdit {
  std::string uri;
  int64_t version = 0;
  uint64_t sequence = 0;
  nlohmann::json lsp_edits;  // TextEdit[] against the snapshot, in the editor's encoding
  std::string new_text;
};

class BufferStore {
 public:
  // textDocument/didOpen, didChange, didClose. Errors say why the editor's message was refused
  // (the buffer is then dropped: a plugin sees not_found rather than a copy that may be wrong).
  Status Open(const std::string& uri, const std::string& language, int64_t version,
              std::string text);
  Status Change(const std::string& uri, int64_t version, const nlohmann::json& changes,
                PositionEncoding encoding);
  Status Close(const std::string& uri);

  const TextDocument* Find(const std::string& uri) const;
  // The open document whose file:// URI names `path` (workspace-relative) in `workspace`.
  const TextDocument* FindByPath(std::string_view path, std::string_view workspace) const;
  std::size_t size() const { return docs_.size(); }

  // editor.buffer.edit: the stale check and the validation of `edits_json` (a plugin's list
  // of {text=} or {range={start={line,character},end={...}}, text=}, columns in UTF-8 bytes).
  // On success the document is marked edit_in_flight (a new version from the editor clears it:
  // the editor then refuses the old versioned edit by itself).
  Result<PreparedEdit> PrepareEdit(const std::string& uri, int64_t version,
                                   std::string_view edits_json, PositionEncoding encoding);
  // The editor's answer to the applyEdit of `edit`.
  void FinishEdit(const PreparedEdit& edit, bool applied);

 private:
  std::map<std::string, TextDocument> docs_;
  uint64_t next_edit_ = 1;
};

}  // namespace anvil::session
