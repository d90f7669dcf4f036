// git's config syntax (src/policy/git_config: the configs of repositories a sandboxed command
// made are read after the run, so this parser takes hostile input). Invariants for an accepted
// config: within the bounds; every section and key lower-case and of git's key characters, a
// key starting with a letter; line numbers rise and stay within the text; no value holds a NUL;
// written back in canonical form (quoted subsections and values, escapes), it parses to the same
// entries. The command-word splitter of git_metadata stays bounded on every value.
// The ~/.gitconfig sanitizer (policy/sandbox_home.h) keeps credentials out of the sandbox's
// copy: the copy parses back to exactly the allowed entries, each allowed, with the same values,
// so nothing the allowlist drops can reappear through quoting, escapes or line structure.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "policy/git_config.h"
#include "policy/git_metadata.h"
#include "policy/sandbox_home.h"

using anvil::fuzz::Require;

namespace {

bool KeyChars(const std::string& s, bool allow_dot) {
  for (char c : s) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || (allow_dot && c == '.');
    if (!ok) return false;
  }
  return true;
}

std::string Escape(const std::string& s, bool value) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (value && c == '\n') {
      out += "\\n";
    } else if (value && c == '\t') {
      out += "\\t";
    } else if (value && c == '\b') {
      out += "\\b";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// The sanitized copy of `entries` (RenderSanitizedGitConfig) reads back as its allowed entries.
void CheckSanitizedCopy(const std::vector<anvil::GitConfigEntry>& entries) {
  std::vector<anvil::GitConfigEntry> allowed;
  for (const auto& e : entries) {
    if (anvil::GitConfigEntryAllowed(e)) allowed.push_back(e);
  }
  const std::string out = anvil::RenderSanitizedGitConfig(entries);
  auto back = anvil::ParseGitConfig(out);
  Require(back.has_value(), "sanitized copy refused", out);
  Require(back->size() == allowed.size(), "sanitized copy re-parses to a different count", out);
  for (size_t i = 0; i < back->size(); ++i) {
    const auto& b = (*back)[i];
    Require(anvil::GitConfigEntryAllowed(b), "disallowed entry in the copy", out);
    Require(b.section == allowed[i].section && b.key == allowed[i].key, "entry renamed", out);
    Require(b.subsection == allowed[i].subsection, "subsection changed", out);
    Require(b.value.has_value() == allowed[i].value.has_value(), "value appeared", out);
    if (!b.value) continue;
    // Control characters other than \n \t \b are dropped by the renderer.
    std::string expected;
    for (char c : *allowed[i].value) {
      unsigned char u = static_cast<unsigned char>(c);
      if (u >= 0x20 ? u != 0x7f : (c == '\n' || c == '\t' || c == '\b')) expected += c;
    }
    Require(*b.value == expected, "value changed", out);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = anvil::fuzz::AsView(data, size);
  auto entries = anvil::ParseGitConfig(text);
  if (!entries) return 0;
  CheckSanitizedCopy(*entries);
  const anvil::GitConfigLimits limits;
  Require(entries->size() <= limits.max_entries, "too many entries");
  int lines = 1;
  for (char c : text) lines += c == '\n';
  int last = 0;
  std::string canonical;
  std::string section = "\x01";  // none written yet
  for (const auto& e : *entries) {
    Require(!e.key.empty() && e.key[0] >= 'a' && e.key[0] <= 'z', "key start", e.key);
    Require(KeyChars(e.key, false), "key chars", e.key);
    Require(KeyChars(e.section, false), "section chars", e.section);
    Require(e.line >= last && e.line >= 1 && e.line <= lines, "line numbers");
    last = e.line;
    if (e.value) Require(e.value->find('\0') == std::string::npos, "NUL in a value");
    if (e.value) {
      Require(anvil::GitCommandWords(*e.value).size() <= 512, "command words unbounded");
    }
    (void)anvil::ClassifyGitConfigKey(e);
    (void)anvil::GitEntryIsActive(e);
    if (e.section.empty()) {
      // A key before any section (or under `[.x]`) has no canonical header: only a key that
      // nothing precedes round-trips.
      if (section != "\x01" || e.has_subsection) return 0;
    } else {
      std::string header = "[" + e.section;
      if (e.has_subsection) {
        if (e.subsection.find('\n') != std::string::npos) return 0;
        header += " " + Escape(e.subsection, false);
      }
      header += "]\n";
      if (header != section) canonical += header;
      section = header;
    }
    canonical += "\t" + e.key;
    if (e.value) canonical += " = " + Escape(*e.value, true);
    canonical += "\n";
  }
  auto again = anvil::ParseGitConfig(canonical);
  Require(again.has_value(), "canonical form refused", canonical);
  Require(again->size() == entries->size(), "canonical form: entry count", canonical);
  for (size_t i = 0; i < entries->size(); ++i) {
    const auto& a = (*entries)[i];
    const auto& b = (*again)[i];
    Require(a.section == b.section && a.key == b.key && a.value == b.value, "canonical form",
            canonical);
    Require(a.has_subsection == b.has_subsection && a.subsection == b.subsection,
            "canonical subsection", canonical);
  }
  return 0;
}
