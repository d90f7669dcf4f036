// ParseSandboxArgs (cli/sandbox_command.h): parse and validate (pure, cli/sandbox_spec.h), then
// resolve what the flags name outside the sandbox: the paths made canonical and checked, the
// workspace and CMD's directory, the configuration and the home (cli/sandbox_setup.h), the
// program, and the descriptors taken over.
#include <fcntl.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "cli/sandbox_command.h"
#include "cli/sandbox_spec.h"
#include "linux/program_exec.h"
#include "policy/display_text.h"
#include "policy/program_lookup.h"
#include "policy/sandbox_home.h"

namespace anvil::cli {
namespace {

// realpath(3) of `path`; "" when it does not exist.
std::string Canonical(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return {};
  return buf;
}

// --writable-root and --readable-root: each must exist; writable roots become canonical.
Status ResolveFlagPaths(SandboxArgs& a) {
  for (std::string& root : a.inv.spec.policy.extra_writable_roots) {
    std::string c = Canonical(root);
    if (c.empty()) return Fail("invalid", "--writable-root " + root + ": no such directory");
    root = c;
  }
  for (const std::string& root : a.config_flags.readable_roots) {
    if (Canonical(root).empty()) {
      return Fail("invalid", "--readable-root " + root + ": no such absolute path");
    }
  }
  return Ok();
}

// The workspace (--cwd or the current directory) and CMD's directory (--workdir, inside it).
Result<std::string> ResolveDirectories(SandboxArgs& a) {
  std::string cwd = a.cwd;
  if (cwd.empty()) {
    char buf[PATH_MAX];
    if (!getcwd(buf, sizeof(buf))) return SysFail("invalid", "cannot read the current directory");
    cwd = buf;
  }
  std::string workspace = Canonical(cwd);
  if (workspace.empty()) return Fail("invalid", "--cwd " + cwd + ": no such directory");
  a.inv.spec.policy.workspace = workspace;
  if (a.workdir.empty()) return workspace;
  const std::string& workdir = a.workdir;
  std::string run_dir = Canonical(workdir[0] == '/' ? workdir : workspace + "/" + workdir);
  if (run_dir.empty()) {
    return Fail("invalid", "--workdir " + SanitizeForDisplay(workdir, 400) +
                               ": no such directory (fix: a directory inside the workspace " +
                               SanitizeForDisplay(workspace, 400) + ")");
  }
  if (!PathIsWithin(run_dir, workspace)) {
    return Fail("invalid", "--workdir " + SanitizeForDisplay(workdir, 400) +
                               " is outside the workspace " + SanitizeForDisplay(workspace, 400) +
                               " (fix: a directory inside it, or --cwd to change the workspace)");
  }
  return run_dir;
}

// The workspace's logical path and CMD's directory by it: the path the user reached the
// workspace by through a symlink (`pwd -L`: an absolute, lexically normal $PWD — or --cwd —
// that resolves to the workspace, i.e. to the real current directory), so that paths recorded
// through the link on the host (a build directory configured there, compile_commands.json) hold
// inside too. Only the host's paths are resolved, before anything runs. None when the path is
// the workspace's own.
void ResolveLogicalWorkspace(SandboxArgs& a, const std::vector<std::string>& environ_entries,
                             const std::string& run_dir) {
  std::string logical = a.cwd;
  if (logical.empty()) {
    for (const auto& e : environ_entries) {
      if (e.rfind("PWD=", 0) == 0) {
        logical = e.substr(4);  // the first, as getenv reads it
        break;
      }
    }
  }
  const std::string& workspace = a.inv.spec.policy.workspace;
  const auto normal = NormalizeAbsolute(logical);
  if (!normal || *normal != logical || logical == workspace) return;
  if (Canonical(logical) != workspace) return;
  a.inv.spec.policy.workspace_logical = logical;
  a.inv.spec.logical_cwd = logical + run_dir.substr(workspace.size());
}

// Takes over descriptor `fd` (above 2, close-on-exec) for `flag`.
Result<UniqueFd> TakeDescriptor(int fd, const char* flag) {
  int dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (dup < 0) return SysFail("invalid", std::string(flag) + " " + std::to_string(fd));
  ::close(fd);
  return UniqueFd(dup);
}

// The program: the warm call's channel, the descriptor given, or CMD looked up on PATH.
Status ResolveCommand(SandboxArgs& a, const std::vector<std::string>& environ_entries,
                      const std::string& run_dir) {
  LaunchSpec& spec = a.inv.spec;
  if (a.call_fd >= 0) {
    ANVIL_TRY(fd, TakeDescriptor(a.call_fd, "--call-fd"));
    spec.call_channel = std::move(*fd);
    return Ok();
  }
  if (a.exec_fd >= 0) {
    ANVIL_TRY(fd, TakeDescriptor(a.exec_fd, "--exec-fd"));
    spec.program = std::move(*fd);
    return Ok();
  }
  std::string path_env(kDefaultProgramPath);
  for (const auto& e : environ_entries) {
    if (e.rfind("PATH=", 0) == 0) {
      path_env = e.substr(5);  // the first, as getenv reads it
      break;
    }
  }
  ANVIL_TRY(program, ResolveProgram(a.command[0], path_env, run_dir));
  spec.program = std::move(program->fd);
  spec.program_path = std::move(program->path);
  spec.program_is_link = program->link;
  spec.program_environment = ProgramEnvironment(ProgramDirectory(spec.program_path, run_dir));
  return Ok();
}

// Test-only --unsafe-test-ca: canonical, and visible inside the sandbox.
Result<std::string> ResolveTestCa(const SandboxArgs& a) {
  if (a.unsafe_test_ca.empty() || a.inv.spec.policy.network != NetworkMode::kProxy) return "";
  std::string ca = Canonical(a.unsafe_test_ca);
  bool visible = !ca.empty() && PathIsWithin(ca, a.inv.spec.policy.workspace);
  for (auto root : kPlatformReadRoots) visible = visible || PathIsWithin(ca, root);
  if (!visible) {
    return Fail("invalid", "--unsafe-test-ca " + a.unsafe_test_ca +
                               ": must be a file inside the workspace or a system directory "
                               "the sandbox can read");
  }
  return ca;
}

}  // namespace

Result<SandboxInvocation> ParseSandboxArgs(const std::vector<std::string>& args,
                                           const std::vector<std::string>& environ_entries,
                                           SandboxFrontEnd front_end) {
  ANVIL_TRY(parsed, ParseSandboxFlags(args, front_end));
  SandboxArgs& a = *parsed;
  ANVIL_RETURN_IF_ERROR(ValidateCommandSource(a));
  ANVIL_RETURN_IF_ERROR(ResolveFlagPaths(a));
  ANVIL_TRY(run_dir, ResolveDirectories(a));
  if (front_end == SandboxFrontEnd::kAnvilSandbox && a.call_fd < 0) {
    ResolveLogicalWorkspace(a, environ_entries, *run_dir);
  }
  if (front_end == SandboxFrontEnd::kAnvilSandbox) {
    // config.toml, Anvil.toml (narrowing only), profiles and the home, under the flags.
    a.config_flags.network_explicit = a.network_explicit;
    if (a.inv.spec.limits.tmp_size_set) a.config_flags.private_tmp = true;
    ANVIL_TRY(settings, ApplySandboxSettings(environ_entries, a.config_flags, a.inv.spec.policy,
                                             a.allow_hosts));
    a.inv.settings = std::move(*settings);
  }
  ANVIL_RETURN_IF_ERROR(ValidatePolicyCombination(a));
  a.inv.allow_hosts = a.allow_hosts;
  ANVIL_RETURN_IF_ERROR(ResolveCommand(a, environ_entries, *run_dir));
  ANVIL_TRY(ca, ResolveTestCa(a));
  SandboxInvocation& inv = a.inv;
  inv.spec.argv = a.command;
  inv.spec.cwd = *run_dir;
  // A developer's own debugger, strace and LeakSanitizer; never a plugin's tool (sys.exec).
  inv.spec.allow_tracing = front_end == SandboxFrontEnd::kAnvilSandbox;
  inv.spec.env = SandboxEnvironment(a, environ_entries, *ca, ::geteuid() == 0);
  if (!inv.spec.logical_cwd.empty()) {
    // The command's $PWD is the directory it starts in, by that path (as a shell's `cd` sets it).
    std::erase_if(inv.spec.env, [](const std::string& e) { return e.rfind("PWD=", 0) == 0; });
    inv.spec.env.push_back("PWD=" + inv.spec.logical_cwd);
  }
  if (inv.spec.policy.home.kind != HomeKind::kNone) {
    // Login shells get the command's PATH back after /etc/profile (policy/sandbox_home.h).
    for (const auto& e : inv.spec.env) {
      if (e.rfind("PATH=", 0) == 0) inv.spec.policy.home.path = e.substr(5);
    }
  }
  return std::move(inv);
}

}  // namespace anvil::cli
