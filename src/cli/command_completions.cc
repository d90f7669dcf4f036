// The bash, zsh and fish completion scripts of `anvil`, rendered from the flag tables
// (command_docs.h).
#include <cctype>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command_docs.h"
#include "cli/command_docs_internal.h"

namespace anvil::cli {
namespace {

using docs_internal::OneLine;
using docs_internal::VisibleFlags;

// ---- completions -------------------------------------------------------------------------

std::string Join(const std::vector<std::string>& words, const char* sep = " ") {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : sep) + w;
  return out;
}

std::vector<std::string> CommandNames(const ToolSpec& tool) {
  std::vector<std::string> names;
  for (const auto& c : tool.commands) names.push_back(c.name);
  names.push_back("help");
  return names;
}

const char* CompletionWord(Completion c) {
  switch (c) {
    case Completion::kDirectory:
    case Completion::kPluginDirectory:
      return "dir";
    case Completion::kFile:
      return "file";
    case Completion::kChoices:
      return "choices";
    case Completion::kProfiles:
      return "profiles";
    case Completion::kCommand:
      return "command";
    case Completion::kNone:
      break;
  }
  return "none";
}

// Single-quoted for sh, zsh and fish alike.
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// A short description for zsh: one line, at most about 70 characters.
std::string ZshShort(const std::string& help) {
  std::string line = OneLine(help);
  if (line.size() > 70) line = line.substr(0, 67) + "...";
  return line;
}

// Backslash before each of `special` (`_arguments` reads brackets and colons as syntax).
std::string ZshEscape(const std::string& text, std::string_view special) {
  std::string out;
  for (char c : text) {
    if (special.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string ZshAction(Completion c, const std::vector<std::string>& choices) {
  switch (c) {
    case Completion::kDirectory:
    case Completion::kPluginDirectory:
      return "_files -/";
    case Completion::kFile:
      return "_files";
    case Completion::kChoices:
      return "(" + Join(choices) + ")";
    case Completion::kProfiles:
      return "_anvil_profiles " + Join(choices);
    case Completion::kCommand:
      return "_command_names -e";
    case Completion::kNone:
      break;
  }
  return " ";
}

std::string Identifier(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

}  // namespace

// ---- bash --------------------------------------------------------------------------------

std::string RenderBashCompletion(const ToolSpec& tool) {
  std::ostringstream o;
  o << "# bash completion for anvil. Generated from anvil's flag tables by anvil-docgen; do not "
       "edit.\n"
       "_anvil_reply() {\n"
       "  local IFS=$'\\n'\n"
       "  COMPREPLY=($(compgen -W \"$1\" -- \"$cur\"))\n"
       "}\n"
       "_anvil_value() {  # what: none dir file choices profiles command; $2: the choices\n"
       "  local IFS=$'\\n'\n"
       "  case \"$1\" in\n"
       "    dir) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- \"$cur\")) ;;\n"
       "    file) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\")) ;;\n"
       "    command) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -c -- \"$cur\")) ;;\n"
       "    choices) _anvil_reply \"${2// /$'\\n'}\" ;;\n"
       "    profiles) _anvil_reply \"${2// /$'\\n'}\"$'\\n'\"$(\"${COMP_WORDS[0]}\" __complete "
       "profiles 2>/dev/null)\" ;;\n"
       "    *) COMPREPLY=() ;;\n"
       "  esac\n"
       "}\n";
  for (const CommandSpec& c : tool.commands) {
    const std::string fn = "_anvil_" + Identifier(c.name);
    std::vector<std::string> value_flags, all_flags;
    for (const Flag* f : VisibleFlags(c.flags)) {
      all_flags.push_back(f->name);
      if (f->kind != ValueKind::kNone) value_flags.push_back(f->name);
    }
    all_flags.push_back("--help");
    o << fn << "() {  # $1: where the command word is\n"
      << "  local i w operands=() ended=0\n"
      << "  for ((i = $1 + 1; i < COMP_CWORD; i++)); do\n"
      << "    w=\"${COMP_WORDS[i]}\"\n"
      << "    if ((ended)); then operands+=(\"$w\"); continue; fi\n"
      << "    case \"$w\" in\n";
    if (c.style.dash_dash_ends) o << "      --) ended=1 ;;\n";
    if (!value_flags.empty()) {
      o << "      " << Join(value_flags, "|") << ")\n"
        << "        if [[ ${COMP_WORDS[i+1]} == = ]]; then ((i += 2)); else ((i++)); fi ;;\n";
    }
    o << "      -*) ;;\n"
      << "      *) operands+=(\"$w\")";
    if (c.style.operands == ParseStyle::Operands::kFirstEndsFlags ||
        c.style.operands == ParseStyle::Operands::kFirstThenAll) {
      o << "; ended=1";
    }
    o << " ;;\n"
      << "    esac\n"
      << "  done\n"
      << "  if ((!ended)); then\n"
      << "    case \"$flag\" in\n";
    for (const Flag* f : VisibleFlags(c.flags)) {
      if (f->kind == ValueKind::kNone) continue;
      o << "      " << f->name << ") _anvil_value " << CompletionWord(f->complete) << " "
        << Quote(Join(f->choices)) << "; return ;;\n";
    }
    o << "    esac\n"
      << "    if [[ $cur == -* ]]; then _anvil_reply \"" << Join(all_flags, "\n")
      << "\"; return; fi\n"
      << "  fi\n";
    if (!c.subcommands.empty()) {
      std::vector<std::string> names;
      for (const auto& s : c.subcommands) names.push_back(s.name);
      o << "  if ((${#operands[@]} == 0)); then _anvil_reply \"" << Join(names, "\n")
        << "\"; return; fi\n"
        << "  case \"${operands[0]}:$((${#operands[@]} - 1))\" in\n";
      for (const auto& s : c.subcommands) {
        for (size_t k = 0; k < s.positionals.size(); ++k) {
          const Positional& p = s.positionals[k];
          if (p.complete == Completion::kNone) continue;
          o << "    " << s.name << ":" << k << ") _anvil_value " << CompletionWord(p.complete)
            << " " << Quote(p.metavar) << " ;;\n";
        }
      }
      o << "    *) COMPREPLY=() ;;\n  esac\n";
    } else if (!c.positionals.empty()) {
      o << "  case ${#operands[@]} in\n";
      for (size_t k = 0; k < c.positionals.size(); ++k) {
        const Positional& p = c.positionals[k];
        const bool last = k + 1 == c.positionals.size();
        o << "    " << (last ? "*" : std::to_string(k)) << ") ";
        if (p.complete == Completion::kCommand) {
          o << "if ((${#operands[@]} == " << k
            << ")); then _anvil_value command; else _anvil_value file; fi ;;\n";
        } else {
          o << "_anvil_value " << CompletionWord(p.complete) << " '' ;;\n";
        }
      }
      o << "  esac\n";
    } else {
      o << "  COMPREPLY=()\n";
    }
    o << "}\n";
  }
  o << "_anvil() {\n"
       "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" flag=\"\" i cmd=\"\" at=0\n"
       "  ((COMP_CWORD > 0)) && flag=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
       "  # --flag=value arrives as three words: --flag, =, value.\n"
       "  if [[ $cur == = ]]; then cur=\"\"; elif [[ $flag == = ]] && ((COMP_CWORD > 1)); then\n"
       "    flag=\"${COMP_WORDS[COMP_CWORD-2]}\"\n"
       "  fi\n"
       "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
       "    case \"${COMP_WORDS[i]}\" in -*) ;; *) cmd=\"${COMP_WORDS[i]}\"; at=$i; break ;; esac\n"
       "  done\n"
       "  case \"$cmd\" in\n"
       "    \"\") if [[ $cur == -* ]]; then _anvil_reply \"--help\n--version\n-V\n-h\"; else "
       "_anvil_reply \""
    << Join(CommandNames(tool), "\n")
    << "\"; fi ;;\n"
       "    help) ((COMP_CWORD == at + 1)) && _anvil_reply \""
    << Join(CommandNames(tool), "\n") << "\" ;;\n";
  for (const CommandSpec& c : tool.commands) {
    o << "    " << c.name << ") _anvil_" << Identifier(c.name) << " \"$at\" ;;\n";
  }
  o << "  esac\n"
       "}\n"
       "complete -F _anvil anvil\n";
  return o.str();
}

// ---- zsh ---------------------------------------------------------------------------------

std::string RenderZshCompletion(const ToolSpec& tool) {
  std::ostringstream o;
  o << "#compdef anvil\n"
       "# zsh completion for anvil. Generated from anvil's flag tables by anvil-docgen; do not "
       "edit.\n\n"
       "_anvil_profiles() {\n"
       "  local -a names\n"
       "  names=(\"$@\" ${(f)\"$(${words[1]:-anvil} __complete profiles 2>/dev/null)\"})\n"
       "  compadd -a names\n"
       "}\n\n";
  auto flag_spec = [](const CommandSpec& c, const Flag& f) {
    std::string s = f.repeatable ? "*" : "";
    s += f.name;
    if (f.kind != ValueKind::kNone && c.style.equals_value) s += "=";
    s += "[" + ZshEscape(ZshShort(f.help), "[]") + "]";
    if (f.kind != ValueKind::kNone) {
      s += ":" + ZshEscape(f.metavar, ":") + ":" + ZshAction(f.complete, f.choices);
    }
    return Quote(s);
  };
  for (const CommandSpec& c : tool.commands) {
    const std::string fn = "_anvil_" + Identifier(c.name);
    o << fn << "() {\n";
    std::vector<std::string> specs;
    for (const Flag* f : VisibleFlags(c.flags)) specs.push_back(flag_spec(c, *f));
    specs.push_back("'(- *)'{-h,--help}'[show this command'\\''s help]'");
    if (!c.subcommands.empty()) {
      o << "  local curcontext=\"$curcontext\" state line\n"
        << "  _arguments -C -s : \\\n";
      for (const auto& s : specs) o << "    " << s << " \\\n";
      o << "    '1: :->sub' '*:: :->args' && return\n"
        << "  case $state in\n"
        << "    sub)\n"
        << "      local -a subs\n"
        << "      subs=(\n";
      for (const auto& s : c.subcommands) {
        o << "        " << Quote(s.name + ":" + ZshShort(s.help)) << "\n";
      }
      o << "      )\n"
        << "      _describe -t commands 'anvil " << c.name << " subcommand' subs ;;\n"
        << "    args)\n"
        << "      case $words[1] in\n";
      for (const auto& s : c.subcommands) {
        if (s.positionals.empty()) continue;
        o << "        " << s.name << ") _arguments";
        for (size_t k = 0; k < s.positionals.size(); ++k) {
          const Positional& p = s.positionals[k];
          o << " "
            << Quote(std::to_string(k + 1) + ":" + ZshEscape(p.metavar, ":") + ":" +
                     ZshAction(p.complete, {p.metavar}));
        }
        o << " ;;\n";
      }
      o << "      esac ;;\n"
        << "  esac\n";
    } else {
      o << "  _arguments -s" << (c.style.dash_dash_ends ? " -S" : "") << " : \\\n";
      for (const auto& s : specs) o << "    " << s << " \\\n";
      for (size_t k = 0; k < c.positionals.size(); ++k) {
        const Positional& p = c.positionals[k];
        if (p.complete == Completion::kCommand) {
          o << "    '(-)" << k + 1 << ":command: _command_names -e' '*::arguments: _normal' \\\n";
          break;
        }
        const bool last = k + 1 == c.positionals.size();
        o << "    "
          << Quote((last ? "*" : std::to_string(k + 1)) + ":" + ZshEscape(p.metavar, ":") + ":" +
                   ZshAction(p.complete, {}))
          << " \\\n";
      }
      o << "    && return\n";
    }
    o << "}\n\n";
  }
  o << "_anvil() {\n"
       "  local curcontext=\"$curcontext\" state line\n"
       "  _arguments -C : \\\n"
       "    '(- *)'{-h,--help}'[show the help]' \\\n"
       "    '(- *)'{-V,--version}'[print the version and the commit it was built from]' \\\n"
       "    '1: :->command' '*:: :->args' && return\n"
       "  case $state in\n"
       "    command)\n"
       "      local -a commands\n"
       "      commands=(\n";
  for (const auto& c : tool.commands) {
    o << "        " << Quote(c.name + ":" + ZshShort(c.summary)) << "\n";
  }
  o << "        'help:the help of a command'\n"
       "      )\n"
       "      _describe -t commands 'anvil command' commands ;;\n"
       "    args)\n"
       "      case $words[1] in\n"
       "        help) _arguments '1:command:("
    << Join(CommandNames(tool)) << ")' ;;\n";
  for (const auto& c : tool.commands) {
    o << "        " << c.name << ") _anvil_" << Identifier(c.name) << " ;;\n";
  }
  o << "      esac ;;\n"
       "  esac\n"
       "}\n\n"
       "if [[ $funcstack[1] == _anvil ]]; then\n"
       "  _anvil \"$@\"\n"
       "else\n"
       "  compdef _anvil anvil\n"
       "fi\n";
  return o.str();
}

// ---- fish --------------------------------------------------------------------------------

std::string RenderFishCompletion(const ToolSpec& tool) {
  std::ostringstream o;
  const std::string names = Join(CommandNames(tool));
  o << "# fish completion for anvil. Generated from anvil's flag tables by anvil-docgen; do not "
       "edit.\n"
       "# The operands after the subcommand (not the word being completed); $argv: the flags\n"
       "# that take a value.\n"
       "function __anvil_operands\n"
       "  set -l words (commandline -opc)\n"
       "  set -e words[1..2]\n"
       "  set -l skip 0\n"
       "  set -l ended 0\n"
       "  for w in $words\n"
       "    if test $ended -eq 1; echo $w; continue; end\n"
       "    if test $skip -eq 1; set skip 0; continue; end\n"
       "    if test \"$w\" = --; set ended 1; continue; end\n"
       "    if contains -- $w $argv; set skip 1; continue; end\n"
       "    string match -q -- '-*' $w; or echo $w\n"
       "  end\n"
       "end\n"
       "function __anvil_profiles\n"
       "  printf '%s\\n' $argv\n"
       "  set -l words (commandline -opc)\n"
       "  $words[1] __complete profiles 2>/dev/null\n"
       "end\n"
       "complete -c anvil -f\n"
       "complete -c anvil -n __fish_use_subcommand -s h -l help -d 'show the help'\n"
       "complete -c anvil -n __fish_use_subcommand -s V -l version -d 'print the version and "
       "the commit it was built from'\n";
  for (const auto& c : tool.commands) {
    o << "complete -c anvil -n __fish_use_subcommand -a " << c.name << " -d "
      << Quote(OneLine(c.summary)) << "\n";
  }
  o << "complete -c anvil -n __fish_use_subcommand -a help -d 'the help of a command'\n"
    << "complete -c anvil -n '__fish_seen_subcommand_from help' -a " << Quote(names) << "\n";
  auto fish_value = [](Completion c, const std::vector<std::string>& choices) -> std::string {
    switch (c) {
      case Completion::kDirectory:
      case Completion::kPluginDirectory:
        return " -x -a '(__fish_complete_directories)'";
      case Completion::kFile:
        return " -r -F";
      case Completion::kChoices:
        return " -x -a " + Quote(Join(choices));
      case Completion::kProfiles:
        return " -x -a " + Quote("(__anvil_profiles " + Join(choices) + ")");
      case Completion::kCommand:
        return " -x -a '(__fish_complete_command)'";
      case Completion::kNone:
        break;
    }
    return " -x";
  };
  for (const auto& c : tool.commands) {
    const std::string in = "'__fish_seen_subcommand_from " + c.name + "'";
    std::string operands = "(__anvil_operands";
    for (const Flag* f : VisibleFlags(c.flags)) {
      if (f->kind != ValueKind::kNone) operands += " " + f->name;
    }
    operands += ")";
    o << "complete -c anvil -n " << in << " -s h -l help -d 'show this command'\\''s help'\n";
    for (const Flag* f : VisibleFlags(c.flags)) {
      o << "complete -c anvil -n " << in << " -l " << f->name.substr(2);
      if (f->kind != ValueKind::kNone) o << fish_value(f->complete, f->choices);
      o << " -d " << Quote(OneLine(f->help).substr(0, 80)) << "\n";
    }
    if (!c.subcommands.empty()) {
      std::vector<std::string> subs;
      for (const auto& s : c.subcommands) subs.push_back(s.name);
      for (const auto& s : c.subcommands) {
        o << "complete -c anvil -n "
          << Quote("__fish_seen_subcommand_from " + c.name + "; and test (count " + operands +
                   ") -eq 0")
          << " -a " << s.name << " -d " << Quote(OneLine(s.help).substr(0, 80)) << "\n";
      }
      for (const auto& s : c.subcommands) {
        for (size_t k = 0; k < s.positionals.size(); ++k) {
          const Positional& p = s.positionals[k];
          if (p.complete == Completion::kNone) continue;
          o << "complete -c anvil -n "
            << Quote("__fish_seen_subcommand_from " + c.name + "; and set -l o " + operands +
                     "; and test \"$o[1]\" = " + s.name + "; and test (count $o) -eq " +
                     std::to_string(k + 1))
            << fish_value(p.complete, {p.metavar}) << "\n";
        }
      }
      continue;
    }
    for (size_t k = 0; k < c.positionals.size(); ++k) {
      const Positional& p = c.positionals[k];
      if (p.complete == Completion::kNone) continue;
      const bool last = k + 1 == c.positionals.size();
      const std::string count = last ? "-ge " + std::to_string(k) : "-eq " + std::to_string(k);
      if (p.complete == Completion::kCommand) {
        o << "complete -c anvil -n "
          << Quote("__fish_seen_subcommand_from " + c.name + "; and test (count " + operands +
                   ") -eq " + std::to_string(k))
          << " -x -a '(__fish_complete_command)'\n"
          << "complete -c anvil -n "
          << Quote("__fish_seen_subcommand_from " + c.name + "; and test (count " + operands +
                   ") -gt " + std::to_string(k))
          << " -F\n";
        continue;
      }
      o << "complete -c anvil -n "
        << Quote("__fish_seen_subcommand_from " + c.name + "; and test (count " + operands + ") " +
                 count)
        << fish_value(p.complete, {}) << "\n";
    }
  }
  return o.str();
}

}  // namespace anvil::cli
