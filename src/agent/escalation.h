// Escalation: after the sandbox refused a command something, the one widening of the sandbox
// that would let it through, decided from the refusals the sandbox recorded (facts, never a
// guess from the command's output). Pure; the table tests are in tests/unit/escalation_test.cc.
//
// Only three widenings exist, each one flag added to the same command line:
//   --writable-git          a protected git metadata path was written
//   --allow-host HOST[:P]   the proxy refused a host because it is not on the list
//   --writable-root DIR     a read-only directory outside the workspace was written (the
//                           directory written in, when it exists; never "/", a system root,
//                           $HOME itself, an ancestor of the workspace, Anvil's own configuration
//                           and state, a place the host runs from (~/.local/bin, ...), a hidden
//                           entry of a home or anything in one, an XDG base directory or
//                           anything in or above one, or a directory holding other repositories)
// Nothing else is ever offered: not a credential location, not .anvil, not a system directory,
// not the network for a command that ran with --network none, and never "unsandboxed". The
// refused subject comes from the sandboxed command (it picked the path and the host), so what
// is offered is checked here as strictly as if the command had asked for it by name.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "policy/sandbox_policy.h"

namespace anvil::agent {

// One refusal, as recorded by the sandbox (the fields of policy/refusals.h's Refusal that
// matter here; FactsFromRefusals converts).
struct RefusalFact {
  enum class Kind : std::uint8_t { kWrite, kNetwork, kProxy };
  Kind kind = Kind::kWrite;
  std::string subject;  // write: the path; network: ADDRESS:PORT; proxy: HOST:PORT
  std::string detail;   // write: the syscall; network: "dns"/"direct"; proxy: the reason
  std::string area;     // kWrite: the part of the view ("git", "outside", "readable_root", ...)
  std::string root;     // kWrite: that part's root
};
std::string_view ToString(RefusalFact::Kind kind);  // "write", "network", "proxy"

enum class WideningKind : std::uint8_t { kWritableGit, kAllowHost, kWritableRoot };
std::string_view ToString(WideningKind kind);  // "writable-git", "allow-host", "writable-root"

struct Widening {
  WideningKind kind = WideningKind::kWritableGit;
  std::string value;  // the host or the directory; empty for kWritableGit

  // The flags added to the sandbox's command line: {"--writable-git"}, {"--allow-host", H}, ...
  std::vector<std::string> Flags() const;
  std::string Describe() const;  // one line for people: "--writable-root /home/u/.cache/x"
  bool operator==(const Widening&) const = default;
};

// What the run looked like, to decide whether a widening would change anything.
struct EscalationContext {
  PolicyKind policy = PolicyKind::kWorkspaceWrite;
  NetworkMode network = NetworkMode::kNone;
  std::string workspace;  // canonical
  std::string home;       // the caller's $HOME, canonical ("" for none)
  bool writable_git = false;
  std::vector<std::string> allowed_hosts;   // --allow-host as given
  std::vector<std::string> writable_roots;  // canonical
  // Paths that must never become writable, nor any directory above or below them: the user's
  // rules, Anvil's configuration and state (a command that could write them would approve
  // itself). ProtectedAnvilPaths fills the usual ones.
  std::vector<std::string> never_writable;
  // What the host runs from the home (policy/host_autorun.h, HostAutorunPaths): neither it nor
  // anything inside it is offered; only the user names it (anvil sandbox --writable-root).
  std::vector<std::string> host_autorun;
  // The user database's home when it differs from `home` (canonical): judged like it.
  std::vector<std::string> more_homes;
  // $XDG_CONFIG_HOME, $XDG_DATA_HOME, $XDG_STATE_HOME and $XDG_CACHE_HOME as set (UserBaseDirs;
  // each also canonical): neither one, nor anything inside or above one, is offered.
  std::vector<std::string> user_base_dirs;
  // Whether a directory holds repositories below it (HoldsRepositories in the front ends;
  // injected like IsDirectory). Unset: no directory does.
  std::function<bool(const std::string& dir)> holds_repositories;
};

// The XDG base directories as the environment sets them: the absolute values only, made
// lexically clean ("/a//b/" -> "/a/b"), as the XDG Base Directory spec ignores the others.
std::vector<std::string> UserBaseDirs(const char* xdg_config_home, const char* xdg_data_home,
                                      const char* xdg_state_home, const char* xdg_cache_home);

// $XDG_CONFIG_HOME/anvil (or ~/.config/anvil), $XDG_STATE_HOME/anvil (or ~/.local/state/anvil),
// the user's rules directory and /etc/anvil, from the given environment values.
std::vector<std::string> ProtectedAnvilPaths(const char* xdg_config_home,
                                             const char* xdg_state_home, const char* home);

// Whether `path` is an existing directory (injected: the decision stays testable).
using IsDirectory = std::function<bool(const std::string& path)>;

// The widening for the first refusal that has one, or nullopt when none would help (or would be
// safe). Only refusals of a run that failed should be passed: a command that succeeded needs
// nothing.
std::optional<Widening> ProposeWidening(const std::vector<RefusalFact>& refusals,
                                        const EscalationContext& context,
                                        const IsDirectory& is_directory);

// Why a refusal gets no widening (one line), for the report: "" when it has one.
std::string NoWideningReason(const RefusalFact& refusal, const EscalationContext& context,
                             const IsDirectory& is_directory);

// A widening the agent asks for up front (on-request): "writable-git", "allow-host=HOST[:PORT]",
// "writable-root=DIR" (DIR absolute, canonicalized by the caller). Checked like a proposed one.
Result<Widening> ParseWidening(std::string_view text);
Status CheckWidening(const Widening& widening, const EscalationContext& context,
                     const IsDirectory& is_directory);

// A host as --allow-host takes it: DNS labels (letters, digits, '-', '.'), an optional port.
bool IsPlainHost(std::string_view host_port);

// op "command.escalation": the widening on offer and what became of it ("offered", "approved",
// "refused", "unavailable"). verdict "ask", "allow" or "deny". One JSON line, no newline.
struct EscalationAudit {
  std::string session;
  std::string requester;
  std::string cwd;
  std::string mode;
  std::uint64_t id = 0;
  std::vector<std::string> argv;
};
std::string EscalationAuditLine(const EscalationAudit& context, const Widening* widening,
                                std::string_view state, std::string_view reason,
                                double unix_seconds);

}  // namespace anvil::agent
