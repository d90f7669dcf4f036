#include "policy/display_text.h"

#include <charconv>

#include "fs/utf8.h"
#include "policy/shell_words.h"

namespace anvil {
namespace {

using fs_internal::DecodeUtf8;

// Breaks folded to one space in kFold; in kKeep only \n and \t stay (and "\r\n" as "\n").
bool IsBreak(char32_t c) {
  return c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f' || c == 0x85 ||
         c == 0x2028 || c == 0x2029;
}

// Characters that render as nothing, or change how their neighbours render, and so can hide
// text or make two different strings look the same.
bool IsInvisible(char32_t c) {
  return fs_internal::IsBidiControl(c) || c == 0x00ad ||              // soft hyphen
         c == 0x034f ||                                               // combining grapheme joiner
         c == 0x115f || c == 0x1160 || c == 0x3164 || c == 0xffa0 ||  // Hangul fillers
         c == 0x17b4 || c == 0x17b5 ||                                // Khmer invisible vowels
         (c >= 0x180b && c <= 0x180f) ||  // Mongolian variation selectors, vowel separator
         (c >= 0x200b && c <= 0x200d) ||  // zero-width space, non-joiner, joiner
         (c >= 0x2060 && c <= 0x206f) ||  // word joiner, invisible operators, deprecated formats
         c == 0xfeff ||                   // zero-width no-break space (BOM)
         (c >= 0xfff9 && c <= 0xfffb) ||  // interlinear annotation
         (c >= 0xe0000 && c <= 0xe007f);  // tag characters
}

std::string Hex(unsigned long value) {
  char buf[16];
  const auto end = std::to_chars(buf, buf + sizeof(buf), value, 16).ptr;
  return std::string(buf, end);
}

// Appends to `out` while counting code points against the cap.
class Capped {
 public:
  Capped(std::string& out, std::size_t max) : out_(out), max_(max) {}
  // Appends `piece` of `points` code points; false (and "…" appended) when it does not fit.
  bool Add(std::string_view piece, std::size_t points) {
    if (cut_) return false;
    if (points > max_ - kept_) {
      out_ += "…";
      cut_ = true;
      return false;
    }
    out_ += piece;
    kept_ += points;
    return true;
  }

