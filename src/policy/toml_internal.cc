#include "policy/toml_internal.h"

#include <exception>
#include <new>

#include "fs/workspace_path.h"
#include "policy/consent.h"

namespace anvil::policy_internal {
namespace {

// Far beyond anything the manifest, lockfile or Anvil.toml grammars use (they nest 3 levels).
constexpr int kMaxDottedParts = 32;
constexpr int kMaxBracketDepth = 32;
constexpr std::string_view kUtf8Bom = "\xef\xbb\xbf";

bool IsKeyRunByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == ' ' || c == '\t';
}

// toml++ builds (and later destroys) one nested table per segment of a dotted key, recursively:
// "a.a.a...= 1" with ~20000 segments overflows the stack of a debug build (segfault), and the
// size caps alone would still allow that in Anvil.toml. Before the parser sees the text, a small
// lexer (aware of strings and comments) bounds the segments of any dotted key or table header
// and the nesting of arrays and inline tables, so the tree toml++ builds is at most a few
// hundred levels deep. It over-approximates: a run of dots joined by key characters or quoted
// strings counts as one key even where TOML would not accept it; such text is not valid TOML
// at that size anyway.
Status CheckNesting(std::string_view text, std::string_view source_name) {
  std::size_t line = 1, column = 0;
  int dots = 0;
  auto fail = [&](const std::string& what) {
    // `column` counts the code points before the offending character.
    return InvalidAt(
        std::string(source_name) + ":" + std::to_string(line) + ":" + std::to_string(column + 1),
        what, "flatten the structure");
  };
  auto advance = [&](std::size_t& i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (text[i] == '\n') {
      ++line;
      column = 0;
    } else if ((byte & 0xc0) != 0x80) {
      ++column;
    }
    ++i;
  };
  auto non_ascii = [&](std::size_t at) {
    return at < text.size() && static_cast<unsigned char>(text[at]) >= 0x80;
  };
  // Skips a string whose opening quote is at `i`; leaves `i` after the closing quote(s), or at
  // the newline/end that makes it unterminated (the parser then reports it). Returns what is
  // wrong when the string holds one of the escape forms toml++ 3.3 classifies with its
  // undefined-behaviour whitespace table (found by tests/fuzz/manifest_fuzzer and
  // lockfile_fuzzer): a backslash right before a non-ASCII character (never a valid escape),
  // and in a multi-line string a non-ASCII character after a backslash and blanks, with or
  // without the line end that makes it a valid line-ending backslash.
  auto skip_string = [&](std::size_t& i) -> std::string {
    const char quote = text[i];
    const bool multi = text.compare(i, 3, std::string(3, quote)) == 0;
    const bool escapes = quote == '"';
    for (int k = 0; k < (multi ? 3 : 1); ++k) advance(i);
    while (i < text.size()) {
      if (escapes && text[i] == '\\') {
        if (non_ascii(i + 1)) return "a backslash before a non-ASCII character in a string";
        if (multi) {
          std::size_t j = i + 1;
          while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
          if (non_ascii(j))
            return "a backslash and blanks before a non-ASCII character in a string";
          if (j < text.size() && (text[j] == '\n' || text[j] == '\r')) {
            while (j < text.size() &&
                   (text[j] == ' ' || text[j] == '\t' || text[j] == '\n' || text[j] == '\r')) {
              ++j;
            }
            if (non_ascii(j)) {
              return "a non-ASCII character first after a line-ending backslash in a string";
            }
          }
        }
        advance(i);
        if (i < text.size()) advance(i);
        continue;
      }
      if (!multi && text[i] == '\n') return {};
      if (multi && text.compare(i, 3, std::string(3, quote)) == 0) {
        for (int k = 0; k < 3; ++k) advance(i);
        // Up to two more quotes belong to the content (""""a"""" ends with a quote).
        for (int k = 0; k < 2 && i < text.size() && text[i] == quote; ++k) advance(i);
        return {};
      }
      if (!multi && text[i] == quote) {
        advance(i);
        return {};
      }
      advance(i);
    }
    return {};
  };
  // Where a quote opens a string, as toml++ sees it. toml++ scans a bare value (number, bool,
  // date) up to the next value terminator, quotes included: in `v = 93'r\u0492'` it reads the
  // non-ASCII byte as part of the value (found by tests/fuzz/manifest_fuzzer). So a quote opens
  // a string only where TOML lets one start: not glued to a bare key or value character, and
  // not inside a bare value token. Anywhere else it is an ordinary byte, and the non-ASCII
  // check below covers what follows it.
  std::string open;            // one entry per open bracket: 'h'eader, 'a'rray, inline 't'able
  bool expect_value = false;   // after `=`, or after `[`/`,` inside an array value
  bool in_bare_token = false;  // inside a bare value, up to toml++'s value terminator
  char prev = '\n';            // the byte before this one, outside strings and comments
  auto is_bare = [](char b) {
    return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || b == '_' ||
           b == '-' || b == '+' || b == ':';
  };
  auto is_terminator = [](char b) {  // toml++'s is_value_terminator, for ASCII
    return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f' || b == ',' ||
           b == ']' || b == '}' || b == '#';
  };
  std::size_t i = text.starts_with(kUtf8Bom) ? kUtf8Bom.size() : 0;
  while (i < text.size()) {
    const char c = text[i];
    if ((c == '"' || c == '\'') && !in_bare_token && !is_bare(prev)) {
      if (auto wrong = skip_string(i); !wrong.empty()) {
        return InvalidAt(std::string(source_name) + ":" + std::to_string(line) + ":" +
                             std::to_string(column + 1),
                         wrong, "write that character as a \\uXXXX escape");
      }
      // A quoted key segment continues a dotted run.
      expect_value = false;
      prev = c;
      continue;
    }
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') advance(i);
      in_bare_token = false;
      prev = '#';
      continue;
    }
    if (static_cast<unsigned char>(c) >= 0x80) {
      // TOML allows non-ASCII text only in strings and comments. toml++ 3.3 reaches
      // __builtin_unreachable (undefined behaviour) classifying a non-ASCII code point in a
      // bare key or value (found by tests/fuzz/lockfile_fuzzer), so it never sees one.
      return InvalidAt(
          std::string(source_name) + ":" + std::to_string(line) + ":" + std::to_string(column + 1),
          "a non-ASCII character outside a quoted string or comment", "quote the key or value");
    }
    if (is_terminator(c)) {
      in_bare_token = false;
    } else if (c == '"' || c == '\'') {
      in_bare_token = true;  // glued to a bare token: toml++ reads on through it
    } else if (expect_value && c != '[' && c != '{' && c != '=') {
      in_bare_token = true;
      expect_value = false;
    }
    if (c == '.') {
      if (++dots > kMaxDottedParts) {
        return fail("a dotted key has more than " + std::to_string(kMaxDottedParts) + " parts");
      }
    } else if (!IsKeyRunByte(c)) {
      dots = 0;
    }
    if (c == '[' || c == '{') {
      if (open.size() + 1 > static_cast<std::size_t>(kMaxBracketDepth)) {
        return fail("arrays or tables nest more than " + std::to_string(kMaxBracketDepth) +
                    " levels deep");
      }
      const bool value = expect_value || (!open.empty() && open.back() == 'a');
      open.push_back(c == '{' ? 't' : value ? 'a' : 'h');
      expect_value = c == '[' && value;
    } else if ((c == ']' || c == '}') && !open.empty()) {
      open.pop_back();
      expect_value = false;
    } else if (c == '=') {
      expect_value = true;
    } else if (c == ',') {
      expect_value = !open.empty() && open.back() == 'a';
    } else if (c == '\n' && open.empty()) {
      expect_value = false;
    }
    prev = c;
    advance(i);
  }
  return Ok();
}

}  // namespace

