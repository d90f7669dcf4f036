#include "agent/escalation.h"

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "fs/file_io.h"
#include "linux/trust_shield.h"
#include "policy/command_rules.h"
#include "policy/consent.h"
#include "policy/host_autorun.h"
#include "policy/shell_words.h"

namespace anvil::agent {
namespace {

constexpr std::size_t kMaxPathBytes = 4096;
constexpr std::size_t kMaxHostBytes = 253 + 6;

// Directories that are never offered, nor anything inside them: the kernel's and the system's.
constexpr std::string_view kNeverWritableTrees[] = {"/proc", "/sys",     "/dev",
                                                    "/run",  "/var/run", "/boot"};

bool IsCleanAbsolute(std::string_view path) {
  if (path.empty() || path[0] != '/' || path.size() > kMaxPathBytes) return false;
  for (char c : path) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  }
  // Canonical: no ".", "..", empty components, no trailing slash (but "/").
  std::size_t pos = 1;
  while (pos <= path.size()) {
    std::size_t end = path.find('/', pos);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(pos, end - pos);
    if ((part.empty() && path.size() > 1) || part == "." || part == "..") return false;
    pos = end + 1;
  }
  return true;
}

std::string Parent(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == 0 || slash == std::string::npos) return "/";
  return path.substr(0, slash);
}

// What the places of policy/host_autorun.h (HostAutorunPaths) are, in short: the reason given
// when a widening would open one of them.
constexpr const char* kHostAutorunKinds =
    "shell startup and completions, PATH and toolchain bins, the Python user site, user units, "
    "autostart, editors', REPLs' and tools' configs, Anvil's plugins, credentials";

// Either is within the other (equal included).
bool Overlaps(const std::string& a, const std::string& b) {
  return PathIsWithin(a, b) || PathIsWithin(b, a);
}

// The hidden entry of `home` (a top-level name starting with '.': ~/.config, ~/.cursor) that
// `dir` is or lies in; "" when none.
std::string HiddenEntryOf(const std::string& dir, const std::string& home) {
  if (home.empty() || dir == home || !PathIsWithin(dir, home)) return "";
  const std::size_t start = home == "/" ? 1 : home.size() + 1;
  if (start >= dir.size() || dir[start] != '.') return "";
  return dir.substr(0, dir.find('/', start));
}

// Why `dir` may not become a writable root; "" when it may. The directory is chosen by the
// sandboxed side (the path it wrote, or the one it asked for), so the user's own places are not
// judged by a list of the dangerous ones but kept out as a whole: every hidden entry of a home
// and the XDG base directories, where programs keep what they load code from.
std::string WhyNotWritable(const std::string& dir, const EscalationContext& context) {
  if (!IsCleanAbsolute(dir)) return "not a plain absolute path";
  if (dir == "/") return "it would be the whole filesystem";
  for (auto root : kPlatformReadRoots) {
    if (PathIsWithin(dir, root) || PathIsWithin(std::string(root), dir)) {
      return "system directories stay read-only";
    }
  }
  for (auto root : kSystemMetadataRoots) {
    if (PathIsWithin(dir, root) || PathIsWithin(std::string(root), dir)) {
      return "system directories stay read-only";
    }
  }
  for (auto tree : kNeverWritableTrees) {
    if (PathIsWithin(dir, tree) || PathIsWithin(std::string(tree), dir)) {
      return "system directories stay read-only";
    }
  }
  std::vector<std::string> homes = context.more_homes;
  homes.insert(homes.begin(), context.home);
  for (const auto& home : homes) {
    if (!home.empty() && PathIsWithin(home, dir)) {
      return "it would make the whole home directory writable";
    }
  }
  if (!context.workspace.empty() && PathIsWithin(context.workspace, dir)) {
    return "it is the workspace or a directory above it";
  }
  for (const auto& p : context.never_writable) {
    if (!p.empty() && Overlaps(dir, p)) {
      return "Anvil's own configuration and state (rules, grants, audit) stay read-only";
    }
  }
  for (const auto& p : context.host_autorun) {
    if (!p.empty() && PathIsWithin(dir, p)) {
      return std::string("the host runs or reads what is there outside the sandbox (") +
             kHostAutorunKinds + "); only you can name it, with anvil sandbox --writable-root";
    }
  }
  for (const auto& r : context.writable_roots) {
    if (PathIsWithin(dir, r)) return "it is already writable";
  }
  for (const auto& home : homes) {
    if (std::string entry = HiddenEntryOf(dir, home); !entry.empty()) {
      return "it is in " + entry +
             ", a hidden place of your home, where programs keep the settings, plugins and "
             "caches they load code from outside the sandbox; only you can name it, with anvil "
             "sandbox --writable-root";
    }
  }
  for (const auto& base : context.user_base_dirs) {
    if (!base.empty() && Overlaps(dir, base)) {
      return "it is, holds or is inside " + base +
             " (an XDG base directory: settings, data and caches programs load code from "
             "outside the sandbox); only you can name it, with anvil sandbox --writable-root";
    }
  }
  if (context.holds_repositories && context.holds_repositories(dir)) {
    return "it holds other repositories (or more than Anvil looks through to tell): a widening "
           "opens no more than the directory a write needs; only you can name this one, with "
           "anvil sandbox --writable-root";
  }
  return "";
}

