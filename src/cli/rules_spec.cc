#include "cli/rules_spec.h"

namespace anvil::cli {

CommandSpec RulesCommandSpec() {
  auto ignore = [](const std::string&) { return Ok(); };
  CommandSpec spec;
  spec.name = "rules";
  spec.program = "anvil rules";
  spec.summary = "check a command against the command rules";
  spec.synopsis = "check [--rules FILE]... [--workspace DIR] [--json] [--] COMMAND...";
  spec.description =
      "Show how Anvil's command rules judge COMMAND (docs/agents.md): the decision, the rule\n"
      "that made it and why, and what each approval mode would do with it. Nothing is run.";
  spec.subcommands = {
      {"check",
       "[--] COMMAND...",
       "the decision, the rule and why, and each approval mode's answer",
       {{"COMMAND", Completion::kCommand}},
       true},
  };
  spec.flags = {
      Text("--rules", "FILE",
           "read FILE as the user's rules instead of ~/.config/anvil/rules/*.toml\n"
           "($XDG_CONFIG_HOME honoured); repeatable. The admin layer\n"
           "(/etc/anvil/rules/*.toml) and the workspace's rules still apply.",
           ignore)
          .Completes(Completion::kFile)
          .Repeatable(),
      Text("--workspace", "DIR", "the workspace whose .anvil/rules.toml applies (default: .)",
           ignore)
          .Completes(Completion::kDirectory),
      Switch("--json", "one JSON object instead of text", [] {}),
  };
  spec.sections = {
      {"",
       "Exit: 0 when the rules were read, whatever they decide; 2 on usage errors and on a rules\n"
       "file that does not load (the message names the file, line and column, and the fix).",
       false},
  };
  spec.examples = {
      "anvil rules check -- git push --force origin main",
      "anvil rules check --json -- bash -lc \"cargo build && rm -rf target\"",
      "anvil rules check --rules my-rules.toml -- rg --pre ./x TODO",
  };
  spec.style.operands = ParseStyle::Operands::kFirstEndsFlags;
  return spec;
}

}  // namespace anvil::cli