 private:
  std::string& out_;
  std::size_t max_;
  std::size_t kept_ = 0;
  bool cut_ = false;
};

}  // namespace

std::string SanitizeForDisplay(std::string_view untrusted, std::size_t max_code_points,
                               LineBreaks breaks) {
  std::string out;
  Capped capped(out, max_code_points);
  bool pending_space = false;
  std::size_t pos = 0;
  while (pos < untrusted.size()) {
    char32_t c = 0;
    const std::size_t len = DecodeUtf8(untrusted, pos, &c);
    if (len == 0) {
      const std::string shown = "\\x{" + Hex(static_cast<unsigned char>(untrusted[pos])) + "}";
      pos += 1;
      if (pending_space && !out.empty() && out.back() != ' ' && !capped.Add(" ", 1)) return out;
      pending_space = false;
      if (!capped.Add(shown, shown.size())) return out;
      continue;
    }
    pos += len;
    if (IsBreak(c) && breaks != LineBreaks::kEscape) {
      if (breaks == LineBreaks::kFold) {
        pending_space = true;
        continue;
      }
      if (c == '\n' || c == '\t') {
        if (!capped.Add(std::string(1, static_cast<char>(c)), 1)) return out;
        continue;
      }
      if (c == '\r' && pos < untrusted.size() && untrusted[pos] == '\n') continue;  // "\r\n"
    }
    if (pending_space) {
      pending_space = false;
      if (!out.empty() && out.back() != ' ' && !capped.Add(" ", 1)) return out;
    }
    if (fs_internal::IsControl(c) || IsBreak(c) || IsInvisible(c)) {
      const std::string shown = "\\u{" + Hex(c) + "}";
      if (!capped.Add(shown, shown.size())) return out;
      continue;
    }
    if (!capped.Add(untrusted.substr(pos - len, len), 1)) return out;
  }
  return out;
}

std::string SanitizeFlagArgument(std::string_view argument, std::size_t max_code_points) {
  return SanitizeForDisplay(argument, max_code_points);
}

std::string MarkedLines(std::string_view lead, std::string_view text, std::string_view mark) {
  std::string out(lead);
  std::size_t start = 0;
  while (true) {
    const std::size_t nl = text.find('\n', start);
    out += text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    out += '\n';
    if (nl == std::string_view::npos || nl + 1 == text.size()) break;
    start = nl + 1;
    out += mark;
  }
  return out;
}

namespace {

// The ASCII letter a character of a line start may be mistaken for, or 0. Covers the letters of
// "anvil" and of "[y/n]": case, fullwidth forms and the usual Cyrillic, Greek and symbol
// look-alikes.
char Skeleton(char32_t c) {
  if (c >= 'A' && c <= 'Z') return static_cast<char>(c - 'A' + 'a');
  if (c == '1' || c == '|') return 'l';
  if (c < 0x80) return static_cast<char>(c);
  // Blanks a line can start with that look like a space: the line still reads as Anvil's.
  if (c == 0x00a0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x202f || c == 0x205f ||
      c == 0x3000) {
    return ' ';
  }
  if (c == 0xff3b) return '[';  // fullwidth brackets and solidus: "［y／N］"
  if (c == 0xff3d) return ']';
  if (c == 0xff0f) return '/';
  if (c >= 0xff21 && c <= 0xff3a) return static_cast<char>(c - 0xff21 + 'a');  // fullwidth A-Z
  if (c >= 0xff41 && c <= 0xff5a) return static_cast<char>(c - 0xff41 + 'a');  // fullwidth a-z
  switch (c) {
    case 0x0430:
    case 0x0410:
    case 0x03b1:
    case 0x0391:
    case 0x0251:  // а А α Α ɑ
      return 'a';
    case 0x043f:
    case 0x03b7:
    case 0x0578:
    case 0x0274:
    case 0x039d:
    case 0x041f:  // п η ո ɴ Ν П
      return 'n';
    case 0x03bd:
    case 0x0475:
    case 0x0474:
    case 0x2228:
    case 0x22c1:  // ν ѵ Ѵ ∨ ⋁
      return 'v';
    case 0x0456:
    case 0x0406:
    case 0x03b9:
    case 0x0399:
    case 0x0131:
    case 0x0269:
    case 0x2170:
      return 'i';  // і І ι Ι ı ɩ ⅰ
    case 0x04cf:
    case 0x04c0:
    case 0x217c:
    case 0x2113:
    case 0x01c0:  // ӏ Ӏ ⅼ ℓ ǀ
      return 'l';
    case 0x0443:
    case 0x0423:
    case 0x03b3:
    case 0x04af:  // у У γ ү
      return 'y';
    default:
      return 0;
  }
}

// The skeleton of up to `n` characters of `line` from `pos`; stops early at the end.
std::string SkeletonAt(std::string_view line, std::size_t pos, std::size_t n) {
  std::string out;
  while (pos < line.size() && out.size() < n) {
    char32_t c = 0;
    std::size_t len = DecodeUtf8(line, pos, &c);
    if (len == 0) {
      c = 0xfffd;
      len = 1;
    }
    pos += len;
    const char k = Skeleton(c);
    out.push_back(k == 0 ? '?' : k);
  }
  return out;
}

}  // namespace

bool LooksLikeAnvilLine(std::string_view line) {
  // One character of skeleton per code point of the line.
  const std::string skeleton = SkeletonAt(line, 0, line.size());
  const std::size_t start = skeleton.find_first_not_of(" \t");
  if (start == std::string::npos) return false;
  // A capital I folds to "i", and in the place of the l of "anvil" it reads as one.
  std::string head = skeleton.substr(start, 5);
  if (head.size() == 5 && head[4] == 'i') head[4] = 'l';
  if (head == "anvil") return true;
  return skeleton.find("[y/n]") != std::string::npos;
}

std::string PasteableShellWord(std::string_view word) {
  // Shown as it is: quoted as `anvil rules check` quotes words (a word no shell reads specially
  // stays bare). A NUL, as in the wildcard words QuoteShellWord shows as `<*>`, is never shown
  // as it is, so what comes back here always reads back as the word.
  if (SanitizeForDisplay(word, kNoDisplayCap, LineBreaks::kEscape) == word) {
    return QuoteShellWord(word);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "$'";
  for (char c : word) {
    const auto b = static_cast<unsigned char>(c);
    if (c == '\'' || c == '\\') {
      out += '\\';
      out += c;
    } else if (b >= 0x20 && b < 0x7f) {
      out += c;
    } else {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 0xf];
    }
  }
  return out + "'";
}

}  // namespace anvil
