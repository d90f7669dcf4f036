// One table per front end: each flag's name, value kind, bounds and help. Parsing and --help
// both come from it, for every executable (`anvil`'s subcommands, anvil-gateway,
// anvil-plugin-host, anvil-proxy, anvil-exec-runner); `anvil`'s man pages and shell completions
// come from the same tables (src/cli/command_docs.h). Adding a flag is one table entry:
//
//   Number("--timeout", "SECONDS", "kill the whole process tree after SECONDS (exit 124)",
//          Above(0, 1e7), [&](double s) { a.timeout = s; }),
//
// One parser per kind of value: seconds (a decimal), counts, byte sizes (K, M or G suffixes)
// and descriptor numbers. Each front end keeps its own error wording (ParseStyle::wording) and
// its own value checks (policy names, paths) inside the flag's handler, so the texts users and
// tests see stay the front end's.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace anvil {

enum class ValueKind {
  kNone,        // a switch
  kText,        // any text; METAVAR says what
  kNumber,      // a decimal number within the bounds (seconds, milliseconds)
  kCount,       // a whole number >= 0 within the bounds
  kByteSize,    // a whole number of bytes, optionally with K, M or G (binary: 1K = 1024)
  kDescriptor,  // a file descriptor number within the bounds
};

// What a shell offers for a flag's value or a positional argument (`anvil`'s completions).
enum class Completion {
  kNone,
  kDirectory,
  kFile,
  kChoices,          // the flag's `choices`
  kProfiles,         // `anvil sandbox --profile` names (asked from `anvil` at completion time)
  kPluginDirectory,  // a directory holding a plugin (anvil-plugin.toml); directories to descend
  kCommand,          // a program and its arguments (after `--`)
};

// A whole-number kind is held to a bound exactly, as the whole number the bound allows; a bound
// at or past 2^64 is none.
struct Bounds {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_exclusive = false;
};
// (min, max]: "a positive number" when min is 0.
inline Bounds Above(double min, double max = std::numeric_limits<double>::infinity()) {
  return {min, max, true};
}
// [min, max].
inline Bounds Between(double min, double max) { return {min, max, false}; }
// [min, no end).
inline Bounds AtLeast(double min) { return {min, std::numeric_limits<double>::infinity(), false}; }
// [0, max]: what a field of type T holds (exact for the types of up to 32 bits and uint64_t).
template <typename T>
Bounds UpTo() {
  return {0, static_cast<double>(std::numeric_limits<T>::max()), false};
}

// The value a flag was given, parsed as its kind says.
struct FlagValue {
  std::string text;    // as given
  double number = 0;   // kNumber, kDescriptor
  uint64_t count = 0;  // kCount, kByteSize (in bytes)
};

struct Flag {
  std::string name;  // "--timeout"
  ValueKind kind = ValueKind::kNone;
  std::string metavar;  // "SECONDS"; empty for a switch
  std::string help;     // '\n' breaks the line in --help; a man page fills the text
  // The value in words for error messages ("a positive number of seconds"); default: METAVAR.
  std::string expects;
  Bounds bounds;
  std::vector<std::string> choices;  // documented and completed values (kChoices)
  Completion complete = Completion::kNone;
  // --help starts a group of flags here, under this title ("sys.exec"); man pages ignore it.
  std::string heading;
  bool repeatable = false;  // documented as such; a repeated flag calls its handler again
  bool hidden = false;      // test-only: parsed, but not in --help, man pages or completions
  // When false, the flag does not exist in this run (an environment-gated test hook).
  std::function<bool()> enabled;
  std::function<Status(const FlagValue& value)> apply;

  // Builders for the table entries.
  Flag&& Choices(std::vector<std::string> values) &&;
  Flag&& Completes(Completion c) &&;
  Flag&& Expects(std::string words) &&;
  Flag&& Heading(std::string title) &&;
  Flag&& Repeatable() &&;
  Flag&& Hidden() &&;
  Flag&& EnabledWhen(std::function<bool()> when) &&;
};

Flag Switch(std::string name, std::string help, std::function<void()> set);
Flag Text(std::string name, std::string metavar, std::string help,
          std::function<Status(const std::string&)> apply);
Flag Number(std::string name, std::string metavar, std::string help, Bounds bounds,
            std::function<void(double)> set);
