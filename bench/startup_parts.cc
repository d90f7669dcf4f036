// The start-up pieces of a sandbox and a plugin host, one at a time, for instruction counts
// under callgrind (load-independent, unlike wall time on a shared box):
//
//   valgrind --tool=callgrind build/release/bench/startup_parts PART [N]
//
// PART: none (process start only: subtract it), seccomp-compile (libseccomp, what every start
// did before the programs were baked in at build time), seccomp-baked (what they do now),
// lua-vm / js-vm (create the VM with the plugin API and load a one-command plugin, as the host
// does before its lockdown). N repeats the part (default 1); with N > 1 the thread CPU time per
// repetition is printed too (for parts callgrind cannot run: libseccomp's kernel probes use the
// seccomp syscall, which valgrind does not implement).
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "host/runtime.h"
#include "linux/seccomp.h"
#include "linux/seccomp_compile.h"

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

}  // namespace

int main(int argc, char** argv) {
  using anvil::NetworkMode;
  std::string part = argc > 1 ? argv[1] : "none";
  int n = argc > 2 ? std::atoi(argv[2]) : 1;
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
