#include "cli/exec_spec.h"

namespace anvil::cli {

CommandSpec ExecCommandSpec() {
  auto ignore = [](const std::string&) { return Ok(); };
  CommandSpec spec;
  spec.name = "exec";
  spec.program = "anvil exec";
  spec.summary = "run an agent's command (rules, approval, sandbox)";
  spec.synopsis =
      "[--approval MODE] [--rules FILE]... [--json] [--widen W --reason TEXT] "
      "[--ask-fd N] [--requester NAME] [--rules-workspace DIR] [sandbox options] -- COMMAND...";
  spec.description =
      "Run COMMAND for a coding agent (docs/agents.md): the command rules decide whether it may\n"
      "run and whether you are asked first, it runs in the sandbox (every option of `anvil\n"
      "sandbox` applies), and when the sandbox refused something the one widening that would\n"
      "let it through is offered; approved, the same command runs again with exactly that\n"
      "widening. Questions are asked on the terminal (/dev/tty, never stdin), or over --ask-fd\n"
      "for another front end (anvil serve asks the editor that way).";
  spec.flags = {
      Text("--approval", "MODE", "untrusted | on-failure | on-request (default) | never", ignore)
          .Choices({"untrusted", "on-failure", "on-request", "never"}),
      Text("--rules", "FILE",
           "read FILE as your rules instead of ~/.config/anvil/rules/*.toml; repeatable", ignore)
          .Completes(Completion::kFile)
          .Repeatable(),
      Text("--widen", "W",
           "ask for a widening before running: writable-git, allow-host=HOST[:PORT],\n"
           "writable-root=DIR (needs --reason)",
           ignore),
      Text("--reason", "TEXT", "why the agent asks for the widening (shown to you)", ignore),
      Switch("--json", "print one JSON report on stderr at exit", [] {}),
      Text("--ask-fd", "N",
           "ask over descriptor N instead of the terminal: one JSON line per\n"
           "question {\"type\":\"question\",\"id\",\"question\"}, one answer line back\n"
           "{\"id\",\"answer\":\"once\"|\"always\"|\"never\"}, the report as the last\n"
           "line {\"type\":\"report\",\"report\"}; anything else is a refusal\n"
           "(docs/agents.md)",
           ignore),
      Text("--requester", "NAME", "who asks, as the audit log names it (default \"anvil exec\")",
           ignore),
      Text("--rules-workspace", "DIR",
           "also read DIR/.anvil/rules.toml, DIR the workspace (--cwd) or a\n"
           "directory above it: both files' rules apply (they only narrow)",
           ignore)
          .Completes(Completion::kDirectory),
  };
  spec.sections = {
      {"",
       "Exit: the command's own status (as `anvil sandbox`: 124 timeout, 125 the sandbox could\n"
       "not be set up, 126, 127); 3 refused by the rules or by you (nothing ran); 2 usage errors\n"
       "and rules files that do not load.",
       false},
  };
  spec.examples = {
      "anvil exec -- cargo test",
      "anvil exec --approval untrusted -- bash -lc \"npm ci && npm test\"",
      "anvil exec --approval on-failure --json -- git commit -m wip",
  };
  spec.style.operands = ParseStyle::Operands::kFirstEndsFlags;
  return spec;
}

}  // namespace anvil::cli
