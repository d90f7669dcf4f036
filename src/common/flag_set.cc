#include "common/flag_set.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace anvil {
namespace {

// Optimal string alignment distance (Levenshtein plus adjacent transpositions): "--jsno" is one
// edit from "--json".
size_t EditDistance(std::string_view a, std::string_view b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

constexpr double kTwoTo64 = 18446744073709551616.0;

bool InBounds(double v, const Bounds& b) {
  if (b.min_exclusive ? !(v > b.min) : !(v >= b.min)) return false;
  return v <= b.max;
}

// Exact for every uint64_t: a bound is compared as the whole number it allows.
bool InBounds(uint64_t v, const Bounds& b) {
  if (b.min_exclusive) {  // v > min  <=>  v > floor(min)
    if (b.min >= kTwoTo64) return false;
    if (b.min >= 0 && v <= static_cast<uint64_t>(std::floor(b.min))) return false;
  } else if (b.min > 0) {  // v >= ceil(min)
    if (std::ceil(b.min) >= kTwoTo64) return false;
    if (v < static_cast<uint64_t>(std::ceil(b.min))) return false;
  }
  if (b.max >= kTwoTo64) return true;
  return b.max >= 0 && v <= static_cast<uint64_t>(std::floor(b.max));
}

// The number at the start of `text` (strtoull's grammar), and where it ends.
struct Leading {
  std::optional<uint64_t> value;  // empty: no number, a '-', or too large
  bool too_large = false;
  size_t end = 0;
};

Leading LeadingCount(const std::string& text) {
  Leading out;
  const size_t first = text.find_first_not_of(" \t\n\v\f\r");
  if (first == std::string::npos || text[first] == '-') return out;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str()) return out;
  out.end = static_cast<size_t>(end - text.c_str());
  if (errno == ERANGE) {
    out.too_large = true;
    return out;
  }
  out.value = v;
  return out;
}

// An argument echoed back in an error without the display sanitizer: printable ASCII as it
// is, every other byte by value.
std::string EscapeBytes(std::string_view arg, size_t max) {
  std::string out;
  for (unsigned char c : arg.substr(0, max)) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x{%x}", c);
      out += buf;
    }
  }
  if (arg.size() > max) out += "...";
  return out;
}

std::string Echo(const CommandSpec& spec, std::string_view arg, size_t max = 100) {
  return spec.echo ? spec.echo(arg, max) : EscapeBytes(arg, max);
}

std::string EnsureNewline(std::string text) {
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text;
}

// Two columns: "  LEFT   help", help lines past the first aligned under the first. The column
// is the widest LEFT that fits in `max_column`; a wider one has its help on the next line.
using Rows = std::vector<std::pair<std::string, std::string>>;

size_t ColumnOf(const Rows& rows, size_t max_column = 26) {
  size_t column = 0;
  for (const auto& [left, help] : rows) {
    if (left.size() + 2 <= max_column) column = std::max(column, left.size() + 2);
  }
  return std::max<size_t>(column, 8);
}

std::string ColumnRow(const std::string& left, const std::string& help, size_t column) {
  std::vector<std::string> lines = SplitLines(help);
  if (lines.empty()) lines.push_back("");
  std::string out;
  if (left.size() + 2 <= column) {
    out += left + std::string(column - left.size(), ' ') + lines[0] + "\n";
  } else {
    out += left + "\n" + std::string(column, ' ') + lines[0] + "\n";
  }
  for (size_t i = 1; i < lines.size(); ++i) out += std::string(column, ' ') + lines[i] + "\n";
  return out;
}

std::string Columns(const Rows& rows, size_t max_column = 26) {
  const size_t column = ColumnOf(rows, max_column);
  std::string out;
  for (const auto& [left, help] : rows) out += ColumnRow(left, help, column);
  return out;
}

std::string FlagLeft(const Flag& f) {
  return "  " + f.name + (f.metavar.empty() ? "" : " " + f.metavar);
}

