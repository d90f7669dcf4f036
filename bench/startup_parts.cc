// The start-up pieces of a sandbox and a plugin host, one at a time, for instruction counts
// under callgrind (load-independent, unlike wall time on a shared box):
//
//   valgrind --tool=callgrind build/release/bench/startup_parts PART [N]
//
// PART: none (process start only: subtract it), seccomp-compile (libseccomp, what every start
// did before the programs were baked in at build time), seccomp-baked (what they do now),
// lua-vm / js-vm (create the VM with the plugin API and load a one-command plugin, as the host
// does before its lockdown), cgroups (root only: a pids and a memory cgroup made and removed as a
// sandbox of root's makes them). N repeats the part (default 1); with N > 1 the thread CPU time per
// repetition is printed too (for parts callgrind cannot run: libseccomp's kernel probes use the
// seccomp syscall, which valgrind does not implement).
//
// lua-read / js-read: one warm VM, N sys.fs.read calls from plugin code inside one command,
// against an API that answers every read with 4 KiB at once (no gateway): the binding's own cost
// per call. lua-noop / js-noop: N runs of a command that returns 'ok' (the per-command cost).
// Both print thread CPU time per call.
//
// A sandbox's plan for workspace WS (the third argument, default /tmp), with this process's
// home: autorun-lstat / autorun-listing (the plan of what the host runs from the home, every
// name looked up with lstat, or from one listing per directory as a start does),
// file-view (the file view of the default policy, host sockets located) and writable-roots
// (what a start computes before its view: the view was computed twice before).
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "host/runtime.h"
#include "linux/autorun_shield.h"
#include "linux/host_socket_facts.h"
#include "linux/memory_cgroup.h"
#include "linux/pids_cgroup.h"
#include "linux/real_host.h"
#include "linux/seccomp.h"
#include "linux/seccomp_compile.h"
#include "policy/host_caches.h"
#include "policy/sandbox_policy.h"
#include "policy/tree_alias.h"

