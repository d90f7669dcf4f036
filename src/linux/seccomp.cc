#include "linux/seccomp.h"

#include <linux/seccomp.h>
#include <sys/prctl.h>

#include <cerrno>
#include <iterator>

namespace anvil::seccomp {
namespace {

// Generated at build time by anvil-seccomp-gen from seccomp_compile.cc (see that file); in the
// build tree, not the source tree.
#include "linux/seccomp_programs.inc"

Program FromTable(const sock_filter* begin, const sock_filter* end) {
  return Program(std::vector<sock_filter>(begin, end));
}

}  // namespace

Status Program::Install() const {
  if (insns_.empty()) return Fail("sandbox", "seccomp: empty program");
  if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
    return Fail("sandbox", "seccomp: no_new_privs must be set before loading a filter");
  }
  sock_fprog prog{static_cast<unsigned short>(insns_.size()),
                  const_cast<sock_filter*>(insns_.data())};
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) {
    return SysFail("sandbox", "seccomp: load filter");
  }
  // Mode 2, or EPERM from an allowlist that does not allow prctl itself (it did a moment ago,
  // so that refusal is the filter speaking).
  int mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
  if (mode != 2 && !(mode == -1 && errno == EPERM)) {
    return Fail("sandbox", "seccomp: filter not in force after loading");
  }
  return Ok();
}

Result<Program> BuildCommandFilter(NetworkMode network, bool deny_list, bool own_network_namespace,
                                   bool allow_tracing) {
  // Compiling with libseccomp at every start cost ≈0.15 ms of CPU and 14 syscalls (its nine
  // kernel probes, a memfd for the export); the program is a pure function of these inputs.
  if (network == NetworkMode::kNone && own_network_namespace && deny_list) {
    return allow_tracing ? FromTable(std::begin(kCommandNoneOwnNetTracing),
                                     std::end(kCommandNoneOwnNetTracing))
                         : FromTable(std::begin(kCommandNoneOwnNet), std::end(kCommandNoneOwnNet));
  }
  // Without the deny-list there is no tracing row to leave out.
  const bool tracing = allow_tracing && deny_list;
  switch (network) {
    case NetworkMode::kNone:
      if (tracing) return FromTable(std::begin(kCommandNoneTracing), std::end(kCommandNoneTracing));
      return deny_list ? FromTable(std::begin(kCommandNone), std::end(kCommandNone))
                       : FromTable(std::begin(kCommandNoneNetOnly), std::end(kCommandNoneNetOnly));
    case NetworkMode::kProxy:
      if (tracing) {
        return FromTable(std::begin(kCommandProxyTracing), std::end(kCommandProxyTracing));
      }
      return deny_list
                 ? FromTable(std::begin(kCommandProxy), std::end(kCommandProxy))
                 : FromTable(std::begin(kCommandProxyNetOnly), std::end(kCommandProxyNetOnly));
    case NetworkMode::kFull:
      if (tracing) return FromTable(std::begin(kCommandFullTracing), std::end(kCommandFullTracing));
      return deny_list ? FromTable(std::begin(kCommandFull), std::end(kCommandFull))
                       : FromTable(std::begin(kCommandFullNetOnly), std::end(kCommandFullNetOnly));
  }
  return Fail("sandbox", "seccomp: unknown network mode");
}

Result<Program> BuildServiceFilter() { return FromTable(std::begin(kService), std::end(kService)); }

Result<Program> BuildPluginHostFilter() {
  return FromTable(std::begin(kPluginHost), std::end(kPluginHost));
}

}  // namespace anvil::seccomp