struct Outcome {
  std::optional<Widening> widening;
  std::string why_not;
};

Outcome Consider(const RefusalFact& r, const EscalationContext& c, const IsDirectory& is_dir) {
  switch (r.kind) {
    case RefusalFact::Kind::kWrite: {
      if (r.area == "git") {
        if (c.policy != PolicyKind::kWorkspaceWrite) {
          return {std::nullopt, "--writable-git applies to --policy workspace-write only"};
        }
        if (c.writable_git) return {std::nullopt, "git metadata is already writable"};
        return {Widening{WideningKind::kWritableGit, ""}, ""};
      }
      if (r.area == "outside" || r.area == "readable_root") {
        if (c.policy != PolicyKind::kWorkspaceWrite) {
          return {std::nullopt, "--writable-root applies to --policy workspace-write only"};
        }
        if (!IsCleanAbsolute(r.subject)) return {std::nullopt, "the path is not canonical"};
        const std::string floor = r.area == "readable_root" ? r.root : "";
        if (!floor.empty() && !IsCleanAbsolute(floor)) {
          return {std::nullopt, "the readable root is not canonical"};
        }
        // The directory written in, never one above it in its place: a write below directories
        // that do not exist yet (~/src/new/a/b) would otherwise earn the nearest existing one
        // (~/src, every project), far more than the write needs.
        const std::string dir = Parent(r.subject);
        if (!floor.empty() && !PathIsWithin(dir, floor)) {
          return {std::nullopt, "the write is not inside its readable root " + floor};
        }
        if (!is_dir(dir)) {
          return {std::nullopt, dir +
                                    " is not an existing directory (no directory above it is "
                                    "offered in its place: it may hold far more than the write)"};
        }
        if (std::string why = WhyNotWritable(dir, c); !why.empty()) {
          return {std::nullopt, "--writable-root " + dir + " is not offered: " + why};
        }
        return {Widening{WideningKind::kWritableRoot, dir}, ""};
      }
      if (r.area == "anvil") {
        return {std::nullopt, "Anvil's own files (.anvil, anvil.lock, Anvil.toml) stay read-only"};
      }
      if (r.area == "host_autorun") {
        return {std::nullopt, std::string("the host runs or reads it outside the sandbox (") +
                                  kHostAutorunKinds + "); only you can allow it"};
      }
      if (r.area == "credential") {
        return {std::nullopt, "credential locations are never shown to a command"};
      }
      if (r.area == "system") return {std::nullopt, "system directories stay read-only"};
      if (r.area == "read_only_subpath") {
        return {std::nullopt, "the path was made read-only on purpose (--read-only-subpath)"};
      }
      if (r.area == "read_only_policy") {
        return {std::nullopt, "the command was run with --policy read-only"};
      }
      return {std::nullopt, "no widening for this part of the view"};
    }
    case RefusalFact::Kind::kNetwork:
      // The sandbox saw only an address: there is no host to allow, and the network mode is
      // the agent's choice, not a one-flag widening.
      return {std::nullopt, c.network == NetworkMode::kProxy
                                ? "the command went around the proxy"
                                : "the command ran with --network none"};
    case RefusalFact::Kind::kProxy: {
      if (c.network != NetworkMode::kProxy) return {std::nullopt, "not run with --network proxy"};
      if (r.detail.find("host not allowed") == std::string::npos) {
        return {std::nullopt, "the proxy refused it for a reason a host list cannot change"};
      }
      if (!IsPlainHost(r.subject)) return {std::nullopt, "not a plain host name"};
      if (std::find(c.allowed_hosts.begin(), c.allowed_hosts.end(), r.subject) !=
          c.allowed_hosts.end()) {
        return {std::nullopt, "the host is already allowed"};
      }
      return {Widening{WideningKind::kAllowHost, r.subject}, ""};
    }
  }
  return {std::nullopt, "unknown refusal"};
}

}  // namespace

