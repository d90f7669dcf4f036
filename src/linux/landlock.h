// Landlock, probed at run time. Debian 12's <linux/landlock.h> stops at ABI 2, so the
// constants and structs of ABI 1..7 are defined here (from the kernel's uapi) and the header
// is never included. Each rule set uses the best ABI the running kernel offers; a policy that
// needs a right the kernel lacks is an error, never a silent downgrade.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "linux/landlock_rules.h"

namespace anvil::landlock {

// Filesystem rights (ABI 1 unless noted).
inline constexpr uint64_t kFsExecute = 1ULL << 0;
inline constexpr uint64_t kFsWriteFile = 1ULL << 1;
inline constexpr uint64_t kFsReadFile = 1ULL << 2;
inline constexpr uint64_t kFsReadDir = 1ULL << 3;
inline constexpr uint64_t kFsRemoveDir = 1ULL << 4;
inline constexpr uint64_t kFsRemoveFile = 1ULL << 5;
inline constexpr uint64_t kFsMakeChar = 1ULL << 6;
inline constexpr uint64_t kFsMakeDir = 1ULL << 7;
inline constexpr uint64_t kFsMakeReg = 1ULL << 8;
inline constexpr uint64_t kFsMakeSock = 1ULL << 9;
inline constexpr uint64_t kFsMakeFifo = 1ULL << 10;
inline constexpr uint64_t kFsMakeBlock = 1ULL << 11;
inline constexpr uint64_t kFsMakeSym = 1ULL << 12;
inline constexpr uint64_t kFsRefer = 1ULL << 13;     // ABI 2
inline constexpr uint64_t kFsTruncate = 1ULL << 14;  // ABI 3
inline constexpr uint64_t kFsIoctlDev = 1ULL << 15;  // ABI 5
// Network rights (ABI 4).
inline constexpr uint64_t kNetBindTcp = 1ULL << 0;
inline constexpr uint64_t kNetConnectTcp = 1ULL << 1;
// Scopes (ABI 6).
inline constexpr uint64_t kScopeAbstractUnixSocket = 1ULL << 0;
inline constexpr uint64_t kScopeSignal = 1ULL << 1;

inline constexpr uint64_t kFsRead = kFsExecute | kFsReadFile | kFsReadDir;
// Every filesystem right of ABI 1 plus the later ones the kernel knows (see FsRightsForAbi).
uint64_t FsRightsForAbi(int abi);
uint64_t NetRightsForAbi(int abi);
uint64_t ScopesForAbi(int abi);

// Highest ABI of the running kernel; 0 when Landlock is absent or disabled (with errno text).
struct AbiProbe {
  int abi = 0;
  std::string reason;  // why 0: "not built into this kernel", "disabled at boot (lsm=)", ...
};
AbiProbe ProbeAbi();

// A rule set under construction. Handles every right of the probed ABI (deny by default);
// AllowPath/AllowTcpPort punch holes. Restrict() applies it to the calling thread (which must
// already have no_new_privs) and fails closed if any step failed earlier.
class Ruleset {
 public:
  // `handle_net`: also handle TCP bind/connect (deny unless AllowTcpConnect); needs ABI 4.
  // `scopes`: kScope* bits to apply; needs ABI 6.
  static Result<Ruleset> Create(int abi, bool handle_net, uint64_t scopes);

  // Grants `rights` (masked to what the ABI handles) beneath `path`. A missing path is skipped
  // only when `optional` is true.
  Status AllowPath(const std::string& path, uint64_t rights, bool optional = false);
  // Like AllowPath for `relative` opened beneath `base` (openat2 RESOLVE_BENEATH): a symlink in
  // `base` never widens the rule to something outside. Missing or escaping paths add nothing.
  Status AllowBeneath(const std::string& base, const std::string& relative, uint64_t rights);
  // Adds each rule of a plan (linux/landlock_rules.h) in order; the first that fails fails the
  // whole set (the caller never restricts with it).
  Status AllowRules(const std::vector<Rule>& rules);
  Status AllowTcpConnect(uint16_t port);
  Status Restrict();

  int abi() const { return abi_; }
  uint64_t handled_fs() const { return handled_fs_; }

 private:
  Status AllowFd(int fd, uint64_t rights, const std::string& shown);
  // A kPlan* rule: opened beneath `base` (an O_PATH descriptor of rule.base).
  Status AllowPlanned(int base, const Rule& rule);
  Ruleset(UniqueFd fd, int abi, uint64_t handled_fs, uint64_t handled_net)
      : fd_(std::move(fd)), abi_(abi), handled_fs_(handled_fs), handled_net_(handled_net) {}
  UniqueFd fd_;
  int abi_;
  uint64_t handled_fs_;
  uint64_t handled_net_;
};

}  // namespace anvil::landlock