namespace {

class NoApi : public anvil::host::HostApi {
 public:
  anvil::Result<std::vector<std::string>> Gateway(const std::string&,
                                                  std::vector<std::string>) override {
    return anvil::Fail("denied", "bench");
  }
  anvil::Result<std::vector<std::string>> Editor(const std::string&,
                                                 std::vector<std::string>) override {
    return anvil::Fail("denied", "bench");
  }
  void Log(std::string_view, std::string_view) override {}
};

// Answers fs.read with 4 KiB of text at once: what the binding costs without the gateway.
class ReadApi : public NoApi {
 public:
  anvil::Result<std::vector<std::string>> Gateway(const std::string& op,
                                                  std::vector<std::string>) override {
    if (op != "fs.read") return anvil::Fail("denied", "bench");
    return std::vector<std::string>{std::string(4096, 'x')};
  }
};

// Per-call thread CPU time of `calls` reads in one command (read) or `calls` commands (noop).
bool Calls(bool lua, bool read, int calls) {
  ReadApi api;
  anvil::host::RuntimeLimits limits;
  limits.instructions = 4'000'000'000;
  auto vm =
      lua ? anvil::host::MakeLuaRuntime(api, limits) : anvil::host::MakeJsRuntime(api, limits);
  if (!vm) return false;
  anvil::host::PluginSource source;
  source.entry_name = lua ? "main.lua" : "main.js";
  source.entry_code =
      lua ? "anvil.command('noop', function() return 'ok' end)\n"
            "anvil.command('read', function(args)\n"
            "  local n = 0\n"
            "  for i = 1, tonumber(args[1]) do n = n + #sys.fs.read('file4k.txt') end\n"
            "  return tostring(n)\n"
            "end)\n"
          : "anvil.command('noop', () => 'ok');\n"
            "anvil.command('read', (args) => {\n"
            "  let n = 0;\n"
            "  for (let i = 0; i < Number(args[0]); i++) n += sys.fs.read('file4k.txt').length;\n"
            "  return String(n);\n"
            "});\n";
  if (!vm->Load(source)) return false;
  timespec t0{}, t1{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  if (read) {
    auto r = vm->RunCommand("read", "[\"" + std::to_string(calls) + "\"]");
    if (!r || *r != "\"" + std::to_string(4096L * calls) + "\"") return false;
  } else {
    for (int i = 0; i < calls; ++i) {
      if (!vm->RunCommand("noop", "[]")) return false;
    }
  }
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
  double us = static_cast<double>(t1.tv_sec - t0.tv_sec) * 1e6 +
              static_cast<double>(t1.tv_nsec - t0.tv_nsec) / 1e3;
  std::printf("%s-%s: %.2f us CPU per call (%d calls)\n", lua ? "lua" : "js",
              read ? "read" : "noop", us / calls, calls);
  return true;
}

bool Vm(bool lua) {
  NoApi api;
  anvil::host::RuntimeLimits limits;
  auto vm =
      lua ? anvil::host::MakeLuaRuntime(api, limits) : anvil::host::MakeJsRuntime(api, limits);
  if (!vm) return false;
  anvil::host::PluginSource source;
  source.entry_name = lua ? "main.lua" : "main.js";
  source.entry_code = lua ? "anvil.command('noop', function() return 'ok' end)\n"
                          : "anvil.command('noop', () => 'ok');\n";
  return vm->Load(source) && vm->RunCommand("noop", "[]");
}

// The autorun plan of a start in `workspace`, looked up name by name or by listing.
bool AutorunPlan(const std::string& workspace, bool listing) {
  const anvil::AutorunEnv env = anvil::AutorunEnvFromProcess();
  std::vector<std::string> caches;
  for (const auto& c : anvil::HostCachePlaces(env)) caches.push_back(c.path);
  const anvil::AutorunFs fs = listing ? anvil::ListingAutorunFs() : anvil::RealAutorunFs();
  return anvil::PlanAutorunShield(anvil::HostAutorunPaths(env), {workspace}, {"/tmp"}, fs, {},
                                  caches)
      .has_value();
}

// The default policy's view of `workspace` (or only its writable roots).
bool View(const std::string& workspace, bool whole) {
  anvil::SandboxPolicy policy;
  policy.kind = anvil::PolicyKind::kWorkspaceWrite;
  policy.workspace = workspace;
  auto mounts = anvil::MountTableForAliases(anvil::ReadHostMountInfo());
  if (!mounts) return false;
  auto socket_locator = anvil::HostSocketLocator(*mounts);
  anvil::HostFs host = anvil::RealHostFs(std::move(*mounts));
  host.bound_unix_sockets = std::move(socket_locator);
  if (!whole) return anvil::WritableRootsOf(policy, host).has_value();
  return anvil::ComputeFileView(policy, host).has_value();
}

}  // namespace

int main(int argc, char** argv) {
  using anvil::NetworkMode;
  std::string part = argc > 1 ? argv[1] : "none";
  int n = argc > 2 ? std::atoi(argv[2]) : 1;
  const std::string workspace = argc > 3 ? argv[3] : "/tmp";
  if (part == "lua-read" || part == "js-read" || part == "lua-noop" || part == "js-noop") {
    const bool ok = Calls(part.starts_with("lua"), part.ends_with("read"), n);
    if (!ok) std::fprintf(stderr, "%s failed\n", part.c_str());
    return ok ? 0 : 1;
  }
  timespec t0{}, t1{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  for (int i = 0; i < n; ++i) {
    bool ok = true;
    if (part == "none") {
    } else if (part == "seccomp-compile") {
      ok = anvil::seccomp::CompileCommandFilter(NetworkMode::kNone, true) &&
           anvil::seccomp::CompilePluginHostFilter();
    } else if (part == "seccomp-baked") {
      ok = anvil::seccomp::BuildCommandFilter(NetworkMode::kNone, true) &&
           anvil::seccomp::BuildPluginHostFilter();
    } else if (part == "lua-vm" || part == "js-vm") {
      ok = Vm(part == "lua-vm");
    } else if (part == "autorun-lstat" || part == "autorun-listing") {
      ok = AutorunPlan(workspace, part == "autorun-listing");
    } else if (part == "file-view" || part == "writable-roots") {
      ok = View(workspace, part == "file-view");
    } else if (part == "cgroups") {
      // As a sandbox of root's makes them (sandbox_launch.cc): where they go read once.
      const anvil::CgroupFacts facts = anvil::ReadCgroupFacts();
      auto pids = anvil::PidsCgroup::Create(4096, facts);
      ok = pids && anvil::MemoryCgroup::Create(uint64_t{1} << 30, facts, pids->path()).has_value();
    } else {
      std::fprintf(stderr, "unknown part %s\n", part.c_str());
      return 2;
    }
    if (!ok) {
      std::fprintf(stderr, "%s failed\n", part.c_str());
      return 1;
    }
  }
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
  if (n > 1) {
    double us = (t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3;
    std::printf("%s: %.1f us CPU per repetition (%d repetitions)\n", part.c_str(), us / n, n);
  }
  return 0;
}
