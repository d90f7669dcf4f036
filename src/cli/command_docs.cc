// `anvil --help` and the roff man pages (command_docs.h); the text helpers the completions share
// (command_docs_internal.h). The bash, zsh and fish completions are command_completions.cc. (A
// command's --help is the flag set's own, common/flag_set.h.)
#include "cli/command_docs.h"

#include <algorithm>
#include <sstream>

#include "cli/command_docs_internal.h"

namespace anvil::cli {
namespace {

// ---- shared ------------------------------------------------------------------------------

std::string Trim(const std::string& s) {
  size_t a = s.find_first_not_of(' ');
  size_t b = s.find_last_not_of(' ');
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

std::string EnsureNewline(std::string text) {
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text;
}

bool Visible(const Flag& f) { return !f.hidden; }

}  // namespace

namespace docs_internal {

std::vector<const Flag*> VisibleFlags(const std::vector<Flag>& flags) {
  std::vector<const Flag*> out;
  for (const Flag& f : flags) {
    if (Visible(f)) out.push_back(&f);
  }
  return out;
}

// The help text on one line (completions and descriptions in lists).
std::string OneLine(const std::string& help) {
  std::string out;
  for (const auto& line : SplitLines(help)) {
    std::string t = Trim(line);
    if (t.empty()) continue;
    if (!out.empty()) out += ' ';
    out += t;
  }
  return out;
}

}  // namespace docs_internal

namespace {

using docs_internal::OneLine;
using docs_internal::VisibleFlags;

// ---- roff --------------------------------------------------------------------------------

// Text for a roff line: backslashes escaped, and a line that would start with a control
// character made literal.
std::string Roff(const std::string& text, bool literal_dashes = false) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-' && literal_dashes) {
      out += "\\-";
    } else {
      out += c;
    }
  }
  return out;
}

std::string RoffLine(const std::string& text, bool literal_dashes = false) {
  std::string line = Roff(text, literal_dashes);
  if (!line.empty() && (line[0] == '.' || line[0] == '\'')) line = "\\&" + line;
  return line + "\n";
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Paragraphs (split at blank lines) filled by the formatter, except those with indented lines
// (lists, tables), which are kept line by line.
std::string RoffParagraphs(const std::string& text, bool preformatted = false) {
  std::string out;
  std::vector<std::vector<std::string>> paragraphs(1);
  for (const auto& line : SplitLines(text)) {
    if (Trim(line).empty()) {
      if (!paragraphs.back().empty()) paragraphs.emplace_back();
      continue;
    }
    paragraphs.back().push_back(line);
  }
  bool first = true;
  for (const auto& p : paragraphs) {
    if (p.empty()) continue;
    if (!first) out += ".PP\n";
    first = false;
    bool keep = preformatted;
    for (const auto& line : p) keep = keep || line.starts_with("  ");
    if (keep) {
      out += ".nf\n";
      for (const auto& line : p) out += RoffLine(line, true);
      out += ".fi\n";
    } else {
      for (const auto& line : p) out += RoffLine(Trim(line));
    }
  }
  return out;
}

std::string RoffFlag(const Flag& f) {
  std::string out = ".TP\n\\fB" + Roff(f.name, true) + "\\fR";
  if (!f.metavar.empty()) out += " \\fI" + Roff(f.metavar, true) + "\\fR";
  out += "\n";
  out += RoffLine(OneLine(f.help));
  if (!f.choices.empty() && f.complete == Completion::kChoices) {
    std::string values;
    for (const auto& c : f.choices) values += (values.empty() ? "" : ", ") + c;
    out += RoffLine("Values: " + values + ".");
  }
  return out;
}

std::string RoffExamples(const std::vector<std::string>& examples) {
  std::string out = ".SH EXAMPLES\n.nf\n.RS 4\n";
  for (const auto& e : examples) out += RoffLine(e, true);
  out += ".RE\n.fi\n";
  return out;
}

std::string RoffHeader(const std::string& page, const std::string& version, std::string summary) {
  // NAME is "page \- what it does": lower case, no full stop.
  if (!summary.empty() && summary.back() == '.') summary.pop_back();
  if (!summary.empty() && std::isupper(static_cast<unsigned char>(summary[0])) &&
      (summary.size() < 2 || !std::isupper(static_cast<unsigned char>(summary[1])))) {
    summary[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(summary[0])));
  }
  return ".\\\" Generated from anvil's flag tables by anvil-docgen; do not edit.\n"
         ".TH \"" +
         Upper(Roff(page, true)) + "\" \"1\" \"\" \"anvil " + version +
         "\" \"Anvil Manual\"\n"
         ".SH NAME\n" +
         Roff(page, true) + " \\- " + Roff(summary) + "\n";
}

}  // namespace

// ---- anvil --help ------------------------------------------------------------------------

