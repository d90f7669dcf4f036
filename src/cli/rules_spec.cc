#include "cli/rules_spec.h"

#include "policy/display_text.h"

namespace anvil::cli {

CommandSpec RulesFlags(RulesFlagValues& into) {
  CommandSpec spec;
  spec.name = "rules";
  spec.program = "anvil rules";
  spec.summary = "check a command against the command rules";
  spec.synopsis = "check [--rules FILE]... [--workspace DIR] [--json] [--] COMMAND...";
  spec.description =
      "Show how Anvil's command rules judge COMMAND (docs/agents.md): the decision (allow, "
      "prompt,\n"
      "forbidden; harmless or none when no rule decides), the rule that made it "
      "(file:line:column,\n"
      "and its layer) and why, each command inside a shell script or behind a wrapper, and what "
      "each\n"
      "approval mode would do with it. Nothing is run.";
  spec.subcommands = {
      {"check",
       "[--] COMMAND...",
       "the decision, the rule and why, and each approval mode's answer",
       {{"COMMAND", Completion::kCommand}},
       true},
  };
  spec.flags = {
      CollectInto("--rules", "FILE",
                  "read FILE as the user's rules instead of ~/.config/anvil/rules/*.toml\n"
                  "($XDG_CONFIG_HOME honoured); repeatable. The admin layer\n"
                  "(/etc/anvil/rules/*.toml) and the workspace's rules still apply.",
                  into.where.user_files)
          .Completes(Completion::kFile),
      TextInto("--workspace", "DIR", "the workspace whose .anvil/rules.toml applies (default: .)",
               into.where.workspace_dir)
          .Completes(Completion::kDirectory),
      Switch("--json", "one JSON object instead of text", [&into] { into.json = true; }),
  };
  spec.sections = {
      {"",
       "The approval line assumes a person can be asked; where nobody can, \"ask\" is a refusal, "
       "and\n"
       "the \"how to allow\" line says how to let the command run without a question.",
       false},
      {"",
       "Exit: 0 when the rules were read, whatever they decide; 2 on usage errors and on a rules "
       "file\n"
       "that does not load (the message names the file, line and column, and the fix).",
       false},
  };
  spec.examples = {
      "anvil rules check -- git push --force origin main",
      "anvil rules check --json -- bash -lc \"cargo build && rm -rf target\"",
      "anvil rules check --rules my-rules.toml -- rg --pre ./x TODO",
  };
  spec.style.operands = ParseStyle::Operands::kFirstEndsFlags;
  spec.messages.unknown_fix = [](const std::string& shown) {
    return "put the command after --, e.g. anvil rules check -- " + shown;
  };
  spec.messages.missing_value = [](const std::string& flag) {
    return flag + " needs a value (see --help)";
  };
  spec.echo = SanitizeFlagArgument;
  spec.help.options_title = false;
  spec.help.list_subcommands = false;
  spec.help.column = 21;
  return spec;
}

CommandSpec RulesCommandSpec() {
  static RulesFlagValues unused;
  return RulesFlags(unused);
}

}  // namespace anvil::cli