std::string_view ToString(RefusalFact::Kind kind) {
  switch (kind) {
    case RefusalFact::Kind::kWrite:
      return "write";
    case RefusalFact::Kind::kNetwork:
      return "network";
    case RefusalFact::Kind::kProxy:
      return "proxy";
  }
  return "write";
}

std::string_view ToString(WideningKind kind) {
  switch (kind) {
    case WideningKind::kWritableGit:
      return "writable-git";
    case WideningKind::kAllowHost:
      return "allow-host";
    case WideningKind::kWritableRoot:
      return "writable-root";
  }
  return "writable-git";
}

std::vector<std::string> Widening::Flags() const {
  switch (kind) {
    case WideningKind::kWritableGit:
      return {"--writable-git"};
    case WideningKind::kAllowHost:
      return {"--allow-host", value};
    case WideningKind::kWritableRoot:
      return {"--writable-root", value};
  }
  return {};
}

std::string Widening::Describe() const {
  std::string out;
  for (const auto& f : Flags()) out += (out.empty() ? "" : " ") + SanitizeForDisplay(f, 300);
  return out;
}

std::vector<std::string> ProtectedAnvilPaths(const char* xdg_config_home,
                                             const char* xdg_state_home, const char* home) {
  // The same places the sandbox keeps read-only (linux/trust_shield.h), the user database's
  // home among them.
  auto str = [](const char* v) { return std::string(v != nullptr ? v : ""); };
  std::vector<std::string> out =
      AnvilTrustDirs(TrustEnv{str(home), str(xdg_config_home), str(xdg_state_home), PasswdHome()});
  if (std::string rules = UserRulesDirFrom(xdg_config_home, home); !rules.empty()) {
    out.push_back(rules);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> UserBaseDirs(const char* xdg_config_home, const char* xdg_data_home,
                                      const char* xdg_state_home, const char* xdg_cache_home) {
  std::vector<std::string> out;
  for (const char* v : {xdg_config_home, xdg_data_home, xdg_state_home, xdg_cache_home}) {
    if (v == nullptr) continue;
    if (auto clean = CleanAbsolute(v);
        clean && *clean != "/" && std::find(out.begin(), out.end(), *clean) == out.end()) {
      out.push_back(*clean);
    }
  }
  return out;
}

std::optional<Widening> ProposeWidening(const std::vector<RefusalFact>& refusals,
                                        const EscalationContext& context,
                                        const IsDirectory& is_directory) {
  for (const auto& r : refusals) {
    if (auto outcome = Consider(r, context, is_directory); outcome.widening) {
      return outcome.widening;
    }
  }
  return std::nullopt;
}

std::string NoWideningReason(const RefusalFact& refusal, const EscalationContext& context,
                             const IsDirectory& is_directory) {
  return Consider(refusal, context, is_directory).why_not;
}

bool IsPlainHost(std::string_view host_port) {
  if (host_port.empty() || host_port.size() > kMaxHostBytes) return false;
  std::string_view host = host_port;
  if (auto colon = host_port.rfind(':'); colon != std::string_view::npos) {
    std::string_view port = host_port.substr(colon + 1);
    if (port.empty() || port.size() > 5) return false;
    if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return false;
    }
    if (std::atoi(std::string(port).c_str()) < 1 || std::atoi(std::string(port).c_str()) > 65535) {
      return false;
    }
    host = host_port.substr(0, colon);
  }
  if (host.empty() || host.size() > 253 || host.front() == '-' || host.front() == '.' ||
      host.back() == '.' || host.back() == '-') {
    return false;
  }
  bool previous_dot = false;
  for (char c : host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.';
    if (!ok || (c == '.' && previous_dot)) return false;
    previous_dot = c == '.';
  }
  return true;
}

Result<Widening> ParseWidening(std::string_view text) {
  if (text == "writable-git") return Widening{WideningKind::kWritableGit, ""};
  auto eq = text.find('=');
  std::string_view kind = text.substr(0, eq);
  std::string value = eq == std::string_view::npos ? "" : std::string(text.substr(eq + 1));
  if (kind == "allow-host" && !value.empty()) return Widening{WideningKind::kAllowHost, value};
  if (kind == "writable-root" && !value.empty()) {
    return Widening{WideningKind::kWritableRoot, value};
  }
  return Fail("invalid", "unknown widening '" + SanitizeForDisplay(text, 100) +
                             "' (fix: writable-git, allow-host=HOST[:PORT] or writable-root=DIR)");
}

Status CheckWidening(const Widening& widening, const EscalationContext& context,
                     const IsDirectory& is_directory) {
  switch (widening.kind) {
    case WideningKind::kWritableGit:
      if (context.policy != PolicyKind::kWorkspaceWrite) {
        return Fail("invalid", "writable-git needs --policy workspace-write");
      }
      return Ok();
    case WideningKind::kAllowHost:
      if (context.network != NetworkMode::kProxy) {
        return Fail("invalid", "allow-host needs --network proxy (fix: add --network proxy)");
      }
      if (!IsPlainHost(widening.value)) {
        return Fail("invalid", "allow-host: '" + SanitizeForDisplay(widening.value, 100) +
                                   "' is not a host name with an optional port");
      }
      return Ok();
    case WideningKind::kWritableRoot: {
      if (context.policy != PolicyKind::kWorkspaceWrite) {
        return Fail("invalid", "writable-root needs --policy workspace-write");
      }
      if (!is_directory(widening.value)) {
        return Fail("invalid", "writable-root: " + SanitizeForDisplay(widening.value, 300) +
                                   " is not an existing directory");
      }
      if (std::string why = WhyNotWritable(widening.value, context); !why.empty()) {
        return Fail("denied", "writable-root " + SanitizeForDisplay(widening.value, 300) +
                                  " is never offered: " + why);
      }
      return Ok();
    }
  }
  return Fail("invalid", "unknown widening");
}

std::string EscalationAuditLine(const EscalationAudit& context, const Widening* widening,
                                std::string_view state, std::string_view reason,
                                double unix_seconds) {
  std::string target = JoinShellWords(context.argv);
  if (target.size() > 1000) target = target.substr(0, 1000) + "…";
  const std::string_view verdict = state == "approved"  ? "allow"
                                   : state == "offered" ? "ask"
                                                        : "deny";
  nlohmann::json line = {{"time", unix_seconds},
                         {"session", context.session},
                         {"plugin", context.requester},
                         {"op", "command.escalation"},
                         {"target", target},
                         {"verdict", verdict},
                         {"bytes", 0},
                         {"duration_us", 0},
                         {"id", context.id},
                         {"cwd", context.cwd},
                         {"mode", context.mode},
                         {"state", state},
                         {"reason", reason}};
  if (verdict == "deny") line["code"] = "denied";
  if (widening != nullptr) {
    line["widening"] = {{"kind", ToString(widening->kind)}, {"value", widening->value}};
  }
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace anvil::agent