std::string RenderToolHelp(const ToolSpec& tool) {
  std::string out = "usage: anvil <command> [options]\n\n" + EnsureNewline(tool.summary) + "\n";
  size_t width = 0;
  for (const auto& c : tool.commands) width = std::max(width, c.summary.size());
  out += "Commands:\n";
  for (const auto& c : tool.commands) {
    out += "  " + c.name + std::string(c.name.size() < 10 ? 10 - c.name.size() : 1, ' ') +
           c.summary + std::string(width + 2 - c.summary.size(), ' ') + "(anvil " + c.name +
           " --help)\n";
  }
  const std::string help_summary = "the help of a command, as above";
  out += "  help" + std::string(6, ' ') + help_summary +
         std::string(width + 2 > help_summary.size() ? width + 2 - help_summary.size() : 1, ' ') +
         "(anvil help COMMAND)\n";
  out += "\nOptions:\n" + RenderFlagColumns(tool.flags);
  if (!tool.examples.empty()) {
    out += "\nExamples:\n";
    for (const auto& e : tool.examples) out += "  " + e + "\n";
  }
  return out;
}

// ---- man pages ---------------------------------------------------------------------------

std::string RenderToolMan(const ToolSpec& tool) {
  std::string out = RoffHeader("anvil", tool.version, tool.summary);
  out +=
      ".SH SYNOPSIS\n.nf\n\\fBanvil\\fR \\fICOMMAND\\fR [\\fIoptions\\fR]\n"
      "\\fBanvil help\\fR \\fICOMMAND\\fR\n\\fBanvil \\-\\-version\\fR\n.fi\n";
  out += ".SH DESCRIPTION\n" +
         RoffParagraphs(tool.description.empty() ? tool.summary : tool.description);
  out += ".SH COMMANDS\n";
  for (const auto& c : tool.commands) {
    out += ".TP\n\\fB" + Roff(c.name, true) + "\\fR\n" + RoffLine(c.summary + ".") +
           "See \\fBanvil\\-" + Roff(c.name, true) + "\\fR(1).\n";
  }
  out +=
      ".TP\n\\fBhelp\\fR \\fICOMMAND\\fR\nThe help of a command, the text of its "
      "\\fB\\-\\-help\\fR.\n";
  out += ".SH OPTIONS\n";
  for (const Flag& f : tool.flags) out += RoffFlag(f);
  if (!tool.examples.empty()) out += RoffExamples(tool.examples);
  out +=
      ".SH FILES\n.TP\n\\fI../libexec/anvil/\\fR (beside the \\fBanvil\\fR executable)\n"
      "The helpers \\fBanvil\\fR starts: anvil\\-gateway, anvil\\-plugin\\-host, "
      "anvil\\-exec\\-runner, anvil\\-proxy. \\fBanvil doctor\\fR says where each was found.\n";
  out += ".SH SEE ALSO\n";
  std::string see;
  for (const auto& c : tool.commands) {
    see +=
        (see.empty() ? "" : ",\n") + std::string("\\fBanvil\\-") + Roff(c.name, true) + "\\fR(1)";
  }
  out += see +
         "\n.PP\nThe user guide: /usr/share/doc/anvil/docs/README.md (or docs/ in the "
         "source tree).\n";
  return out;
}

std::string RenderMan(const ToolSpec& tool, const CommandSpec& spec) {
  std::string out = RoffHeader("anvil-" + spec.name, tool.version, spec.summary);
  out += ".SH SYNOPSIS\n.nf\n";
  if (spec.subcommands.empty()) {
    // One synopsis: its continuation lines joined (the formatter is not told to fill here).
    std::string synopsis;
    for (const auto& line : SplitLines(spec.synopsis)) {
      synopsis += (synopsis.empty() ? "" : " ") + Trim(line);
    }
    out += "\\fB" + Roff(spec.program, true) + "\\fR " + Roff(synopsis, true) + "\n";
  }
  for (const Subcommand& s : spec.subcommands) {
    out += "\\fB" + Roff(spec.program, true) + " " + Roff(s.name, true) + "\\fR" +
           (s.args.empty() ? "" : " " + Roff(s.args, true)) + "\n";
  }
  out += ".fi\n";
  if (!spec.description.empty()) out += ".SH DESCRIPTION\n" + RoffParagraphs(spec.description);
  if (!spec.subcommands.empty()) {
    out += ".SH SUBCOMMANDS\n";
    for (const Subcommand& s : spec.subcommands) {
      out += ".TP\n\\fB" + Roff(s.name, true) + "\\fR" +
             (s.args.empty() ? "" : " \\fI" + Roff(s.args, true) + "\\fR") + "\n" +
             RoffLine(OneLine(s.help));
    }
  }
  for (const Section& s : spec.sections_before_flags) {
    out += ".SH " + Upper(Roff(s.title.empty() ? "Notes" : s.title)) + "\n" +
           RoffParagraphs(s.text, s.preformatted);
  }
  auto flags = VisibleFlags(spec.flags);
  if (!flags.empty()) {
    out += ".SH OPTIONS\n";
    for (const Flag* f : flags) out += RoffFlag(*f);
    out += ".TP\n\\fB\\-\\-help\\fR, \\fB\\-h\\fR\nPrint this help (also: \\fBanvil help " +
           Roff(spec.name, true) + "\\fR).\n";
  }
  for (const Section& s : spec.sections) {
    out += ".SH " + Upper(Roff(s.title.empty() ? "Notes" : s.title)) + "\n" +
           RoffParagraphs(s.text, s.preformatted);
  }
  if (!spec.examples.empty()) out += RoffExamples(spec.examples);
  out += ".SH SEE ALSO\n\\fBanvil\\fR(1)\n";
  return out;
}

}  // namespace anvil::cli
