#include "cli/flag_table.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>

#include "policy/display_text.h"

namespace anvil::cli {
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

std::optional<double> ParseDecimal(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<double> ParseInteger(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || errno == ERANGE) return std::nullopt;
  return static_cast<double>(v);
}

bool InBounds(double v, const Bounds& b) {
  if (b.min_exclusive ? !(v > b.min) : !(v >= b.min)) return false;
  return v <= b.max;
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
  Flag f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.apply = [set = std::move(set)](const std::string&, double) -> Status {
    set();
    return Ok();
  };
  return f;
}

Flag Text(std::string name, std::string metavar, std::string help,
          std::function<Status(const std::string&)> apply) {
  Flag f;
  f.name = std::move(name);
  f.kind = ValueKind::kText;
  f.metavar = std::move(metavar);
  f.help = std::move(help);
  f.apply = [apply = std::move(apply)](const std::string& text, double) { return apply(text); };
  return f;
}

Flag Number(std::string name, std::string metavar, std::string help, Bounds bounds,
            std::function<void(double)> set) {
  Flag f;
  f.name = std::move(name);
  f.kind = ValueKind::kNumber;
  f.metavar = std::move(metavar);
  f.help = std::move(help);
  f.bounds = bounds;
  f.apply = [set = std::move(set)](const std::string&, double v) -> Status {
    set(v);
    return Ok();
  };
  return f;
}

Flag Descriptor(std::string name, std::string metavar, std::string help, Bounds bounds,
                std::function<Status(int)> apply) {
  Flag f;
  f.name = std::move(name);
  f.kind = ValueKind::kDescriptor;
  f.metavar = std::move(metavar);
  f.help = std::move(help);
  bounds.max = std::min<double>(bounds.max, INT_MAX);
  f.bounds = bounds;
  f.apply = [apply = std::move(apply)](const std::string&, double v) {
    return apply(static_cast<int>(v));
  };
  return f;
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

// An argument echoed back in an error is the caller's bytes: shown sanitized
// (policy/display_text.h), so a pasted escape sequence cannot act on the terminal.
std::string Echo(const std::string& arg) { return SanitizeForDisplay(arg, 100); }

std::string UnknownOption(const CommandSpec& spec, const std::string& arg) {
  std::string text = "unknown option " + Echo(arg);
  if (spec.style.see_help_hint) text += " (see " + spec.program + " --help)";
  std::vector<std::string> known;
  for (const Flag& f : spec.flags) {
    if (!f.hidden && (!f.enabled || f.enabled())) known.push_back(f.name);
  }
  known.push_back("--help");
  const std::string flag = arg.substr(0, arg.find('='));
  if (auto s = Suggest(flag, known)) text += "; did you mean " + *s + "?";
  return text;
}

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
      if (style.operands == Operands::kNone) return Fail("invalid", UnknownOption(spec, a));
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
    const bool looks_like_flag = !a.empty() && a[0] == '-';
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
          if (!error.empty()) return Fail("invalid", SanitizeForDisplay(error, 400));
          continue;
        }
      }
      if (style.dash_is_operand || (!looks_like_flag && style.operands != Operands::kNone)) {
        out.operands.push_back(a);
        continue;
      }
      return Fail("invalid", UnknownOption(spec, a));
    }
    const std::string expects = flag->expects.empty() ? flag->metavar : flag->expects;
    std::string value;
    double number = 0;
    if (flag->kind != ValueKind::kNone) {
      if (inline_value) {
        value = *inline_value;
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return Fail("invalid", style.wording == ParseStyle::Wording::kNeeds
                                   ? flag->name + " needs " + expects
                                   : flag->name + " needs a value");
      }
      if (flag->kind == ValueKind::kNumber || flag->kind == ValueKind::kDescriptor) {
        auto v = flag->kind == ValueKind::kNumber ? ParseDecimal(value) : ParseInteger(value);
        if (!v || !InBounds(*v, flag->bounds)) {
          return Fail("invalid", style.wording == ParseStyle::Wording::kNeeds
                                     ? flag->name + " needs " + expects
                                     : flag->name + " expects " + expects + ", got " + Echo(value));
        }
        number = *v;
      }
    }
    if (auto s = flag->apply(value, number); !s) return tl::unexpected(s.error());
  }
  for (; i < args.size(); ++i) out.operands.push_back(args[i]);
  return out;
}

}  // namespace anvil::cli
