// Untrusted text shown to a person (threat model: the user's terminal, "input injection,
// clipboard, escape sequences", and the user's attention, "fake permission prompts"). This is
// the one sanitizer for every string a plugin, a manifest or a file controls before Anvil shows
// it: `anvil run` results and errors, notifications and logs, `anvil plugin` output, `anvil
// audit`, the consent prompt, and the messages `anvil serve` sends to an editor.
//
// Nothing is silently removed: every character that could drive the terminal or hide, reorder
// or fake text is replaced by a visible escape, so the user sees that something odd was there.
//   \u{HEX}  a character (lower-case hex code point, no leading zeros):
//            - C0 controls (except the line breaks the mode keeps) and DEL; ESC therefore
//              shows as \u{1b}, and what followed it ("[2J", "]52;c;...", "]0;title") is
//              plain text with no effect;
//            - C1 controls U+0080..U+009F (8-bit CSI U+009B, OSC U+009D, NEL U+0085, ...);
//            - bidirectional formatting characters ("Trojan Source": U+061C, U+200E, U+200F,
//              U+202A..U+202E, U+2066..U+2069);
//            - invisible and format characters that can hide text or make two strings look
//              alike: soft hyphen, combining grapheme joiner, Hangul and Mongolian fillers and
//              separators, Khmer invisible vowels, zero-width space/non-joiner/joiner, word
//              joiner and the other U+2060..U+206F format characters, BOM, interlinear
//              annotation, tag characters U+E0000..U+E007F ("ASCII smuggling"), and the line
//              and paragraph separators U+2028/U+2029 where line breaks are kept.
//   \x{HEX}  a byte that is not part of strict UTF-8 (a raw C1 byte 0x9b, an overlong form, a
//            surrogate, a truncated sequence): shown by value, never guessed at.
// A plugin can write the six characters "\u{1b}" itself; that is harmless text, and it is what
// the user sees either way.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

namespace anvil {

enum class LineBreaks {
  // One line (prompts, consent items, titles, notifications, log lines, one-line errors):
  // \n, \r, \t, \v, \f, U+0085, U+2028 and U+2029 become a single space; runs of them collapse
  // and none is kept at either end, so the text can never start a new line.
  kFold,
  // Several lines (a command's result, a multi-line message): \n and \t are kept and "\r\n"
  // becomes "\n"; every other break (a lone \r, \v, \f, U+0085, U+2028, U+2029) is escaped,
  // because it could return to the start of a line and overwrite what is there.
  kKeep,
  // One line that shows every character (a command a person approves): each break is escaped as
  // \u{HEX}, as a control character is, so a second line of a script can neither hide as a
  // space nor start a line of its own.
  kEscape,
};

inline constexpr std::size_t kNoDisplayCap = std::numeric_limits<std::size_t>::max();

// The sanitized text, capped at `max_code_points` code points of output (an escape counts as
// the characters it is shown with) with "…" appended when cut.
std::string SanitizeForDisplay(std::string_view untrusted, std::size_t max_code_points = 200,
                               LineBreaks breaks = LineBreaks::kFold);

// `word` quoted for a shell command line Anvil shows for pasting (the command that puts back
// what it moved aside, the `anvil plugin approve DIR` it suggests): as QuoteShellWord quotes it
// (bare when no shell reads any of it specially, else single-quoted) when SanitizeForDisplay
// shows every character of it as it is, else in bash's (and zsh's, ksh's, POSIX 2024's) $'...'
// with every byte outside printable ASCII written as \xHH (and ' and \ escaped), so that what is
// shown is exactly what a shell runs, and shows nothing a terminal acts on. Never cut: shown
// through SanitizeForDisplay again, or capped, it would no longer be the command.
std::string PasteableShellWord(std::string_view word);

// A command-line argument echoed back in an error, on one line: the echo of every flag table
// (common/flag_set.h, CommandSpec::echo).
std::string SanitizeFlagArgument(std::string_view argument, std::size_t max_code_points);

// Lays out sanitized (kKeep) plugin text so that each of its lines is marked as the plugin's:
// the first line follows `lead` (Anvil's own words, e.g. "anvil run: error: "), every later
// line starts with `mark` (e.g. "[example.id] "). A plugin line can then never begin where
// Anvil's own lines begin. A trailing "\n" of `text` adds no empty marked line. Ends with "\n".
std::string MarkedLines(std::string_view lead, std::string_view text, std::string_view mark);

// Whether a line of plugin text, as shown (sanitized), could pass for one of Anvil's own lines:
// it begins with the word "anvil" ("anvil: ...", "anvil run: ...", "Anvil ...") after blanks
// (no-break and other Unicode spaces included), compared ASCII case-insensitively and through
// look-alikes (Cyrillic/Greek/fullwidth letters, "I", "1", "|" for "l", dotless i), or it holds
// a "[y/N]"-style answer prompt anywhere (fullwidth brackets included). Such a line of a result
// gets the plugin's mark; a plugin cannot make it look unmarked.
bool LooksLikeAnvilLine(std::string_view line);

}  // namespace anvil