Flag Count(std::string name, std::string metavar, std::string help, Bounds bounds,
           std::function<void(uint64_t)> set);
Flag ByteSize(std::string name, std::string metavar, std::string help, Bounds bounds,
              std::function<void(uint64_t)> set);
Flag Descriptor(std::string name, std::string metavar, std::string help, Bounds bounds,
                std::function<Status(int)> apply);
// The common cases of a front end's table: a text stored in `field`; a descriptor number from
// 0 to `max` stored in `field` ("expects a descriptor number", with the range when not INT_MAX).
Flag TextInto(std::string name, std::string metavar, std::string help, std::string& field);
Flag DescriptorInto(std::string name, std::string help, int& field, int max = INT_MAX);
// A repeatable text, each value appended to `into`.
Flag CollectInto(std::string name, std::string metavar, std::string help,
                 std::vector<std::string>& into);

// The lines of `text` (help, synopses), without their newlines.
std::vector<std::string> SplitLines(const std::string& text);

// The value parsers behind the kinds, for values inside other values (`--limit nproc=64`).
// Each accepts what the C library's strto* functions read in full (leading blanks and a '+'
// included), never a value that does not fit.
std::optional<double> ParseDecimal(std::string_view text);  // finite
std::optional<uint64_t> ParseCount(std::string_view text);  // no '-'
// A count with an optional unit: K, M or G (or k, m, g), powers of 1024. The error says why:
// "empty value", "not a number: TEXT", "bad unit in TEXT (use K, M or G)", "too large: TEXT".
Result<uint64_t> ParseByteSize(std::string_view text);
std::optional<int64_t> ParseInteger(std::string_view text);  // descriptors: then bounded

// A positional argument or a subcommand's arguments, for help and completions.
struct Positional {
  std::string metavar;  // "PLUGIN_DIR"
  Completion complete = Completion::kNone;
};

// `anvil plugin inspect PLUGIN_DIR` and the like.
struct Subcommand {
  std::string name;
  std::string args;  // "PLUGIN_DIR", "--key FILE PLUGIN_DIR"
  std::string help;
  std::vector<Positional> positionals;
  bool takes_workspace = false;  // accepts the command's --workspace
};

struct Section {
  std::string title;  // "Exit status"
  std::string text;
  bool preformatted = false;  // kept line by line in man pages (lists, tables)
};

// How a front end's arguments are laid out. Each keeps the behaviour it always had.
struct ParseStyle {
  enum class Operands {
    kNone,            // every argument is a flag (serve, doctor, audit, the helper executables)
    kFirstEndsFlags,  // the first non-flag starts the operands (sandbox: CMD ARGS...)
    kFirstThenAll,    // after the first operand, everything is an operand (run)
    kAnywhere,        // flags and operands mixed (plugin)
  };
  enum class Wording {
    kNeeds,       // "--timeout needs a positive number of seconds" (missing or bad)
    kExpectsGot,  // "--timeout needs a value" / "--timeout expects ..., got X"
  };
  Operands operands = Operands::kNone;
  Wording wording = Wording::kNeeds;
  bool equals_value = false;     // --flag=value too
  bool dash_dash_ends = true;    // `--` ends the flags (false: `--` is skipped; run)
  bool dash_is_operand = false;  // an argument starting with '-' may be an operand (plugin)
  bool see_help_hint = true;     // "unknown option X (see PROGRAM --help)"
  // "-" alone is an operand (a name, stdin), never an option (plugin new; mcp refuses it as one).
  bool dash_alone_is_operand = false;
  // Options for another parser (`anvil exec`'s and `anvil mcp`'s `anvil sandbox` options): an
  // argument starting with '-' that the table does not hold is kept, as given, in
  // Parsed::forwarded (with its value: CommandSpec::forwarded_value) instead of refused.
  bool forward_unknown = false;
};

// How RenderHelp lays out a command's --help (each keeps the layout it always printed).
struct HelpLayout {
  bool options_title = true;     // "Options:" above the flags (false: the flags' rows alone)
  bool list_subcommands = true;  // "Subcommands:" and their rows, when there are some
  // The help column: 0 fits it to the widest flag up to 26 characters; otherwise exactly this
  // one, a wider flag's help starting on the next line.
  size_t column = 0;
};

