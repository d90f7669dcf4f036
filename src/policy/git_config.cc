#include "policy/git_config.h"

#include <cstdlib>

#include "common/ascii.h"

namespace anvil {
namespace {

// git's own character classes (git-compat-util.h): ASCII only, whatever the locale.
bool IsSpace(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsAlpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAlnum(int c) { return IsAlpha(c) || (c >= '0' && c <= '9'); }
bool IsKeyChar(int c) { return IsAlnum(c) || c == '-'; }
char Lower(int c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c); }

// One character at a time as git's get_next_char: CRLF reads as LF, the end of the text reads
// as a final LF with `eof` set.
class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  int Next() {
    if (pos_ >= text_.size()) {
      eof_ = true;
      return '\n';
    }
    int c = static_cast<unsigned char>(text_[pos_++]);
    if (c == '\r' && pos_ < text_.size() && text_[pos_] == '\n') {
      ++pos_;
      c = '\n';
    }
    if (c == '\n') ++line_;
    return c;
  }
  bool eof() const { return eof_; }
  int line() const { return line_; }
  size_t pos() const { return pos_; }
  void Skip(size_t n) { pos_ += n; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  bool eof_ = false;
};

Error BadLine(int line, const std::string& why) {
  return Error{"invalid", "bad git config line " + std::to_string(line) + ": " + why};
}

// After `[`: the section name, and a quoted subsection when a blank follows it. Returns the
// name as git builds it ("section" or "section.subsection").
Result<std::string> ReadSectionHeader(Reader& in, size_t max_name) {
  std::string name;
  const int line = in.line();
  for (;;) {
    int c = in.Next();
    if (in.eof()) return tl::unexpected(BadLine(line, "unterminated section header"));
    if (c == ']') return name;
    if (IsSpace(c)) {
      // [section "subsection"]: blanks (not a line end), a quoted name, then `]` at once.
      do {
        if (c == '\n') return tl::unexpected(BadLine(line, "section header ends early"));
        c = in.Next();
      } while (IsSpace(c));
      if (c != '"') return tl::unexpected(BadLine(line, "subsection must be in double quotes"));
      name.push_back('.');
      for (;;) {
        c = in.Next();
        if (c == '\n') return tl::unexpected(BadLine(line, "unterminated subsection name"));
        if (c == '"') break;
        if (c == '\\') {
          c = in.Next();
          if (c == '\n') return tl::unexpected(BadLine(line, "unterminated subsection name"));
        }
        name.push_back(static_cast<char>(c));
        if (name.size() > max_name) return tl::unexpected(BadLine(line, "name too long"));
      }
      if (in.Next() != ']') {
        return tl::unexpected(BadLine(line, "expected ']' after the subsection name"));
      }
      return name;
    }
    if (!IsKeyChar(c) && c != '.') {
      return tl::unexpected(BadLine(line, "invalid character in section name"));
    }
    name.push_back(Lower(c));
    if (name.size() > max_name) return tl::unexpected(BadLine(line, "name too long"));
  }
}

// After `=`: git's parse_value. Blanks before the value and after it (outside quotes) are
// dropped, those inside are kept; `#`/`;` outside quotes start a comment.
Result<std::string> ReadValue(Reader& in, int line) {
  std::string value;
  bool quote = false, comment = false;
  size_t trim_len = 0;
  for (;;) {
    int c = in.Next();
    if (c == '\n') {
      if (quote) return tl::unexpected(BadLine(line, "unterminated double quote"));
      if (trim_len) value.resize(trim_len);
      return value;
    }
    if (comment) continue;
    if (IsSpace(c) && !quote) {
      if (!trim_len) trim_len = value.size();
      if (!value.empty()) value.push_back(static_cast<char>(c));
      continue;
    }
    if (!quote && (c == ';' || c == '#')) {
      comment = true;
      continue;
    }
    trim_len = 0;
    if (c == '\\') {
      c = in.Next();
      switch (c) {
        case '\n':
          continue;  // continuation
        case 't':
          c = '\t';
          break;
        case 'b':
          c = '\b';
          break;
        case 'n':
          c = '\n';
          break;
        case '\\':
        case '"':
          break;
        default:
          return tl::unexpected(BadLine(line, "unknown escape sequence"));
      }
      value.push_back(static_cast<char>(c));
      continue;
    }
    if (c == '"') {
      quote = !quote;
      continue;
    }
    value.push_back(static_cast<char>(c));
  }
}

}  // namespace

Result<std::vector<GitConfigEntry>> ParseGitConfig(std::string_view text,
                                                   const GitConfigLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return Fail("limit", "git config larger than " + std::to_string(limits.max_bytes) + " bytes");
  }
  std::vector<GitConfigEntry> entries;
  Reader in(text);
  // A UTF-8 byte order mark is skipped; git refuses a partial one.
  static constexpr std::string_view kBom = "\xef\xbb\xbf";
  size_t bom = 0;
  while (bom < kBom.size() && bom < text.size() && text[bom] == kBom[bom]) ++bom;
  if (bom == kBom.size()) {
    in.Skip(bom);
  } else if (bom > 0) {
    return tl::unexpected(BadLine(1, "partial byte order mark"));
  }
  std::string section_name;  // as git builds it: "core", "diff.tool"
  bool have_section = false;
  bool comment = false;
  for (;;) {
    int c = in.Next();
    if (c == '\n') {
      if (in.eof()) return entries;
      comment = false;
      continue;
    }
    if (comment || IsSpace(c)) continue;
    if (c == '#' || c == ';') {
      comment = true;
      continue;
    }
    if (c == '[') {
      ANVIL_TRY(name, ReadSectionHeader(in, limits.max_name_bytes));
      if (name->empty()) return tl::unexpected(BadLine(in.line(), "empty section name"));
      section_name = std::move(*name);
      have_section = true;
      continue;
    }
    const int line = in.line();
    if (!IsAlpha(c)) return tl::unexpected(BadLine(line, "a key must start with a letter"));
    std::string key(1, Lower(c));
    for (;;) {
      c = in.Next();
      if (in.eof() || !IsKeyChar(c)) break;
      key.push_back(Lower(c));
      if (key.size() > limits.max_name_bytes) {
        return tl::unexpected(BadLine(line, "name too long"));
      }
    }
    while (c == ' ' || c == '\t') c = in.Next();
    GitConfigEntry entry;
    entry.line = line;
    if (c != '\n') {
      if (c != '=') return tl::unexpected(BadLine(line, "expected '=' after the key"));
      ANVIL_TRY(value, ReadValue(in, line));
      // git hands values on as C strings: nothing after a NUL byte is seen.
      if (auto nul = value->find('\0'); nul != std::string::npos) value->resize(nul);
      entry.value = std::move(*value);
    }
    if (!have_section) {
      // git accepts it but no key it acts on lives outside a section; kept with an empty one.
      entry.section.clear();
    } else {
      // "a.b.c" from [a.b "c"] or [a.b.c]: section up to the first dot, subsection the rest.
      auto dot = section_name.find('.');
      entry.section = section_name.substr(0, dot);
      if (dot != std::string::npos) {
        entry.subsection = section_name.substr(dot + 1);
        entry.has_subsection = true;
      }
    }
    entry.key = std::move(key);
    entries.push_back(std::move(entry));
    if (entries.size() > limits.max_entries) {
      return Fail("limit",
                  "git config has more than " + std::to_string(limits.max_entries) + " keys");
    }
  }
}

std::optional<bool> GitConfigBool(const std::optional<std::string>& value) {
  if (!value) return true;
  if (value->empty()) return false;
  std::string v = AsciiLower(*value);
  if (v == "true" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "no" || v == "off") return false;
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 0);
  if (end != v.c_str() && *end == '\0') return n != 0;
  return std::nullopt;
}

}  // namespace anvil
