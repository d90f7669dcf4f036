#include "policy/consent.h"

#include <algorithm>

#include "fs/path_glob.h"
#include "fs/utf8.h"

namespace anvil {
namespace {

using fs_internal::DecodeUtf8;

constexpr char32_t kEsc = 0x1b;
constexpr char32_t kBel = 0x07;
constexpr char32_t kC1Csi = 0x9b;
constexpr char32_t kC1St = 0x9c;

// Line-breaking characters: replaced by a space (not dropped) so words stay apart, but the text
// stays on one line.
bool IsLineOrTab(char32_t c) {
  return c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f' || c == 0x85 ||
         c == 0x2028 || c == 0x2029;
}

// Characters that render as nothing (or change how neighbours render) and so can hide text or
// make two different strings look identical in a prompt.
bool IsInvisible(char32_t c) {
  return fs_internal::IsBidiControl(c) || c == 0x00ad ||  // soft hyphen
         (c >= 0x200b && c <= 0x200d) ||                  // zero-width space/non-joiner/joiner
         (c >= 0x2060 && c <= 0x2064) ||                  // word joiner, invisible operators
         c == 0xfeff ||                                   // zero-width no-break space (BOM)
         c == 0x180e || c == 0x115f || c == 0x1160 || c == 0x3164 || c == 0xffa0 ||  // fillers
         (c >= 0xfff9 && c <= 0xfffb) ||  // interlinear annotation
         (c >= 0xe0000 && c <= 0xe007f);  // tag characters ("ASCII smuggling")
}

// Decodes one code point at `pos`; invalid bytes decode as U+FFFD of length 1.
char32_t Next(std::string_view text, std::size_t pos, std::size_t* length) {
  char32_t c = 0;
  *length = DecodeUtf8(text, pos, &c);
  if (*length == 0) {
    *length = 1;
    return 0xfffd;
  }
  return c;
}

// Skips a control string (OSC, DCS, SOS, PM, APC) whose introducer ended just before `pos`:
// up to and including BEL, ST (ESC \) or C1 ST. An unterminated string swallows the rest, which
// is what a terminal would do with it too.
std::size_t SkipControlString(std::string_view text, std::size_t pos) {
  while (pos < text.size()) {
    std::size_t len = 0;
    const char32_t c = Next(text, pos, &len);
    pos += len;
    if (c == kBel || c == kC1St) return pos;
    if (c == kEsc && pos < text.size() && text[pos] == '\\') return pos + 1;
  }
  return pos;
}

// Skips a CSI sequence whose introducer ended just before `pos`: parameter and intermediate
// bytes, then one final byte in 0x40..0x7e.
std::size_t SkipCsi(std::string_view text, std::size_t pos) {
  while (pos < text.size()) {
    const auto b = static_cast<unsigned char>(text[pos]);
    ++pos;
    if (b >= 0x40 && b <= 0x7e) return pos;
    if (b < 0x20 || b > 0x3f) return pos;  // not a CSI byte: the sequence is malformed; stop
  }
  return pos;
}

// `pos` is just past an ESC.
std::size_t SkipEscape(std::string_view text, std::size_t pos) {
  if (pos >= text.size()) return pos;
  const char next = text[pos];
  if (next == '[') return SkipCsi(text, pos + 1);
  if (next == ']' || next == 'P' || next == 'X' || next == '^' || next == '_') {
    return SkipControlString(text, pos + 1);
  }
  // nF sequences: intermediates 0x20..0x2f, then one final byte ("ESC ( B", "ESC # 8").
  while (pos < text.size()) {
    const auto b = static_cast<unsigned char>(text[pos]);
    if (b < 0x20 || b > 0x2f) break;
    ++pos;
  }
  if (pos < text.size()) {
    const auto b = static_cast<unsigned char>(text[pos]);
    if (b >= 0x30 && b <= 0x7e) ++pos;
  }
  return pos;
}

bool Contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

bool AddsAny(const std::vector<std::string>& previous, const std::vector<std::string>& requested) {
  return std::any_of(requested.begin(), requested.end(),
                     [&](const std::string& item) { return !Contains(previous, item); });
}

void AppendList(std::string& out, std::string_view heading, const std::vector<std::string>& items,
                bool quote, std::string (*note)(const std::string&)) {
  out += heading;
  if (items.empty()) {
    out += ": nothing\n";
    return;
  }
  out += ":\n";
  for (const std::string& item : items) {
    out += "    - ";
    const std::string shown = SanitizeForDisplay(item);
    if (quote) {
      out += '"';
      out += shown;
      out += '"';
    } else {
      out += shown;
    }
    if (note != nullptr) out += note(item);
    out += '\n';
  }
}

std::string ReadNote(const std::string& glob) {
  if (glob == "**") return " (every file in the workspace)";
  return {};
}

std::string WriteNote(const std::string& glob) {
  if (glob == "**") {
    return " (every file in the workspace, except .git, .anvil, anvil.lock and Anvil.toml)";
  }
  // Wildcards never grant a protected path (path_glob.h); a literal one does, and the user
  // should know what writing it means.
  if (IsLiteralGlob(glob) && IsProtectedPath(glob)) {
    return " (PROTECTED: git or Anvil control file; writing it can run code or change Anvil's "
           "settings)";
  }
  return {};
}

}  // namespace

std::string SanitizeForDisplay(std::string_view untrusted, std::size_t max_code_points) {
  std::string out;
  std::size_t kept = 0;
  bool pending_space = false;
  std::size_t pos = 0;
  while (pos < untrusted.size()) {
    std::size_t len = 0;
    const char32_t c = Next(untrusted, pos, &len);
    pos += len;
    if (c == kEsc) {
      pos = SkipEscape(untrusted, pos);
      continue;
    }
    if (c == kC1Csi) {
      pos = SkipCsi(untrusted, pos);
      continue;
    }
    if (c == 0x9d || c == 0x90 || c == 0x98 || c == 0x9e || c == 0x9f) {  // C1 OSC/DCS/SOS/PM/APC
      pos = SkipControlString(untrusted, pos);
      continue;
    }
    if (IsLineOrTab(c)) {
      pending_space = true;
      continue;
    }
    if (fs_internal::IsControl(c) || IsInvisible(c)) continue;
    if (pending_space) {
      pending_space = false;
      if (!out.empty() && out.back() != ' ') {
        if (kept >= max_code_points) {
          out += "…";
          return out;
        }
        out += ' ';
        ++kept;
      }
    }
    if (kept >= max_code_points) {
      out += "…";
      return out;
    }
    if (c == 0xfffd && len == 1) {
      out += "\xef\xbf\xbd";
    } else {
      out.append(untrusted.substr(pos - len, len));
    }
    ++kept;
  }
  return out;
}

bool NeedsConsent(const std::optional<Grant>& previous, const Grant& requested) {
  if (!previous) return true;
  return AddsAny(previous->fs_read, requested.fs_read) ||
         AddsAny(previous->fs_write, requested.fs_write) ||
         AddsAny(previous->net_hosts, requested.net_hosts) ||
         AddsAny(previous->exec, requested.exec) || (requested.net_post && !previous->net_post);
}

std::string DescribeGrant(const Grant& grant) {
  std::string out;
  AppendList(out, "  Read files matching", grant.fs_read, /*quote=*/true, &ReadNote);
  AppendList(out, "  Write files matching", grant.fs_write, /*quote=*/true, &WriteNote);
  AppendList(out, "  Connect over HTTPS (port 443 only) to", grant.net_hosts, /*quote=*/false,
             nullptr);
  out += "  Send POST requests (upload data): ";
  out += grant.net_post ? "YES\n" : "no\n";
  AppendList(out, "  Run programs", grant.exec, /*quote=*/false, nullptr);
  return out;
}

}  // namespace anvil