Result<toml::table> ParseToml(std::string_view text, std::string_view source_name,
                              std::size_t max_bytes) {
  if (text.size() > max_bytes) {
    return Fail("invalid", std::string(source_name) + ": file is larger than " +
                               std::to_string(max_bytes / 1024) +
                               " KiB (fix: this file is meant to be short; remove what is not "
                               "needed)");
  }
  ANVIL_RETURN_IF_ERROR(CheckNesting(text, source_name));
  try {
    return toml::parse(text, source_name);
  } catch (const toml::parse_error& error) {
    // The description can quote the offending input; strip anything that would act on a
    // terminal before it reaches one.
    return InvalidAt(Where(source_name, error.source()),
                     SanitizeForDisplay(error.description(), 200),
                     "this is not valid TOML; see https://toml.io");
  } catch (const std::bad_alloc&) {
    return Fail("limit", std::string(source_name) + ": out of memory while parsing");
  } catch (const std::exception& error) {
    // Not expected from toml++, but nothing may escape: the caller gets a value.
    return Fail("invalid", std::string(source_name) +
                               ": cannot parse: " + SanitizeForDisplay(error.what(), 200));
  }
}

std::string Where(std::string_view source_name, const toml::source_region& region) {
  const auto line = region.begin.line == 0 ? 1u : region.begin.line;
  const auto column = region.begin.column == 0 ? 1u : region.begin.column;
  return std::string(source_name) + ":" + std::to_string(line) + ":" + std::to_string(column);
}

std::string WhereLine(std::string_view source_name, const toml::source_region& region) {
  const auto line = region.begin.line == 0 ? 1u : region.begin.line;
  return std::string(source_name) + ":" + std::to_string(line);
}

const toml::source_region& RegionOf(const toml::key& key, const toml::node& value) {
  return key.source().begin.line != 0 ? key.source() : value.source();
}

std::string_view TypeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

tl::unexpected<Error> InvalidAt(const std::string& where, std::string_view what,
                                std::string_view fix) {
  std::string message = where;
  message += ": ";
  message += what;
  if (!fix.empty()) {
    message += " (fix: ";
    message += fix;
    message += ")";
  }
  return Fail("invalid", std::move(message));
}

std::string TomlBasicString(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

std::string Quoted(std::string_view untrusted) {
  return "'" + QuotePathForMessage(untrusted) + "'";
}

}  // namespace anvil::policy_internal