// The words of a front end's argument errors, where the default ones do not fit. Each gets the
// argument as the front end's echo shows it (sanitized, cut).
struct ParseMessages {
  // The fix named after "unknown option X", instead of "(see PROGRAM --help)": "put the command
  // after --, e.g. anvil rules check -- X" gives "unknown option X (fix: put the command ...)".
  std::function<std::string(const std::string& shown)> unknown_fix;
  // The whole message for a flag (or a forwarded option) given without its value:
  // "--rules needs a value (see --help)". Default: the style's wording.
  std::function<std::string(const std::string& flag)> missing_value;
  // Operands::kNone: the whole message for an argument that is not an option (a word, "--", or
  // "-" with dash_alone_is_operand), instead of "unknown option X".
  std::function<std::string(const std::string& shown)> unexpected_operand;
};

struct CommandSpec {
  std::string name;      // "sandbox": `anvil sandbox`, man page anvil-sandbox(1)
  std::string program;   // how errors and --help name the program: "anvil sandbox", "anvil-proxy"
  std::string summary;   // one line, for `anvil --help` and the man page's NAME
  std::string synopsis;  // after "usage: <program> "; '\n' + indentation for more lines
  std::string description;
  std::vector<Flag> flags;
  std::vector<Section> sections_before_flags;  // e.g. the subcommands of `anvil plugin`
  std::vector<Section> sections;               // after the flags: exit status, notes
  std::vector<std::string> examples;           // "anvil run ... # comment"
  std::vector<Positional> positionals;
  std::vector<Subcommand> subcommands;
  ParseStyle style;
  // Flags the table does not hold, tried before "unknown option" (the test-only network options
  // shared by run and serve): true when args[i] was taken (i advanced), `error` ("invalid: ...")
  // when its value is bad.
  std::function<bool(const std::vector<std::string>& args, size_t& i, std::string& error)> extra;
  // How an error shows the caller's own bytes (an unknown option, a bad value), cut at about
  // `max` characters: the display sanitizer (policy/display_text.h), which this layer cannot
  // include. Without one, every byte outside printable ASCII is shown as \x{HEX}.
  std::function<std::string(std::string_view text, size_t max)> echo;
  // With style.forward_unknown: whether a forwarded option (its name, before any '=') takes the
  // next argument as its value when it has no "=VALUE" ("--network proxy"). Unset: none does.
  std::function<bool(std::string_view name)> forwarded_value;
  // With style.forward_unknown: the tables of the parsers the forwarded options go on to
  // (`anvil exec`'s: `anvil sandbox`'s), each with its own. When set, an option that neither
  // this table nor any of those holds is refused here as unknown, its "did you mean" drawn from
  // all of them; unset: every option this table does not hold is forwarded.
  std::vector<std::shared_ptr<const CommandSpec>> forward_to;
  ParseMessages messages;
  HelpLayout help;

  const Flag* Find(std::string_view name) const;
};

struct Parsed {
  std::vector<std::string> operands;
  // style.forward_unknown: the options the table does not hold, as given, each followed by its
  // value when it takes one ("--network", "proxy", "--cwd=/w").
  std::vector<std::string> forwarded;
  bool help = false;  // --help or -h came before any operand: print RenderHelp(spec), exit 0
};

// Parses `args` against the table, calling each flag's handler in order (a repeated flag's
// handler runs again: the last value wins unless the handler collects them). Errors have code
// "invalid" and the front end's wording; an unknown option suggests the closest known one.
Result<Parsed> ParseFlags(const CommandSpec& spec, const std::vector<std::string>& args);

// The flag closest to `word` (a typo, or a unique prefix), if one is close enough.
std::optional<std::string> Suggest(std::string_view word, const std::vector<std::string>& known);

// The message for an unknown option, with the suggestion when there is one.
std::string UnknownOption(const CommandSpec& spec, const std::string& arg);

// --help: usage, description, the visible flags (grouped under their headings), sections and
// examples.
std::string RenderHelp(const CommandSpec& spec);

// The two columns "  --flag METAVAR   help" of --help, for these flags (hidden ones left out).
std::string RenderFlagColumns(const std::vector<Flag>& flags);

}  // namespace anvil
