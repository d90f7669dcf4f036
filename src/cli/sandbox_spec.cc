// The table that documents `anvil sandbox`'s flags while ParseSandboxArgs still parses them with
// its own if-chain and SandboxUsage is still its --help (src/cli/sandbox_command.cc). A unit test
// (flag_table_test, SandboxTableMatchesItsParserAndUsage) keeps the three equal until the parser
// is converted to this table; then this file goes and the table lives beside the parser.
#include "cli/sandbox_spec.h"

#include <climits>

namespace anvil::cli {
namespace {

Status Ignore(const std::string&) { return Ok(); }

}  // namespace

CommandSpec SandboxCommandSpec(SandboxFrontEnd front_end) {
  const bool runner = front_end == SandboxFrontEnd::kExecRunner;
  CommandSpec spec;
  spec.name = runner ? "exec-runner" : "sandbox";
  spec.program = runner ? "anvil-exec-runner" : "anvil sandbox";
  spec.summary = "run a command under a sandbox policy";
  spec.synopsis = "[options] -- CMD [ARGS...]";
  spec.description =
      "Run CMD under a sandbox policy. The current directory (or --cwd) is the workspace.";
  spec.flags = {
      Text("--policy", "P",
           "read-only | workspace-write (default) | danger-full-access | external-sandbox", Ignore)
          .Choices({"read-only", "workspace-write", "danger-full-access", "external-sandbox"}),
      Text("--cwd", "DIR", "the workspace and CMD's working directory (default: current directory)",
           Ignore)
          .Completes(Completion::kDirectory),
      Text("--workdir", "DIR",
           "CMD's working directory, inside the workspace (relative to it, or\n"
           "absolute; default: the workspace)",
           Ignore)
          .Completes(Completion::kDirectory),
      Text("--writable-root", "DIR", "an extra writable root (workspace-write; repeatable)", Ignore)
          .Completes(Completion::kDirectory)
          .Repeatable(),
      Text("--read-only-subpath", "P",
           "keep P read-only inside a writable root (repeatable; git metadata\n"
           "and .anvil always)",
           Ignore)
          .Completes(Completion::kDirectory)
          .Repeatable(),
      Switch("--writable-git",
             "deliberately let CMD write git metadata: every repository's .git\n"
             "(top-level and nested) and the paths their config names stay\n"
             "writable, and nothing is checked after the run (agents that commit)",
             [] {}),
      Text("--git-scan-limit", "NAME=VALUE",
           "bounds of the search for repositories in the writable roots:\n"
           "entries (1000000), depth (128), seconds (10), paths (4096);\n"
           "past one the sandbox does not start",
           Ignore)
          .Repeatable(),
      Text("--read-access", "A", "restricted (default: workspace + /usr /etc /bin /lib ...) | full",
           Ignore)
          .Choices({"restricted", "full"}),
      Text("--network", "N", "none (default) | proxy | full", Ignore)
          .Choices({"none", "proxy", "full"}),
      Text("--allow-host", "H[:PORT]", "with --network proxy", Ignore).Repeatable(),
      Switch("--clear-env", "start CMD with an empty environment", [] {}),
      Text("--keep-env", "NAME", "keep NAME even when a filter would drop it (repeatable)", Ignore)
          .Repeatable(),
      Text("--setenv", "NAME=VALUE", "set a variable (repeatable)", Ignore).Repeatable(),
      Text("--limit", "NAME=VALUE",
           "nproc, nofile, as, data, fsize, cpu, tmp, mem (sizes take K, M, G;\n"
           "mem=unlimited drops the default memory ceiling, half the RAM)",
           Ignore)
          .Repeatable(),
      Number("--timeout", "SECONDS", "kill the whole process tree after SECONDS (exit 124)",
             Above(0, 1e7), [](double) {})
          .Expects("a positive number of seconds"),
      Switch("--json", "print one JSON report on stderr at exit", [] {}),
      Descriptor("--report-fd", "N", "write the --json report to descriptor N instead of stderr",
                 Between(3, INT_MAX), [](int) { return Ok(); })
          .Expects("an open descriptor number >= 3"),
  };
  if (!runner) {
    // The command's home, the user's configuration and the refusal summary
    // (cli/sandbox_setup.h, docs/policy.md "Living with the sandbox").
    std::vector<Flag> sandbox_flags = {
        Text("--profile", "NAME",
             "open one ecosystem's caches and registries: node, python, rust,\n"
             "go, or one of config.toml's [profiles.NAME] (repeatable)",
             Ignore)
            .Choices({"node", "python", "rust", "go"})
            .Completes(Completion::kProfiles)
            .Repeatable(),
        Text("--readable-root", "DIR", "another read-only directory, e.g. a toolchain (repeatable)",
             Ignore)
            .Completes(Completion::kDirectory)
            .Repeatable(),
        Text("--home", "H",
             "persistent (default: a per-workspace home kept between runs)\n"
             "| tmp (an empty one per run) | none",
             Ignore)
            .Choices({"persistent", "tmp", "none"}),
        Switch("--quiet", "no summary of what the sandbox refused", [] {}),
    };
    for (auto& f : sandbox_flags) spec.flags.push_back(std::move(f));
  }
  if (runner) {
    std::vector<Flag> runner_flags = {
        Descriptor("--exec-fd", "N", "run the executable already open at fd N (no lookup)",
                   Between(0, INT_MAX), [](int) { return Ok(); })
            .Expects("a descriptor number"),
        Switch("--minimal-env", "use Anvil's fixed minimal environment (sys.exec)", [] {}),
        Text("--readable-path", "P",
             "with --policy read-only: only workspace path P is readable\n"
             "(repeatable; opened beneath the workspace, never through a\n"
             "symlink that leads out)",
             Ignore)
            .Repeatable(),
        Switch("--no-workspace-read",
               "with --policy read-only: nothing in the workspace is readable", [] {}),
        Descriptor("--call-fd", "N",
                   "warm start (sys.exec): set up everything that does not depend\n"
                   "on the call, then take the program, stdin, argv and readable\n"
                   "workspace paths from the stream at fd N (no CMD given here)",
                   Between(3, INT_MAX), [](int) { return Ok(); })
            .Expects("an open descriptor number >= 3"),
        Switch("--runtime-from-call",
               "with --call-fd: no runtime roots (/usr, /etc, ...) and no /proc;\n"
               "the call names the tool's own files (executable, libraries)",
               [] {}),
    };
    for (auto& f : runner_flags) spec.flags.push_back(std::move(f));
  }
  spec.positionals = {{"CMD", Completion::kCommand}};
  spec.sections = {
      {"",
       "Exit status: CMD's own; 128+N if killed by signal N; 124 timeout; 125 the sandbox "
       "could not be\n"
       "set up (nothing ran); 126 not executable; 127 not found.",
       false},
  };
  spec.examples = {
      "anvil sandbox -- make test",
      "anvil sandbox --policy read-only -- rg TODO",
      "anvil sandbox --writable-root ~/.cache/pip --timeout 600 -- pip install -r requirements.txt",
  };
  spec.style.operands = ParseStyle::Operands::kFirstEndsFlags;
  spec.style.wording = ParseStyle::Wording::kExpectsGot;
  spec.style.equals_value = true;
  return spec;
}

}  // namespace anvil::cli
