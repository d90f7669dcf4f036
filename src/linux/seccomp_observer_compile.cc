#include "linux/seccomp_observer_compile.h"

#include <fcntl.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>

#include "common/unique_fd.h"

namespace anvil::seccomp {
namespace {

struct CtxDeleter {
  void operator()(scmp_filter_ctx ctx) const { seccomp_release(ctx); }
};

Status Check(int rc, const char* what) {
  if (rc < 0) return SysFail("sandbox", std::string("seccomp observer: ") + what, -rc);
  return Ok();
}

}  // namespace

Result<std::vector<sock_filter>> CompileRefusalObserverFilter(bool watch_connect) {
  std::unique_ptr<void, CtxDeleter> ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return Fail("sandbox", "seccomp_init failed");
  scmp_filter_ctx c = ctx.get();
  // A foreign ABI is the command filter's to kill; this one never decides anything.
  if (auto s = Check(seccomp_attr_set(c, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ALLOW), "badarch"); !s)
    return tl::unexpected(s.error());
  auto notify = [&](const char* name, unsigned count, const scmp_arg_cmp* cmp) -> Status {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) return Ok();
    return Check(seccomp_rule_add_array(c, SCMP_ACT_NOTIFY, nr, count, cmp), name);
  };
  // open(path, flags) and openat(dirfd, path, flags): one rule per write-intent bit.
  for (auto [name, arg] : {std::pair<const char*, unsigned>{"open", 1}, {"openat", 2}}) {
    for (uint64_t bit :
         {uint64_t{O_WRONLY}, uint64_t{O_RDWR}, uint64_t{O_CREAT}, uint64_t{O_TRUNC}}) {
      scmp_arg_cmp cmp{arg, SCMP_CMP_MASKED_EQ, bit, bit};
      if (auto s = notify(name, 1, &cmp); !s) return tl::unexpected(s.error());
    }
  }
  for (const char* name :
       {"creat", "openat2", "mkdir", "mkdirat", "mknod", "mknodat", "unlink", "unlinkat", "rmdir",
        "rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat", "truncate"}) {
    if (auto s = notify(name, 0, nullptr); !s) return tl::unexpected(s.error());
  }
  if (watch_connect) {
    if (auto s = notify("connect", 0, nullptr); !s) return tl::unexpected(s.error());
  }
  UniqueFd mem(memfd_create("anvil-seccomp-observer", MFD_CLOEXEC));
  if (!mem) return SysFail("sandbox", "memfd_create");
  if (auto s = Check(seccomp_export_bpf(c, mem.Get()), "export"); !s)
    return tl::unexpected(s.error());
  struct stat st {};
  if (fstat(mem.Get(), &st) != 0 || st.st_size <= 0 || st.st_size % sizeof(sock_filter) != 0) {
    return Fail("sandbox", "seccomp observer: exported program has a bad size");
  }
  std::vector<sock_filter> insns(st.st_size / sizeof(sock_filter));
  if (pread(mem.Get(), insns.data(), st.st_size, 0) != st.st_size) {
    return SysFail("sandbox", "read seccomp observer program");
  }
  return insns;
}

}  // namespace anvil::seccomp
