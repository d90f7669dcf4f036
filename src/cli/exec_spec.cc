#include "cli/exec_spec.h"

#include "cli/exec_command.h"
#include "cli/sandbox_spec.h"
#include "policy/display_text.h"

namespace anvil::cli {

CommandSpec ExecFlags(ExecFlagValues& into) {
  CommandSpec spec;
  spec.name = "exec";
  spec.program = "anvil exec";
  spec.summary = "run an agent's command (rules, approval, sandbox)";
  spec.synopsis =
      "[--approval MODE] [--rules FILE]... [--json]\n"
      "                  [--widen WIDENING --reason TEXT] [--ask-fd N] [--requester NAME]\n"
      "                  [--rules-workspace DIR] [sandbox options] -- COMMAND...";
  spec.description =
      "Run COMMAND for a coding agent (docs/agents.md): the command rules decide whether it may "
      "run\n"
      "and whether you are asked first, it runs in the sandbox (every option of `anvil sandbox`\n"
      "applies), and when it fails because the sandbox refused something, the one widening that\n"
      "would let it through is offered and, if you approve it, the same command runs again with\n"
      "exactly that widening.";
  spec.flags = {
      Text("--approval", "MODE",
           "untrusted | on-failure | on-request (default) | never\n"
           "(untrusted: only harmless or allowed commands run without a question;\n"
           "on-failure: a widening is offered after the sandbox refused something;\n"
           "on-request: the agent may ask for a widening up front, with --widen;\n"
           "never: nothing is asked, and what would be asked is refused)",
           [&into](const std::string& v) -> Status {
             into.mode = ParseApprovalMode(v);
             if (!into.mode) {
               return Fail("invalid", "--approval " + SanitizeForDisplay(v, 40) +
                                          " (fix: untrusted, on-failure, on-request or never)");
             }
             return Ok();
           })
          .Choices({"untrusted", "on-failure", "on-request", "never"}),
      CollectInto("--rules", "FILE",
                  "read FILE as your rules instead of ~/.config/anvil/rules/*.toml\n"
                  "(repeatable; the admin layer and the workspace's rules still apply)",
                  into.rules_files)
          .Completes(Completion::kFile),
      Text("--widen", "W",
           "ask for a widening before running: writable-git, allow-host=HOST[:PORT],\n"
           "writable-root=DIR (on-request and untrusted; needs --reason)",
           [&into](const std::string& v) {
             into.widen = v;
             return Ok();
           }),
      TextInto("--reason", "TEXT", "why the agent asks for the widening (shown to you)",
               into.reason),
      Switch("--json", "print one JSON report on stderr at exit", [&into] { into.json = true; }),
      Text("--ask-fd", "N",
           "ask the questions over descriptor N instead of the terminal, for another\n"
           "front end (anvil serve asks the editor this way): one JSON line per\n"
           "question {\"type\":\"question\",\"id\",\"question\"}, one answer line back\n"
           "{\"id\",\"answer\":\"once\"|\"always\"|\"never\"}, the report as the last\n"
           "line {\"type\":\"report\",\"report\"}; anything else is a refusal\n"
           "(docs/agents.md)",
           [&into](const std::string& v) -> Status {
             auto fd = ParseInteger(v);
             if (!fd || *fd < 3 || *fd > 65535) {
               return Fail("invalid", "--ask-fd " + SanitizeForDisplay(v, 40) +
                                          " (fix: an open descriptor number, 3 or above)");
             }
             into.ask_fd = static_cast<int>(*fd);
             return Ok();
           }),
      Text("--requester", "NAME", "who asks, as the audit log names it (default \"anvil exec\")",
           [&into](const std::string& v) -> Status {
             if (v.empty() || v.size() > 64) {
               return Fail("invalid", "--requester needs a name of 1 to 64 characters");
             }
             into.requester = SanitizeForDisplay(v, 64);
             return Ok();
           }),
      Text("--rules-workspace", "DIR",
           "also read DIR/.anvil/rules.toml, DIR a directory above the sandbox's\n"
           "workspace (--cwd): both files' rules apply (they only narrow)",
           [&into](const std::string& v) {
             into.rules_workspace = v;
             return Ok();
           })
          .Completes(Completion::kDirectory),
  };
  spec.sections = {
      {"",
       "Questions are asked on the terminal (/dev/tty, never stdin), or over --ask-fd: answer "
       "once,\n"
       "always (writes an allow rule for the command to ~/.config/anvil/rules/approved.toml) or "
       "never.\n"
       "Without either, a command that needs a question is refused, with the one line that would "
       "allow\n"
       "it.",
       false},
      {"",
       "Exit: the command's own status (as `anvil sandbox`: 124 timeout, 125 the sandbox could not "
       "be\n"
       "set up, 126, 127); 3 refused by the rules or by you (nothing ran); 2 usage errors and "
       "rules\n"
       "files that do not load.",
       false},
  };
  spec.examples = {
      "anvil exec -- cargo test",
      "anvil exec --approval untrusted -- bash -lc \"npm ci && npm test\"",
      "anvil exec --approval on-failure --json -- git commit -m wip",
      "anvil exec --widen allow-host=registry.npmjs.org --reason \"install deps\" \\\n"
      "      --network proxy -- npm ci",
  };
  spec.style.operands = ParseStyle::Operands::kFirstEndsFlags;
  spec.style.equals_value = true;
  // Every other option is `anvil sandbox`'s: its parser checks it, after this one.
  spec.style.forward_unknown = true;
  spec.forwarded_value = [](std::string_view name) {
    return SandboxValueFlags().contains(std::string(name));
  };
  // An option neither table holds is refused here, with a "did you mean" from both.
  static const auto sandbox =
      std::make_shared<const CommandSpec>(SandboxCommandSpec(SandboxFrontEnd::kAnvilSandbox));
  spec.forward_to = {sandbox};
  spec.messages.missing_value = [](const std::string& flag) {
    return flag + " needs a value (see --help)";
  };
  spec.echo = SanitizeFlagArgument;
  spec.help.options_title = false;
  spec.help.column = 21;
  return spec;
}

CommandSpec ExecCommandSpec() {
  static ExecFlagValues unused;
  return ExecFlags(unused);
}

}  // namespace anvil::cli
