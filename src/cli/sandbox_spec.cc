#include "cli/sandbox_spec.h"

#include <fcntl.h>

#include <climits>
#include <cmath>
#include <cstdlib>

#include "policy/display_text.h"

namespace anvil::cli {
namespace {

Result<uint64_t> ParseSize(const std::string& text, const std::string& what) {
  auto n = ParseByteSize(text);
  if (!n) return Fail("invalid", what + ": " + n.error().message);
  return n;
}

Status ApplyLimitFlag(const std::string& value, ResourceLimits& limits) {
  auto eq = value.find('=');
  if (eq == std::string::npos) return Fail("invalid", "--limit expects NAME=VALUE, got " + value);
  std::string name = value.substr(0, eq);
  if (name == "mem" && value.substr(eq + 1) == "unlimited") {
    limits.memory = 0;
    return Ok();
  }
  ANVIL_TRY(n, ParseSize(value.substr(eq + 1), "--limit " + name));
  if (name == "nproc")
    limits.processes = *n;
  else if (name == "nofile")
    limits.open_files = *n;
  else if (name == "as")
    limits.address_space = *n;
  else if (name == "fsize")
    limits.file_size = *n;
  else if (name == "cpu")
    limits.cpu_seconds = *n;
  else if ((name == "tmp" || name == "shm") && *n == 0)
    // A tmpfs of size=0 has no bound at all.
    return Fail("invalid", "--limit " + name + ": 0 would leave the tmpfs unbounded (fix: a size)");
  else if (name == "tmp") {
    limits.tmp_size = *n;
    limits.tmp_size_set = true;
  } else if (name == "shm")
    limits.shm_size = *n;
  else if (name == "data")
    limits.data = *n;
  else if (name == "mem" && *n > 0)
    limits.memory = *n;
  else if (name == "mem")
    return Fail("invalid", "--limit mem: 0 is no memory at all (fix: a size, or unlimited)");
  else
    return Fail("invalid", "--limit: unknown limit '" + name +
                               "' (nproc, nofile, as, data, fsize, cpu, tmp, shm, mem)");
  return Ok();
}

// A flag whose value is checked by a parser of the policy (ParsePolicyKind and the like).
template <typename Parse, typename Set>
Flag Checked(std::string name, std::string metavar, std::string help, Parse parse, Set set) {
  return Text(std::move(name), std::move(metavar), std::move(help),
              [parse, set](const std::string& v) -> Status {
                ANVIL_TRY(value, parse(v));
                set(*value);
                return Ok();
              });
}

// A descriptor this process holds open (as `open` says), 3 or above; the handler keeps it.
Flag OpenDescriptor(std::string name, std::string help, const DescriptorProbe& open,
                    std::function<void(int)> keep) {
  const std::string flag = name;
  return Descriptor(std::move(name), "N", std::move(help), Between(3, INT_MAX),
                    [flag, open, keep](int fd) -> Status {
                      if (!open(fd)) {
                        return Fail("invalid", flag +
                                                   " expects an open descriptor number >= 3, "
                                                   "got " +
                                                   std::to_string(fd));
                      }
                      keep(fd);
                      return Ok();
                    })
      .Expects("an open descriptor number >= 3");
}

std::vector<Flag> CommonFlags(SandboxArgs& a, const DescriptorProbe& open) {
  SandboxPolicy& policy = a.inv.spec.policy;
  return {
      Checked("--policy", "P",
              "read-only | workspace-write (default) | danger-full-access | external-sandbox",
              ParsePolicyKind,
              [&a, &policy](PolicyKind k) {
                policy.kind = k;
                a.config_flags.policy_explicit = true;
              })
          .Choices({"read-only", "workspace-write", "danger-full-access", "external-sandbox"}),
      Text("--cwd", "DIR", "the workspace and CMD's working directory (default: current directory)",
           [&a](const std::string& v) {
             a.cwd = v;
             return Ok();
           })
          .Completes(Completion::kDirectory),
      Text("--workdir", "DIR",
           "CMD's working directory, inside the workspace (relative to it, or\n"
           "absolute; default: the workspace)",
           [&a](const std::string& v) -> Status {
             if (v.empty()) {
               return Fail("invalid",
                           "--workdir: empty path (fix: a directory inside the workspace)");
             }
             a.workdir = v;
             return Ok();
           })
          .Completes(Completion::kDirectory),
      Text("--writable-root", "DIR", "an extra writable root (workspace-write; repeatable)",
           [&policy](const std::string& v) {
             policy.extra_writable_roots.push_back(v);  // made canonical by the resolution
             return Ok();
           })
          .Completes(Completion::kDirectory)
          .Repeatable(),
      CollectInto("--read-only-subpath", "P",
                  "keep P read-only inside a writable root (repeatable; git metadata\n"
                  "and .anvil always)",
                  policy.extra_read_only_subpaths)
          .Completes(Completion::kDirectory),
      Switch("--writable-git",
             "deliberately let CMD write repository metadata: every repository's\n"
             ".git (top-level and nested), the paths their config names and\n"
             ".hg, .jj, .sl, _darcs, .pijul stay writable, and nothing is\n"
             "checked after the run (agents that commit)",
             [&policy] { policy.writable_git = true; }),
      Text("--git-scan-limit", "NAME=VALUE",
           "bounds of the search for repositories in the writable roots:\n"
           "entries (1000000), depth (128), seconds (10), paths (4096);\n"
           "past one the sandbox does not start",
           [&a](const std::string& v) { return ApplyGitScanLimit(v, a.inv.spec.git_scan_limits); })
          .Repeatable(),
      Checked("--read-access", "A",
              "restricted (default: workspace + /usr /etc /bin /lib ...) | full", ParseReadAccess,
              [&a, &policy](ReadAccess r) {
                policy.read_access = r;
                a.config_flags.read_access_explicit = true;
              })
          .Choices({"restricted", "full"}),
      Checked("--network", "N", "none (default) | proxy | full", ParseNetworkMode,
              [&a, &policy](NetworkMode n) {
                policy.network = n;
                a.network_explicit = true;
              })
          .Choices({"none", "proxy", "full"}),
      CollectInto("--allow-host", "H[:PORT]", "with --network proxy", a.allow_hosts),
      Switch("--clear-env", "start CMD with an empty environment", [&a] { a.env.clear = true; }),
      CollectInto("--keep-env", "NAME", "keep NAME even when a filter would drop it (repeatable)",
                  a.env.keep),
      Text("--setenv", "NAME=VALUE", "set a variable (repeatable)",
           [&a](const std::string& v) -> Status {
             auto eq = v.find('=');
             if (eq == std::string::npos || eq == 0) {
               return Fail("invalid", "--setenv expects NAME=VALUE, got " + v);
             }
             a.env.set.push_back(v);
             return Ok();
           })
          .Repeatable(),
      Text("--limit", "NAME=VALUE",
           "nproc, nofile, as, data, fsize, cpu, tmp, shm, mem (sizes take K, M, G;\n"
           "mem=unlimited drops the default memory ceiling, half the RAM;\n"
           "shm: /dev/shm, default half the memory ceiling, or 64M without one)",
           [&a](const std::string& v) { return ApplyLimitFlag(v, a.inv.spec.limits); })
          .Repeatable(),
      Number("--timeout", "SECONDS", "kill the whole process tree after SECONDS (exit 124)",
             Above(0, 1e7),
             [&a](double secs) {
               a.inv.spec.timeout =
                   std::chrono::milliseconds(static_cast<int64_t>(std::ceil(secs * 1000)));
             })
          .Expects("a positive number of seconds"),
      Switch("--json", "print one JSON report on stderr at exit", [&a] { a.inv.json = true; }),
      OpenDescriptor("--report-fd", "write the --json report to descriptor N instead of stderr",
                     open,
                     [&a](int fd) {
                       a.inv.report_fd = fd;
                       a.inv.json = true;
                     }),
  };
}

// The command's home, the user's configuration and the refusal summary
// (cli/sandbox_setup.h, docs/policy.md "Living with the sandbox").
std::vector<Flag> AnvilSandboxFlags(SandboxArgs& a) {
  return {
      CollectInto("--profile", "NAME",
                  "open one ecosystem's caches and registries: node, python, rust,\n"
                  "go, or one of config.toml's [profiles.NAME] (repeatable)",
                  a.config_flags.profiles)
          .Choices({"node", "python", "rust", "go"})
          .Completes(Completion::kProfiles),
      Text("--readable-root", "DIR", "another read-only directory, e.g. a toolchain (repeatable)",
           [&a](const std::string& v) -> Status {
             // Whether it exists is the resolution's to ask, in the same words.
             if (v.empty() || v[0] != '/') {
               return Fail("invalid", "--readable-root " + v + ": no such absolute path");
             }
             a.config_flags.readable_roots.push_back(v);
             return Ok();
           })
          .Completes(Completion::kDirectory)
          .Repeatable(),
      Checked("--home", "H",
              "persistent (default: a per-workspace home kept between runs)\n"
              "| tmp (an empty one per run) | none",
              ParseHomeMode, [&a](HomeMode h) { a.config_flags.home = h; })
          .Choices({"persistent", "tmp", "none"}),
      Text("--tmp", "T",
           "kept (default: the workspace's own /tmp, kept between runs beside\n"
           "its home) | private (an empty one per run)",
           [&a](const std::string& v) -> Status {
             if (v == "kept") {
               a.config_flags.private_tmp = false;
             } else if (v == "private") {
               a.config_flags.private_tmp = true;
             } else {
               return Fail("invalid", "--tmp " + v + ": expected kept or private");
             }
             return Ok();
           })
          .Choices({"kept", "private"}),
      Switch("--quiet", "no summary of what the sandbox refused", [&a] { a.inv.quiet = true; }),
  };
}

// sys.exec's (the gateway's exec broker starts the runner).
std::vector<Flag> RunnerFlags(SandboxArgs& a, const DescriptorProbe& open) {
  SandboxPolicy& policy = a.inv.spec.policy;
  return {
      Descriptor("--exec-fd", "N", "run the executable already open at fd N (no lookup)",
                 Between(0, INT_MAX),
                 [&a](int fd) {
                   a.exec_fd = fd;
                   return Ok();
                 })
          .Expects("a descriptor number"),
      Switch("--minimal-env", "use Anvil's fixed minimal environment (sys.exec)",
             [&a] { a.minimal_env = true; }),
      Text("--readable-path", "P",
           "with --policy read-only: only workspace path P is readable\n"
           "(repeatable; opened beneath the workspace, never through a\n"
           "symlink that leads out)",
           [&a, &policy](const std::string& v) {
             if (!policy.workspace_read_subpaths) policy.workspace_read_subpaths.emplace();
             policy.workspace_read_subpaths->push_back(v);
             a.readable_flags = true;
             return Ok();
           })
          .Repeatable(),
      Switch("--no-workspace-read", "with --policy read-only: nothing in the workspace is readable",
             [&a, &policy] {
               if (!policy.workspace_read_subpaths) policy.workspace_read_subpaths.emplace();
               a.readable_flags = true;
             }),
      OpenDescriptor("--call-fd",
                     "warm start (sys.exec): set up everything that does not depend\n"
                     "on the call, then take the program, stdin, argv and readable\n"
                     "workspace paths from the stream at fd N (no CMD given here)",
                     open, [&a](int fd) { a.call_fd = fd; }),
      Switch("--runtime-from-call",
             "with --call-fd: no runtime roots (/usr, /etc, ...) and no /proc;\n"
             "the call names the tool's own files (executable, libraries)",
             [&policy] { policy.runtime_from_call = true; }),
  };
}

// Test-only, never documented: the network test options of --network proxy (passed to
// anvil-proxy) and fault injection for the fail-closed tests, which is inert unless the trusted
// caller's own environment enables it.
std::vector<Flag> TestFlags(SandboxArgs& a) {
  return {
      CollectInto("--unsafe-test-allow-address", "ADDR[:PORT]", "",
                  a.inv.unsafe_test_allow_addresses)
          .Hidden(),
      Text("--unsafe-test-resolver", "ADDR:PORT", "",
           [&a](const std::string& v) {
             a.inv.unsafe_test_resolver = v;
             return Ok();
           })
          .Hidden(),
      Text("--unsafe-test-ca", "FILE", "",
           [&a](const std::string& v) {
             a.unsafe_test_ca = v;
             return Ok();
           })
          .Hidden(),
      Text("--unsafe-test-fail-layer", "LAYER", "",
           [&a](const std::string& v) {
             a.inv.spec.fail_step_for_testing = v;
             return Ok();
           })
          .Hidden()
          .EnabledWhen([] { return std::getenv("ANVIL_ALLOW_TEST_FAULTS") != nullptr; }),
  };
}

}  // namespace

bool DescriptorIsOpen(int fd) { return fcntl(fd, F_GETFD) >= 0; }

CommandSpec SandboxCommandSpec(SandboxFrontEnd front_end, SandboxArgs& a, DescriptorProbe open) {
  const bool runner = front_end == SandboxFrontEnd::kExecRunner;
  CommandSpec spec;
  spec.echo = SanitizeFlagArgument;
  spec.name = runner ? "exec-runner" : "sandbox";
  spec.program = runner ? "anvil-exec-runner" : "anvil sandbox";
  spec.summary = "run a command under a sandbox policy";
  spec.synopsis = "[options] -- CMD [ARGS...]";
  spec.description =
      "Run CMD under a sandbox policy. The current directory (or --cwd) is the workspace.";
  spec.flags = CommonFlags(a, open);
  for (Flag& f : runner ? RunnerFlags(a, open) : AnvilSandboxFlags(a)) {
    spec.flags.push_back(std::move(f));
  }
  for (Flag& f : TestFlags(a)) spec.flags.push_back(std::move(f));
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

CommandSpec SandboxCommandSpec(SandboxFrontEnd front_end) {
  static SandboxArgs unused;
  return SandboxCommandSpec(front_end, unused);
}

Result<SandboxArgs> ParseSandboxFlags(const std::vector<std::string>& args,
                                      SandboxFrontEnd front_end, const DescriptorProbe& open) {
  SandboxArgs a;
  {
    const CommandSpec flags = SandboxCommandSpec(front_end, a, open);
    ANVIL_TRY(parsed, ParseFlags(flags, args));
    // RunSandboxCommand answers --help before parsing; anywhere else it goes alone.
    if (parsed->help) {
      return Fail("invalid", "--help goes alone (see " + flags.program + " --help)");
    }
    a.command = std::move(parsed->operands);
  }
  return a;
}

}  // namespace anvil::cli