std::string SubcommandList(const CommandSpec& spec) {
  Rows rows;
  for (const Subcommand& s : spec.subcommands) {
    rows.push_back({"  " + s.name + (s.args.empty() ? "" : " " + s.args), s.help});
  }
  return Columns(rows, 32);
}

Flag Valued(std::string name, ValueKind kind, std::string metavar, std::string help,
            Bounds bounds) {
  Flag f;
  f.name = std::move(name);
  f.kind = kind;
  f.metavar = std::move(metavar);
  f.help = std::move(help);
  f.bounds = bounds;
  return f;
}

// The value of `flag` parsed as its kind says; false when it is not one, or out of bounds.
bool ParseValue(const Flag& flag, FlagValue& value) {
  switch (flag.kind) {
    case ValueKind::kNone:
    case ValueKind::kText:
      return true;
    case ValueKind::kNumber: {
      auto v = ParseDecimal(value.text);
      if (!v || !InBounds(*v, flag.bounds)) return false;
      value.number = *v;
      return true;
    }
    case ValueKind::kCount:
    case ValueKind::kByteSize: {
      std::optional<uint64_t> v;
      if (flag.kind == ValueKind::kCount) {
        v = ParseCount(value.text);
      } else if (auto bytes = ParseByteSize(value.text)) {
        v = *bytes;
      }
      if (!v || !InBounds(*v, flag.bounds)) return false;
      value.count = *v;
      return true;
    }
    case ValueKind::kDescriptor: {
      auto v = ParseInteger(value.text);
      if (!v || !InBounds(static_cast<double>(*v), flag.bounds)) return false;
      value.number = static_cast<double>(*v);
      return true;
    }
  }
  return false;
}

}  // namespace

Flag&& Flag::Choices(std::vector<std::string> values) && {
  choices = std::move(values);
  if (complete == Completion::kNone) complete = Completion::kChoices;
  return std::move(*this);
}
Flag&& Flag::Completes(Completion c) && {
  complete = c;
  return std::move(*this);
}
Flag&& Flag::Expects(std::string words) && {
  expects = std::move(words);
  return std::move(*this);
}
Flag&& Flag::Heading(std::string title) && {
  heading = std::move(title);
  return std::move(*this);
}
Flag&& Flag::Repeatable() && {
  repeatable = true;
  return std::move(*this);
}
Flag&& Flag::Hidden() && {
  hidden = true;
  return std::move(*this);
}
Flag&& Flag::EnabledWhen(std::function<bool()> when) && {
  enabled = std::move(when);
  return std::move(*this);
}

Flag Switch(std::string name, std::string help, std::function<void()> set) {
  Flag f = Valued(std::move(name), ValueKind::kNone, "", std::move(help), {});
  f.apply = [set = std::move(set)](const FlagValue&) -> Status {
    set();
    return Ok();
  };
  return f;
}

Flag Text(std::string name, std::string metavar, std::string help,
          std::function<Status(const std::string&)> apply) {
  Flag f = Valued(std::move(name), ValueKind::kText, std::move(metavar), std::move(help), {});
  f.apply = [apply = std::move(apply)](const FlagValue& v) { return apply(v.text); };
  return f;
}

Flag Number(std::string name, std::string metavar, std::string help, Bounds bounds,
            std::function<void(double)> set) {
  Flag f = Valued(std::move(name), ValueKind::kNumber, std::move(metavar), std::move(help), bounds);
  f.apply = [set = std::move(set)](const FlagValue& v) -> Status {
    set(v.number);
    return Ok();
  };
  return f;
}

Flag Count(std::string name, std::string metavar, std::string help, Bounds bounds,
           std::function<void(uint64_t)> set) {
  Flag f = Valued(std::move(name), ValueKind::kCount, std::move(metavar), std::move(help), bounds);
  f.apply = [set = std::move(set)](const FlagValue& v) -> Status {
    set(v.count);
    return Ok();
  };
  return f;
}

