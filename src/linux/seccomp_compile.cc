// The seccomp tables (seccomp_rules.h) compiled with libseccomp. Production code does not call
// these at run time: the build runs them once (src/cmd/anvil_seccomp_gen.cc) and compiles the
// resulting BPF into the binaries as constants (seccomp.cc); a unit test checks that the
// constants are byte-identical to what these functions produce, so the two cannot drift.
#include "linux/seccomp_compile.h"

#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "common/unique_fd.h"
#include "linux/seccomp_rules.h"

namespace anvil::seccomp {
namespace {

struct CtxDeleter {
  void operator()(scmp_filter_ctx ctx) const { seccomp_release(ctx); }
};
using Ctx = std::unique_ptr<void, CtxDeleter>;

Status Check(int rc, const std::string& what) {
  if (rc < 0) return SysFail("sandbox", "seccomp: " + what, -rc);
  return Ok();
}

uint32_t ScmpAction(const Action& action) {
  switch (action.kind) {
    case Action::kAllow:
      return SCMP_ACT_ALLOW;
    case Action::kErrno:
      return SCMP_ACT_ERRNO(static_cast<uint32_t>(action.err));
    case Action::kKillProcess:
      return SCMP_ACT_KILL_PROCESS;
    case Action::kNotify:
      return SCMP_ACT_NOTIFY;
  }
  return SCMP_ACT_KILL_PROCESS;
}

scmp_arg_cmp ScmpCmp(const ArgCond& cond) {
  switch (cond.op) {
    case ArgCond::kEq:
      return {cond.arg, SCMP_CMP_EQ, cond.value, 0};
    case ArgCond::kNe:
      return {cond.arg, SCMP_CMP_NE, cond.value, 0};
    case ArgCond::kGt:
      return {cond.arg, SCMP_CMP_GT, cond.value, 0};
    case ArgCond::kGe:
      return {cond.arg, SCMP_CMP_GE, cond.value, 0};
    case ArgCond::kMaskedEq:
      return {cond.arg, SCMP_CMP_MASKED_EQ, cond.value, cond.datum};
  }
  return {cond.arg, SCMP_CMP_EQ, cond.value, 0};
}

// The kernel caches the verdict of a syscall the filter answers without looking at its arguments
// (every allowed one without a rule): only syscalls with argument rules run the program each
// time, and libseccomp tests syscall numbers one after another. These come first, most frequent
// first (a file open, a fork, a terminal query), so that they leave the program after a few
// instructions instead of after the whole list of refused ones. The verdicts do not change.
int HotPriority(const std::string& name) {
  static const char* const kHot[] = {"openat", "clone", "ioctl", "open"};
  int priority = 255;
  for (const char* hot : kHot) {
    if (name == hot) return priority;
    --priority;
  }
  return -1;
}

Result<std::vector<sock_filter>> Export(scmp_filter_ctx ctx) {
  UniqueFd mem(memfd_create("anvil-seccomp", MFD_CLOEXEC));
  if (!mem) return SysFail("sandbox", "memfd_create");
  ANVIL_RETURN_IF_ERROR(Check(seccomp_export_bpf(ctx, mem.Get()), "export"));
  struct stat st {};
  if (fstat(mem.Get(), &st) != 0) return SysFail("sandbox", "fstat seccomp memfd");
  if (st.st_size <= 0 || st.st_size % sizeof(sock_filter) != 0) {
    return Fail("sandbox", "seccomp: exported program has a bad size");
  }
  std::vector<sock_filter> insns(st.st_size / sizeof(sock_filter));
  if (pread(mem.Get(), insns.data(), st.st_size, 0) != st.st_size) {
    return SysFail("sandbox", "read seccomp program");
  }
  return insns;
}

}  // namespace

Result<std::vector<sock_filter>> CompileTable(const RuleTable& table) {
  Ctx ctx(seccomp_init(ScmpAction(table.default_action)));
  if (!ctx) return Fail("sandbox", "seccomp_init failed");
  scmp_filter_ctx c = ctx.get();
  ANVIL_RETURN_IF_ERROR(Check(
      seccomp_attr_set(c, SCMP_FLTATR_ACT_BADARCH, ScmpAction(table.foreign_arch)), "badarch"));
  for (const SyscallRule& rule : table.rules) {
    int nr = seccomp_syscall_resolve_name(rule.syscall.c_str());
    if (nr == __NR_SCMP_ERROR) {
      if (!rule.required) continue;  // unknown to this libseccomp/arch
      return Fail("sandbox", "seccomp: libseccomp does not know " + rule.syscall +
                                 "; a newer libseccomp is needed to filter it");
    }
    std::vector<scmp_arg_cmp> cmps;
    for (const ArgCond& cond : rule.when) cmps.push_back(ScmpCmp(cond));
    if (int priority = HotPriority(rule.syscall); priority >= 0 && !cmps.empty()) {
      ANVIL_RETURN_IF_ERROR(
          Check(seccomp_syscall_priority(c, nr, static_cast<uint8_t>(priority)), rule.syscall));
    }
    ANVIL_RETURN_IF_ERROR(
        Check(seccomp_rule_add_array(c, ScmpAction(rule.action), nr,
                                     static_cast<unsigned>(cmps.size()), cmps.data()),
              rule.syscall));
  }
  return Export(c);
}

Result<std::vector<sock_filter>> CompileCommandFilter(NetworkMode network, bool deny_list,
                                                      bool set_id_rules, bool own_network_namespace,
                                                      bool allow_tracing) {
  return CompileTable(
      CommandRules(network, deny_list, set_id_rules, own_network_namespace, allow_tracing));
}

Result<std::vector<sock_filter>> CompilePluginHostFilter() {
  return CompileTable(PluginHostRules());
}

Result<std::vector<sock_filter>> CompileRefusalObserverFilter(bool watch_connect) {
  return CompileTable(RefusalObserverRules(watch_connect));
}

}  // namespace anvil::seccomp