Flag ByteSize(std::string name, std::string metavar, std::string help, Bounds bounds,
              std::function<void(uint64_t)> set) {
  Flag f = Count(std::move(name), std::move(metavar), std::move(help), bounds, std::move(set));
  f.kind = ValueKind::kByteSize;
  return f;
}

Flag Descriptor(std::string name, std::string metavar, std::string help, Bounds bounds,
                std::function<Status(int)> apply) {
  bounds.max = std::min<double>(bounds.max, INT_MAX);
  Flag f =
      Valued(std::move(name), ValueKind::kDescriptor, std::move(metavar), std::move(help), bounds);
  f.apply = [apply = std::move(apply)](const FlagValue& v) {
    return apply(static_cast<int>(v.number));
  };
  return f;
}

std::optional<double> ParseDecimal(std::string_view text) {
  if (text.empty()) return std::nullopt;
  const std::string s(text);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<uint64_t> ParseCount(std::string_view text) {
  const std::string s(text);
  Leading n = LeadingCount(s);
  if (!n.value || n.end != s.size()) return std::nullopt;
  return n.value;
}

Result<uint64_t> ParseByteSize(std::string_view text) {
  const std::string s(text);
  if (s.empty()) return Fail("invalid", "empty value");
  Leading n = LeadingCount(s);
  if (!n.value && !n.too_large) return Fail("invalid", "not a number: " + s);
  if (n.too_large) return Fail("invalid", "too large: " + s);
  const std::string_view suffix = std::string_view(s).substr(n.end);
  uint64_t mult = 1;
  if (suffix == "K" || suffix == "k") {
    mult = 1ULL << 10;
  } else if (suffix == "M" || suffix == "m") {
    mult = 1ULL << 20;
  } else if (suffix == "G" || suffix == "g") {
    mult = 1ULL << 30;
  } else if (!suffix.empty()) {
    return Fail("invalid", "bad unit in " + s + " (use K, M or G)");
  }
  if (*n.value > UINT64_MAX / mult) return Fail("invalid", "too large: " + s);
  return *n.value * mult;
}

std::optional<int64_t> ParseInteger(std::string_view text) {
  if (text.empty()) return std::nullopt;
  const std::string s(text);
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (end == s.c_str() || *end != '\0' || errno == ERANGE) return std::nullopt;
  return static_cast<int64_t>(v);
}

const Flag* CommandSpec::Find(std::string_view flag) const {
  for (const Flag& f : flags) {
    if (f.name == flag && (!f.enabled || f.enabled())) return &f;
  }
  return nullptr;
}

std::optional<std::string> Suggest(std::string_view word, const std::vector<std::string>& known) {
  if (word.empty()) return std::nullopt;
  std::optional<std::string> best;
  size_t best_distance = SIZE_MAX;
  size_t prefix_matches = 0;
  std::string prefix_match;
  for (const auto& k : known) {
    if (k.size() > word.size() && k.compare(0, word.size(), word) == 0) {
      ++prefix_matches;
      prefix_match = k;
    }
    size_t d = EditDistance(word, k);
    if (d < best_distance) {
      best_distance = d;
      best = k;
    }
  }
  // Close enough to be a typo: about one edit in three characters, at least one, at most three.
  const size_t dashes = word.starts_with("--") ? 2 : 0;
  const size_t allowed = std::clamp<size_t>((word.size() - dashes) / 3, 1, 3);
  if (best && best_distance <= allowed) return best;
  if (prefix_matches == 1 && word.size() > dashes + 1) return prefix_match;
  return std::nullopt;
}

namespace {

// The visible flags of `spec` and of the tables it forwards to.
void VisibleFlags(const CommandSpec& spec, std::vector<std::string>& known) {
  for (const Flag& f : spec.flags) {
    if (!f.hidden && (!f.enabled || f.enabled())) known.push_back(f.name);
  }
  for (const auto& next : spec.forward_to) VisibleFlags(*next, known);
}

// Whether a table `spec` forwards to (or one they forward to) holds the option `name`.
bool ForwardTargetHolds(const CommandSpec& spec, std::string_view name) {
  for (const auto& next : spec.forward_to) {
    if (next->Find(name) != nullptr || ForwardTargetHolds(*next, name)) return true;
  }
  return false;
}

}  // namespace

std::string UnknownOption(const CommandSpec& spec, const std::string& arg) {
  const std::string shown = Echo(spec, arg);
  std::string text = "unknown option " + shown;
  if (spec.messages.unknown_fix) {
    text += " (fix: " + spec.messages.unknown_fix(shown) + ")";
  } else if (spec.style.see_help_hint) {
    text += " (see " + spec.program + " --help)";
  }
  std::vector<std::string> known;
  VisibleFlags(spec, known);
  known.push_back("--help");
  const std::string flag = arg.substr(0, arg.find('='));
  if (auto s = Suggest(flag, known)) text += "; did you mean " + *s + "?";
  return text;
}

namespace {

// The message for a word where an option was expected (Operands::kNone).
std::string NotAnOption(const CommandSpec& spec, const std::string& arg) {
  if (spec.messages.unexpected_operand) return spec.messages.unexpected_operand(Echo(spec, arg));
  return UnknownOption(spec, arg);
}

// The message for `name` given without its value; `flag` is null for a forwarded option.
std::string MissingValue(const CommandSpec& spec, const Flag* flag, const std::string& name) {
  if (spec.messages.missing_value) return spec.messages.missing_value(name);
  if (flag == nullptr || spec.style.wording != ParseStyle::Wording::kNeeds) {
    return name + " needs a value";
  }
  return name + " needs " + (flag->expects.empty() ? flag->metavar : flag->expects);
}

}  // namespace

Result<Parsed> ParseFlags(const CommandSpec& spec, const std::vector<std::string>& args) {
  using Operands = ParseStyle::Operands;
  const ParseStyle& style = spec.style;
  Parsed out;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (style.operands == Operands::kFirstThenAll && !out.operands.empty()) {
      out.operands.push_back(a);
      continue;
    }
    if (a == "--") {
      if (style.operands == Operands::kNone) return Fail("invalid", NotAnOption(spec, a));
      if (style.dash_dash_ends) {
        ++i;
        break;
      }
      if (style.operands == Operands::kAnywhere) out.operands.push_back(a);
      continue;
    }
    if (a == "--help" || a == "-h") {
      out.help = true;
      return out;
    }
    const bool looks_like_flag =
        !a.empty() && a[0] == '-' && !(a == "-" && style.dash_alone_is_operand);
    if (!looks_like_flag && style.operands == Operands::kNone && spec.messages.unexpected_operand) {
      return Fail("invalid", NotAnOption(spec, a));
    }
    if (!looks_like_flag && style.operands != Operands::kNone) {
      if (style.operands == Operands::kFirstEndsFlags) break;
      out.operands.push_back(a);
      continue;
    }
    std::string name = a;
    std::optional<std::string> inline_value;
    if (style.equals_value) {
      if (auto eq = a.find('='); eq != std::string::npos) {
        name = a.substr(0, eq);
        inline_value = a.substr(eq + 1);
      }
    }
    const Flag* flag = spec.Find(name);
    if (flag == nullptr) {
      if (spec.extra) {
        std::string error;
        if (spec.extra(args, i, error)) {
          if (error.rfind("invalid: ", 0) == 0) error.erase(0, 9);
          if (!error.empty()) return Fail("invalid", Echo(spec, error, 400));
          continue;
        }
      }
      if (style.dash_is_operand || (!looks_like_flag && style.operands != Operands::kNone)) {
        out.operands.push_back(a);
        continue;
      }
      if (style.forward_unknown && looks_like_flag) {
        // Its name and value as the other parser reads them: --name=value, or --name value.
        const std::string option = a.substr(0, a.find('='));
        if (!spec.forward_to.empty() && !ForwardTargetHolds(spec, option)) {
          return Fail("invalid", UnknownOption(spec, a));
        }
        out.forwarded.push_back(a);
        if (option.size() == a.size() && spec.forwarded_value && spec.forwarded_value(option)) {
          if (i + 1 >= args.size()) return Fail("invalid", MissingValue(spec, nullptr, option));
          out.forwarded.push_back(args[++i]);
        }
        continue;
      }
      return Fail("invalid", UnknownOption(spec, a));
    }
    const std::string expects = flag->expects.empty() ? flag->metavar : flag->expects;
    FlagValue value;
    if (flag->kind != ValueKind::kNone) {
      if (inline_value) {
        value.text = *inline_value;
      } else if (i + 1 < args.size()) {
        value.text = args[++i];
      } else {
        return Fail("invalid", MissingValue(spec, flag, flag->name));
      }
      if (!ParseValue(*flag, value)) {
        return Fail("invalid",
                    style.wording == ParseStyle::Wording::kNeeds
                        ? flag->name + " needs " + expects
                        : flag->name + " expects " + expects + ", got " + Echo(spec, value.text));
      }
    }
    ANVIL_RETURN_IF_ERROR(flag->apply(value));
  }
  for (; i < args.size(); ++i) out.operands.push_back(args[i]);
  return out;
}

std::string RenderFlagColumns(const std::vector<Flag>& flags) {
  Rows rows;
  for (const Flag& f : flags) {
    if (!f.hidden) rows.push_back({FlagLeft(f), f.help});
  }
  return Columns(rows);
}

std::string RenderHelp(const CommandSpec& spec) {
  std::string out = "usage: " + spec.program + " " + spec.synopsis + "\n";
  if (!spec.description.empty()) out += "\n" + EnsureNewline(spec.description);
  if (!spec.subcommands.empty() && spec.help.list_subcommands) {
    out += "\nSubcommands:\n" + SubcommandList(spec);
  }
  for (const Section& s : spec.sections_before_flags) {
    out += "\n" + (s.title.empty() ? "" : s.title + ":\n") + EnsureNewline(s.text);
  }
  // One column for every group, so that the groups line up.
  Rows rows;
  std::vector<const Flag*> shown;
  for (const Flag& f : spec.flags) {
    if (f.hidden) continue;
    rows.push_back({FlagLeft(f), f.help});
    shown.push_back(&f);
  }
  if (!rows.empty()) {
    out += spec.help.options_title ? "\nOptions:\n" : "\n";
    const size_t column = spec.help.column != 0 ? spec.help.column : ColumnOf(rows);
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!shown[i]->heading.empty()) out += "\n" + shown[i]->heading + ":\n";
      out += ColumnRow(rows[i].first, rows[i].second, column);
    }
  }
  for (const Section& s : spec.sections) {
    out += "\n" + (s.title.empty() ? "" : s.title + ":\n") + EnsureNewline(s.text);
  }
  if (!spec.examples.empty()) {
    out += "\nExamples:\n";
    for (const auto& e : spec.examples) out += "  " + e + "\n";
  }
  return out;
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

Flag TextInto(std::string name, std::string metavar, std::string help, std::string& field) {
  return Text(std::move(name), std::move(metavar), std::move(help), [&field](const std::string& v) {
    field = v;
    return Ok();
  });
}

Flag DescriptorInto(std::string name, std::string help, int& field, int max) {
  return Descriptor(std::move(name), "N", std::move(help), Between(0, max),
                    [&field](int fd) {
                      field = fd;
                      return Ok();
                    })
      .Expects(max == INT_MAX ? std::string("a descriptor number")
                              : "a descriptor number (0 to " + std::to_string(max) + ")");
}

Flag CollectInto(std::string name, std::string metavar, std::string help,
                 std::vector<std::string>& into) {
  return Text(std::move(name), std::move(metavar), std::move(help),
              [&into](const std::string& v) {
                into.push_back(v);
                return Ok();
              })
      .Repeatable();
}

}  // namespace anvil
